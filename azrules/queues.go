package azrules

import "fmt"

// Queue, container and blob names share one length: 3 to 63 characters.
//
// Evidence (docs): "Naming Queues and Metadata" and "Naming and
// Referencing Containers, Blobs, and Metadata": a valid DNS name of 3 to
// 63 lowercase letters, digits and hyphens, starting and ending with a
// letter or digit, no two hyphens together. Azure answers a length
// outside it 400 OutOfRangeInput ("The specified resource name length is
// not within the permissible limits.", Azurite issue 2017 shows the same
// answer from Azurite) and a character outside it 400
// InvalidResourceName.
const (
	// MinQueueNameLength is the shortest queue or container name.
	MinQueueNameLength = 3
	// MaxQueueNameLength is the longest queue or container name.
	MaxQueueNameLength = 63
)

// CheckQueueName applies the queue name rule: 3 to 63 lowercase letters,
// digits and single hyphens, starting and ending with a letter or digit.
func CheckQueueName(name string) error { return checkDNSName(name) }

// MaxMessageBytes is the largest queue message, in bytes of its text as
// sent (UTF-8, or its base64 when the client encodes it).
//
// Evidence (docs): "Put Message": "A message must be in a format that can
// be included in an XML request with UTF-8 encoding ... up to 64 KiB in
// size". Azurite enforces the same.
const MaxMessageBytes = 64 << 10

// MaxMessageBodyBytes is the largest body of a Put Message or Update
// Message request (the QueueMessage document around the text), over
// which Azure answers 413 RequestBodyTooLarge with <MaxLimit>131584
// before it reads the text.
//
// Evidence: real Queue services' answers quoted in SDK threads
// (Azure/azure-sdk-for-net 32663, 2022; microsoft/onefuzz 3381 and 3058,
// 2023: "<MaxLimit>131584</MaxLimit>", Server Windows-Azure-Queue/1.0),
// strong for the figure; a text over MaxMessageBytes in a smaller body
// answers <MaxLimit>65536 (microsoft/onefuzz 1900, 2022;
// microsoft/accessibility-insights-service 191, 2019).
const MaxMessageBodyBytes = 131584

// MaxMessagesPerGet is the most messages one Get Messages or Peek
// Messages returns (numofmessages).
//
// Evidence (docs): "Get Messages": "a nonzero integer value that
// specifies the number of messages to retrieve ... maximum 32". Azurite
// enforces the same.
const MaxMessagesPerGet = 32

// CheckMessageSize applies the size rule of a message of n bytes: at most
// MaxMessageBytes.
func CheckMessageSize(n int) error {
	if n > MaxMessageBytes {
		return lengthErr(fmt.Sprintf("a message of %d bytes; at most %d are allowed", n, MaxMessageBytes))
	}
	return nil
}

// MaxMetadataBytes is the most metadata a queue, container or blob holds:
// every name and value together, in bytes.
//
// Evidence (docs): "Setting and retrieving properties and metadata for
// Blob service resources" ("The total size of all metadata pairs can be
// up to 8KB in size") and "Set Queue Metadata" (the same 8 KB). Azure
// answers more 400 MetadataTooLarge.
const MaxMetadataBytes = 8 << 10

// CheckMetadataName applies the rule of a queue's, container's or blob's
// metadata name (the part of the header after x-ms-meta-): a C#
// identifier (IsIdentifier). One rule serves the Queue and Blob services:
// their docs say the same words, and a header name can only be an HTTP
// token (ASCII), so the Unicode part of the rule never decides over HTTP.
func CheckMetadataName(name string) error {
	if name == "" {
		return lengthErr("a metadata name must not be empty")
	}
	if !IsIdentifier(name) {
		return characterErr(fmt.Sprintf("metadata name %q is not a C# identifier", name))
	}
	return nil
}

// CheckMetadataSize applies the size rule of metadata whose names and
// values together are n bytes: at most MaxMetadataBytes.
func CheckMetadataSize(n int) error {
	if n > MaxMetadataBytes {
		return lengthErr(fmt.Sprintf("metadata of %d bytes; at most %d are allowed", n, MaxMetadataBytes))
	}
	return nil
}

// checkDNSName is the rule of queue and container names.
func checkDNSName(name string) error {
	if len(name) < MinQueueNameLength || len(name) > MaxQueueNameLength {
		return lengthErr("must be 3 to 63 characters long")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'):
		case c == '-':
			if i == 0 || i == len(name)-1 {
				return characterErr("must start and end with a letter or digit")
			}
			if name[i-1] == '-' {
				return characterErr("consecutive hyphens are not allowed")
			}
		default:
			return characterErr(fmt.Sprintf("character %q at %d: only lowercase letters, digits and hyphens are allowed", c, i))
		}
	}
	return nil
}

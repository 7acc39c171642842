package azrules

import (
	"fmt"
	"unicode/utf8"
)

// CheckContainerName applies the container name rule, the queue name rule
// (CheckQueueName): 3 to 63 lowercase letters, digits and single hyphens,
// starting and ending with a letter or digit. The system containers
// ($root, $logs, $web) are named by the service, not by this rule.
func CheckContainerName(name string) error { return checkDNSName(name) }

// Blob names.
//
// Evidence: (docs) "Naming and Referencing Containers, Blobs, and
// Metadata": 1 to 1,024 characters, at most 254 path segments, reserved
// URL characters escaped. The docs do not say what a character is; an
// SDK thread answers it (azure-storage-cpp issue 291, 2019: against the
// real service a name holds at most 512 emoji, each two UTF-16 units and
// four UTF-8 bytes, so the count is of UTF-16 code units, not of
// characters or bytes; over it Azure answers 400 OutOfRangeInput, "One
// of the request inputs is out of range.").
const (
	// MaxBlobNameUnits is the longest blob name, in UTF-16 code units.
	MaxBlobNameUnits = 1024
	// MaxBlobNameSegments is the most '/'-separated segments a blob name
	// may have.
	MaxBlobNameSegments = 254
)

// CheckBlobNameLength applies the length rule of a blob name alone: 1 to
// MaxBlobNameUnits UTF-16 code units. It is the part of the rule the
// service answers for every operation (400 OutOfRangeInput).
func CheckBlobNameLength(name string) error {
	if name == "" {
		return lengthErr("must not be empty")
	}
	if len(name) <= MaxBlobNameUnits {
		return nil
	}
	if n := UTF16Len(name); n > MaxBlobNameUnits {
		return lengthErr(fmt.Sprintf("%d UTF-16 code units exceeds the limit of %d", n, MaxBlobNameUnits))
	}
	return nil
}

// CheckBlobName applies the rule of a blob name a client puts in a
// request URL: valid UTF-8, CheckBlobNameLength, at most
// MaxBlobNameSegments '/'-separated segments, no segment "." or ".."
// (path traversal; Data Lake Storage refuses them too), no trailing '/',
// and none of '\\' (which some clients turn into '/'), '?', '#' (reserved
// in URLs) or the control characters U+0000-U+001F and U+007F-U+009F.
// Empty segments ("a//b") are accepted, as by the service. Of the docs'
// rules, the characters are stricter than the service (which takes them
// escaped): tablekit refuses names that some clients mangle.
func CheckBlobName(name string) error {
	if name == "" {
		return lengthErr("must not be empty")
	}
	if !utf8.ValidString(name) {
		return formErr("not valid UTF-8")
	}
	if err := CheckBlobNameLength(name); err != nil {
		return err
	}
	segments, start := 1, 0
	for i, r := range name {
		switch {
		case r == '\\' || r == '?' || r == '#':
			return characterErr(fmt.Sprintf("character %q at byte %d is not allowed in blob names (\\ ? #)", r, i))
		case r <= 0x1f || (r >= 0x7f && r <= 0x9f):
			return characterErr(fmt.Sprintf("control character U+%04X at byte %d is not allowed in blob names", r, i))
		case r == '/':
			if seg := name[start:i]; seg == "." || seg == ".." {
				return formErr(fmt.Sprintf("segment %q at byte %d: . and .. segments are not allowed", seg, start))
			}
			segments++
			start = i + 1
		}
	}
	if seg := name[start:]; seg == "." || seg == ".." {
		return formErr(fmt.Sprintf("segment %q at byte %d: . and .. segments are not allowed", seg, start))
	}
	if start == len(name) {
		return formErr("must not end with '/'")
	}
	if segments > MaxBlobNameSegments {
		return lengthErr(fmt.Sprintf("%d segments exceeds the limit of %d", segments, MaxBlobNameSegments))
	}
	return nil
}

// Leases on blobs and containers.
//
// Evidence: (docs) "Lease Blob" and "Lease Container": a lease lasts 15 to
// 60 seconds, or for ever (-1); a break period is 0 to 60 seconds.
const (
	// MinLeaseSeconds and MaxLeaseSeconds bound a fixed lease's
	// duration.
	MinLeaseSeconds = 15
	MaxLeaseSeconds = 60
	// InfiniteLease is the duration of a lease that lasts until it is
	// released or broken.
	InfiniteLease = -1
	// MaxLeaseBreakSeconds is the longest break period.
	MaxLeaseBreakSeconds = 60
)

// MaxStoredAccessPolicies is the most stored access policies (signed
// identifiers) a container, queue, table or share holds.
//
// Evidence: (docs) "Define a stored access policy": "a maximum of five
// access policies may be set on a container, table, queue, or share at a
// time".
const MaxStoredAccessPolicies = 5

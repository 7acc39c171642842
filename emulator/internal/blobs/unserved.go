package blobs

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
)

// unservedHeaders are the request headers that change what an operation
// does, or what it stores, and that the emulator does not serve. A
// request carrying one is answered 501 NotImplemented before anything is
// read or written: served without them, it would be answered as if it
// had done what they ask (a tier set, a policy held, a key used) and do
// something else.
var unservedHeaders = []struct {
	name, what string
	// served, when set, says which requests the service serves the
	// header on.
	served func(q *request) bool
}{
	{"x-ms-if-tags", "conditions on blob index tags (x-ms-if-tags) on this operation", ifTagsServed},
	{"x-ms-source-if-tags", "conditions on the copy source's blob index tags (x-ms-source-if-tags) on this operation", sourceIfTagsServed},
	{"x-ms-copy-source-tag-option", "copying blob index tags (x-ms-copy-source-tag-option)", nil},
	{"x-ms-access-tier", "access tiers on this operation (x-ms-access-tier)", tierServed},
	{"x-ms-rehydrate-priority", "rehydration from the archive tier on this operation (x-ms-rehydrate-priority)", isSetBlobTier},
	{"x-ms-immutability-policy-until-date", "immutability policies (x-ms-immutability-policy-until-date)", nil},
	{"x-ms-immutability-policy-mode", "immutability policies (x-ms-immutability-policy-mode)", nil},
	{"x-ms-legal-hold", "legal holds (x-ms-legal-hold)", nil},
	{"x-ms-immutable-storage-with-versioning-enabled", "version-level immutability (x-ms-immutable-storage-with-versioning-enabled)", nil},
	{"x-ms-encryption-scope", "encryption scopes (x-ms-encryption-scope)", nil},
	{"x-ms-default-encryption-scope", "encryption scopes (x-ms-default-encryption-scope)", nil},
	{"x-ms-deny-encryption-scope-override", "encryption scopes (x-ms-deny-encryption-scope-override)", nil},
	{"x-ms-encryption-key", "customer-provided keys (x-ms-encryption-key)", nil},
	{"x-ms-encryption-key-sha256", "customer-provided keys (x-ms-encryption-key-sha256)", nil},
	{"x-ms-encryption-algorithm", "customer-provided keys (x-ms-encryption-algorithm)", nil},
	{"x-ms-range-get-content-crc64", "range CRC-64s (x-ms-range-get-content-crc64)", nil},
	{"x-ms-structured-body", "structured message bodies (x-ms-structured-body)", nil},
	{"x-ms-expiry-option", "blob expiry (x-ms-expiry-option)", nil},
}

// unserved is the answer to a request carrying one of unservedHeaders,
// or nil.
func unserved(q *request) *answer.Error {
	for _, h := range unservedHeaders {
		if len(q.r.Header.Values(h.name)) > 0 && (h.served == nil || !h.served(q)) {
			return errNotImplemented(h.what)
		}
	}
	return nil
}

// isSetBlobTier says whether q is Set Blob Tier.
func isSetBlobTier(q *request) bool {
	return q.blob != "" && q.r.Method == http.MethodPut && q.comp == "tier"
}

// tierServed says whether q is an operation the service serves
// x-ms-access-tier on (tier.go): Set Blob Tier, Put Blob (but Put Blob
// From URL) and Put Block List. Copy Blob's tier stays unserved.
func tierServed(q *request) bool {
	if q.blob == "" || q.r.Method != http.MethodPut {
		return false
	}
	switch q.comp {
	case "tier", "blocklist":
		return true
	case "":
		return q.r.Header.Get("x-ms-blob-type") != "" && q.r.Header.Get("x-ms-copy-source") == ""
	}
	return false
}

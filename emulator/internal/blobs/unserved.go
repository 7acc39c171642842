package blobs

import (
	"github.com/tablekit/tablekit/emulator/answer"
)

// unservedHeaders are the request headers that change what an operation
// does, or what it stores, and that the emulator does not serve. A
// request carrying one is answered 501 NotImplemented before anything is
// read or written: served without them, it would be answered as if it
// had done what they ask (a tier set, a policy held, a key used) and do
// something else.
var unservedHeaders = []struct{ name, what string }{
	{"x-ms-if-tags", "conditions on blob index tags (x-ms-if-tags)"},
	{"x-ms-source-if-tags", "conditions on blob index tags (x-ms-source-if-tags)"},
	{"x-ms-copy-source-tag-option", "copying blob index tags (x-ms-copy-source-tag-option)"},
	{"x-ms-access-tier", "access tiers (x-ms-access-tier)"},
	{"x-ms-rehydrate-priority", "rehydration from the archive tier (x-ms-rehydrate-priority)"},
	{"x-ms-immutability-policy-until-date", "immutability policies (x-ms-immutability-policy-until-date)"},
	{"x-ms-immutability-policy-mode", "immutability policies (x-ms-immutability-policy-mode)"},
	{"x-ms-legal-hold", "legal holds (x-ms-legal-hold)"},
	{"x-ms-immutable-storage-with-versioning-enabled", "version-level immutability (x-ms-immutable-storage-with-versioning-enabled)"},
	{"x-ms-encryption-scope", "encryption scopes (x-ms-encryption-scope)"},
	{"x-ms-default-encryption-scope", "encryption scopes (x-ms-default-encryption-scope)"},
	{"x-ms-deny-encryption-scope-override", "encryption scopes (x-ms-deny-encryption-scope-override)"},
	{"x-ms-encryption-key", "customer-provided keys (x-ms-encryption-key)"},
	{"x-ms-encryption-key-sha256", "customer-provided keys (x-ms-encryption-key-sha256)"},
	{"x-ms-encryption-algorithm", "customer-provided keys (x-ms-encryption-algorithm)"},
	{"x-ms-range-get-content-crc64", "range CRC-64s (x-ms-range-get-content-crc64)"},
	{"x-ms-structured-body", "structured message bodies (x-ms-structured-body)"},
	{"x-ms-expiry-option", "blob expiry (x-ms-expiry-option)"},
}

// unserved is the answer to a request carrying one of unservedHeaders,
// or nil.
func unserved(q *request) *answer.Error {
	for _, h := range unservedHeaders {
		if len(q.r.Header.Values(h.name)) > 0 {
			return errNotImplemented(h.what)
		}
	}
	return nil
}

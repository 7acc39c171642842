package blobs

import (
	"net/http"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// conditions are a request's conditional headers.
type conditions struct {
	ifMatch, ifNoneMatch       string
	hasMatch, hasNoneMatch     bool
	modifiedSince, unmodSince  time.Time
	hasModSince, hasUnmodSince bool
	// list: If-Match or If-None-Match holds more than one value;
	// readLists: the request's version reads such lists (2013-08-15 on).
	list, readLists bool
	// leaseID is x-ms-lease-id; onContainer: the resource is a container.
	leaseID     string
	onContainer bool
	// leaseOptional: a write that a lease does not lock (Set Container
	// Metadata, Set Container ACL, Snapshot Blob): a lease ID given must
	// match, none is needed.
	leaseOptional bool
	// now is the service's clock, which a lease is checked at.
	now func() time.Time
	// ifTags is x-ms-if-tags (tagfilter.go), nil without one.
	ifTags *tagFilter
}

// parseConditions reads If-Match, If-None-Match, If-Modified-Since,
// If-Unmodified-Since and x-ms-if-tags (a malformed one is 400). On a read (Get Blob, Get Blob Properties) from
// version 2013-08-15, If-Match and If-None-Match may each hold a
// comma-separated list of ETags: If-Match is met when any matches,
// If-None-Match when none does ("Specifying conditional headers for Blob
// service operations", docs); elsewhere a list is 400
// MultipleConditionHeadersNotSupported. A date it cannot read is
// ignored, as HTTP says.
func parseConditions(h http.Header, now func() time.Time) (conditions, *answer.Error) {
	c := conditions{now: now}
	v := h.Get("x-ms-version")
	c.readLists = v == "" || v >= "2013-08-15"
	c.list = strings.Contains(h.Get("If-Match"), ",") || strings.Contains(h.Get("If-None-Match"), ",")
	c.leaseID = h.Get("x-ms-lease-id")
	if v := h.Get("If-Match"); v != "" {
		c.ifMatch, c.hasMatch = strings.TrimSpace(v), true
	}
	if v := h.Get("If-None-Match"); v != "" {
		c.ifNoneMatch, c.hasNoneMatch = strings.TrimSpace(v), true
	}
	if v := h.Get("If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil {
			c.modifiedSince, c.hasModSince = t, true
		}
	}
	if v := h.Get("If-Unmodified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil {
			c.unmodSince, c.hasUnmodSince = t, true
		}
	}
	var e *answer.Error
	c.ifTags, e = ifTagsCondition(h, "x-ms-if-tags")
	return c, e
}

// etagMatches compares an ETag from a request with the resource's, with
// or without quotes.
func etagMatches(want, have string) bool {
	return strings.Trim(want, `"`) == strings.Trim(have, `"`)
}

// anyETag says whether list (an If-Match or If-None-Match value: one ETag,
// *, or ETags separated by commas) names have or is *.
func anyETag(list, have string) bool {
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e == "*" || etagMatches(e, have) {
			return true
		}
	}
	return false
}

// hasStar says whether list holds *.
func hasStar(list string) bool {
	for _, e := range strings.Split(list, ",") {
		if strings.TrimSpace(e) == "*" {
			return true
		}
	}
	return false
}

// modifiedAfter says whether modified (kept to 100 ns) is after t (a
// header's whole second): the comparison is in whole seconds, as
// Last-Modified is written.
func modifiedAfter(modified, t time.Time) bool {
	return modified.Truncate(time.Second).After(t)
}

// read checks the conditions of a read (Get Blob, Get Blob Properties,
// Get Block List, ...) against a resource that exists or not: a failed
// If-Match or If-Unmodified-Since is 412, a met If-None-Match or a failed
// If-Modified-Since is 304 (unless the other of the two says modified),
// and If-None-Match: * is unsatisfiable on a read. Then the lease: a
// lease ID given must be the resource's lease (l, as it stands now).
func (c conditions) read(exists bool, etag string, modified time.Time, l lease) *answer.Error {
	if e := c.readConditions(exists, etag, modified); e != nil {
		return e
	}
	return c.lease(exists, l, false)
}

// lease answers x-ms-lease-id on a resource that exists, after its
// conditions (checkLease): required says a locked resource needs the
// lease ID (a write or delete of a blob, Delete Container).
func (c conditions) lease(exists bool, l lease, required bool) *answer.Error {
	if !exists {
		return nil
	}
	errs := blobLeaseErrors
	if c.onContainer {
		errs = containerLeaseErrors
	}
	return checkLease(l.current(c.now), c.leaseID, required, errs)
}

// readConditions is read without the lease.
func (c conditions) readConditions(exists bool, etag string, modified time.Time) *answer.Error {
	if c.list && !c.readLists {
		return errMultipleConditions
	}
	if !exists {
		if c.hasMatch {
			return errConditionNotMet
		}
		if c.hasNoneMatch && hasStar(c.ifNoneMatch) {
			return errUnsatisfiable
		}
		return nil
	}
	if c.hasMatch && !anyETag(c.ifMatch, etag) {
		return errConditionNotMet
	}
	if c.hasUnmodSince && modifiedAfter(modified, c.unmodSince) {
		return errConditionNotMet
	}
	if c.hasNoneMatch && hasStar(c.ifNoneMatch) {
		return errUnsatisfiable
	}
	noneMatchPass, modPass := true, true
	if c.hasNoneMatch {
		noneMatchPass = !anyETag(c.ifNoneMatch, etag)
	}
	if c.hasModSince {
		modPass = modifiedAfter(modified, c.modifiedSince)
	}
	if c.hasNoneMatch && !noneMatchPass && !(c.hasModSince && modPass) {
		return errNotModified
	}
	if c.hasModSince && !modPass && !(c.hasNoneMatch && noneMatchPass) {
		return errNotModified
	}
	return nil
}

// write checks the conditions of a write against a resource that exists
// or not. At most two conditions may be combined, and If-None-Match or
// If-Modified-Since only alone; a failed condition is 412, If-Match on a
// missing resource fails. If-None-Match: * on an existing resource is
// left to the operation: a create answers 409 BlobAlreadyExists, the
// others ignore it. Then the lease (l, as it stands now): a locked
// resource needs its lease ID, unless leaseOptional.
func (c conditions) write(exists bool, etag string, modified time.Time, l lease) *answer.Error {
	if e := c.writeConditions(exists, etag, modified); e != nil {
		return e
	}
	return c.lease(exists, l, !c.leaseOptional)
}

// writeConditions is write without the lease.
func (c conditions) writeConditions(exists bool, etag string, modified time.Time) *answer.Error {
	n := 0
	for _, has := range []bool{c.hasMatch, c.hasNoneMatch, c.hasModSince, c.hasUnmodSince} {
		if has {
			n++
		}
	}
	if c.list || n > 2 || n == 2 && (c.hasNoneMatch != c.hasModSince) {
		return errMultipleConditions
	}
	if !exists {
		if c.hasNoneMatch {
			return nil
		}
		if c.hasMatch {
			return errConditionNotMet
		}
		return nil
	}
	switch {
	case c.hasNoneMatch:
		if !hasStar(c.ifNoneMatch) && anyETag(c.ifNoneMatch, etag) {
			return errConditionNotMet
		}
	case c.hasMatch:
		if !anyETag(c.ifMatch, etag) {
			return errConditionNotMet
		}
	case c.hasModSince:
		if !modifiedAfter(modified, c.modifiedSince) {
			return errConditionNotMet
		}
	case c.hasUnmodSince:
		if modifiedAfter(modified, c.unmodSince) {
			return errConditionNotMet
		}
	}
	return nil
}

// createOnly says whether the request asks to create only
// (If-None-Match: *).
func (c conditions) createOnly() bool { return c.hasNoneMatch && hasStar(c.ifNoneMatch) }

// existing is the blob named name in c, whose lock the caller holds,
// when it exists and cond's write conditions (x-ms-if-tags too) hold for
// it; otherwise the answer: the failed condition, or 404 BlobNotFound.
func (cond conditions) existing(c *container, name string) (*blob, *answer.Error) {
	b := c.blobs[name]
	if b == nil {
		if e := cond.write(false, "", time.Time{}, lease{}); e != nil {
			return nil, e
		}
		return nil, errBlobNotFound
	}
	if e := cond.write(true, b.etag, b.modified, b.lease); e != nil {
		return nil, e
	}
	if !cond.tagsMet(b.tags) {
		return nil, errConditionNotMet
	}
	return b, nil
}

// replacing checks cond for a write of a whole blob (Put Blob, Put Blob
// From URL, Put Block List, Copy Blob) against old, the blob it replaces
// (nil when there is none), in a container whose lock the caller holds:
// the write conditions and the lease, then, on an existing blob,
// If-None-Match: * (409 BlobAlreadyExists) and x-ms-if-tags (412
// ConditionNotMet). A blob that does not exist is written whatever
// x-ms-if-tags says.
func (cond conditions) replacing(old *blob) *answer.Error {
	if old == nil {
		return cond.write(false, "", time.Time{}, lease{})
	}
	if e := cond.write(true, old.etag, old.modified, old.lease); e != nil {
		return e
	}
	if cond.createOnly() {
		return errBlobAlreadyExists
	}
	if !cond.tagsMet(old.tags) {
		return errConditionNotMet
	}
	return nil
}

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
}

// parseConditions reads If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since. The Blob service takes one ETag per header (more
// is 400); a date it cannot read is ignored, as HTTP says.
func parseConditions(h http.Header) (conditions, *answer.Error) {
	var c conditions
	if v := h.Get("If-Match"); v != "" {
		if strings.Contains(v, ",") {
			return c, errMultipleConditions
		}
		c.ifMatch, c.hasMatch = strings.TrimSpace(v), true
	}
	if v := h.Get("If-None-Match"); v != "" {
		if strings.Contains(v, ",") {
			return c, errMultipleConditions
		}
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
	return c, nil
}

// etagMatches compares an ETag from a request with the resource's, with
// or without quotes.
func etagMatches(want, have string) bool {
	return strings.Trim(want, `"`) == strings.Trim(have, `"`)
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
// and If-None-Match: * is unsatisfiable on a read.
func (c conditions) read(exists bool, etag string, modified time.Time) *answer.Error {
	if !exists {
		if c.hasMatch {
			return errConditionNotMet
		}
		if c.hasNoneMatch && c.ifNoneMatch == "*" {
			return errUnsatisfiable
		}
		return nil
	}
	if c.hasMatch && c.ifMatch != "*" && !etagMatches(c.ifMatch, etag) {
		return errConditionNotMet
	}
	if c.hasUnmodSince && modifiedAfter(modified, c.unmodSince) {
		return errConditionNotMet
	}
	if c.hasNoneMatch && c.ifNoneMatch == "*" {
		return errUnsatisfiable
	}
	noneMatchPass, modPass := true, true
	if c.hasNoneMatch {
		noneMatchPass = !etagMatches(c.ifNoneMatch, etag)
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
// others ignore it.
func (c conditions) write(exists bool, etag string, modified time.Time) *answer.Error {
	n := 0
	for _, has := range []bool{c.hasMatch, c.hasNoneMatch, c.hasModSince, c.hasUnmodSince} {
		if has {
			n++
		}
	}
	if n > 2 || n == 2 && (c.hasNoneMatch != c.hasModSince) {
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
		if c.ifNoneMatch != "*" && etagMatches(c.ifNoneMatch, etag) {
			return errConditionNotMet
		}
	case c.hasMatch:
		if c.ifMatch != "*" && !etagMatches(c.ifMatch, etag) {
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
func (c conditions) createOnly() bool { return c.hasNoneMatch && c.ifNoneMatch == "*" }

// existing is the blob named name in c, whose lock the caller holds,
// when it exists and cond's write conditions hold for it; otherwise the
// answer: the failed condition, or 404 BlobNotFound.
func (cond conditions) existing(c *container, name string) (*blob, *answer.Error) {
	b := c.blobs[name]
	if b == nil {
		if e := cond.write(false, "", time.Time{}); e != nil {
			return nil, e
		}
		return nil, errBlobNotFound
	}
	if e := cond.write(true, b.etag, b.modified); e != nil {
		return nil, e
	}
	return b, nil
}

package blobs

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
)

// leaseState is a lease's state as x-ms-lease-state writes it. The zero
// value is available (no lease).
type leaseState uint8

const (
	leaseAvailable leaseState = iota
	leaseLeased
	leaseExpired
	leaseBreaking
	leaseBroken
)

// String is the state as x-ms-lease-state and LeaseState write it.
func (s leaseState) String() string {
	switch s {
	case leaseLeased:
		return "leased"
	case leaseExpired:
		return "expired"
	case leaseBreaking:
		return "breaking"
	case leaseBroken:
		return "broken"
	}
	return "available"
}

// lease is a blob's or a container's lease as stored: its state when it
// was last changed, and the times at which it changes by itself (a fixed
// lease expires, a breaking one becomes broken). at computes the state
// now; nothing rewrites a lease when the clock passes those times.
type lease struct {
	state leaseState
	id    string
	// seconds is a leased lease's duration: -1 for an infinite one, 15
	// to 60 for a fixed one, which ends at expires.
	seconds int
	expires time.Time
	// breakAt is when a breaking lease becomes broken.
	breakAt time.Time
}

// at is the lease as it stands at now.
func (l lease) at(now time.Time) lease {
	switch {
	case l.state == leaseLeased && l.seconds > 0 && !now.Before(l.expires):
		l.state = leaseExpired
	case l.state == leaseBreaking && !now.Before(l.breakAt):
		l.state = leaseBroken
	}
	return l
}

// current is the lease as it stands at now(). Only a fixed lease or a
// breaking one changes with the clock, so the others never read it: a
// blob without a lease costs a read or write nothing.
func (l lease) current(now func() time.Time) lease {
	if l.state == leaseLeased && l.seconds > 0 || l.state == leaseBreaking {
		return l.at(now())
	}
	return l
}

// locked is x-ms-lease-status: a leased or breaking lease locks the
// resource against writes without its ID.
func (l lease) locked() bool { return l.state == leaseLeased || l.state == leaseBreaking }

// status is x-ms-lease-status.
func (l lease) status() string {
	if l.locked() {
		return "locked"
	}
	return "unlocked"
}

// duration is x-ms-lease-duration, set only while the lease is leased.
func (l lease) duration() string {
	switch {
	case l.state != leaseLeased:
		return ""
	case l.seconds < 0:
		return "infinite"
	}
	return "fixed"
}

// setLeaseHeaders writes the lease's state, status and duration as Get
// Blob, Get Blob Properties and Get Container Properties answer them.
func setLeaseHeaders(h http.Header, l lease) {
	h.Set("x-ms-lease-status", l.status())
	h.Set("x-ms-lease-state", l.state.String())
	setIf(h, "x-ms-lease-duration", l.duration())
}

// The lease answers, in the words of "Blob service error codes" (REST
// docs), with "blob" or "container" where the docs write "blob/container".
// Their statuses and the cases each answers follow Azurite 3's lease
// states (src/blob/lease), which follow the docs' table of lease
// actions by state ("Lease Blob", "Lease Container").
type leaseErrors struct {
	idMissing, idMismatch, notPresent, lost      *answer.Error // 412, on other operations
	alreadyPresent, opMismatch, opNotPresent     *answer.Error // 409, on lease operations
	breakingAcquire, breakingChange, brokenRenew *answer.Error
}

func newLeaseErrors(what string) *leaseErrors {
	op := "Blob"
	if what == "container" {
		op = "Container"
	}
	return &leaseErrors{
		idMissing:       answer.New(http.StatusPreconditionFailed, "LeaseIdMissing", "There is currently a lease on the "+what+" and no lease ID was specified in the request."),
		idMismatch:      answer.New(http.StatusPreconditionFailed, "LeaseIdMismatchWith"+op+"Operation", "The lease ID specified did not match the lease ID for the "+what+"."),
		notPresent:      answer.New(http.StatusPreconditionFailed, "LeaseNotPresentWith"+op+"Operation", "There is currently no lease on the "+what+"."),
		lost:            answer.New(http.StatusPreconditionFailed, "LeaseLost", "A lease ID was specified, but the lease for the "+what+" has expired."),
		alreadyPresent:  answer.New(http.StatusConflict, "LeaseAlreadyPresent", "There is already a lease present."),
		opMismatch:      answer.New(http.StatusConflict, "LeaseIdMismatchWithLeaseOperation", "The lease ID specified did not match the lease ID for the "+what+"."),
		opNotPresent:    answer.New(http.StatusConflict, "LeaseNotPresentWithLeaseOperation", "There is currently no lease on the "+what+"."),
		breakingAcquire: answer.New(http.StatusConflict, "LeaseIsBreakingAndCannotBeAcquired", "The lease ID matched, but the lease is currently in breaking state and cannot be acquired until it is broken."),
		breakingChange:  answer.New(http.StatusConflict, "LeaseIsBreakingAndCannotBeChanged", "The lease ID matched, but the lease is currently in breaking state and cannot be changed."),
		brokenRenew:     answer.New(http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed", "The lease ID matched, but the lease has been broken explicitly and cannot be renewed."),
	}
}

var (
	blobLeaseErrors      = newLeaseErrors("blob")
	containerLeaseErrors = newLeaseErrors("container")
)

// sameLeaseID compares lease IDs (GUIDs) ignoring case.
func sameLeaseID(a, b string) bool { return strings.EqualFold(a, b) }

// checkLease is the lease condition of an operation on a resource with
// lease l (as it stands now): with required (a write or delete of a
// blob, Delete Container), a locked resource needs its lease ID (412
// LeaseIdMissing without one); with or without, a lease ID given must be
// the lease's (412 LeaseIdMismatchWith...Operation) and a lease must be
// there (412 LeaseNotPresentWith...Operation; 412 LeaseLost when it
// expired or was broken). Azurite's
// BlobWriteLeaseValidator, BlobReadLeaseValidator and the container
// validators decide the same way; the docs of each operation say when
// x-ms-lease-id is required.
func checkLease(l lease, id string, required bool, errs *leaseErrors) *answer.Error {
	switch {
	case l.locked() && id == "":
		if required {
			return errs.idMissing
		}
		return nil
	case l.locked() && !sameLeaseID(id, l.id):
		return errs.idMismatch
	case !l.locked() && id != "" && (l.state == leaseExpired || l.state == leaseBroken):
		// Azure answers a lease ID sent after the lease ran out or was
		// broken so (the Python SDK's recordings of 2019: a blob's
		// expired and broken leases, a container's expired one), as the
		// docs' error codes list it; Azurite keeps the code below with
		// this message.
		return errs.lost
	case !l.locked() && id != "":
		return errs.notPresent
	}
	return nil
}

// leaseRequest is a Lease Blob or Lease Container request's headers.
type leaseRequest struct {
	action      string
	id          string // x-ms-lease-id
	proposed    string // x-ms-proposed-lease-id
	seconds     int    // x-ms-lease-duration, for acquire
	breakPeriod int    // x-ms-lease-break-period; -1 when absent
}

// parseLeaseRequest reads the headers of a lease request: the action, and
// what it needs (acquire: a duration of -1 or 15 to 60 seconds and
// maybe a proposed ID; renew and release: the lease ID; change: both IDs;
// break: maybe a period of 0 to 60 seconds). A missing header is 400
// MissingRequiredHeader, a value out of range 400 InvalidHeaderValue
// (Azurite's getInvalidLeaseDuration and getInvalidLeaseBreakPeriod, and
// the docs' ranges).
func parseLeaseRequest(h http.Header) (leaseRequest, *answer.Error) {
	lr := leaseRequest{action: strings.ToLower(h.Get("x-ms-lease-action")), id: h.Get("x-ms-lease-id"),
		proposed: h.Get("x-ms-proposed-lease-id"), breakPeriod: -1}
	need := func(name, v string) *answer.Error {
		if v == "" {
			return answer.MissingHeader(name)
		}
		return nil
	}
	if lr.proposed != "" && !validGUID(lr.proposed) {
		return lr, answer.InvalidHeader("x-ms-proposed-lease-id", lr.proposed)
	}
	if lr.id != "" && !validGUID(lr.id) {
		return lr, answer.InvalidHeader("x-ms-lease-id", lr.id)
	}
	switch lr.action {
	case "acquire":
		v := h.Get("x-ms-lease-duration")
		if e := need("x-ms-lease-duration", v); e != nil {
			return lr, e
		}
		n, err := strconv.Atoi(v)
		if err != nil || n != azrules.InfiniteLease && (n < azrules.MinLeaseSeconds || n > azrules.MaxLeaseSeconds) {
			return lr, answer.InvalidHeader("x-ms-lease-duration", v)
		}
		lr.seconds = n
	case "renew", "release":
		if e := need("x-ms-lease-id", lr.id); e != nil {
			return lr, e
		}
	case "change":
		if e := need("x-ms-lease-id", lr.id); e != nil {
			return lr, e
		}
		if e := need("x-ms-proposed-lease-id", lr.proposed); e != nil {
			return lr, e
		}
	case "break":
		if v := h.Get("x-ms-lease-break-period"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > azrules.MaxLeaseBreakSeconds {
				return lr, answer.InvalidHeader("x-ms-lease-break-period", v)
			}
			lr.breakPeriod = n
		}
	case "":
		return lr, answer.MissingHeader("x-ms-lease-action")
	default:
		return lr, answer.InvalidHeader("x-ms-lease-action", h.Get("x-ms-lease-action"))
	}
	return lr, nil
}

// validGUID says whether s is a GUID in one of the forms .NET's Guid
// parser takes that clients send: 32 hex digits, with hyphens (8-4-4-4-12)
// or without, and optionally in braces or parentheses.
func validGUID(s string) bool {
	if len(s) == 38 && (s[0] == '{' && s[37] == '}' || s[0] == '(' && s[37] == ')') {
		s = s[1:37]
	}
	switch len(s) {
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return false
		}
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	case 32:
	default:
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// newLeaseID is a random GUID (version 4), for an acquire without a
// proposed ID.
func newLeaseID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// apply runs lr on the lease l (as it stands at now) and returns the new
// lease, or the refusal. The transitions are the docs' table ("Lease
// Blob", Remarks) as Azurite 3 implements them.
func (lr leaseRequest) apply(l lease, now time.Time, errs *leaseErrors) (lease, *answer.Error) {
	acquired := func(id string) lease {
		if id == "" {
			id = newLeaseID()
		}
		n := lease{state: leaseLeased, id: id, seconds: lr.seconds}
		if lr.seconds > 0 {
			n.expires = now.Add(time.Duration(lr.seconds) * time.Second)
		}
		return n
	}
	broken := lease{state: leaseBroken, id: l.id}
	switch lr.action {
	case "acquire":
		switch l.state {
		case leaseLeased:
			if !sameLeaseID(lr.proposed, l.id) {
				return l, errs.alreadyPresent
			}
			return acquired(l.id), nil
		case leaseBreaking:
			if sameLeaseID(lr.proposed, l.id) {
				return l, errs.breakingAcquire
			}
			return l, errs.alreadyPresent
		}
		return acquired(lr.proposed), nil
	case "renew":
		if l.state == leaseAvailable || !sameLeaseID(lr.id, l.id) {
			return l, errs.opMismatch
		}
		switch l.state {
		case leaseBreaking, leaseBroken:
			return l, errs.brokenRenew
		}
		if l.seconds > 0 {
			l.state, l.expires = leaseLeased, now.Add(time.Duration(l.seconds)*time.Second)
		}
		return l, nil
	case "change":
		switch l.state {
		case leaseLeased:
			if !sameLeaseID(lr.id, l.id) && !sameLeaseID(lr.proposed, l.id) {
				return l, errs.opMismatch
			}
			l.id = lr.proposed
			return l, nil
		case leaseBreaking:
			if sameLeaseID(lr.id, l.id) {
				return l, errs.breakingChange
			}
			return l, errs.opMismatch
		}
		return l, errs.opNotPresent
	case "release":
		if l.state == leaseAvailable || !sameLeaseID(lr.id, l.id) {
			return l, errs.opMismatch
		}
		return lease{}, nil
	}
	// break
	switch l.state {
	case leaseAvailable:
		return l, errs.opNotPresent
	case leaseExpired, leaseBroken:
		return broken, nil
	}
	var until time.Time
	switch {
	case lr.breakPeriod == 0:
		return broken, nil
	case l.state == leaseBreaking && lr.breakPeriod < 0:
		return l, nil
	case l.state == leaseBreaking:
		until = minTime(l.breakAt, now.Add(time.Duration(lr.breakPeriod)*time.Second))
	case l.seconds < 0 && lr.breakPeriod < 0:
		// An infinite lease breaks at once unless a period is given.
		return broken, nil
	case l.seconds < 0:
		until = now.Add(time.Duration(lr.breakPeriod) * time.Second)
	case lr.breakPeriod < 0:
		until = l.expires
	default:
		until = minTime(l.expires, now.Add(time.Duration(lr.breakPeriod)*time.Second))
	}
	return lease{state: leaseBreaking, id: l.id, breakAt: until}, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// answerLease writes a lease operation's answer: 201 for acquire, 202
// for break (with x-ms-lease-time, the seconds left before the lease is
// broken), 200 otherwise; x-ms-lease-id on all but release and break.
func answerLease(q *request, lr leaseRequest, l lease, now time.Time, etag string, modified time.Time) {
	h := setVersion(q, etag, modified)
	status := http.StatusOK
	switch lr.action {
	case "acquire":
		status = http.StatusCreated
	case "break":
		status = http.StatusAccepted
		left := 0
		if l.state == leaseBreaking {
			left = int((l.breakAt.Sub(now) + time.Second - 1) / time.Second)
		}
		h.Set("x-ms-lease-time", strconv.Itoa(left))
	}
	if lr.action != "release" && lr.action != "break" {
		h.Set("x-ms-lease-id", l.id)
	}
	q.w.WriteHeader(status)
}

// leaseBlob is Lease Blob. A lease changes neither the blob's ETag nor
// its Last-Modified. The write conditions (If-Match, ...) apply.
func (s *Service) leaseBlob(q *request) *answer.Error {
	lr, e := parseLeaseRequest(q.r.Header)
	if e != nil {
		return e
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	b := c.blobs[q.blob]
	if b == nil {
		if e := cond.writeConditions(false, "", time.Time{}); e != nil {
			return e
		}
		return errBlobNotFound
	}
	if e := cond.writeConditions(true, b.etag, b.modified); e != nil {
		return e
	}
	if !cond.tagsMet(b.tags) {
		return errConditionNotMet
	}
	now := s.cfg.Now()
	l, e := lr.apply(b.lease.at(now), now, blobLeaseErrors)
	if e != nil {
		return e
	}
	// Readers hold views, never the blob: the lease changes in place.
	b.lease = l
	q.pending = s.saveBlob(c, q.blob, b, content{})
	answerLease(q, lr, l, now, b.etag, b.modified)
	return nil
}

// leaseContainer is Lease Container. If-Modified-Since and
// If-Unmodified-Since apply; If-Match and If-None-Match are 400, as on
// the container's other writes.
func (s *Service) leaseContainer(q *request) *answer.Error {
	lr, e := parseLeaseRequest(q.r.Header)
	if e != nil {
		return e
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	if cond.hasMatch || cond.hasNoneMatch {
		return errUnsupportedCondition
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	if e := cond.writeConditions(true, c.etag, c.modified); e != nil {
		return e
	}
	now := s.cfg.Now()
	l, e := lr.apply(c.lease.at(now), now, containerLeaseErrors)
	if e != nil {
		return e
	}
	c.lease = l
	q.pending = s.saveContainer(c, false)
	answerLease(q, lr, l, now, c.etag, c.modified)
	return nil
}

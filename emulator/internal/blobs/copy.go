package blobs

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// copyInfo is what a blob written by Copy Blob or Copy Blob From URL
// keeps of the copy: its ID, its source as the request named it, its
// status, progress and completion time. A copy within the account is
// complete when Copy Blob answers (status success), as Azurite's are;
// Azure may answer pending and finish later, which clients poll for
// (x-ms-copy-status), so a complete copy is one of Azure's answers.
type copyInfo struct {
	id, source, status, progress string
	completed                    time.Time
}

var (
	errSourceConditionNotMet = answer.New(http.StatusPreconditionFailed, "SourceConditionNotMet", "The source condition specified using HTTP conditional header(s) is not met.")
	errCopyIDMismatch        = answer.New(http.StatusConflict, "CopyIdMismatch", "The specified copy ID did not match the copy ID for the pending copy operation.")
	errNoPendingCopy         = answer.New(http.StatusConflict, "NoPendingCopyOperation", "There is currently no pending copy operation.")
)

// copySource is a copy's source as the service found it.
type copySource struct {
	container, blob, snapshot string
}

// parseCopySource reads x-ms-copy-source: a URL naming a blob (or a
// snapshot of one) of this account or of another the emulator serves
// (from), path-style as the emulator serves them
// (/ACCOUNT/CONTAINER/BLOB; the host is not compared: the emulator is
// reached under many names). A URL it cannot read is 400
// InvalidHeaderValue; a blob of an account the emulator does not serve
// is 501: the emulator fetches nothing from outside.
func (s *Service) parseCopySource(v string) (from *Service, src copySource, u *url.URL, e *answer.Error) {
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, copySource{}, nil, answer.InvalidHeader("x-ms-copy-source", v)
	}
	account, rest, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	cname, bname, _ := strings.Cut(rest, "/")
	if from = s.peer(account); from == nil {
		return nil, copySource{}, nil, errNotImplemented("copies from outside the accounts it serves (x-ms-copy-source names account " + strconv.Quote(account) + ")")
	}
	if cname == "" || bname == "" {
		return nil, copySource{}, nil, answer.InvalidHeader("x-ms-copy-source", v)
	}
	return from, copySource{container: cname, blob: bname, snapshot: u.Query().Get("snapshot")}, u, nil
}

// parseSourceConditions reads the x-ms-source-if-* headers, and
// x-ms-source-if-tags, as conditions on a copy's source.
func parseSourceConditions(h http.Header, now func() time.Time) (conditions, *answer.Error) {
	sh := http.Header{}
	for k, name := range map[string]string{"If-Match": "x-ms-source-if-match", "If-None-Match": "x-ms-source-if-none-match",
		"If-Modified-Since": "x-ms-source-if-modified-since", "If-Unmodified-Since": "x-ms-source-if-unmodified-since"} {
		if v := h.Get(name); v != "" {
			sh.Set(k, v)
		}
	}
	c, e := parseConditions(sh, now)
	if e != nil {
		return c, e
	}
	c.ifTags, e = ifTagsCondition(h, "x-ms-source-if-tags")
	return c, e
}

// copyBlob is Copy Blob (PUT with x-ms-copy-source) and, with
// x-ms-requires-sync: true, Copy Blob From URL: the destination becomes
// the source's content, properties and type, with the request's metadata
// or else the source's; it keeps its own lease. 202 with x-ms-copy-id and
// x-ms-copy-status: success (see copyInfo).
func (s *Service) copyBlob(q *request) *answer.Error {
	h := q.r.Header
	sync := strings.EqualFold(h.Get("x-ms-requires-sync"), "true")
	from, src, u, e := s.parseCopySource(h.Get("x-ms-copy-source"))
	if e != nil {
		return e
	}
	cond, e := parseConditions(h, s.cfg.Now)
	if e != nil {
		return e
	}
	scond, e := parseSourceConditions(h, s.cfg.Now)
	if e != nil {
		return e
	}
	md, e := parseMetadata(h)
	if e != nil {
		return e
	}
	tags, _, e := parseTagsHeader(h)
	if e != nil {
		return e
	}
	v, e := s.readCopySource(q, from, u, src, scond, sync)
	if e != nil {
		return e
	}
	if sync && v.kind != blockBlob {
		// Copy Blob From URL copies block blobs only (REST "Copy Blob
		// From URL").
		return errInvalidBlobType
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	old := c.blobs[q.blob]
	// Copy Blob is not among the overwrites an archived blob refuses
	// (replaceable).
	if e := cond.replacing(old); e != nil {
		return e
	}
	if md == nil {
		md = v.meta
	}
	now, etag := s.clock.next()
	created := now
	if old != nil {
		created = old.created
	}
	size := strconv.FormatInt(v.size(), 10)
	nb := &blob{kind: v.kind, data: slices.Clip(v.data), page: v.page, blocks: v.blocks, appended: v.appended,
		sealed: v.sealed && strings.EqualFold(h.Get("x-ms-seal-blob"), "true"),
		meta:   md, tags: tags, props: v.props, etag: etag, modified: now, created: created,
		copy: copyInfo{id: newLeaseID(), source: h.Get("x-ms-copy-source"), status: "success",
			progress: size + "/" + size, completed: now}}
	rh := s.replaceBlob(q, c, nb)
	rh.Set("x-ms-copy-id", nb.copy.id)
	rh.Set("x-ms-copy-status", "success")
	if sync && v.props.contentMD5 != nil {
		rh.Set("Content-MD5", encodeMD5(v.props.contentMD5))
	}
	q.w.WriteHeader(http.StatusAccepted)
	return nil
}

// abortCopy is Abort Copy Blob: every copy in the emulator is complete
// when it answers, so a copy ID naming the blob's last copy is 409
// NoPendingCopyOperation and any other 409 CopyIdMismatch.
func (s *Service) abortCopy(q *request) *answer.Error {
	id := q.query.Get("copyid")
	if id == "" {
		return answer.MissingQueryParameter("copyid")
	}
	if a := q.r.Header.Get("x-ms-copy-action"); a == "" {
		return answer.MissingHeader("x-ms-copy-action")
	} else if !strings.EqualFold(a, "abort") {
		return answer.InvalidHeader("x-ms-copy-action", a)
	}
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	b := c.blobs[q.blob]
	var v view
	if b != nil {
		v = b.view()
	}
	c.mu.RUnlock()
	if b == nil {
		return errBlobNotFound
	}
	if e := checkLease(v.lease.current(s.cfg.Now), q.r.Header.Get("x-ms-lease-id"), true, blobLeaseErrors); e != nil {
		return e
	}
	if v.copy.id != id {
		return errCopyIDMismatch
	}
	return errNoPendingCopy
}

// setCopyHeaders writes a copied blob's copy properties, as Get Blob and
// Get Blob Properties answer them.
func setCopyHeaders(h http.Header, ci copyInfo) {
	if ci.id == "" {
		return
	}
	h.Set("x-ms-copy-id", ci.id)
	h.Set("x-ms-copy-source", ci.source)
	h.Set("x-ms-copy-status", ci.status)
	h.Set("x-ms-copy-progress", ci.progress)
	h.Set("x-ms-copy-completion-time", httpTime(ci.completed))
}

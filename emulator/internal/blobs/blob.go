package blobs

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"hash/crc64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/body"
)

// crc64Table is Azure Storage's CRC-64 (polynomial 0x9A6C9329AC4BC9B5),
// the one x-ms-content-crc64 carries, little-endian.
var crc64Table = crc64.MakeTable(0x9A6C9329AC4BC9B5)

// Size limits of request bodies.
const (
	maxPutBlob        = 5000 << 20 // Put Blob, versions 2019-12-12 and later
	maxPutBlock       = 4000 << 20 // Put Block, versions 2019-12-12 and later
	maxAppendBlock    = 100 << 20  // Append Block, versions 2022-11-02 and later
	maxAppendBlockOld = 4 << 20    // Append Block, earlier versions
	maxBlockList      = 50000
	maxUncommitted    = 100000
	maxRangeMD5       = 4 << 20 // x-ms-range-get-content-md5 covers at most 4 MiB
	maxBlockIDBytes   = 64
)

// getBlob is Get Blob (GET) and Get Blob Properties (HEAD).
func (s *Service) getBlob(q *request) *answer.Error {
	v, e := s.readBlob(q)
	if e != nil {
		return e
	}
	h := q.w.Header()
	size := v.size()
	if at := q.query.Get("snapshot"); at != "" {
		h.Set("x-ms-snapshot", at)
	}
	if q.r.Method == http.MethodHead {
		setCommon(h, q.r)
		setBlobHeaders(h, v, s.cfg.Now)
		setOverrides(h, q)
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		if v.props.contentMD5 != nil {
			h.Set("Content-MD5", base64.StdEncoding.EncodeToString(v.props.contentMD5))
		}
		if v.kind == blockBlob {
			setTierHeaders(h, v.tiering.current(s.cfg.Now))
		}
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	if v.tiering.current(s.cfg.Now).archived() {
		return errBlobArchived
	}
	start, end, ranged := parseRange(q.r.Header)
	if ranged {
		if start >= size {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			return errInvalidRange
		}
		end = min(end, size-1)
	} else {
		start, end = 0, size-1
	}
	n := end - start + 1
	rangeMD5 := strings.EqualFold(q.r.Header.Get("x-ms-range-get-content-md5"), "true")
	if rangeMD5 && (!ranged || n > maxRangeMD5) {
		return answer.OutOfRangeInput()
	}
	setCommon(h, q.r)
	setBlobHeaders(h, v, s.cfg.Now)
	setOverrides(h, q)
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	status := http.StatusOK
	switch {
	case ranged:
		status = http.StatusPartialContent
		h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(end, 10)+"/"+strconv.FormatInt(size, 10))
		if rangeMD5 {
			h.Set("Content-MD5", base64.StdEncoding.EncodeToString(v.rangeMD5(start, end)))
		}
		if v.props.contentMD5 != nil {
			h.Set("x-ms-blob-content-md5", base64.StdEncoding.EncodeToString(v.props.contentMD5))
		}
	case v.props.contentMD5 != nil:
		h.Set("Content-MD5", base64.StdEncoding.EncodeToString(v.props.contentMD5))
	}
	q.w.WriteHeader(status)
	v.writeBody(q.w, start, end)
	return nil
}

// readBlob copies out the blob q names, as a read under q's conditions
// sees it; otherwise the answer: a condition that cannot be read,
// ContainerNotFound, a failed condition, or BlobNotFound.
func (s *Service) readBlob(q *request) (view, *answer.Error) {
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return view{}, e
	}
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return view{}, e
	}
	var v view
	b := c.blobs[q.blob]
	if at := q.query.Get("snapshot"); b != nil && at != "" {
		b = b.snapshotAt(at)
	}
	if b != nil {
		v = b.view()
	}
	c.mu.RUnlock()
	if e := cond.read(b != nil, v.etag, v.modified, v.lease); e != nil {
		return view{}, e
	}
	if b == nil {
		return view{}, errBlobNotFound
	}
	if !cond.tagsMet(v.tags) {
		return view{}, errConditionNotMet
	}
	return v, nil
}

// parseRange reads x-ms-range, or Range when it is absent:
// bytes=START-END or bytes=START-. A value it cannot read, or one whose
// end is before its start, is ignored (the whole blob is the answer),
// as HTTP says of a Range header.
func parseRange(h http.Header) (start, end int64, ok bool) {
	v := h.Get("x-ms-range")
	if v == "" {
		v = h.Get("Range")
	}
	spec, found := strings.CutPrefix(strings.TrimSpace(v), "bytes=")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if b == "" {
		return start, 1<<63 - 1, true
	}
	end, err = strconv.ParseInt(b, 10, 64)
	if err != nil || end < start {
		return 0, 0, false
	}
	return start, end, true
}

// setBlobHeaders sets the headers Get Blob and Get Blob Properties
// share.
func setBlobHeaders(h http.Header, v view, now func() time.Time) {
	h.Set("Last-Modified", httpTime(v.modified))
	h.Set("x-ms-creation-time", httpTime(v.created))
	h.Set("ETag", v.etag)
	h.Set("Content-Type", v.props.contentType)
	setIf(h, "Content-Encoding", v.props.contentEncoding)
	setIf(h, "Content-Language", v.props.contentLanguage)
	setIf(h, "Content-Disposition", v.props.contentDisposition)
	setIf(h, "Cache-Control", v.props.cacheControl)
	h.Set("x-ms-blob-type", v.kind.String())
	if v.kind == appendBlob {
		h.Set("x-ms-blob-committed-block-count", strconv.Itoa(v.committed))
		if v.sealed {
			h.Set("x-ms-blob-sealed", "true")
		}
	}
	if v.kind == pageBlob {
		h.Set("x-ms-blob-sequence-number", strconv.FormatInt(v.page.seq, 10))
	}
	setLeaseHeaders(h, v.lease.current(now))
	setCopyHeaders(h, v.copy)
	h.Set("x-ms-server-encrypted", "true")
	h.Set("Accept-Ranges", "bytes")
	setMetadataHeaders(h, v.meta)
	setTagCount(h, v.tags)
}

func setIf(h http.Header, k, v string) {
	if v != "" {
		h.Set(k, v)
	}
}

// getBlobMetadata is Get Blob Metadata.
func (s *Service) getBlobMetadata(q *request) *answer.Error {
	v, e := s.readBlob(q)
	if e != nil {
		return e
	}
	h := setVersion(q, v.etag, v.modified)
	setMetadataHeaders(h, v.meta)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// deleteBlob is Delete Blob: 202, and the blob's uncommitted blocks go
// with it. A blob with snapshots is deleted with them
// (x-ms-delete-snapshots: include), or only they are (only); without
// the header it is 409 SnapshotsPresent (REST "Delete Blob"; Azurite
// answers the same). A snapshot (?snapshot=) is deleteSnapshot.
func (s *Service) deleteBlob(q *request) *answer.Error {
	if q.query.Has("snapshot") {
		return s.deleteSnapshot(q)
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	snaps, e := parseDeleteSnapshots(q.r.Header)
	if e != nil {
		return e
	}
	c, b, e := s.lockExisting(q, cond)
	if e != nil {
		return e
	}
	switch {
	case snaps == "only":
		b.snapshots = nil
		q.pending = s.saveBlob(c, q.blob, b, content{dropSnapshots: true})
	case len(b.snapshots) > 0 && snaps == "":
		c.mu.Unlock()
		return errSnapshotsPresent
	default:
		c.remove(q.blob)
		q.pending = s.saveBlob(c, q.blob, nil, content{})
	}
	c.mu.Unlock()
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("x-ms-delete-type-permanent", "true")
	q.w.WriteHeader(http.StatusAccepted)
	return nil
}

// replaceable checks cond for a write that makes the blob q names anew
// (Put Blob of any type, Put Blob From URL, Put Block List) against old, the blob
// there or nil (conditions.replacing), and refuses to replace an archived
// blob: 409 BlobArchived, as Azurite refuses.
func (s *Service) replaceable(cond conditions, old *blob) *answer.Error {
	if e := cond.replacing(old); e != nil {
		return e
	}
	if old != nil && old.tiering.current(s.cfg.Now).archived() {
		return errBlobArchived
	}
	return nil
}

// lockReplaceable locks q's container and returns it with the blob q
// names (nil when there is none), when a write that makes that blob anew
// may replace it (replaceable); the caller unlocks c. A refusal leaves
// nothing locked.
func (s *Service) lockReplaceable(q *request, cond conditions) (*container, *blob, *answer.Error) {
	c, e := s.lockContainer(q.container)
	if e != nil {
		return nil, nil, e
	}
	old := c.blobs[q.blob]
	if e := s.replaceable(cond, old); e != nil {
		c.mu.Unlock()
		return nil, nil, e
	}
	return c, old, nil
}

// replaceBlob makes nb the blob q names in c, whose lock the caller holds
// (its lease and snapshots kept, its uncommitted blocks gone:
// container.put), writes it to the location, and returns the answer's
// headers with nb's ETag and Last-Modified.
func (s *Service) replaceBlob(q *request, c *container, nb *blob) http.Header {
	c.put(q.blob, nb)
	q.pending = s.saveBlob(c, q.blob, nb, content{replace: true})
	return setVersion(q, nb.etag, nb.modified)
}

// answerCreated ends the answer to a write of content: 201 with
// x-ms-request-server-encrypted: true (Azure encrypts what it stores).
func answerCreated(q *request) *answer.Error {
	q.w.Header().Set("x-ms-request-server-encrypted", "true")
	q.w.WriteHeader(http.StatusCreated)
	return nil
}

// update runs change on the existing blob q names, under the write
// conditions, with the write's time and ETag; change may refuse. It
// answers 200 with ETag and Last-Modified, plus what extra sets.
func (s *Service) update(q *request, change func(b *blob) *answer.Error, extra func(h http.Header, b *blob)) *answer.Error {
	return s.updateContent(q, func(b *blob) (content, *answer.Error) { return content{}, change(b) }, extra)
}

// updateContent is update for a change that also says what it does to
// the blob's stored content (a page blob resized smaller).
func (s *Service) updateContent(q *request, change func(b *blob) (content, *answer.Error), extra func(h http.Header, b *blob)) *answer.Error {
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	c, b, e := s.lockExisting(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	if b.tiering.current(s.cfg.Now).archived() {
		return errBlobArchived
	}
	// A blob is replaced, never changed in place: readers hold views.
	nb := *b
	ct, e := change(&nb)
	if e != nil {
		return e
	}
	nb.modified, nb.etag = s.clock.next()
	c.blobs[q.blob] = &nb
	q.pending = s.saveBlob(c, q.blob, &nb, ct)
	h := setVersion(q, nb.etag, nb.modified)
	if extra != nil {
		extra(h, &nb)
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// setBlobMetadata is Set Blob Metadata: it replaces the metadata.
func (s *Service) setBlobMetadata(q *request) *answer.Error {
	md, e := parseMetadata(q.r.Header)
	if e != nil {
		return e
	}
	return s.update(q, func(b *blob) *answer.Error {
		b.meta = md
		return nil
	}, func(h http.Header, _ *blob) { h.Set("x-ms-request-server-encrypted", "true") })
}

// setBlobProperties is Set Blob Properties: the content headers are
// replaced, an absent one cleared; a page blob's size and sequence
// number change too (page.go), and a request that changes only those
// leaves the content headers.
func (s *Service) setBlobProperties(q *request) *answer.Error {
	props, e := blobProps(q.r.Header, false)
	if e != nil {
		return e
	}
	pc, e := parsePageChange(q.r.Header)
	if e != nil {
		return e
	}
	return s.updateContent(q, func(b *blob) (content, *answer.Error) {
		ct, e := pc.apply(b)
		if e == nil && (pc.content || !pc.any()) {
			b.props = props
		}
		return ct, e
	}, func(h http.Header, b *blob) {
		if b.kind == pageBlob {
			h.Set("x-ms-blob-sequence-number", strconv.FormatInt(b.page.seq, 10))
		}
	})
}

// blobProps reads the x-ms-blob-content-* headers (and, for Put Blob,
// the plain content headers where those are absent). An empty content
// type is application/octet-stream.
func blobProps(h http.Header, plain bool) (contentProps, *answer.Error) {
	get := func(k string) string {
		if v := h.Get("x-ms-blob-" + k); v != "" || !plain {
			return v
		}
		return h.Get(k)
	}
	p := contentProps{
		contentType:        get("content-type"),
		contentEncoding:    get("content-encoding"),
		contentLanguage:    get("content-language"),
		cacheControl:       get("cache-control"),
		contentDisposition: h.Get("x-ms-blob-content-disposition"),
	}
	if p.contentType == "" {
		p.contentType = "application/octet-stream"
	}
	if v := h.Get("x-ms-blob-content-md5"); v != "" {
		sum, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(sum) != md5.Size {
			return p, errInvalidMD5
		}
		p.contentMD5 = sum
	}
	return p, nil
}

// requireNoBody refuses a request that must send no content (Put Blob of
// an append or page blob, Put Page clearing, Put Blob and Put Block From
// URL): a Content-Length past 0 is 400 InvalidHeaderValue naming it.
func requireNoBody(q *request) *answer.Error {
	if q.r.ContentLength > 0 {
		return answer.InvalidHeader("Content-Length", strconv.FormatInt(q.r.ContentLength, 10))
	}
	return nil
}

// readBody reads a request's body, at most limit bytes, once, into a
// buffer of its Content-Length (package body). Azure's upload operations
// require the length: a chunked body is 411 MissingContentLengthHeader,
// unread. A body cut by the server's read deadline is 500
// OperationTimedOut.
func readBody(q *request, limit int64) ([]byte, *answer.Error) {
	data, f := body.Require(q.r, limit)
	switch f {
	case body.OK:
		return data, nil
	case body.TooLarge:
		return nil, answer.RequestBodyTooLarge()
	case body.Required:
		return nil, answer.MissingContentLength()
	case body.TimedOut:
		return nil, answer.OperationTimedOut()
	case body.Unauthorized:
		return nil, answer.InternalError()
	}
	return nil, answer.InvalidInput()
}

// checksums checks a body against the request's Content-MD5 and
// x-ms-content-crc64 and returns what the answer carries: the MD5 when
// one was sent, the CRC-64 otherwise.
type checksums struct {
	md5, crc64 []byte
	sentMD5    bool
	sentCRC    bool
	data       []byte // the body, for an MD5 the request did not send
}

func checkBody(h http.Header, data []byte) (checksums, *answer.Error) {
	c := checksums{data: data}
	if v := h.Get("Content-MD5"); v != "" {
		want, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(want) != md5.Size {
			return c, errInvalidMD5
		}
		sum := md5.Sum(data)
		if !bytes.Equal(want, sum[:]) {
			// Azure names both sums (the JavaScript SDK's nock recordings
			// of a Put Blob with a wrong Content-MD5, 2020 and 2022).
			return c, errMD5Mismatch.WithDetails(
				answer.Detail{Name: "UserSpecifiedMd5", Value: base64.StdEncoding.EncodeToString(want)},
				answer.Detail{Name: "ServerCalculatedMd5", Value: base64.StdEncoding.EncodeToString(sum[:])})
		}
		c.md5, c.sentMD5 = sum[:], true
	}
	crc := make([]byte, 8)
	binary.LittleEndian.PutUint64(crc, crc64.Checksum(data, crc64Table))
	c.crc64 = crc
	if v := h.Get("x-ms-content-crc64"); v != "" {
		want, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(want) != 8 {
			return c, answer.InvalidHeader("x-ms-content-crc64", v)
		}
		if !bytes.Equal(want, crc) {
			return c, errCRC64Mismatch
		}
		c.sentCRC = true
	}
	return c, nil
}

// set writes the checksum headers of a Put Block, Append Block or Put
// Block List answer to r: Content-MD5 when the request sent one,
// x-ms-content-crc64 otherwise; before x-ms-version 2019-07-07, the body's
// Content-MD5 whether the request sent one or not. Azure answered so at
// 2018-11-09 and 2019-02-02 (the Python SDK's recordings of 2019: a Put
// Block List's MD5 is its block list's), and with the CRC-64 alone at
// 2020-04-08 (the .NET SDK's GetBlockListAsync, 2020); the versions
// between are not recorded.
func (c checksums) set(h http.Header, r *http.Request) {
	if !c.sentMD5 && !apiVersionAtLeast(r, "2019-07-07") {
		c.md5, c.sentMD5 = c.contentMD5(), true
	}
	if c.sentMD5 {
		h.Set("Content-MD5", base64.StdEncoding.EncodeToString(c.md5))
		return
	}
	h.Set("x-ms-content-crc64", base64.StdEncoding.EncodeToString(c.crc64))
}

// setWhole writes both checksum headers, whichever the request sent, as
// Azure answers a block blob written whole by Put Blob (a recorded
// session, azblob's TestBlobDownloadDataOffsetOutOfRange: neither sent,
// both answered) and the emulator Put Blob From URL.
func (c checksums) setWhole(h http.Header) {
	h.Set("Content-MD5", encodeMD5(c.contentMD5()))
	h.Set("x-ms-content-crc64", base64.StdEncoding.EncodeToString(c.crc64))
}

// contentMD5 is the body's MD5: the one the request sent, checked, or
// else computed.
func (c checksums) contentMD5() []byte {
	if c.sentMD5 {
		return c.md5
	}
	sum := md5.Sum(c.data)
	return sum[:]
}

// apiVersionAtLeast says whether the request's x-ms-version is at least
// v (dates compare as text).
func apiVersionAtLeast(r *http.Request, v string) bool {
	return r.Header.Get("x-ms-version") >= v
}

// encodeMD5 writes an MD5 sum as Content-MD5 carries it.
func encodeMD5(sum []byte) string { return base64.StdEncoding.EncodeToString(sum) }

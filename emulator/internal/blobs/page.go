package blobs

import (
	"crypto/md5"
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Page blobs: Put Blob with x-ms-blob-type: PageBlob creates one of a
// size (a multiple of 512 bytes, up to 8 TiB) that reads as zeros; Put
// Page (comp=page) writes or clears whole 512-byte pages; Get Page
// Ranges (comp=pagelist) lists the pages that hold data; Set Blob
// Properties resizes one and sets its sequence number, which Put Page's
// x-ms-if-sequence-number-* conditions compare. The content is sparse
// (pageranges.go). docs/EMULATOR.md gives the evidence for each answer.

// pageState is what a page blob has beyond every blob's: its size
// (x-ms-blob-content-length), its sequence number, its written pages.
type pageState struct {
	size  int64
	seq   int64
	pages pageSet
}

// maxPutPage is the most Put Page writes at once: 4 MiB (REST "Put
// Page"; more is 413).
const maxPutPage = 4 << 20

var (
	// Azure's error table ("Blob service error codes").
	errInvalidPageRange     = answer.New(http.StatusRequestedRangeNotSatisfiable, "InvalidPageRange", "The page range specified is invalid.")
	errSeqConditionNotMet   = answer.New(http.StatusPreconditionFailed, "SequenceNumberConditionNotMet", "The sequence number condition specified was not met.")
	errSeqIncrementTooLarge = answer.New(http.StatusConflict, "SequenceNumberIncrementTooLarge", "The sequence number increment cannot be performed because it would result in overflow of the sequence number.")
)

// size is the blob's length: a page blob's size, else its content's.
func (b *blob) size() int64 {
	if b.kind == pageBlob {
		return b.page.size
	}
	return int64(len(b.data))
}

// size is the blob's length, as (*blob).size.
func (v view) size() int64 {
	if v.kind == pageBlob {
		return v.page.size
	}
	return int64(len(v.data))
}

// writeBody writes bytes [start, end] of the blob to w (nothing when end
// < start).
func (v view) writeBody(w io.Writer, start, end int64) {
	if end < start {
		return
	}
	if v.kind == pageBlob {
		v.page.pages.writeTo(w, start, end)
		return
	}
	w.Write(v.data[start : end+1])
}

// rangeMD5 is the MD5 of bytes [start, end] of the blob.
func (v view) rangeMD5(start, end int64) []byte {
	h := md5.New()
	v.writeBody(h, start, end)
	return h.Sum(nil)
}

// parsePageBlobSize reads a page blob's size from header name: a
// multiple of 512 from 0 to 8 TiB, else 400 InvalidHeaderValue naming it
// (a recording of Azure's answer to x-ms-blob-content-length: 1).
func parsePageBlobSize(h http.Header, name string) (int64, *answer.Error) {
	v := h.Get(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n%pageSize != 0 || n > maxPageBlobSize {
		return 0, answer.InvalidHeader(name, v)
	}
	return n, nil
}

// parseSequenceNumber reads x-ms-blob-sequence-number: 0 to 2^63-1, else
// 400 InvalidHeaderValue (Azure's answer to -1, recorded).
func parseSequenceNumber(h http.Header) (int64, bool, *answer.Error) {
	v := h.Get("x-ms-blob-sequence-number")
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, false, answer.InvalidHeader("x-ms-blob-sequence-number", v)
	}
	return n, true, nil
}

// putPageBlob is Put Blob of a page blob: a new blob of
// x-ms-blob-content-length bytes, all zeros, no page written, with
// x-ms-blob-sequence-number (0 when absent). The request has no body.
// 201.
func (s *Service) putPageBlob(q *request) *answer.Error {
	h := q.r.Header
	cond, md, props, tags, e := parseWrite(h, true, s.cfg.Now)
	if e != nil {
		return e
	}
	if _, e := uploadTier(q.r, pageBlob, s.cfg.Now().UTC()); e != nil {
		return e
	}
	if h.Get("x-ms-blob-content-length") == "" {
		return answer.MissingHeader("x-ms-blob-content-length")
	}
	size, e := parsePageBlobSize(h, "x-ms-blob-content-length")
	if e != nil {
		return e
	}
	seq, _, e := parseSequenceNumber(h)
	if e != nil {
		return e
	}
	if e := requireNoBody(q); e != nil {
		// A page blob is created empty, as an append blob is.
		return e
	}
	c, _, e := s.lockReplaceable(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	now, etag := s.clock.next()
	s.replaceBlob(q, c, &blob{kind: pageBlob, page: pageState{size: size, seq: seq}, meta: md, tags: tags, props: props,
		etag: etag, modified: now, created: now})
	return answerCreated(q)
}

// seqConditions are Put Page's x-ms-if-sequence-number-le, -lt and -eq.
type seqConditions struct {
	le, lt, eq          int64
	hasLE, hasLT, hasEQ bool
}

// parseSeqConditions reads the sequence number conditions: a number that
// cannot be read is 400 InvalidHeaderValue, a negative one 400
// InvalidInput (Azure's answer to x-ms-if-sequence-number-le: -1,
// recorded).
func parseSeqConditions(h http.Header) (seqConditions, *answer.Error) {
	var c seqConditions
	for _, f := range []struct {
		name string
		n    *int64
		has  *bool
	}{
		{"x-ms-if-sequence-number-le", &c.le, &c.hasLE},
		{"x-ms-if-sequence-number-lt", &c.lt, &c.hasLT},
		{"x-ms-if-sequence-number-eq", &c.eq, &c.hasEQ},
	} {
		v := h.Get(f.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, answer.InvalidHeader(f.name, v)
		}
		if n < 0 {
			return c, answer.InvalidInput()
		}
		*f.n, *f.has = n, true
	}
	return c, nil
}

// check is 412 SequenceNumberConditionNotMet unless seq meets every
// condition.
func (c seqConditions) check(seq int64) *answer.Error {
	if c.hasLE && seq > c.le || c.hasLT && seq >= c.lt || c.hasEQ && seq != c.eq {
		return errSeqConditionNotMet
	}
	return nil
}

// parsePageRange reads Put Page's range, x-ms-range or else Range:
// bytes=START-END with both ends on page boundaries. Azure names the
// header Range in its answer whichever was sent (recorded: x-ms-range
// bytes=0-512 is 400 InvalidHeaderValue, HeaderName Range).
func parsePageRange(h http.Header) (start, end int64, e *answer.Error) {
	v := h.Get("x-ms-range")
	if v == "" {
		v = h.Get("Range")
	}
	if v == "" {
		return 0, 0, answer.MissingHeader("Range")
	}
	bad := answer.InvalidHeader("Range", v)
	a, b, ok := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	if !ok || !strings.HasPrefix(v, "bytes=") {
		return 0, 0, bad
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start || start%pageSize != 0 || (end+1)%pageSize != 0 {
		return 0, 0, bad
	}
	return start, end, nil
}

// putPage is Put Page: x-ms-page-write update writes the body (exactly
// the range's length, at most 4 MiB) into the range's pages; clear
// releases them (no body), after which they read as zeros. The range
// must lie within the blob; the blob must be a page blob meeting the
// sequence number conditions, the usual conditions and its lease. 201
// with x-ms-blob-sequence-number.
func (s *Service) putPage(q *request) *answer.Error {
	h := q.r.Header
	if h.Get("x-ms-copy-source") != "" {
		return errNotImplemented("Put Page From URL (x-ms-copy-source)")
	}
	cond, e := parseConditions(h, s.cfg.Now)
	if e != nil {
		return e
	}
	seq, e := parseSeqConditions(h)
	if e != nil {
		return e
	}
	var clearing bool
	switch v := h.Get("x-ms-page-write"); {
	case v == "":
		return answer.MissingHeader("x-ms-page-write")
	case strings.EqualFold(v, "update"):
	case strings.EqualFold(v, "clear"):
		clearing = true
	default:
		return answer.InvalidHeader("x-ms-page-write", v)
	}
	start, end, e := parsePageRange(h)
	if e != nil {
		return e
	}
	var data []byte
	var sums checksums
	if clearing {
		if e := requireNoBody(q); e != nil {
			return e
		}
		if v := h.Get("Content-MD5"); v != "" {
			// "The Content-MD5 header is not permitted when the
			// x-ms-page-write header is set to clear" (REST "Put Page":
			// 400).
			return errUnsupportedCondition.WithDetails(answer.Detail{Name: "HeaderName", Value: "Content-MD5"})
		}
	} else {
		n := end - start + 1
		if n > maxPutPage {
			return answer.RequestBodyTooLarge()
		}
		if q.r.ContentLength >= 0 && q.r.ContentLength != n {
			// "The Range and Content-Length headers must match" (REST
			// "Put Page").
			return errInvalidPageRange
		}
		if data, e = readBody(q, maxPutPage); e != nil {
			return e
		}
		if int64(len(data)) != n {
			return errInvalidPageRange
		}
		if sums, e = checkBody(h, data); e != nil {
			return e
		}
	}
	c, b, e := s.lockExisting(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	if b.kind != pageBlob {
		return errInvalidBlobType
	}
	if e := seq.check(b.page.seq); e != nil {
		return e
	}
	if end >= b.page.size {
		return errInvalidPageRange
	}
	// Readers hold the page set they copied out; the write makes a new
	// one.
	var touched []int64
	if clearing {
		b.page.pages, touched = b.page.pages.clear(start, end)
	} else {
		b.page.pages, touched = b.page.pages.write(start, data)
	}
	b.modified, b.etag = s.clock.next()
	q.pending = s.saveBlob(c, q.blob, b, content{pages: touched})
	rh := setVersion(q, b.etag, b.modified)
	rh.Set("x-ms-blob-sequence-number", strconv.FormatInt(b.page.seq, 10))
	if clearing {
		q.w.WriteHeader(http.StatusCreated)
		return nil
	}
	sums.set(rh, q.r)
	return answerCreated(q)
}

type xmlPageRange struct {
	Start int64 `xml:"Start"`
	End   int64 `xml:"End"`
}

type xmlPageList struct {
	XMLName    xml.Name       `xml:"PageList"`
	PageRanges []xmlPageRange `xml:"PageRange"`
	NextMarker *string        `xml:"NextMarker,omitempty"`
}

// getPageRanges is Get Page Ranges: the runs of pages holding data, of
// the blob or a snapshot of it, within the range asked for (x-ms-range
// or Range, widened to whole pages; one that cannot be read asks for the
// whole blob, as Azure takes bytes=-2-497, recorded), in order, runs
// that meet merged. maxresults and marker page the list. A range
// starting past the blob's end is 416 InvalidPageRange. The differences
// since a snapshot (prevsnapshot, x-ms-previous-snapshot-url) are not
// served: 501.
func (s *Service) getPageRanges(q *request) *answer.Error {
	if q.query.Has("prevsnapshot") || q.r.Header.Get("x-ms-previous-snapshot-url") != "" {
		return errNotImplemented("Get Page Ranges of the differences since a snapshot (prevsnapshot, x-ms-previous-snapshot-url)")
	}
	limit, limited, e := pageRangesMax(q)
	if e != nil {
		return e
	}
	marker := q.query.Get("marker")
	from := int64(0)
	if marker != "" {
		n, err := strconv.ParseInt(decodeMarker(marker), 10, 64)
		if err != nil || n < 0 {
			return answer.InvalidQueryParameter("marker", marker, "")
		}
		from = n
	}
	v, e := s.readBlob(q)
	if e != nil {
		return e
	}
	if v.kind != pageBlob {
		return errInvalidBlobType
	}
	start, end := int64(0), v.page.size-1
	if rs, re, ok := parseRange(q.r.Header); ok {
		if rs >= v.page.size {
			return errInvalidPageRange
		}
		start, end = rs-rs%pageSize, min(re-re%pageSize+pageSize-1, end)
	}
	var out xmlPageList
	for _, r := range v.page.pages.ranges(max(start, from), end) {
		if len(out.PageRanges) == limit {
			next := encodeMarker(strconv.FormatInt(r.start, 10))
			out.NextMarker = &next
			break
		}
		out.PageRanges = append(out.PageRanges, xmlPageRange{r.start, r.end})
	}
	if out.NextMarker == nil && (limited || marker != "") {
		none := ""
		out.NextMarker = &none
	}
	h := q.w.Header()
	h.Set("ETag", v.etag)
	h.Set("Last-Modified", httpTime(v.modified))
	h.Set("x-ms-blob-content-length", strconv.FormatInt(v.page.size, 10))
	return writeXMLBody(q, &out)
}

// maxPageRanges is the most ranges one Get Page Ranges answer holds:
// "If the request doesn't specify maxresults or specifies a value greater
// than 10,000, the server will return up to 10,000 items" (REST "Get Page
// Ranges", from version 2020-10-02).
const maxPageRanges = 10000

// pageRangesMax reads maxresults: a positive integer, at most
// maxPageRanges; limited says whether it was given.
func pageRangesMax(q *request) (limit int, limited bool, e *answer.Error) {
	m := q.query.Get("maxresults")
	if m == "" {
		return maxPageRanges, false, nil
	}
	n, err := strconv.Atoi(m)
	if err != nil {
		return 0, false, answer.InvalidQueryParameter("maxresults", m, "")
	}
	if n < 1 {
		return 0, false, answer.OutOfRangeQueryParameter("maxresults", m, 1, math.MaxInt32)
	}
	return min(n, maxPageRanges), true, nil
}

// pageChange is what Set Blob Properties asks of a page blob: a new size
// (x-ms-blob-content-length) and a sequence number action
// (x-ms-sequence-number-action with x-ms-blob-sequence-number).
type pageChange struct {
	resize  bool
	size    int64
	action  string // "", max, update or increment
	seq     int64
	content bool // a content header was sent too
}

// any says whether the request changes a page blob's size or sequence
// number.
func (p pageChange) any() bool { return p.resize || p.action != "" }

// pageContentHeaders are Set Blob Properties' content headers: "If any
// one or more of the following properties is set in the request, then
// all of these properties are set together"; a request that sets only
// the size or the sequence number leaves them (REST "Set Blob
// Properties").
var pageContentHeaders = []string{"x-ms-blob-cache-control", "x-ms-blob-content-type", "x-ms-blob-content-md5",
	"x-ms-blob-content-encoding", "x-ms-blob-content-language", "x-ms-blob-content-disposition"}

// parsePageChange reads Set Blob Properties' page blob headers. An action
// other than max, update and increment is 400 InvalidHeaderValue
// (recorded); max and update need x-ms-blob-sequence-number, increment
// takes none, and a sequence number needs an action (REST "Set Blob
// Properties").
func parsePageChange(h http.Header) (pageChange, *answer.Error) {
	var p pageChange
	if h.Get("x-ms-blob-content-length") != "" {
		n, e := parsePageBlobSize(h, "x-ms-blob-content-length")
		if e != nil {
			return p, e
		}
		p.resize, p.size = true, n
	}
	seq, hasSeq, e := parseSequenceNumber(h)
	if e != nil {
		return p, e
	}
	switch v := h.Get("x-ms-sequence-number-action"); {
	case v == "":
		if hasSeq {
			return p, answer.MissingHeader("x-ms-sequence-number-action")
		}
	case strings.EqualFold(v, "max"), strings.EqualFold(v, "update"):
		if !hasSeq {
			return p, answer.MissingHeader("x-ms-blob-sequence-number")
		}
		p.action, p.seq = strings.ToLower(v), seq
	case strings.EqualFold(v, "increment"):
		if hasSeq {
			return p, answer.InvalidHeader("x-ms-blob-sequence-number", h.Get("x-ms-blob-sequence-number"))
		}
		p.action = "increment"
	default:
		return p, answer.InvalidHeader("x-ms-sequence-number-action", v)
	}
	for _, k := range pageContentHeaders {
		if h.Get(k) != "" {
			p.content = true
		}
	}
	return p, nil
}

// apply changes b (a copy the caller owns) as p says, and returns what
// the change does to the stored pages: a smaller size releases the pages
// past it. A size or sequence number for a blob that is not a page blob
// is 409 InvalidBlobType.
func (p pageChange) apply(b *blob) (content, *answer.Error) {
	if !p.any() {
		return content{}, nil
	}
	if b.kind != pageBlob {
		return content{}, errInvalidBlobType
	}
	ps := b.page
	var touched []int64
	if p.resize {
		if p.size < ps.size {
			ps.pages, touched = ps.pages.truncate(p.size)
		}
		ps.size = p.size
	}
	switch p.action {
	case "max":
		ps.seq = max(ps.seq, p.seq)
	case "update":
		ps.seq = p.seq
	case "increment":
		if ps.seq == math.MaxInt64 {
			return content{}, errSeqIncrementTooLarge
		}
		ps.seq++
	}
	b.page = ps
	return content{pages: touched}, nil
}

// premiumPageTier says whether v names a premium page blob tier (P4 to
// P80: the blob swagger's PremiumPageBlobAccessTier), which the
// emulator, a standard account, does not serve.
func premiumPageTier(v string) bool {
	for _, t := range []string{"P4", "P6", "P10", "P15", "P20", "P30", "P40", "P50", "P60", "P70", "P80"} {
		if strings.EqualFold(v, t) {
			return true
		}
	}
	return false
}

package blobs

import (
	"net/http"
	"strconv"

	"github.com/tablekit/tablekit/emulator/answer"
)

// maxAppendBlocks is the most blocks an append blob takes.
const maxAppendBlocks = 50000

// appendPosition reads x-ms-blob-condition-appendpos or
// x-ms-blob-condition-maxsize: -1 when absent.
func appendCondition(h http.Header, name string) (int64, *answer.Error) {
	v := h.Get(name)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, answer.InvalidHeader(name, v)
	}
	return n, nil
}

// appendBlock is Append Block: the body goes at the end of the append
// blob, under the conditions x-ms-blob-condition-appendpos (the blob's
// length must be this) and x-ms-blob-condition-maxsize (the blob must not
// grow past this). 201 with x-ms-blob-append-offset and
// x-ms-blob-committed-block-count.
func (s *Service) appendBlock(q *request) *answer.Error {
	h := q.r.Header
	cond, e := parseConditions(h, s.cfg.Now)
	if e != nil {
		return e
	}
	pos, e := appendCondition(h, "x-ms-blob-condition-appendpos")
	if e != nil {
		return e
	}
	maxSize, e := appendCondition(h, "x-ms-blob-condition-maxsize")
	if e != nil {
		return e
	}
	limit := int64(maxAppendBlock)
	if !apiVersionAtLeast(q.r, "2022-11-02") {
		limit = maxAppendBlockOld
	}
	data, e := readBody(q, limit)
	if e != nil {
		return e
	}
	if len(data) == 0 {
		return answer.InvalidHeader("Content-Length", "0")
	}
	sums, e := checkBody(h, data)
	if e != nil {
		return e
	}
	c, b, e := s.lockExisting(q, cond)
	if e != nil {
		return e
	}
	defer c.mu.Unlock()
	switch size := int64(len(b.data)); {
	case b.sealed:
		return errBlobSealed
	case b.kind != appendBlob:
		return errInvalidBlobType
	case b.appended >= maxAppendBlocks:
		return errAppendBlockCount
	case pos >= 0 && pos != size:
		return errAppendPosition
	case maxSize >= 0 && size+int64(len(data)) > maxSize:
		return errMaxBlobSize
	}
	offset := len(b.data)
	// Readers hold b.data[:offset]; the append writes past it.
	b.data = append(b.data, data...)
	b.appended++
	b.modified, b.etag = s.clock.next()
	q.pending = s.saveBlob(c, q.blob, b, content{appended: data, off: offset})
	rh := setVersion(q, b.etag, b.modified)
	rh.Set("x-ms-blob-append-offset", strconv.Itoa(offset))
	rh.Set("x-ms-blob-committed-block-count", strconv.Itoa(b.appended))
	sums.set(rh, q.r)
	return answerCreated(q)
}

// seal is Seal Append Blob: the blob takes no more appends (409
// BlobIsSealed). 200 with x-ms-blob-sealed.
func (s *Service) seal(q *request) *answer.Error {
	pos, e := appendCondition(q.r.Header, "x-ms-blob-condition-appendpos")
	if e != nil {
		return e
	}
	return s.update(q, func(b *blob) *answer.Error {
		if b.kind != appendBlob {
			return errInvalidBlobType
		}
		if pos >= 0 && pos != int64(len(b.data)) {
			return errAppendPosition
		}
		b.sealed = true
		return nil
	}, func(h http.Header, _ *blob) { h.Set("x-ms-blob-sealed", "true") })
}

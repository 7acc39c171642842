package wire

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// The answer to an entity group transaction is a multipart/mixed body
// holding one changeset, and in it one application/http part per
// operation (or a single part, the failing operation's, when the
// transaction failed):
//
//	--batchresponse_X
//	Content-Type: multipart/mixed; boundary=changesetresponse_Y
//
//	--changesetresponse_Y
//	Content-Type: application/http
//	Content-Transfer-Encoding: binary
//
//	HTTP/1.1 204 No Content
//	ETag: W/"datetime'...'"
//
//	--changesetresponse_Y--
//	--batchresponse_X--
//
// readBatch reads it in one pass over the bytes, without mime/multipart or
// net/http: a bulk write of 10,000 entities would otherwise build 100
// readers and parse 10,000 responses only to throw them away.

// innerResponse is one operation's answer inside a batch response.
type innerResponse struct {
	Status int
	ETag   []byte // aliases the body; nil when absent
	Body   []byte // aliases the body
}

var errBatchSyntax = errors.New("malformed batch response")

// readBatch calls fn with each inner response of a batch response body,
// in order, and returns how many it read. It stops at the first malformed
// part. A delimiter counts at the beginning of a line only, as RFC 2046
// has it, so each line is looked at once: the part's lines are walked,
// not searched for the next delimiter first and then walked.
func readBatch(body []byte, fn func(i int, r innerResponse)) (int, error) {
	boundary := changesetBoundary(body)
	if boundary == nil {
		return 0, errBatchSyntax
	}
	delim := make([]byte, 0, len(boundary)+2)
	delim = append(append(delim, "--"...), boundary...)
	at := bytes.Index(body, delim)
	if at < 0 {
		return 0, errBatchSyntax
	}
	rest := body[at+len(delim):]
	n := 0
	for {
		if bytes.HasPrefix(rest, []byte("--")) {
			return n, nil // the closing delimiter
		}
		r, next, ok := readPart(rest, delim)
		if !ok {
			return n, errBatchSyntax
		}
		fn(n, r)
		n++
		rest = next
	}
}

// changesetBoundary finds the boundary the batch's first part declares
// for its changeset (in the part headers, before the first blank line).
func changesetBoundary(body []byte) []byte {
	head := body
	if i := blankLine(body); i >= 0 {
		head = body[:i]
	}
	i := bytes.Index(head, []byte("boundary="))
	if i < 0 {
		return nil
	}
	b := head[i+len("boundary="):]
	if j := bytes.IndexAny(b, "; \t\r\n"); j >= 0 {
		b = b[:j]
	}
	b = bytes.Trim(b, `"`)
	if len(b) == 0 {
		return nil
	}
	return b
}

// blankLine returns the index where the first empty line begins (after
// the line break that ends the previous line), or -1.
func blankLine(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		if i < len(b) && b[i] == '\n' {
			return i
		}
		if i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n' {
			return i
		}
	}
}

// readPart reads the application/http part that starts at rest (just
// after its delimiter): the rest of the delimiter's line, the part's MIME
// headers, a blank line, then the inner response's status line, headers,
// blank line and body, which runs to the line break before the next line
// that begins with delim. next is what follows that delimiter. A
// delimiter before the inner response's body is malformed.
func readPart(rest, delim []byte) (r innerResponse, next []byte, ok bool) {
	line := func() ([]byte, bool) {
		var l []byte
		l, rest, ok = cutLine(rest)
		return l, ok && !bytes.HasPrefix(l, delim)
	}
	if _, rest, ok = cutLine(rest); !ok { // the delimiter's line
		return innerResponse{}, nil, false
	}
	for {
		l, ok := line()
		if !ok {
			return innerResponse{}, nil, false
		}
		if len(l) == 0 {
			break
		}
	}
	status, ok := line()
	if !ok || !bytes.HasPrefix(status, []byte("HTTP/1.")) || len(status) < len("HTTP/1.1 200") || status[8] != ' ' {
		return innerResponse{}, nil, false
	}
	code, err := strconv.Atoi(string(status[9:12]))
	if err != nil || code < 100 || code > 599 || (len(status) > 12 && status[12] != ' ') {
		return innerResponse{}, nil, false
	}
	r.Status = code
	for {
		l, ok := line()
		if !ok {
			return innerResponse{}, nil, false
		}
		if len(l) == 0 {
			break
		}
		name, value, found := bytes.Cut(l, []byte(":"))
		if !found {
			return innerResponse{}, nil, false
		}
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("ETag")) {
			r.ETag = bytes.TrimSpace(value)
		}
	}
	body := rest
	for !bytes.HasPrefix(rest, delim) {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return innerResponse{}, nil, false
		}
		rest = rest[i+1:]
	}
	body = body[:len(body)-len(rest)]
	if bytes.HasSuffix(body, []byte("\r\n")) {
		body = body[:len(body)-2]
	} else if bytes.HasSuffix(body, []byte("\n")) {
		body = body[:len(body)-1]
	}
	r.Body = body
	return r, rest[len(delim):], true
}

// cutLine returns the first line of b without its line break (CRLF or
// LF), and what follows; ok is false when b holds no line break.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, nil, false
	}
	line = b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, b[i+1:], true
}

// batchOutcome reads a batch response body: the operations' results when
// every operation succeeded, or failed=true when an inner response is a
// failure. ok is false when the body cannot be read or does not hold one
// response per operation.
func batchOutcome(body []byte, nops int, results []Result) (failed, ok bool) {
	// The ETags are cut from one string, built in place (strings.Builder
	// hands its buffer over without a copy), not allocated one by one:
	// they alias the response's bytes only through that copy. readBatch
	// calls back with i = 0, 1, 2, ...: ends[i] is where result i's ETag
	// ends.
	m := min(nops, len(results))
	var etags strings.Builder
	var endsBuf [MaxTransactionOps]int
	ends := endsBuf[:0]
	n, err := readBatch(body, func(i int, r innerResponse) {
		if r.Status >= 400 {
			failed = true
		}
		if i < len(results) {
			results[i] = Result{StatusCode: r.Status}
			if etags.Cap() == 0 && len(r.ETag) > 0 {
				// The ETags of one transaction are alike (the service's
				// stamp, in one format): room for m like the first.
				etags.Grow(len(r.ETag) * (m - i))
			}
			etags.Write(r.ETag)
			ends = append(ends, etags.Len())
		}
	})
	if etags.Len() > 0 {
		all, start := etags.String(), 0
		for k, end := range ends {
			results[k].ETag = all[start:end]
			start = end
		}
	}
	if failed {
		return true, true
	}
	return false, err == nil && n == nops
}

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
// part.
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
		end := bytes.Index(rest, delim)
		if end < 0 {
			return n, errBatchSyntax
		}
		r, ok := parsePart(rest[:end])
		if !ok {
			return n, errBatchSyntax
		}
		fn(n, r)
		n++
		rest = rest[end+len(delim):]
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

// skipBlankLine returns b after the empty line that begins it.
func skipBlankLine(b []byte) []byte {
	if bytes.HasPrefix(b, []byte("\r\n")) {
		return b[2:]
	}
	return b[1:]
}

// parsePart reads one application/http part: its MIME headers, a blank
// line, then the status line, headers, blank line and body of the inner
// response.
func parsePart(part []byte) (innerResponse, bool) {
	i := blankLine(part)
	if i < 0 {
		return innerResponse{}, false
	}
	resp := skipBlankLine(part[i:])
	line, rest, ok := cutLine(resp)
	if !ok || !bytes.HasPrefix(line, []byte("HTTP/1.")) || len(line) < len("HTTP/1.1 200") || line[8] != ' ' {
		return innerResponse{}, false
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || status > 599 || (len(line) > 12 && line[12] != ' ') {
		return innerResponse{}, false
	}
	r := innerResponse{Status: status}
	for {
		line, rest, ok = cutLine(rest)
		if !ok {
			return innerResponse{}, false
		}
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			return innerResponse{}, false
		}
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("ETag")) {
			r.ETag = bytes.TrimSpace(value)
		}
	}
	// The body runs to the line break before the next delimiter.
	if bytes.HasSuffix(rest, []byte("\r\n")) {
		rest = rest[:len(rest)-2]
	} else if bytes.HasSuffix(rest, []byte("\n")) {
		rest = rest[:len(rest)-1]
	}
	r.Body = rest
	return r, true
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
	etags.Grow(64 * m)
	var endsBuf [MaxTransactionOps]int
	ends := endsBuf[:0]
	n, err := readBatch(body, func(i int, r innerResponse) {
		if r.Status >= 400 {
			failed = true
		}
		if i < len(results) {
			results[i] = Result{StatusCode: r.Status}
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

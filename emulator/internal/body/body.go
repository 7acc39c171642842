// Package body reads request bodies for the emulator's services: once,
// into one buffer, never past a limit.
//
// A body with a Content-Length is read into a buffer of exactly that size,
// allocated once, after the length is checked against the operation's
// limit, so a 4,000 MiB Put Block costs 4,000 MiB, not the doublings and
// the final copy of io.ReadAll. A body without one (chunked) grows up to
// the limit; the Blob service refuses those where Azure requires the
// length (Required). Go's server stops a body at its Content-Length, so a
// body longer than its length is read as far as the length, and the rest
// is the next request on the connection, which the server refuses (400)
// before closing it; a shorter one ends in Short.
//
// How long a body may take is the server's business (the emulator's
// read deadline); a body cut by it ends in TimedOut.
//
// A service checks who is asking before it reads what they send: it
// gates each request's body as the request arrives (Gate) and opens it
// once the request is authorized (Open). Until then a read of the body
// fails (Unauthorized) without reading a byte, so a handler that reads
// before it authorizes fails every request, not only a stranger's.
package body

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
)

// Failure says why a body could not be read.
type Failure uint8

// The failures.
const (
	OK           Failure = iota
	TooLarge             // the Content-Length, or the body read so far, is over the limit
	Short                // the body ended before its Content-Length
	TimedOut             // the server's read deadline cut the body
	Broken               // the connection failed otherwise
	Required             // the body has no Content-Length (Require's refusal)
	Unauthorized         // the body is gated, and the request not authorized (a handler's error)
)

// errGated is the error of a read of a gated body not opened.
var errGated = errors.New("body: read before the request was authorized")

// gate is a request body that refuses reads until open.
type gate struct {
	io.ReadCloser
	open bool
}

func (g *gate) Read(p []byte) (int, error) {
	if !g.open {
		return 0, errGated
	}
	return g.ReadCloser.Read(p)
}

// Gate returns r with its body closed to reads until Open (r itself
// when it has no body): a service gates a request as it arrives.
func Gate(r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	g := *r
	g.Body = &gate{ReadCloser: r.Body}
	return &g
}

// Open opens the body Gate closed: the request is authorized.
func Open(r *http.Request) {
	if g, ok := r.Body.(*gate); ok {
		g.open = true
	}
}

// gated reports whether r's body is gated and not open.
func gated(r *http.Request) bool {
	g, ok := r.Body.(*gate)
	return ok && !g.open
}

// Read reads r's body, at most limit bytes.
func Read(r *http.Request, limit int64) ([]byte, Failure) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, OK
	}
	if gated(r) {
		return nil, Unauthorized
	}
	n := r.ContentLength
	if n > limit {
		return nil, TooLarge
	}
	if n == 0 {
		return nil, OK
	}
	if n > 0 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, failure(err)
		}
		return buf, OK
	}
	// Chunked: grown as it comes, never past limit+1 bytes.
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(r.Body, limit+1)); err != nil {
		return nil, failure(err)
	}
	if int64(b.Len()) > limit {
		return nil, TooLarge
	}
	return b.Bytes(), OK
}

// Require reads r's body as Read does, but refuses one without a
// Content-Length (Required) without reading it.
func Require(r *http.Request, limit int64) ([]byte, Failure) {
	if r.Body != nil && gated(r) {
		return nil, Unauthorized
	}
	if r.ContentLength < 0 {
		return nil, Required
	}
	return Read(r, limit)
}

// failure classifies a read error.
func failure(err error) Failure {
	switch {
	case errors.Is(err, errGated):
		return Unauthorized
	case errors.Is(err, os.ErrDeadlineExceeded):
		return TimedOut
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Short
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return TimedOut
	}
	return Broken
}

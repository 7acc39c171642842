package body_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/body"
)

// errReader fails with err after its text.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

func TestRead(t *testing.T) {
	cases := []struct {
		name    string
		length  int64 // Content-Length; -1 chunked
		body    io.Reader
		limit   int64
		require bool
		want    string
		f       body.Failure
	}{
		{"whole", 5, strings.NewReader("abcde"), 10, false, "abcde", body.OK},
		{"at the limit", 5, strings.NewReader("abcde"), 5, false, "abcde", body.OK},
		{"length over the limit, unread", 11, &errReader{strings.NewReader(""), errors.New("read")}, 10, false, "", body.TooLarge},
		{"empty", 0, strings.NewReader(""), 10, false, "", body.OK},
		{"short", 5, strings.NewReader("abc"), 10, false, "", body.Short},
		{"cut by the deadline", 5, &errReader{strings.NewReader("ab"), os.ErrDeadlineExceeded}, 10, false, "", body.TimedOut},
		{"broken", 5, &errReader{strings.NewReader("ab"), errors.New("reset")}, 10, false, "", body.Broken},
		{"chunked", -1, strings.NewReader("abcde"), 10, false, "abcde", body.OK},
		{"chunked over the limit", -1, strings.NewReader("abcdefghijk"), 10, false, "", body.TooLarge},
		{"chunked, length required", -1, &errReader{strings.NewReader(""), errors.New("read")}, 10, true, "", body.Required},
		{"length given, required", 3, strings.NewReader("abc"), 10, true, "abc", body.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "/", c.body)
			r.ContentLength = c.length
			read := body.Read
			if c.require {
				read = body.Require
			}
			got, f := read(r, c.limit)
			if f != c.f || string(got) != c.want {
				t.Fatalf("got %q, failure %d; want %q, %d", got, f, c.want, c.f)
			}
			if f == body.OK && c.length > 0 && cap(got) != int(c.length) {
				t.Fatalf("buffer of %d bytes for a %d-byte body: not sized from the Content-Length", cap(got), c.length)
			}
		})
	}
}

package emulator

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/internal/redact"
)

// The limits every service's server keeps, so that no client, least of
// all one that is not authenticated, holds memory or a connection for
// long. docs/EMULATOR.md ("Hostile input") gives the evidence for each
// and its strength.
const (
	// headerTimeout bounds the time to send a request's head.
	headerTimeout = 30 * time.Second
	// idleTimeout closes a kept-alive connection with no request: Azure
	// documents none; HTTP.sys, whose answers Azure's are
	// (Microsoft-HTTPAPI/2.0), defaults its IdleConnection timer to 2
	// minutes (HTTP_TIMEOUT_LIMIT_INFO).
	idleTimeout = 120 * time.Second
	// bodyStall cuts a body no byte of which has come for this long,
	// however much came before: HTTP.sys's EntityBody timer (2 minutes,
	// reset by each arrival of data).
	bodyStall = 120 * time.Second
	// maxHeaderBytes bounds a request's head, request line included;
	// Go's server answers 431 past it.
	maxHeaderBytes = 64 << 10
	// maxURLBytes bounds a request's target (path and query); past it
	// the answer is 414.
	maxURLBytes = 32 << 10
	// bodyGrace is the time a body, or an answer, gets before the rates
	// below apply: Azure's default server timeout (30 s).
	bodyGrace = 30 * time.Second
	// readPerMiB is the time a request body may take per MiB: Azure's
	// allowance for writing a blob, a block or a page ("10 minutes per
	// megabyte ... on average").
	readPerMiB = 10 * time.Minute
	// writePerMiB is the time an answer may take per MiB: Azure's
	// allowance for reading a blob ("2 minutes per megabyte").
	writePerMiB = 2 * time.Minute
)

// timeouts are the deadlines a guarded request's body and answer get:
// each must arrive (or leave) at an average rate of at least a MiB per
// perMiB, after grace. A body trickled slower is cut after about grace.
type timeouts struct {
	grace         time.Duration
	stall         time.Duration
	readPerByte   time.Duration
	writePerByte  time.Duration
	headerTimeout time.Duration
	idleTimeout   time.Duration
}

var defaultTimeouts = timeouts{
	grace:         bodyGrace,
	stall:         bodyStall,
	readPerByte:   readPerMiB / (1 << 20),
	writePerByte:  writePerMiB / (1 << 20),
	headerTimeout: headerTimeout,
	idleTimeout:   idleTimeout,
}

// guard serves h under the server's limits and logs each request: a
// target over maxURLBytes is 414, unread; a body and an answer keep to
// t's rates; lg, when not nil, gets a line per request.
func guard(service string, h http.Handler, t *timeouts, lg *requestLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rc := http.NewResponseController(w)
		rw := &guardedWriter{ResponseWriter: w, rc: rc, t: t}
		rc.SetWriteDeadline(start.Add(t.grace))
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			// A body the handler leaves unread is discarded by the server
			// (up to 256 KiB, else the connection is closed): the
			// deadline bounds that too.
			// The server's own request keeps its body: it tells from it
			// whether the body was read, and answers before discarding
			// what was not.
			rc.SetReadDeadline(start.Add(t.grace))
			guarded := *r
			rw.body = &guardedBody{ReadCloser: r.Body, rc: rc, t: t, start: start, length: r.ContentLength}
			guarded.Body = rw.body
			r = &guarded
		}
		if len(r.RequestURI) > maxURLBytes {
			rw.Header().Set("Connection", "close")
			http.Error(rw, "414 Request URI Too Long", http.StatusRequestURITooLong)
		} else {
			h.ServeHTTP(rw, r)
		}
		if rw.closing {
			// Nor is what is left of the body waited for, to be
			// discarded: the connection closes now.
			rc.SetReadDeadline(start)
		}
		if lg != nil {
			lg.request(service, r, rw, time.Since(start))
		}
	})
}

// guardedBody is a request body read under a deadline that grows with
// what has arrived, start + grace + bytes read × readPerByte, and never
// more than stall after the last byte came: a trickle is cut once the
// grace is spent, a body that stops after a fast start after stall. Once
// the body is whole the deadline is lifted, so the server's watch for the
// client going away does not end a request still at work.
type guardedBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	t      *timeouts
	start  time.Time
	n      int64     // bytes read
	last   time.Time // when the last of them came
	length int64     // Content-Length; -1 when chunked
	whole  bool      // read to its end
}

func (b *guardedBody) Read(p []byte) (int, error) {
	d := b.start.Add(b.t.grace + time.Duration(b.n)*b.t.readPerByte)
	if stalled := b.last.Add(b.t.stall); b.n > 0 && stalled.Before(d) {
		d = stalled
	}
	b.rc.SetReadDeadline(d)
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.n += int64(n)
		b.last = time.Now()
	}
	if err == io.EOF || b.n == b.length {
		b.whole = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// guardedWriter is a response writer whose writes keep to a deadline that
// grows with what has been written since the first: first + grace +
// bytes written × writePerByte. It also keeps what the request log says:
// the status and the error code.
type guardedWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	t      *timeouts
	first  time.Time
	n      int64
	status int
	code   string
	body   *guardedBody // nil for a request without a body
	// closing: the answer closes the connection with the body unread.
	closing bool
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *guardedWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		if status >= 400 && w.body != nil && !w.body.whole {
			// Refused before its body was read (not authenticated, a
			// bad header): the answer goes now and the connection
			// closes, rather than wait for the rest of the body to
			// discard it.
			w.Header().Set("Connection", "close")
			w.closing = true
		}
		w.status = status
		w.code = w.Header().Get("x-ms-error-code")
		w.first = time.Now()
		w.rc.SetWriteDeadline(w.first.Add(w.t.grace))
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status >= 400 && w.code == "" && w.n == 0 {
		// The Table service's error code is in its JSON body only.
		w.code = odataCode(p)
	}
	w.rc.SetWriteDeadline(w.first.Add(w.t.grace + time.Duration(w.n+int64(len(p)))*w.t.writePerByte))
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// odataCode is the code of a Table service error body
// ({"odata.error":{"code":"...", ...}}), or "".
func odataCode(b []byte) string {
	const key = `"code":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	b = b[i+len(key):]
	j := bytes.IndexByte(b, '"')
	if j < 0 || j > 64 {
		return ""
	}
	return string(b[:j])
}

// requestLog writes the request log (a line per request) and the debug
// log (each request's head and answer's head, credentials redacted, and
// the server's own errors). Either writer may be nil. Lines are written
// whole, one Write each, so concurrent requests never interleave.
type requestLog struct {
	mu    sync.Mutex
	out   io.Writer
	debug io.Writer
}

// newRequestLog returns nil when there is nothing to write to.
func newRequestLog(out, debug io.Writer) *requestLog {
	if out == nil && debug == nil {
		return nil
	}
	return &requestLog{out: out, debug: debug}
}

// request logs one request: the time it ended, the service, the client,
// the method, the target with its SAS signature redacted, the status,
// the error code ("-" for none) and how long it took.
func (l *requestLog) request(service string, r *http.Request, w *guardedWriter, d time.Duration) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	code := w.code
	if code == "" {
		code = "-"
	}
	var b []byte
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, ' ')
	b = append(b, service...)
	b = append(b, ' ')
	b = append(b, clientHost(r.RemoteAddr)...)
	b = append(b, ' ')
	b = append(b, safe(r.Method)...)
	b = append(b, ' ')
	b = append(b, safe(redact.Redact(r.RequestURI))...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, safe(code)...)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 3, 64)
	b = append(b, "ms\n"...)
	if l.out != nil {
		l.write(l.out, b)
	}
	if l.debug != nil {
		b = append(b, "  request headers:\n"...)
		b = appendHeaders(b, r.Header)
		b = append(b, "  response headers:\n"...)
		b = appendHeaders(b, w.Header())
		l.write(l.debug, b)
	}
}

func (l *requestLog) write(w io.Writer, b []byte) {
	l.mu.Lock()
	w.Write(b)
	l.mu.Unlock()
}

// errorLog is the servers' own error log (connections refused, TLS
// handshakes failed, a handler's panic): to the debug log, redacted, or
// nowhere.
func (l *requestLog) errorLog() *log.Logger {
	if l == nil || l.debug == nil {
		return log.New(io.Discard, "", 0)
	}
	return log.New(redactingWriter{l}, "server: ", log.LstdFlags|log.LUTC)
}

// redactingWriter writes to the debug log with credentials redacted.
type redactingWriter struct{ l *requestLog }

func (w redactingWriter) Write(p []byte) (int, error) {
	w.l.write(w.l.debug, []byte(safeLines(redact.Redact(string(p)))))
	return len(p), nil
}

// appendHeaders appends h, a header a line, sorted, with every credential
// redacted: the value of an Authorization header (or any header naming
// one) after its scheme, and SAS signatures anywhere.
func appendHeaders(b []byte, h http.Header) []byte {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b = append(b, "    "...)
			b = append(b, safe(k)...)
			b = append(b, ": "...)
			b = append(b, safeKeepSpaces(redactHeader(k, v))...)
			b = append(b, '\n')
		}
	}
	return b
}

// redactHeader is v, the value of header k, as the debug log shows it.
func redactHeader(k, v string) string {
	lk := strings.ToLower(k)
	if strings.Contains(lk, "authorization") || strings.Contains(lk, "cookie") || strings.Contains(lk, "token") || strings.Contains(lk, "key") {
		scheme, _, found := strings.Cut(v, " ")
		if !found || len(scheme) > 32 {
			return "REDACTED"
		}
		return scheme + " REDACTED"
	}
	return redact.Redact(v)
}

// clientHost is the client's address without its port.
func clientHost(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		return addr[:i]
	}
	return addr
}

// safe escapes the bytes of s that could forge or break a log line:
// control characters (line breaks included) and spaces, as %XX.
func safe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return escape(s)
		}
	}
	return s
}

func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// safeLines escapes control characters other than line breaks, and ends
// the text with one.
func safeLines(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(safeKeepSpaces(line))
		b.WriteByte('\n')
	}
	return b.String()
}

func safeKeepSpaces(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' && c != '\t' || c == 0x7f {
			b.WriteString("%" + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

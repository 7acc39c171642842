package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The recorder's headers: what a recording file keeps of them is what
// the recorder's client sent or its transport added, not the service's
// answer, so Trim drops them (testdata/recordings/README.md lists them).
var (
	// recorderRequest are request headers Trim drops. x-ms-date stays:
	// the replay reads the recording's clock from it.
	recorderRequest = headerSet("Authorization", "User-Agent", "Accept-Encoding", "Date",
		"Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
		"x-ms-client-request-id", "x-ms-return-client-request-id", "traceparent",
		"request-id", "Host", "Expect")
	// recorderResponse are response headers Trim drops.
	recorderResponse = headerSet("Date", "Server", "Transfer-Encoding", "X-Content-Type-Options",
		"Cache-Control", "Vary", "x-ms-request-id", "x-ms-client-request-id", "Connection",
		"Keep-Alive", "Strict-Transport-Security")
)

func headerSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = true
	}
	return m
}

// Trim drops the recorder's headers from e, in place.
func Trim(e *Entry) {
	for k := range e.RequestHeaders {
		if recorderRequest[strings.ToLower(k)] {
			delete(e.RequestHeaders, k)
		}
	}
	for k := range e.ResponseHeaders {
		if recorderResponse[strings.ToLower(k)] {
			delete(e.ResponseHeaders, k)
		}
	}
}

// EncodeBody is b as a recording stores a body that travelled with
// contentType, the inverse of what Run reads: null when empty, a JSON
// string of the text when contentType is text, XML or JSON, base64
// otherwise (the test proxy's form of binary and multipart bodies). Text
// that is not UTF-8 cannot be stored as a JSON string: an error.
func EncodeBody(b []byte, contentType string) (json.RawMessage, error) {
	if len(b) == 0 {
		return json.RawMessage("null"), nil
	}
	if !isText(contentType) {
		return marshalNoEscape(base64.StdEncoding.EncodeToString(b))
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("a %q body is not UTF-8 text", contentType)
	}
	return marshalNoEscape(string(b))
}

// marshalNoEscape is v in JSON, with <, > and & as themselves (bodies
// are XML).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// ReadTestProxy reads a recording in the Azure SDKs' test-proxy format
// (the Go, .NET and Python SDKs' JSON: Entries with RequestUri,
// RequestMethod, RequestHeaders, RequestBody, StatusCode,
// ResponseHeaders, ResponseBody), as recorded or as trimmed here.
func ReadTestProxy(b []byte) ([]Entry, error) {
	// The .NET recorder writes a repeated request header (User-Agent)
	// as a list, as Header reads it.
	var f struct {
		Entries []struct {
			Entry
			RequestHeaders map[string]Header `json:"RequestHeaders"`
		} `json:"Entries"`
	}
	if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("\ufeff")), &f); err != nil {
		return nil, fmt.Errorf("not a test-proxy recording: %w", err)
	}
	if len(f.Entries) == 0 {
		return nil, fmt.Errorf("a test-proxy recording without entries")
	}
	entries := make([]Entry, len(f.Entries))
	for i, fe := range f.Entries {
		entries[i] = fe.Entry
		entries[i].RequestHeaders = make(map[string]string, len(fe.RequestHeaders))
		for k, v := range fe.RequestHeaders {
			entries[i].RequestHeaders[k] = string(v)
		}
	}
	return entries, nil
}

// Marshal writes rec as this repository's trimmed recordings are
// written: its Source and Note, then one exchange a line.
func Marshal(rec *Recording) ([]byte, error) {
	var b bytes.Buffer
	src, err := marshalNoEscape(rec.Source)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "{\"Source\": %s,\n", src)
	if rec.Note != "" {
		note, err := marshalNoEscape(rec.Note)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\"Note\": %s,\n", note)
	}
	if len(rec.Setup) > 0 {
		setup, err := marshalNoEscape(rec.Setup)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "\"Setup\": %s,\n", setup)
	}
	b.WriteString("\"Entries\": [\n")
	for i := range rec.Entries {
		line, err := marshalEntry(&rec.Entries[i])
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		b.Write(line)
		if i < len(rec.Entries)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

// marshalEntry is one exchange on one line, its fields in the order an
// exchange happens.
func marshalEntry(e *Entry) ([]byte, error) {
	var b bytes.Buffer
	field := func(name string, v any, last bool) error {
		j, err := marshalNoEscape(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q: %s", name, j)
		if !last {
			b.WriteString(", ")
		}
		return nil
	}
	raw := func(m json.RawMessage) json.RawMessage {
		if len(bytes.TrimSpace(m)) == 0 {
			return json.RawMessage("null")
		}
		return m
	}
	reqHeaders := e.RequestHeaders
	if reqHeaders == nil {
		reqHeaders = map[string]string{}
	}
	respHeaders := e.ResponseHeaders
	if respHeaders == nil {
		respHeaders = map[string]Header{}
	}
	b.WriteByte('{')
	for _, f := range []struct {
		name string
		v    any
	}{
		{"RequestMethod", e.RequestMethod},
		{"RequestUri", e.RequestURI},
		{"RequestHeaders", reqHeaders},
		{"RequestBody", raw(e.RequestBody)},
		{"StatusCode", e.StatusCode},
		{"ResponseHeaders", respHeaders},
		{"ResponseBody", raw(e.ResponseBody)},
	} {
		if err := field(f.name, f.v, f.name == "ResponseBody"); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

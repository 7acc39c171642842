// Package replay sends sessions recorded against real Azure Storage to
// another service (tablekit's emulator, or Azurite) and compares its
// answers with Azure's: the same statuses, error codes and bodies.
//
// The recordings are the Azure SDKs' test-proxy files: JSON with one
// entry per exchange (RequestUri, RequestMethod, RequestHeaders,
// RequestBody, StatusCode, ResponseHeaders, ResponseBody). Run sends each
// recorded request in order to a Target, rewritten from the recorded
// account's host to the target's path-style endpoint and signed again with
// the target's key (the recorder sanitized the signatures), and compares
// the answer with the recorded one by the rules in compare.go: what the
// client relies on exactly, what the service chooses (ETags, timestamps,
// request ids, message ids, continuation tokens) by its form.
//
// A value the service chooses is remembered, recorded -> answered, and a
// later request that carries the recorded value (an If-Match, a
// continuation token, a pop receipt) carries the answered one instead, so
// a session keeps its meaning on a service that chose differently.
package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Recording is one recorded session.
type Recording struct {
	// Name is the file's path under the directory Load read, without
	// ".json".
	Name string
	// Source says where the recording comes from (repository, commit and
	// path), as the trimmed file states it.
	Source string
	// Note says what the trimmed file leaves out of the recording, if
	// anything.
	Note string
	// Setup are the resources the recorded test made before its
	// recording began (its setUp, unrecorded), each a container, queue
	// or table named by its URI: one the session's first request to it
	// already found. Run creates them first.
	Setup []string
	// Entries are the exchanges, in the order they happened.
	Entries []Entry
}

// Entry is one recorded exchange, as the test proxy stores it.
type Entry struct {
	RequestURI      string            `json:"RequestUri"`
	RequestMethod   string            `json:"RequestMethod"`
	RequestHeaders  map[string]string `json:"RequestHeaders"`
	RequestBody     json.RawMessage   `json:"RequestBody"`
	StatusCode      int               `json:"StatusCode"`
	ResponseHeaders map[string]Header `json:"ResponseHeaders"`
	ResponseBody    json.RawMessage   `json:"ResponseBody"`
}

// Header is a recorded header's value; the test proxy stores a repeated
// header (Server) as a list, which Header joins with ", ".
type Header string

// UnmarshalJSON reads a string or a list of strings.
func (h *Header) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*h = Header(s)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("a header is neither a string nor a list of strings: %s", b)
	}
	*h = Header(strings.Join(list, ", "))
	return nil
}

// file is a recording file: the test proxy's shape, plus the Source the
// trimmed files add.
type file struct {
	Source  string   `json:"Source"`
	Note    string   `json:"Note"`
	Setup   []string `json:"Setup"`
	Entries []Entry  `json:"Entries"`
}

// Load reads every *.json file under fsys, sorted by name.
func Load(fsys fs.FS) ([]*Recording, error) {
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && path.Ext(p) == ".json" {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay: listing the recordings: %w", err)
	}
	sort.Strings(names)
	recs := make([]*Recording, 0, len(names))
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		var f file
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("replay: recording %s: %w", name, err)
		}
		if len(f.Entries) == 0 {
			return nil, fmt.Errorf("replay: recording %s has no entries", name)
		}
		recs = append(recs, &Recording{Name: strings.TrimSuffix(name, ".json"), Source: f.Source, Note: f.Note, Setup: f.Setup, Entries: f.Entries})
	}
	return recs, nil
}

// bodyBytes is a recorded body as the bytes that travelled: a JSON value
// as it is; a list of strings (the test proxy's form of text split at line
// ends) joined; a string as text when contentType is text, XML or JSON,
// and otherwise as base64 (the test proxy's form of binary and multipart
// bodies). null is no body.
func bodyBytes(raw json.RawMessage, contentType string) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if isText(contentType) {
			return []byte(s), nil
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("a %q body is not base64: %w", contentType, err)
		}
		return b, nil
	case '[':
		var lines []string
		if err := json.Unmarshal(raw, &lines); err == nil {
			return []byte(strings.Join(lines, "")), nil
		}
	}
	return []byte(raw), nil
}

// DecodeBody is a recorded body as the bytes that travelled (see
// EncodeBody), its Content-Type contentType.
func DecodeBody(raw json.RawMessage, contentType string) ([]byte, error) {
	return bodyBytes(raw, contentType)
}

// isText reports whether a body of contentType is stored as text.
func isText(contentType string) bool {
	ct := strings.ToLower(contentType)
	return strings.Contains(ct, "xml") || strings.Contains(ct, "json") || strings.HasPrefix(ct, "text/")
}

// header returns the recorded request header name, case-insensitively.
func (e *Entry) header(name string) (string, bool) {
	for k, v := range e.RequestHeaders {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// responseHeader returns the recorded response header name,
// case-insensitively.
func (e *Entry) responseHeader(name string) (string, bool) {
	for k, v := range e.ResponseHeaders {
		if strings.EqualFold(k, name) {
			return string(v), true
		}
	}
	return "", false
}

// proposesLease reports whether the recorded request chose its lease id
// (x-ms-proposed-lease-id), which the answer then echoes.
func (e *Entry) proposesLease() bool {
	_, ok := e.header("x-ms-proposed-lease-id")
	return ok
}

package main

import (
	"fmt"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tablekit/tablekit/emulator/internal/replay"
)

// vcrFile is a vcrpy cassette, as the Azure SDK for Python's tests
// recorded them before the test proxy: headers as lists of values,
// bodies as text or !!binary.
type vcrFile struct {
	Interactions []struct {
		Request struct {
			Body    any                 `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Method  string              `yaml:"method"`
			URI     string              `yaml:"uri"`
		} `yaml:"request"`
		Response struct {
			Body    any                 `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Status  struct {
				Code int `yaml:"code"`
			} `yaml:"status"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// readVCR reads a vcrpy cassette into exchanges.
func readVCR(b []byte) ([]replay.Entry, error) {
	var f vcrFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not a vcrpy cassette: %w", err)
	}
	if len(f.Interactions) == 0 {
		return nil, fmt.Errorf("a vcrpy cassette without interactions")
	}
	entries := make([]replay.Entry, 0, len(f.Interactions))
	for i, in := range f.Interactions {
		e := replay.Entry{
			RequestMethod:   in.Request.Method,
			RequestURI:      vcrURI(in.Request.URI),
			RequestHeaders:  map[string]string{},
			StatusCode:      in.Response.Status.Code,
			ResponseHeaders: map[string]replay.Header{},
		}
		for k, v := range in.Request.Headers {
			e.RequestHeaders[k] = strings.Join(v, ", ")
		}
		for k, v := range in.Response.Headers {
			e.ResponseHeaders[k] = replay.Header(strings.Join(v, ", "))
		}
		var err error
		reqBody, err := vcrBody(in.Request.Body)
		if err == nil {
			e.RequestBody, err = replay.EncodeBody(reqBody, requestContentType(e.RequestHeaders))
		}
		if err != nil {
			return nil, fmt.Errorf("interaction %d's request body: %w", i, err)
		}
		respBody, err := vcrBody(in.Response.Body)
		if err == nil {
			e.ResponseBody, err = replay.EncodeBody(respBody, contentType(e.ResponseHeaders))
		}
		if err != nil {
			return nil, fmt.Errorf("interaction %d's response body: %w", i, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// vcrURI is a recorded URI with the default port dropped (the Python
// SDK of 2017 sent https://host:443/...).
func vcrURI(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Port() == "" {
		return s
	}
	if u.Scheme == "https" && u.Port() == "443" || u.Scheme == "http" && u.Port() == "80" {
		return strings.Replace(s, u.Host, u.Hostname(), 1)
	}
	return s
}

// vcrBody is a recorded body's bytes: null, text, !!binary (decoded by
// the YAML reader into a string of its bytes), or a response's
// {string: ...}.
func vcrBody(v any) ([]byte, error) {
	switch b := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(b), nil
	case map[string]any:
		s, ok := b["string"]
		if !ok {
			return nil, fmt.Errorf("a body mapping without its string")
		}
		return vcrBody(s)
	}
	return nil, fmt.Errorf("a body of type %T", v)
}

// requestContentType is a request's Content-Type, its name in any case.
func requestContentType(h map[string]string) string {
	for k, v := range h {
		if strings.EqualFold(k, "Content-Type") {
			return v
		}
	}
	return ""
}

// contentType is a header set's Content-Type, its name in any case.
func contentType(h map[string]replay.Header) string {
	for k, v := range h {
		if strings.EqualFold(k, "Content-Type") {
			return string(v)
		}
	}
	return ""
}

// Package queuehttp is tablekit's raw transport for the Queue service's
// message operations on the worker's hot path: receive, delete and update
// (Get Messages, Delete Message, Update Message). Every request goes
// through an azcore pipeline built from an Account's options, as
// internal/tablehttp's do, so azcore's retry, logging, tracing and the
// caller's per-call and per-retry policies apply; it authenticates as
// azqueue does (Shared Key, a bearer token, or the SAS query).
//
// It exists for cost, not for features: azqueue decodes a received batch
// with encoding/xml through a generated model and signs every request by
// building and sorting a header map, which together cost a transaction
// drained by the worker more client CPU than the hand-written loop it is
// measured against (docs/BENCHMARKS.md). Here a batch is read by a scanner
// of the one document shape the service sends, which hands anything else
// to encoding/xml (messages.go), and a request's string to sign is
// appended into one buffer. Everything else a queue does (create, enqueue,
// peek, properties) stays with azqueue.
//
// It is internal: an Account builds its Client, and registers Of so that
// package consistency can reach it without the root package exporting it.
package queuehttp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tablekit/tablekit/internal/tablehttp"
)

// ServiceVersion is the REST API version the Client speaks: azqueue
// v1.0.1's, so that the worker's requests and azqueue's are answered alike.
const ServiceVersion = "2024-08-04"

// tokenScope is the scope of a bearer token for Azure Storage (azqueue's).
const tokenScope = "https://storage.azure.com/.default"

// Of returns the Client of a *tablekit.Account, or nil when it has no
// queue endpoint. The root package sets it when it is initialised.
var Of func(acct any) *Client

// Client sends message requests to one queue service endpoint.
type Client struct {
	pl       runtime.Pipeline
	endpoint string // without a trailing slash
	sas      url.Values
}

// New returns the Client of endpoint, with a pipeline built from the
// caller's opts (never written into): the caller's per-retry policies
// first, then one policy that counts the try (package attempts), signs it
// with the shared key when auth has one, and hands what it returns to
// redact (the account's redaction of credentials), as the account's azqueue
// client orders its own (the signature last, over every header the
// caller's policies set).
func New(endpoint string, auth tablehttp.Auth, opts azcore.ClientOptions, redact func(*http.Response, error)) *Client {
	c := &Client{endpoint: strings.TrimSuffix(endpoint, "/")}
	try := &tablehttp.Try{Redact: redact}
	per := append([]policy.Policy(nil), opts.PerRetryPolicies...)
	opts.PerRetryPolicies = nil
	switch {
	case auth.Key != nil:
		try.Sign = (&sharedKey{account: auth.Account, key: auth.Key}).sign
	case auth.Token != nil:
		per = append(per, runtime.NewBearerTokenPolicy(auth.Token, []string{tokenScope},
			&policy.BearerTokenOptions{InsecureAllowCredentialWithHTTP: opts.InsecureAllowCredentialWithHTTP}))
	case auth.SAS != "":
		c.sas, _ = url.ParseQuery(auth.SAS)
	}
	per = append(per, try)
	c.pl = runtime.NewPipeline("tablekit", "v0", runtime.PipelineOptions{PerRetry: per}, &opts)
	return c
}

// Receive asks queue for up to n messages (1 to 32), hiding them for
// visibility seconds (Get Messages). One request.
func (c *Client) Receive(ctx context.Context, queue string, n, visibility int32) ([]Message, error) {
	q := c.query(2)
	q["numofmessages"] = []string{strconv.Itoa(int(n))}
	q["visibilitytimeout"] = []string{strconv.Itoa(int(visibility))}
	req, err := c.request(ctx, http.MethodGet, "/"+queue+"/messages", q, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req, http.StatusOK)
	if err != nil {
		return nil, err
	}
	// The pipeline has read the body already (azcore's body download).
	body, err := runtime.Payload(resp)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	return ParseMessages(body)
}

// Delete deletes a received message by its id and current pop receipt
// (Delete Message). One request.
func (c *Client) Delete(ctx context.Context, queue, id, popReceipt string) error {
	q := c.query(1)
	q["popreceipt"] = []string{popReceipt}
	req, err := c.request(ctx, http.MethodDelete, "/"+queue+"/messages/"+url.PathEscape(id), q, nil)
	if err != nil {
		return err
	}
	resp, err := c.send(req, http.StatusNoContent)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// Update sets a received message's text and hides it for visibility
// seconds from now (0: visible at once), and returns its new pop receipt
// (Update Message). One request.
func (c *Client) Update(ctx context.Context, queue, id, popReceipt, text string, visibility int32) (string, error) {
	q := c.query(2)
	q["popreceipt"] = []string{popReceipt}
	q["visibilitytimeout"] = []string{strconv.Itoa(int(visibility))}
	req, err := c.request(ctx, http.MethodPut, "/"+queue+"/messages/"+url.PathEscape(id), q, messageBody(text))
	if err != nil {
		return "", err
	}
	resp, err := c.send(req, http.StatusNoContent)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return resp.Header.Get("x-ms-popreceipt"), nil
}

// query returns the query of a request: the SAS's parameters, and room
// for n more.
func (c *Client) query(n int) url.Values {
	q := make(url.Values, len(c.sas)+n)
	for k, v := range c.sas {
		q[k] = v
	}
	return q
}

// request builds a request for path (under the endpoint, escaped) with
// query and, when body is not nil, an XML body.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body []byte) (*policy.Request, error) {
	// Encode sorts the keys: requests are deterministic.
	u := c.endpoint + path + "?" + strings.ReplaceAll(query.Encode(), "+", "%20")
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 8)
	h["x-ms-version"] = []string{ServiceVersion}
	h["Accept"] = []string{"application/xml"}
	req.Raw().Header = h
	if body != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/xml"); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// send sends req and returns the response when its status is ok, else
// the error: the transport's, or an *azcore.ResponseError.
func (c *Client) send(req *policy.Request, ok int) (*http.Response, error) {
	resp, err := c.pl.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != ok {
		return nil, runtime.NewResponseError(resp)
	}
	return resp, nil
}

// sharedKey signs queue requests with Shared Key, as the REST
// specification ("Authorize with Shared Key", Blob, Queue and File
// services, version 2009-09-19 and later) defines it, and as azqueue's
// policy does: the verb, eleven standard headers (Content-Length empty
// when 0, Date empty since x-ms-date is sent), the x-ms- headers lowercased
// and sorted, and the resource: /account, the escaped path, then each
// query parameter, lowercased and sorted, with its unescaped values sorted
// and joined by commas. HMAC-SHA256 under the decoded account key.
type sharedKey struct {
	account string
	key     []byte
	macs    sync.Pool // hash.Hash: HMAC-SHA256 under key, reset
	bufs    sync.Pool // *[]byte: the string to sign
}

// standardHeaders are the headers of the string to sign after the verb,
// in order (Date is left empty: x-ms-date is always sent).
var standardHeaders = [...]string{"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "", "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"}

// sign sets raw's x-ms-date and Authorization headers.
func (s *sharedKey) sign(raw *http.Request) {
	raw.Header["x-ms-date"] = []string{httpDate(time.Now())}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := StringToSign((*bp)[:0], s.account, raw)
	m, _ := s.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.key)
	}
	m.Write(b)
	var sum [sha256.Size]byte
	auth := "SharedKey " + s.account + ":" + base64.StdEncoding.EncodeToString(m.Sum(sum[:0]))
	m.Reset()
	s.macs.Put(m)
	*bp = b
	s.bufs.Put(bp)
	raw.Header["Authorization"] = []string{auth}
}

// dateCache is the RFC 1123 form of the current second.
var dateCache atomic.Pointer[cachedDate]

type cachedDate struct {
	unix int64
	text string
}

// httpDate is now as an x-ms-date value (http.TimeFormat, UTC), formatted
// once a second.
func httpDate(now time.Time) string {
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.unix == sec {
		return d.text
	}
	text := now.UTC().Format(http.TimeFormat)
	dateCache.Store(&cachedDate{unix: sec, text: text})
	return text
}

// StringToSign appends to b the Shared Key string to sign of raw, a
// request to account's queue service.
func StringToSign(b []byte, account string, raw *http.Request) []byte {
	b = append(b, raw.Method...)
	for _, h := range standardHeaders {
		b = append(b, '\n')
		if h == "" {
			continue
		}
		v := headerValue(raw.Header, h)
		if h == "Content-Length" && v == "0" {
			v = ""
		}
		b = append(b, v...)
	}
	b = append(b, '\n')
	// The x-ms- headers, by their lowercased names (header values as
	// sent: the service trims nothing the client did not).
	var names [8]string
	xms := names[:0]
	for k := range raw.Header {
		if len(k) > 5 && strings.EqualFold(k[:5], "x-ms-") {
			xms = append(xms, k)
		}
	}
	sort.Slice(xms, func(i, j int) bool { return strings.ToLower(xms[i]) < strings.ToLower(xms[j]) })
	for _, k := range xms {
		b = appendLower(b, strings.TrimSpace(k))
		b = append(b, ':')
		b = append(b, strings.Join(raw.Header[k], ",")...)
		b = append(b, '\n')
	}
	b = append(b, '/')
	b = append(b, account...)
	if p := raw.URL.EscapedPath(); p != "" {
		b = append(b, p...)
	} else {
		b = append(b, '/')
	}
	params, _ := url.ParseQuery(raw.URL.RawQuery)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs := params[k]
		sort.Strings(vs)
		b = append(b, '\n')
		b = appendLower(b, k)
		b = append(b, ':')
		for i, v := range vs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, v...)
		}
	}
	return b
}

// headerValue is the first value of the header k, looked up by its
// canonical name and, for the headers the SDK sets by their wire name, as
// given.
func headerValue(h http.Header, k string) string {
	if v, ok := h[k]; ok && len(v) > 0 {
		return v[0]
	}
	return ""
}

func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// Package tablehttp is tablekit's raw transport to the Table service: REST
// requests through an azcore pipeline built from an Account's options, so
// azcore's retry, logging, tracing and per-call/per-retry policies apply,
// authenticated as the SDK authenticates (Shared Key Lite signing, a bearer
// token, or the SAS query). internal/wire uses it to read query pages and
// send batch bodies without the SDK's map[string]any round trips.
//
// It is internal: an Account builds its Client, and registers Of so that
// internal/wire can reach it without the root package exporting it.
package tablehttp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/internal/attempts"
)

// ServiceVersion is the REST API version the Client speaks (the one
// aztables uses).
const ServiceVersion = "2019-02-02"

// Of returns the Client of a *tablekit.Account, or nil when it has no
// table endpoint. The root package sets it when it is initialised.
var Of func(acct any) *Client

// Auth is how a Client authenticates; at most one is set.
type Auth struct {
	Account string                 // the account name, for Shared Key Lite
	Key     []byte                 // the decoded shared key
	Token   azcore.TokenCredential // Microsoft Entra ID
	SAS     string                 // a SAS query string, validated by the caller
}

// Client sends REST requests to one table service endpoint.
type Client struct {
	pl       runtime.Pipeline
	endpoint string
	base     *url.URL // the parsed endpoint, when newURL can extend it
	sas      url.Values
	cosmos   bool
}

// New returns the Client of endpoint, with a pipeline built from the
// caller's opts (never written into). Nearest the transport, after the
// caller's own per-retry policies, every try is counted (package attempts)
// and what it returns is handed to redact (the account's redaction of
// credentials; nil for none), as the account's SDK clients do it.
//
// When the caller has no per-retry policies of its own, the signing, the
// count and the redaction have nothing between them, and one policy does
// all three: each policy azcore runs costs a copy of the request and a
// call, paid by every request (a point read's client time is mostly the
// pipeline's).
func New(endpoint string, auth Auth, opts azcore.ClientOptions, redact func(*http.Response, error)) *Client {
	c := &Client{endpoint: endpoint, cosmos: IsCosmos(endpoint), base: baseURL(endpoint)}
	try := &Try{Redact: redact}
	var per []policy.Policy
	var signer *sharedKeyLitePolicy
	switch {
	case auth.Key != nil:
		signer = &sharedKeyLitePolicy{account: auth.Account, key: auth.Key}
		try.Sign = signer.sign
	case auth.Token != nil:
		per = append(per, runtime.NewBearerTokenPolicy(auth.Token, []string{"https://storage.azure.com/.default"}, nil))
	case auth.SAS != "":
		c.sas, _ = url.ParseQuery(auth.SAS)
	}
	if len(opts.PerRetryPolicies) == 0 {
		per = append(per, try)
	} else {
		// The caller's policies see the request signed and are counted
		// as part of the try, as with the SDK clients: signing first,
		// counting and redaction last.
		if signer != nil {
			per = append(per, signer)
		}
		opts.PerRetryPolicies = append(slices.Clip(opts.PerRetryPolicies), &Try{Redact: redact})
	}
	c.pl = runtime.NewPipeline("tablekit", "v0", runtime.PipelineOptions{PerRetry: per}, &opts)
	return c
}

// Try is the policy nearest the transport in tablekit's own table and
// queue pipelines: it signs a try (when Sign is set), counts it (package
// attempts), and hands what it returns to Redact (when set).
type Try struct {
	Sign   func(*http.Request)
	Redact func(*http.Response, error)
}

// Do implements policy.Policy.
func (p *Try) Do(req *policy.Request) (*http.Response, error) {
	if p.Sign != nil {
		p.Sign(req.Raw())
	}
	attempts.Note(req.Raw().Context())
	resp, err := req.Next()
	if p.Redact != nil {
		p.Redact(resp, err)
	}
	return resp, err
}

// Endpoint is the table service URL.
func (c *Client) Endpoint() string { return c.endpoint }

// IsCosmos reports whether the endpoint is Azure Cosmos DB's Table API,
// whose batch and query formats differ in details; tablekit sends its
// requests there through the SDK instead.
func (c *Client) IsCosmos() bool { return c.cosmos }

// NewRequest builds a request for path (relative to the endpoint, such as
// "/employees()" or "/$batch", already escaped) with the query parameters
// and the headers every table request needs (x-ms-version,
// DataServiceVersion, Accept: minimal metadata).
func (c *Client) NewRequest(ctx context.Context, method, path string, query url.Values) (*policy.Request, error) {
	rawQuery := ""
	if len(query) > 0 || len(c.sas) > 0 {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		for k, v := range c.sas {
			q[k] = v
		}
		// Encode sorts the keys: requests are deterministic.
		rawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	var req *policy.Request
	if u := c.newURL(path, rawQuery); u != nil {
		raw, err := http.NewRequestWithContext(ctx, method, "", nil)
		if err != nil {
			return nil, err
		}
		raw.URL, raw.Host = u, u.Host
		if req, err = runtime.NewRequestFromRequest(raw); err != nil {
			return nil, err
		}
	} else {
		full := c.endpoint + path
		if rawQuery != "" {
			full += "?" + rawQuery
		}
		var err error
		if req, err = runtime.NewRequest(ctx, method, full); err != nil {
			return nil, err
		}
	}
	// Room for these four, the User-Agent, the date and the signature
	// without the map growing (a read's headers, in one group of slots).
	hd := make(http.Header, 8)
	v := make([]string, 4)
	v[0], v[1], v[2], v[3] = ServiceVersion, "3.0", "3.0;NetFx", "application/json;odata=minimalmetadata"
	hd["x-ms-version"] = v[0:1:1]
	hd["DataServiceVersion"] = v[1:2:2]
	hd["MaxDataServiceVersion"] = v[2:3:3]
	hd["Accept"] = v[3:4:4]
	req.Raw().Header = hd
	return req, nil
}

// baseURL is endpoint parsed, when newURL can extend it: an absolute http
// or https URL with a host, no user, query or fragment, and a path with
// nothing escaped (nil otherwise).
func baseURL(endpoint string) *url.URL {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" || u.User != nil ||
		u.RawPath != "" || u.ForceQuery || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Host, ":") || !plainPath(u.Path) || needsEscape(u.Path) {
		return nil
	}
	return u
}

// newURL is what url.Parse returns for c.endpoint + path + "?" + rawQuery
// (rawQuery already encoded), without parsing the endpoint again, or nil
// when the path is not one it builds the same way: anything escaped
// (%), a query or fragment in it, a control character.
func (c *Client) newURL(path, rawQuery string) *url.URL {
	if c.base == nil || !plainPath(path) {
		return nil
	}
	u := *c.base
	u.Path += path
	// As url.Parse keeps the text of a path that its own escaping would
	// change (the quotes and parentheses of an entity's address).
	if needsEscape(u.Path) {
		u.RawPath = u.Path
	}
	u.RawQuery = rawQuery
	return &u
}

// plainPath reports whether p unescapes to itself and holds no query,
// fragment or control character: url.Parse's Path for it is p.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '%' || c == '?' || c == '#' || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// needsEscape reports whether net/url escapes any byte of the path p (its
// encodePath rules: all but letters, digits, "-_.~" and "$&+,/:;=@").
func needsEscape(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case '-', '_', '.', '~', '$', '&', '+', ',', '/', ':', ';', '=', '@':
			continue
		}
		return true
	}
	return false
}

// Do sends req through the pipeline. Like the SDK, it returns the response
// whatever its status; check it with runtime.HasStatusCode and turn
// failures into typed errors with tablekit.MapError(runtime.NewResponseError(resp)).
func (c *Client) Do(req *policy.Request) (*http.Response, error) { return c.pl.Do(req) }

// IsCosmos reports whether endpoint is Azure Cosmos DB's Table API (or its
// emulator).
func IsCosmos(endpoint string) bool {
	return strings.Contains(endpoint, ".table.cosmos.") || strings.Contains(endpoint, ".table.cosmosdb.") ||
		(strings.Contains(endpoint, "localhost") && strings.Contains(endpoint, "8902"))
}

// sharedKeyLitePolicy signs table requests with Shared Key Lite, as the
// REST specification ("Authorize with Shared Key", Table service) defines
// it: StringToSign = x-ms-date + "\n" + CanonicalizedResource, where the
// resource is "/" + account + the URI's escaped path (+ "?comp=..." when
// that parameter is present), HMAC-SHA256 under the decoded account key.
type sharedKeyLitePolicy struct {
	account string
	key     []byte
	macs    sync.Pool // hash.Hash: HMAC-SHA256 under key, reset
	last    atomic.Pointer[signature]
}

// signature is the Authorization value of one string to sign: requests
// to the same path in the same second (the pages of a scan, the batches
// of a bulk write) share it.
type signature struct{ toSign, auth string }

func (p *sharedKeyLitePolicy) Do(req *policy.Request) (*http.Response, error) {
	p.sign(req.Raw())
	return req.Next()
}

// sign sets raw's x-ms-date and Authorization headers.
func (p *sharedKeyLitePolicy) sign(raw *http.Request) {
	date := httpDate(time.Now())
	toSign := StringToSign(p.account, date, raw.URL)
	auth := ""
	if last := p.last.Load(); last != nil && last.toSign == toSign {
		auth = last.auth
	} else {
		m, _ := p.macs.Get().(hash.Hash)
		if m == nil {
			m = hmac.New(sha256.New, p.key)
		}
		m.Write([]byte(toSign))
		var sum [sha256.Size]byte
		auth = "SharedKeyLite " + p.account + ":" + base64.StdEncoding.EncodeToString(m.Sum(sum[:0]))
		m.Reset()
		p.macs.Put(m)
		p.last.Store(&signature{toSign: toSign, auth: auth})
	}
	raw.Header["x-ms-date"] = []string{date}
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

// StringToSign is the Table service's Shared Key Lite string to sign for a
// request to u sent at date (an RFC 1123 x-ms-date value).
func StringToSign(account, date string, u *url.URL) string {
	p, comp := u.EscapedPath(), compParam(u.RawQuery)
	var b strings.Builder
	b.Grow(len(date) + 3 + len(account) + len(p) + len("?comp=") + len(comp))
	b.WriteString(date)
	b.WriteString("\n/")
	b.WriteString(account)
	if p != "" {
		b.WriteString(p)
	} else {
		b.WriteByte('/')
	}
	if comp != "" {
		b.WriteString("?comp=")
		b.WriteString(comp)
	}
	return b.String()
}

// compParam is u.Query().Get("comp") without parsing the whole query (a
// query page's $filter can be long): the first comp parameter, unescaped.
func compParam(rawQuery string) string {
	for q := rawQuery; q != ""; {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != "comp" {
			continue
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			return uv
		}
		return ""
	}
	return ""
}

package replay

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/tablehttp"
)

// Target is the service a session is replayed against: path-style
// endpoints (http://HOST:PORT/ACCOUNT) and the account's key.
type Target struct {
	TableURL, QueueURL, BlobURL string
	AccountName                 string
	// AccountKey is the account's key, base64.
	AccountKey string
	// Client sends the requests; nil means a client with compression off
	// (bodies are compared as they come).
	Client *http.Client
	// Now reads the target's clock; nil means the real one.
	Now func() time.Time
	// Advance, when the target's clock can be moved (the emulator's),
	// moves it forward: the replay passes on it the time the recorded
	// session waited between two requests (a lease running out, a
	// message becoming visible again), instead of waiting.
	Advance func(time.Duration)
}

// now is the target's time.
func (t *Target) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// shiftedDates are the request headers whose dates a session's client
// chose by its own clock (a condition "modified in the last 15
// minutes"): the replay moves them by as much as the target's clock is
// ahead of the recording's at that request (the request's recorded
// x-ms-date), so they mean what they meant.
var shiftedDates = []string{
	"If-Modified-Since", "If-Unmodified-Since",
	"x-ms-source-if-modified-since", "x-ms-source-if-unmodified-since",
}

// shiftDate is a recorded date header's value moved to the target's
// clock: by the distance between the request's recorded x-ms-date and
// the target's now. A value that is not a date, or a request recorded
// without x-ms-date, stays as recorded.
func (t *Target) shiftDate(e *Entry, v string) string {
	sent, ok := e.header("x-ms-date")
	if !ok {
		return v
	}
	at, err1 := http.ParseTime(sent)
	d, err2 := http.ParseTime(v)
	if err1 != nil || err2 != nil {
		return v
	}
	return d.Add(t.now().Sub(at)).UTC().Format(http.TimeFormat)
}

// service is the storage service a recorded host names.
type service int

const (
	tableService service = iota + 1
	queueService
	blobService
)

// recordedHost matches a recorded URI's scheme and host and names the
// service: https://fakeaccount.table.core.windows.net,
// https://fakestorage.queue.core.windows.net, and the Cosmos DB Table
// API's https://fakeaccount.table.cosmos.azure.com.
var recordedHost = regexp.MustCompile(`https?://[A-Za-z0-9-]+\.(table|queue|blob)\.(?:core\.windows\.net|cosmos\.azure\.com)`)

// batchPath is a batch operation's request line whose URL is a path
// alone, up to the path's first slash.
var batchPath = regexp.MustCompile(`(?m)^((?:GET|POST|PUT|PATCH|MERGE|DELETE) )/`)

// base is the target's endpoint for a service.
func (t *Target) base(s service) string {
	switch s {
	case queueService:
		return t.QueueURL
	case blobService:
		return t.BlobURL
	}
	return t.TableURL
}

// split returns a recorded URI's service and the path and query after
// its host, as recorded (escaped).
func split(uri string) (service, string, error) {
	m := recordedHost.FindStringSubmatch(uri)
	if m == nil || !strings.HasPrefix(uri, m[0]) {
		return 0, "", fmt.Errorf("recorded URI %q names no table, queue or blob host", uri)
	}
	s := map[string]service{"table": tableService, "queue": queueService, "blob": blobService}[m[1]]
	return s, uri[len(m[0]):], nil
}

// rewriteHosts replaces every recorded host in text (the URLs inside a
// batch, a Location header, odata.metadata) with the target's endpoint of
// the same service.
func (t *Target) rewriteHosts(text string) string {
	return recordedHost.ReplaceAllStringFunc(text, func(h string) string {
		s, _, _ := split(h)
		return t.base(s)
	})
}

// dropped are recorded request headers not sent again: the signature and
// date are made anew, the length is the body's, the rest describe the
// recorder's client.
var dropped = map[string]bool{
	"authorization":          true,
	"x-ms-date":              true,
	"date":                   true,
	"content-length":         true,
	"user-agent":             true,
	"accept-encoding":        true,
	"transfer-encoding":      true,
	"x-ms-client-request-id": true,
	"traceparent":            true,
}

// request builds the request for a recorded entry: the target's endpoint,
// the recorded path and query with remembered values substituted, the
// recorded headers (If-Match and the like substituted), the recorded body
// (a batch's inner URLs rewritten, its boundary restored), signed with
// Shared Key Lite (tables, as aztables signs) or Shared Key (queues,
// blobs, as azqueue and azblob sign).
func (t *Target) request(e *Entry, mem *memory) (*http.Request, error) {
	svc, rest, err := split(e.RequestURI)
	if err != nil {
		return nil, err
	}
	p, q, _ := strings.Cut(rest, "?")
	u, err := url.Parse(t.base(svc) + mem.path(p) + queryOf(q, mem))
	if err != nil {
		return nil, fmt.Errorf("request URI: %w", err)
	}
	ct, _ := e.header("Content-Type")
	body, err := bodyBytes(e.RequestBody, ct)
	if err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if strings.HasPrefix(strings.ToLower(ct), "multipart/") && len(body) > 0 {
		// The recorder sanitized the boundary in the Content-Type
		// (batch_00000000-...) but not in the body: the body's first
		// line is the boundary that was sent.
		// (The Python SDK of 2017 ended its lines with LF alone.)
		first, _, _ := bytes.Cut(body, []byte("\n"))
		first = bytes.TrimSuffix(first, []byte("\r"))
		if b, ok := bytes.CutPrefix(first, []byte("--")); ok {
			ct = "multipart/mixed; boundary=" + string(b)
		}
		body = []byte(mem.text(t.rewriteHosts(string(body))))
		// An operation addressed by its path alone (the Python SDK of
		// 2017: POST /mytable HTTP/1.1) names the recorded account's
		// host; on a path-style endpoint that is the account's path.
		if bu, err := url.Parse(t.base(svc)); err == nil {
			body = batchPath.ReplaceAll(body, []byte("${1}"+strings.TrimSuffix(bu.EscapedPath(), "/")+"/"))
		}
	}
	req, err := http.NewRequest(e.RequestMethod, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range e.RequestHeaders {
		if dropped[strings.ToLower(k)] {
			continue
		}
		if strings.EqualFold(k, "Content-Type") {
			v = ct
		}
		if strings.EqualFold(k, "x-ms-copy-source") {
			// A copy's source names the recorded account's host.
			v = t.rewriteHosts(v)
		}
		got := mem.value(v)
		if got == v && slices.ContainsFunc(shiftedDates, func(h string) bool { return strings.EqualFold(h, k) }) {
			// Not a value the service chose (a Last-Modified,
			// remembered): a time the client chose.
			got = t.shiftDate(e, v)
		}
		if strings.HasPrefix(strings.ToLower(k), "x-ms-meta-") {
			// A metadata name keeps the case it was sent in (the
			// service stores it so); net/http would capitalize it.
			req.Header[k] = []string{got}
			continue
		}
		req.Header.Set(k, got)
	}
	if anonymous(e) {
		return req, nil
	}
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	if err := t.sign(req, svc, len(body)); err != nil {
		return nil, err
	}
	return req, nil
}

// anonymous reports whether e was sent without credentials: a request
// recorded with neither x-ms-version nor x-ms-date (a browser's GET of a
// public blob) was not signed, and is not signed again.
func anonymous(e *Entry) bool {
	_, v := e.header("x-ms-version")
	_, d := e.header("x-ms-date")
	return !v && !d
}

// queryOf is a recorded query string ("" or the part after '?') with
// remembered values substituted, as "?..." or "".
func queryOf(q string, mem *memory) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		v, err := url.QueryUnescape(value)
		if err != nil {
			continue
		}
		if got, ok := mem.answered[v]; ok {
			parts[i] = name + "=" + url.QueryEscape(got)
		}
	}
	return "?" + strings.Join(parts, "&")
}

// sign adds the Authorization header.
func (t *Target) sign(req *http.Request, svc service, length int) error {
	key, err := base64.StdEncoding.DecodeString(t.AccountKey)
	if err != nil {
		return fmt.Errorf("the target's account key is not base64: %w", err)
	}
	var toSign string
	if svc == tableService {
		// Shared Key Lite for the Table service, as tablekit's own
		// transport signs it.
		toSign = tablehttp.StringToSign(t.AccountName, req.Header.Get("x-ms-date"), req.URL)
		req.Header.Set("Authorization", "SharedKeyLite "+t.AccountName+":"+hmacSHA256(key, toSign))
		return nil
	}
	toSign = t.sharedKeyString(req, length)
	req.Header.Set("Authorization", "SharedKey "+t.AccountName+":"+hmacSHA256(key, toSign))
	return nil
}

func hmacSHA256(key []byte, s string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// sharedKeyString is the Blob and Queue services' Shared Key string to
// sign.
func (t *Target) sharedKeyString(req *http.Request, length int) string {
	h := req.Header
	cl := ""
	if length > 0 {
		cl = strconv.Itoa(length)
	}
	// The names as sent (a metadata name keeps its case), lowercased.
	values := map[string][]string{}
	var names []string
	for k, vs := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			if _, seen := values[lk]; !seen {
				names = append(names, lk)
			}
			values[lk] = append(values[lk], vs...)
		}
	}
	sort.Strings(names)
	var ch strings.Builder
	for _, n := range names {
		ch.WriteString(n + ":" + strings.Join(values[n], ",") + "\n")
	}
	res := "/" + t.AccountName + req.URL.EscapedPath()
	q := req.URL.Query()
	var params []string
	for k := range q {
		params = append(params, k)
	}
	sort.Strings(params)
	for _, k := range params {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		res += "\n" + strings.ToLower(k) + ":" + strings.Join(vs, ",")
	}
	return strings.Join([]string{
		req.Method,
		h.Get("Content-Encoding"),
		h.Get("Content-Language"),
		cl,
		h.Get("Content-MD5"),
		h.Get("Content-Type"),
		"", // Date: x-ms-date is among the canonicalized headers
		h.Get("If-Modified-Since"),
		h.Get("If-Match"),
		h.Get("If-None-Match"),
		h.Get("If-Unmodified-Since"),
		h.Get("Range"),
		ch.String() + res,
	}, "\n")
}

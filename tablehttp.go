package tablekit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// TableServiceVersion is the REST API version TableHTTP speaks (the one
// aztables uses).
const TableServiceVersion = "2019-02-02"

// tableAuth is how an Account authenticates raw table requests.
type tableAuth struct {
	keyBytes []byte                 // shared key
	token    azcore.TokenCredential // Microsoft Entra ID
	sas      string                 // SAS query string
}

// TableHTTP sends REST requests to the table service through an azcore
// pipeline built from the Account's options: azcore's retry, logging,
// tracing and per-call/per-retry policies apply, and requests are
// authenticated like the SDK's (Shared Key Lite signing, a bearer token,
// or the SAS query). tablekit uses it to read query pages and send batch
// bodies without the SDK's map[string]any round trips; it is exported for
// callers that need a table REST operation tablekit does not wrap.
type TableHTTP struct {
	pl       runtime.Pipeline
	endpoint string
	sas      url.Values
	cosmos   bool
}

// TableHTTP returns the account's raw table transport, or nil when the
// account has no table endpoint.
func (a *Account) TableHTTP() *TableHTTP {
	if a.urls.table == "" {
		return nil
	}
	a.httpMu.Lock()
	defer a.httpMu.Unlock()
	if a.http != nil {
		return a.http
	}
	h := &TableHTTP{endpoint: a.urls.table, cosmos: isCosmos(a.urls.table)}
	var auth []policy.Policy
	switch {
	case a.auth.keyBytes != nil:
		auth = append(auth, &sharedKeyLitePolicy{account: a.name, key: a.auth.keyBytes})
	case a.auth.token != nil:
		auth = append(auth, runtime.NewBearerTokenPolicy(a.auth.token, []string{"https://storage.azure.com/.default"}, nil))
	case a.auth.sas != "":
		h.sas, _ = url.ParseQuery(a.auth.sas) // validated by Connect
	}
	co := a.opts.ClientOptions
	h.pl = runtime.NewPipeline("tablekit", "v0", runtime.PipelineOptions{PerRetry: auth}, &co)
	a.http = h
	return h
}

// Endpoint is the table service URL.
func (h *TableHTTP) Endpoint() string { return h.endpoint }

// IsCosmos reports whether the endpoint is Azure Cosmos DB's Table API,
// whose batch and query formats differ in details; tablekit sends its
// requests there through the SDK instead.
func (h *TableHTTP) IsCosmos() bool { return h.cosmos }

// NewRequest builds a request for path (relative to the endpoint, such as
// "/employees()" or "/$batch", already escaped) with the query parameters
// and the headers every table request needs (x-ms-version,
// DataServiceVersion, Accept: minimal metadata).
func (h *TableHTTP) NewRequest(ctx context.Context, method, path string, query url.Values) (*policy.Request, error) {
	u := h.endpoint + path
	if len(query) > 0 || len(h.sas) > 0 {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		for k, v := range h.sas {
			q[k] = v
		}
		// Encode sorts the keys: requests are deterministic.
		u += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, err
	}
	hd := req.Raw().Header
	hd["x-ms-version"] = []string{TableServiceVersion}
	hd["DataServiceVersion"] = []string{"3.0"}
	hd["MaxDataServiceVersion"] = []string{"3.0;NetFx"}
	hd["Accept"] = []string{"application/json;odata=minimalmetadata"}
	return req, nil
}

// Do sends req through the pipeline. Like the SDK, it returns the response
// whatever its status; check it with runtime.HasStatusCode and turn
// failures into typed errors with MapError(runtime.NewResponseError(resp)).
func (h *TableHTTP) Do(req *policy.Request) (*http.Response, error) { return h.pl.Do(req) }

func isCosmos(endpoint string) bool {
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
}

func (p *sharedKeyLitePolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	date := time.Now().UTC().Format(http.TimeFormat)
	raw.Header["x-ms-date"] = []string{date}
	raw.Header["Authorization"] = []string{"SharedKeyLite " + p.account + ":" + p.sign(SharedKeyLiteStringToSign(p.account, date, raw.URL))}
	return req.Next()
}

func (p *sharedKeyLitePolicy) sign(s string) string {
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SharedKeyLiteStringToSign is the Table service's Shared Key Lite string
// to sign for a request to u sent at date (an RFC 1123 x-ms-date value).
func SharedKeyLiteStringToSign(account, date string, u *url.URL) string {
	var b strings.Builder
	b.WriteString(date)
	b.WriteString("\n/")
	b.WriteString(account)
	if p := u.EscapedPath(); p != "" {
		b.WriteString(p)
	} else {
		b.WriteByte('/')
	}
	if comp := u.Query().Get("comp"); comp != "" {
		b.WriteString("?comp=")
		b.WriteString(comp)
	}
	return b.String()
}

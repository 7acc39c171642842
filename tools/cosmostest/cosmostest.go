// Package cosmostest replays recorded Azure Cosmos DB Table API responses
// to tablekit's tests. No Cosmos DB emulator runs in the test suite, and
// Azurite emulates only Azure Table storage, so the Cosmos profile's
// behaviour (chosen from the endpoint, its rules enforced before any
// request, the service's answers decoded) is tested against the answers
// Cosmos DB really gave the Azure SDK for Go's own tests: its recordings
// (Azure/azure-sdk-assets, go/sdk/data/aztables/testdata/recordings),
// trimmed to what a test needs, in testdata/. Each file names the
// recording it comes from and what was changed.
//
// A Replay is an azcore transport (policy.Transporter): an Account built
// with it in its ClientOptions sends every request to the Replay, which
// answers with the first unused recorded exchange of the same method,
// path and continuation parameters, and counts what it was sent. A request
// with no recorded answer fails the test.
package cosmostest

import (
	"bytes"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
)

// Endpoint is the table endpoint of the recordings: a Cosmos DB Table API
// account, recognised as one from its host name.
const Endpoint = "https://fakeaccount.table.cosmos.azure.com"

// Table is the table name every recording uses.
const Table = "cosmostable"

//go:embed testdata/*.json
var recordings embed.FS

// recording is the part of a test-proxy recording file the Replay uses.
type recording struct {
	Source  string
	Entries []struct {
		RequestURI      string            `json:"RequestUri"`
		RequestMethod   string            `json:"RequestMethod"`
		StatusCode      int               `json:"StatusCode"`
		ResponseHeaders map[string]string `json:"ResponseHeaders"`
		ResponseBody    json.RawMessage   `json:"ResponseBody"`
	}
}

// exchange is one recorded request and its answer.
type exchange struct {
	method string
	path   string     // unescaped, as http.Request.URL.Path
	cont   url.Values // the continuation parameters of the request
	status int
	header http.Header
	body   []byte
	source string
	used   bool
}

// Request is a request the Replay was sent.
type Request struct {
	Method string
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// Replay answers requests from recorded exchanges. It is safe for
// concurrent use.
type Replay struct {
	mu        sync.Mutex
	exchanges []*exchange
	sent      []Request
	unmatched []string
}

// New returns a Replay of the named files of testdata/ ("pages.json"),
// their exchanges in order. At the end of the test it fails t when a
// request found no recorded answer.
func New(t testing.TB, files ...string) *Replay {
	t.Helper()
	r := &Replay{}
	for _, f := range files {
		data, err := recordings.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatalf("cosmostest: %v", err)
		}
		var rec recording
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatalf("cosmostest: %s: %v", f, err)
		}
		for i, e := range rec.Entries {
			x, err := exchangeOf(e.RequestMethod, e.RequestURI, e.StatusCode, e.ResponseHeaders, e.ResponseBody)
			if err != nil {
				t.Fatalf("cosmostest: %s entry %d: %v", f, i, err)
			}
			x.source = f
			r.exchanges = append(r.exchanges, x)
		}
	}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, u := range r.unmatched {
			t.Errorf("cosmostest: no recorded answer for %s", u)
		}
	})
	return r
}

func exchangeOf(method, uri string, status int, headers map[string]string, body json.RawMessage) (*exchange, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	x := &exchange{method: method, path: u.Path, cont: continuation(u.Query()), status: status, header: http.Header{}}
	for k, v := range headers {
		x.header.Set(k, v)
	}
	switch {
	case len(body) == 0 || string(body) == "null":
	case body[0] == '"':
		// A body that is not JSON (a batch's multipart answer) is
		// stored as a base64 string, as the test proxy stores it.
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, err
		}
		if x.body, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, fmt.Errorf("response body: %w", err)
		}
	default:
		x.body = body
	}
	return x, nil
}

// continuation keeps the parameters that tell a query's pages apart.
func continuation(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"NextPartitionKey", "NextRowKey", "NextTableName"} {
		if v, ok := q[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Do answers req with the first unused recorded exchange of the same
// method, path and continuation parameters. Without one it returns an
// error, and the test fails at its end.
func (r *Replay) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, Request{Method: req.Method, URL: req.URL, Header: req.Header.Clone(), Body: body})
	cont := continuation(req.URL.Query()).Encode()
	for _, x := range r.exchanges {
		if x.used || x.method != req.Method || x.path != req.URL.Path || x.cont.Encode() != cont {
			continue
		}
		x.used = true
		return &http.Response{
			Status:        fmt.Sprintf("%d %s", x.status, http.StatusText(x.status)),
			StatusCode:    x.status,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        x.header.Clone(),
			Body:          io.NopCloser(bytes.NewReader(x.body)),
			ContentLength: int64(len(x.body)),
			Request:       req,
		}, nil
	}
	what := req.Method + " " + req.URL.String()
	r.unmatched = append(r.unmatched, what)
	return nil, fmt.Errorf("cosmostest: no recorded answer for %s", what)
}

// ForTable serves the exchanges recorded for table Table as those of
// table name (a period table's, say) and returns r. Call it before the
// first request.
func (r *Replay) ForTable(name string) *Replay {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.exchanges {
		if x.path == "/"+Table || strings.HasPrefix(x.path, "/"+Table+"(") {
			x.path = "/" + name + x.path[len(Table)+1:]
		}
	}
	return r
}

// Requests is the number of requests sent to the Replay so far.
func (r *Replay) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

// Sent returns the requests sent to the Replay so far, in order.
func (r *Replay) Sent() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.sent...)
}

// Unused reports the recorded exchanges no request has used, as
// "file: METHOD path".
func (r *Replay) Unused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, x := range r.exchanges {
		if !x.used {
			out = append(out, x.source+": "+x.method+" "+x.path)
		}
	}
	return out
}

// Account returns an Account of the Cosmos DB endpoint whose every
// request goes to r, authenticated by a made-up shared key and with
// azcore's retries off, so that a count of requests is a count of calls.
func (r *Replay) Account(t testing.TB) *tablekit.Account {
	t.Helper()
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("cosmostest", 4)))
	acct, err := tablekit.NewAccountWithSharedKey("fakeaccount", key, tablekit.Endpoints{Table: Endpoint},
		&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{Transport: r, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

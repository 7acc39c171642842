package emulator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	blobservice "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
)

// originPolicy sends Origin on every request while origin is set, and
// keeps the last answer's headers: an SDK client as a browser's page
// would use it.
type originPolicy struct {
	mu     sync.Mutex
	origin string
	last   http.Header
}

func (p *originPolicy) Do(req *policy.Request) (*http.Response, error) {
	p.mu.Lock()
	origin := p.origin
	p.mu.Unlock()
	if origin != "" {
		req.Raw().Header.Set("Origin", origin)
	}
	resp, err := req.Next()
	if err == nil {
		p.mu.Lock()
		p.last = resp.Header.Clone()
		p.mu.Unlock()
	}
	return resp, err
}

func (p *originPolicy) set(origin string) {
	p.mu.Lock()
	p.origin = origin
	p.mu.Unlock()
}

func (p *originPolicy) header() http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// preflight sends an unauthenticated OPTIONS request to url.
func preflight(t *testing.T, url string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodOptions, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// The three services store CORS rules through Set Service Properties,
// return them, answer preflights by them without credentials (200 with
// the Access-Control headers, 403 CorsPreflightFailure, 400 without the
// CORS headers) and add the headers to requests naming an allowed Origin.
func TestCORSOnEveryService(t *testing.T) {
	em := emulator.StartTB(t, nil)
	origins := &originPolicy{}
	acct, err := tablekit.Connect(em.ConnectionString, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerCallPolicies: []policy.Policy{origins},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Rule 1 names its origin, rule 2 allows any origin for DELETE.
	const (
		origin1, methods1, headers1, exposed1, age1 = "http://a.example", "GET,PUT", "x-ms-meta-*,content-type", "x-ms-request-id,x-ms-meta-*", 60
		origins2, methods2                          = "*", "DELETE"
	)
	services := []struct {
		name string
		url  string
		set  func() error
		get  func() (rules int, firstOrigin string, err error)
	}{
		{"table", em.TableURL, func() error {
			_, err := acct.Tables().SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{
				{AllowedOrigins: to.Ptr(origin1), AllowedMethods: to.Ptr(methods1), AllowedHeaders: to.Ptr(headers1), ExposedHeaders: to.Ptr(exposed1), MaxAgeInSeconds: to.Ptr[int32](age1)},
				{AllowedOrigins: to.Ptr(origins2), AllowedMethods: to.Ptr(methods2), AllowedHeaders: to.Ptr(""), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr[int32](0)},
			}}, nil)
			return err
		}, func() (int, string, error) {
			p, err := acct.Tables().GetProperties(ctx, nil)
			if err != nil || len(p.Cors) == 0 {
				return len(p.Cors), "", err
			}
			return len(p.Cors), *p.Cors[0].AllowedOrigins, nil
		}},
		{"queue", em.QueueURL, func() error {
			_, err := acct.Queues().SetProperties(ctx, &azqueue.SetPropertiesOptions{CORS: []*azqueue.CORSRule{
				{AllowedOrigins: to.Ptr(origin1), AllowedMethods: to.Ptr(methods1), AllowedHeaders: to.Ptr(headers1), ExposedHeaders: to.Ptr(exposed1), MaxAgeInSeconds: to.Ptr[int32](age1)},
				{AllowedOrigins: to.Ptr(origins2), AllowedMethods: to.Ptr(methods2), AllowedHeaders: to.Ptr(""), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr[int32](0)},
			}})
			return err
		}, func() (int, string, error) {
			p, err := acct.Queues().GetServiceProperties(ctx, nil)
			if err != nil || len(p.CORS) == 0 {
				return len(p.CORS), "", err
			}
			return len(p.CORS), *p.CORS[0].AllowedOrigins, nil
		}},
		{"blob", em.BlobURL, func() error {
			_, err := acct.Blobs().ServiceClient().SetProperties(ctx, &blobservice.SetPropertiesOptions{CORS: []*blobservice.CORSRule{
				{AllowedOrigins: to.Ptr(origin1), AllowedMethods: to.Ptr(methods1), AllowedHeaders: to.Ptr(headers1), ExposedHeaders: to.Ptr(exposed1), MaxAgeInSeconds: to.Ptr[int32](age1)},
				{AllowedOrigins: to.Ptr(origins2), AllowedMethods: to.Ptr(methods2), AllowedHeaders: to.Ptr(""), ExposedHeaders: to.Ptr(""), MaxAgeInSeconds: to.Ptr[int32](0)},
			}})
			return err
		}, func() (int, string, error) {
			p, err := acct.Blobs().ServiceClient().GetProperties(ctx, nil)
			if err != nil || len(p.CORS) == 0 {
				return len(p.CORS), "", err
			}
			return len(p.CORS), *p.CORS[0].AllowedOrigins, nil
		}},
	}
	for _, s := range services {
		t.Run(s.name, func(t *testing.T) {
			url := s.url + "/anything"
			ask := map[string]string{"Origin": origin1, "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "x-ms-meta-team,content-type"}
			// No rules yet: refused.
			if resp, body := preflight(t, url, ask); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "CorsPreflightFailure") {
				t.Fatalf("preflight before any rule: %d %s; want 403 CorsPreflightFailure", resp.StatusCode, body)
			}
			if err := s.set(); err != nil {
				t.Fatalf("Set Service Properties: %v", err)
			}
			if n, o, err := s.get(); err != nil || n != 2 || o != origin1 {
				t.Fatalf("Get Service Properties: %d rules, first origin %q, %v; want 2, %q", n, o, err, origin1)
			}
			resp, body := preflight(t, url, ask)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("allowed preflight: %d %s", resp.StatusCode, body)
			}
			for k, want := range map[string]string{
				"Access-Control-Allow-Origin":      origin1,
				"Access-Control-Allow-Methods":     "PUT",
				"Access-Control-Allow-Headers":     "x-ms-meta-team,content-type",
				"Access-Control-Max-Age":           "60",
				"Access-Control-Allow-Credentials": "true",
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("allowed preflight: %s = %q, want %q", k, got, want)
				}
			}
			if resp.Header.Get("x-ms-request-id") == "" {
				t.Errorf("allowed preflight has no x-ms-request-id")
			}
			refused := []struct {
				why     string
				headers map[string]string
				status  int
				code    string
			}{
				{"a header no rule allows", map[string]string{"Origin": origin1, "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "x-ms-other"}, 403, "CorsPreflightFailure"},
				{"an origin no rule allows for GET", map[string]string{"Origin": "http://z.example", "Access-Control-Request-Method": "GET"}, 403, "CorsPreflightFailure"},
				{"no Access-Control-Request-Method", map[string]string{"Origin": origin1}, 400, "InvalidHeaderValue"},
			}
			for _, c := range refused {
				if resp, body := preflight(t, url, c.headers); resp.StatusCode != c.status || !strings.Contains(body, c.code) || resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("preflight with %s: %d %s; want %d %s without Access-Control-Allow-Origin", c.why, resp.StatusCode, body, c.status, c.code)
				}
			}
			// The wildcard rule answers any origin for DELETE.
			if resp, body := preflight(t, url, map[string]string{"Origin": "http://z.example", "Access-Control-Request-Method": "DELETE"}); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://z.example" {
				t.Errorf("preflight for DELETE from any origin: %d %s, origin %q", resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"))
			}

			// An actual request from the allowed origin.
			origins.set(origin1)
			defer origins.set("")
			if _, _, err := s.get(); err != nil {
				t.Fatal(err)
			}
			h := origins.header()
			if h.Get("Access-Control-Allow-Origin") != origin1 || h.Get("Vary") != "Origin" || h.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("GET from %s: Allow-Origin %q, Vary %q, Allow-Credentials %q", origin1, h.Get("Access-Control-Allow-Origin"), h.Get("Vary"), h.Get("Access-Control-Allow-Credentials"))
			}
			if e := strings.ToLower(h.Get("Access-Control-Expose-Headers")); !strings.HasPrefix(e, "x-ms-request-id") {
				t.Errorf("GET from %s: Access-Control-Expose-Headers %q, want x-ms-request-id first", origin1, e)
			}
			// From an origin no rule allows for GET: only Vary.
			origins.set("http://z.example")
			if _, _, err := s.get(); err != nil {
				t.Fatal(err)
			}
			h = origins.header()
			if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "Origin" {
				t.Errorf("GET from another origin: Allow-Origin %q, Vary %q; want none and Origin", h.Get("Access-Control-Allow-Origin"), h.Get("Vary"))
			}
		})
	}
}

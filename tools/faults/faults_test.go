package faults

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// server counts the requests that reach it.
func server(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func pipeline(p *Policy) runtime.Pipeline {
	return runtime.NewPipeline("faults", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		PerRetryPolicies: []policy.Policy{p},
		Retry:            policy.RetryOptions{MaxRetries: -1},
	})
}

func send(t *testing.T, pl runtime.Pipeline, url string) (*http.Response, error) {
	t.Helper()
	req, err := runtime.NewRequest(context.Background(), http.MethodGet, url)
	if err != nil {
		t.Fatal(err)
	}
	return pl.Do(req)
}

func TestSameSeedSameDecisions(t *testing.T) {
	url, _ := server(t)
	run := func(seed uint64) []Event {
		p, err := New(seed, Transient(0.5)...)
		if err != nil {
			t.Fatal(err)
		}
		pl := pipeline(p)
		for range 200 {
			resp, err := send(t, pl, url)
			if err == nil {
				resp.Body.Close()
			}
		}
		return p.Events()
	}
	a, b, c := run(7), run(7), run(8)
	if len(a) == 0 {
		t.Fatal("no fault injected at rate 0.5")
	}
	if len(a) != len(b) {
		t.Fatalf("same seed: %d vs %d events", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, event %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 injected the same faults")
	}
}

func TestBeforeAndAfter(t *testing.T) {
	for _, after := range []bool{false, true} {
		for k := range kindNames {
			p, err := New(1, Rule{Kind: k, Rate: 1, After: after})
			if err != nil {
				t.Fatal(err)
			}
			url, reached := server(t)
			resp, err := send(t, pipeline(p), url)
			var status int
			if err == nil {
				status = resp.StatusCode
				resp.Body.Close()
			}
			switch k {
			case Timeout, ConnReset:
				var ne interface{ Timeout() bool }
				if err == nil || !errors.As(err, &ne) {
					t.Errorf("%v after=%v: err = %v, want a net.Error", k, after, err)
				}
				if k == Timeout && !ne.Timeout() {
					t.Errorf("timeout fault: Timeout() = false")
				}
			default:
				if err != nil || status != map[Kind]int{Status500: 500, Status503: 503, Status408: 408, Status429: 429}[k] {
					t.Errorf("%v after=%v: status %d err %v", k, after, status, err)
				}
			}
			want := int64(0)
			if after {
				want = 1
			}
			if got := reached.Load(); got != want {
				t.Errorf("%v after=%v: %d requests reached the server, want %d", k, after, got, want)
			}
			if p.Injected() != 1 {
				t.Errorf("%v: Injected() = %d, want 1", k, p.Injected())
			}
		}
	}
}

func TestRateAndDisable(t *testing.T) {
	url, reached := server(t)
	p, err := New(42, Rule{Kind: Status503, Rate: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	pl := pipeline(p)
	const n = 2000
	for range n {
		resp, err := send(t, pl, url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := p.Injected()
	if got < 500 || got > 700 {
		t.Fatalf("rate 0.3 over %d attempts injected %d", n, got)
	}
	if reached.Load()+got != n {
		t.Fatalf("reached %d + injected %d != %d", reached.Load(), got, n)
	}
	p.SetEnabled(false)
	for range 100 {
		resp, err := send(t, pl, url)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("disabled policy injected: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	if p.Injected() != got {
		t.Fatal("disabled policy counted an injection")
	}
}

func TestMatch(t *testing.T) {
	url, _ := server(t)
	p, _ := New(1, Rule{Kind: Status500, Rate: 1, Match: func(r *http.Request) bool { return r.Method == http.MethodPut }})
	resp, err := send(t, pipeline(p), url)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("GET should pass a PUT-only rule: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestNewRejectsBadRules(t *testing.T) {
	for name, rules := range map[string][]Rule{
		"negative rate": {{Kind: Status500, Rate: -0.1}},
		"rate above 1":  {{Kind: Status500, Rate: 1.5}},
		"sum above 1":   {{Kind: Status500, Rate: 0.6}, {Kind: Timeout, Rate: 0.6}},
		"unknown kind":  {{Kind: 99, Rate: 0.1}},
	} {
		if _, err := New(1, rules...); err == nil {
			t.Errorf("%s: New accepted %+v", name, rules)
		}
	}
	for _, s := range []string{"500", "503", "408", "429", "timeout", "reset"} {
		k, err := ParseKind(s)
		if err != nil || k.String() != s {
			t.Errorf("ParseKind(%q) = %v, %v", s, k, err)
		}
	}
	if _, err := ParseKind("418"); err == nil {
		t.Error("ParseKind accepted 418")
	}
}

// TestAfterWriteLandsWhileClientFails is the case the policy exists for:
// the service applies a write, the client sees a transient failure.
func TestAfterWriteLandsWhileClientFails(t *testing.T) {
	for k := range kindNames {
		t.Run(k.String(), func(t *testing.T) {
			p, _ := New(3, Rule{Kind: k, Rate: 1, After: true, Match: func(r *http.Request) bool { return r.Method == http.MethodPut }})
			acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
				PerRetryPolicies: []policy.Policy{p},
				Retry:            policy.RetryOptions{MaxRetries: -1},
			}})
			name := testenv.TableName(t)
			ctx := context.Background()
			if _, err := testenv.Account(t).Tables().CreateTable(ctx, name, nil); err != nil {
				t.Fatal(err)
			}
			c := acct.Tables().NewClient(name)
			_, err := c.UpsertEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			err = tablekit.MapError(err, "upsert entity", "p/r")
			if !tablekit.IsTransient(err) {
				t.Fatalf("client error %v is not transient", err)
			}
			if _, err := c.GetEntity(ctx, "p", "r", &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatMinimal)}); err != nil {
				t.Fatalf("the write did not land: %v", err)
			}
		})
	}
}

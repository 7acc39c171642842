package faults

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// A rule built with Once and Request fails exactly one request of the
// chosen kind, after the server handled it, and Hold runs between the
// server's answer and the failure the client sees: the retry waits for it.
func TestOnceRequestHold(t *testing.T) {
	var posts, gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	held := make(chan struct{})
	release := make(chan struct{})
	p, err := New(1, Rule{Kind: Status503, Rate: 1, After: true,
		Match: Once(Request(http.MethodPost, "/mytable")),
		Hold:  func() { close(held); <-release }})
	if err != nil {
		t.Fatal(err)
	}
	pl := runtime.NewPipeline("faults", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		PerRetryPolicies: []policy.Policy{p},
		Retry:            policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond},
	})
	do := func(method, path string) (*http.Response, error) {
		req, err := runtime.NewRequest(context.Background(), method, srv.URL+path)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Do(req)
	}
	// Other requests pass: a GET on the table, a POST elsewhere.
	for _, r := range [][2]string{{http.MethodGet, "/mytable"}, {http.MethodPost, "/$batch"}} {
		if resp, err := do(r[0], r[1]); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s %s: %v, %v", r[0], r[1], resp, err)
		}
	}
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := do(http.MethodPost, "/mytable")
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	<-held
	if n := posts.Load(); n != 2 { // the /$batch one and the held one
		t.Fatalf("%d POSTs reached the server while held, want 2", n)
	}
	select {
	case <-done:
		t.Fatal("the held request returned before Hold did")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	resp := <-done
	if resp == nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("after the retry: %v", resp)
	}
	if n := posts.Load(); n != 3 {
		t.Errorf("%d POSTs reached the server, want 3 (the faulted one was sent, then retried)", n)
	}
	if p.Injected() != 1 {
		t.Errorf("%d faults injected, want exactly 1", p.Injected())
	}
	// Once is spent: the next matching request passes.
	if resp, err := do(http.MethodPost, "/mytable"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("second POST: %v, %v", resp, err)
	}
	if p.Injected() != 1 {
		t.Errorf("%d faults injected after Once was spent", p.Injected())
	}
}

func TestRetryModes(t *testing.T) {
	fast := policy.RetryOptions{MaxRetries: 12, RetryDelay: time.Millisecond}
	m := RetryModes(fast)
	if len(m) != 2 || m[0].Name != "default-retry" || !m[0].Default() || m[1].Name != "fast-retry" || m[1].Default() || m[1].Retry.RetryDelay != time.Millisecond {
		t.Fatalf("RetryModes = %+v", m)
	}
	if m[0].Retry.MaxRetries != 0 || m[0].Retry.RetryDelay != 0 {
		t.Errorf("the default mode must leave azcore's defaults (zero options): %+v", m[0].Retry)
	}
}

// Hold on a rule without After runs before the request leaves: while it
// holds, the service has seen nothing, and the request lands only with
// azcore's retry, after Hold returned.
func TestHoldBeforeTheRequest(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	held := make(chan struct{})
	release := make(chan struct{})
	p, err := New(1, Rule{Kind: Timeout, Rate: 1, Match: Once(nil), Hold: func() { close(held); <-release }})
	if err != nil {
		t.Fatal(err)
	}
	pl := runtime.NewPipeline("faults", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
		PerRetryPolicies: []policy.Policy{p},
		Retry:            policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond},
	})
	done := make(chan error, 1)
	go func() {
		req, err := runtime.NewRequest(context.Background(), http.MethodPost, srv.URL+"/mytable")
		if err == nil {
			_, err = pl.Do(req)
		}
		done <- err
	}()
	<-held
	if n := posts.Load(); n != 0 {
		t.Fatalf("%d POSTs reached the server while held, want 0", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs reached the server, want 1 (the retry)", n)
	}
}

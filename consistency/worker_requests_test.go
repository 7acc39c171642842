package consistency

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// requestKinds counts a worker's requests by what they do; a receive
// counts as full when its answer holds a message.
type requestKinds struct {
	mu sync.Mutex
	n  map[string]int
}

func (k *requestKinds) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	r := req.Raw()
	kind := r.Method + " " + r.URL.Path
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/messages"):
		body, rerr := io.ReadAll(resp.Body)
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		kind = "empty receive"
		if bytes.Contains(body, []byte("<QueueMessage>")) {
			kind = "receive"
		}
	case r.Method == http.MethodDelete && strings.Contains(r.URL.Path, "/messages/"):
		kind = "delete message"
	case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/messages/"):
		kind = "update message"
	case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "(PartitionKey="):
		kind = "upsert entity"
	case r.Method == http.MethodGet && r.URL.Query().Get("comp") == "metadata":
		kind = "queue properties"
	}
	k.mu.Lock()
	k.n[kind]++
	k.mu.Unlock()
	return resp, err
}

// TestWorkerRequestsPerTransaction: draining a backlog of one-step upsert
// transactions, the worker sends one receive per 32 transactions (the
// default BatchSize, twice Concurrency 16), one write and one delete per
// transaction, and nothing else but the receives and queue counts that
// find the queue empty.
func TestWorkerRequestsPerTransaction(t *testing.T) {
	const n = 64
	kinds := &requestKinds{n: map[string]int{}}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{kinds}}})
	ctx := context.Background()
	q := newQueue(t, acct)
	table := createTable(t, acct)
	for i := range n {
		e, err := json.Marshal(map[string]any{"PartitionKey": "p" + strconv.Itoa(i%4), "RowKey": strconv.Itoa(i), "V": i})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, NewTransaction(UpsertEntity(table, e, tablekit.UpsertReplace)), nil); err != nil {
			t.Fatal(err)
		}
	}
	kinds.mu.Lock()
	clear(kinds.n)
	kinds.mu.Unlock()
	w := newWorker(t, acct, q, WorkerOptions{Concurrency: 16, VisibilityTimeout: 30 * time.Second, UntilEmpty: true, DepthInterval: -1, PollInterval: 20 * time.Millisecond})
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Run(runCtx, nil); err != nil || w.Metrics().Processed() != n {
		t.Fatalf("Run = %v after %d of %d transactions", err, w.Metrics().Processed(), n)
	}
	kinds.mu.Lock()
	defer kinds.mu.Unlock()
	want := map[string]int{"receive": n / 32, "upsert entity": n, "delete message": n}
	for k, v := range kinds.n {
		if k == "empty receive" || k == "queue properties" {
			continue
		}
		if want[k] != v {
			t.Errorf("%d requests %q, want %d (all: %v)", v, k, want[k], kinds.n)
		}
	}
	for k, v := range want {
		if kinds.n[k] != v {
			t.Errorf("%d requests %q, want %d (all: %v)", kinds.n[k], k, v, kinds.n)
		}
	}
}

// TestCallAgeByTheServiceClock: a step is told how long its message had
// been queued when it was received, by the queue service's clock (the
// received message's InsertionTime and TimeNextVisible): 10 s on a clock
// moved 10 s after the enqueue, at least 2 s where real time passes.
func TestCallAgeByTheServiceClock(t *testing.T) {
	ctx, acct, q, clock := clockEnv(t)
	if err := q.Enqueue(ctx, NewTransaction(NewStep("age", nil)), nil); err != nil {
		t.Fatal(err)
	}
	lo, hi := 10*time.Second, 12*time.Second
	if !clock.Advance(10 * time.Second) {
		time.Sleep(2 * time.Second)
		lo, hi = time.Second, time.Minute
	}
	w := newWorker(t, acct, q, WorkerOptions{DepthInterval: -1})
	ages := make(chan time.Duration, 1)
	w.Handle("age", func(ctx context.Context, c *Call) error {
		select {
		case ages <- c.Age:
		default:
		}
		return nil
	})
	startWorker(t, w)
	select {
	case age := <-ages:
		if age < lo || age > hi {
			t.Errorf("Call.Age = %v, want %v to %v", age, lo, hi)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the step did not run in 20 s")
	}
}

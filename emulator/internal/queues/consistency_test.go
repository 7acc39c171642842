package queues_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/integration/azurite"
)

// connect is a tablekit account whose queue endpoint is the service at
// url. The worker insists on a table endpoint; this one has none behind
// it, and the steps below never reach it.
func connect(t *testing.T, url string) *tablekit.Account {
	t.Helper()
	acct, err := tablekit.Connect("AccountName="+azurite.AccountName+";AccountKey="+azurite.AccountKey+
		";QueueEndpoint="+url+";TableEndpoint=http://127.0.0.1:1/"+azurite.AccountName, nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// TestConsistencyQueue drives tablekit's transaction queue over the
// service: create (queue and poison queue), enqueue, depth, delete.
func TestConsistencyQueue(t *testing.T) {
	acct := connect(t, server(t, nil))
	q, err := consistency.NewQueue(acct, "orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Twice: existing queues are not an error.
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		tx := &consistency.Transaction{ID: "tx" + strconv.Itoa(i), Steps: []consistency.Step{consistency.NewStep("note", map[string]int{"i": i})}}
		if err := q.Enqueue(ctx, tx, &consistency.EnqueueOptions{Delay: time.Duration(i) * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := q.Depth(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Delayed messages count too.
	if d.Messages != 3 || d.Poison != 0 {
		t.Fatalf("depth %+v, want 3 messages and no poison", d)
	}
	recs, err := q.Poisoned(ctx, 10, nil)
	if err != nil || len(recs) != 0 {
		t.Fatalf("poisoned: %v, %v", recs, err)
	}
	if err := q.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Depth(ctx, nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("depth of a deleted queue: %v, want ErrNotFound", err)
	}
	// Deleting queues that are gone is not an error.
	if err := q.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// TestConsistencyWorker runs tablekit's worker pool on the service's real
// clock: every transaction is applied, one that fails is retried after
// its backoff (its message made invisible with Update Message), one that
// always fails ends in the poison queue, and the queues end empty. It
// waits out the backoff's second beside the other tests (Parallel).
func TestConsistencyWorker(t *testing.T) {
	t.Parallel()
	acct := connect(t, server(t, nil))
	q, err := consistency.NewQueue(acct, "jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := 0; i < n; i++ {
		tx := &consistency.Transaction{ID: "job" + strconv.Itoa(i), Steps: []consistency.Step{consistency.NewStep("count", map[string]int{"i": i})}}
		if err := q.Enqueue(ctx, tx, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: []string{"jobs"}, Concurrency: 8, BatchSize: 8, UntilEmpty: true,
		MaxDequeueCount: 2, PollInterval: 100 * time.Millisecond,
		Backoff: &consistency.Backoff{Delays: []time.Duration{time.Second}},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[int]int{}
	w.Handle("count", func(ctx context.Context, c *consistency.Call) error {
		var a struct{ I int }
		if err := json.Unmarshal(c.Args, &a); err != nil {
			return err
		}
		mu.Lock()
		calls[a.I]++
		k := calls[a.I]
		mu.Unlock()
		switch {
		case a.I == 7 && k == 1:
			return consistency.Retryable(errors.New("transient failure of job 7"))
		case a.I == 9:
			return consistency.Retryable(errors.New("job 9 always fails"))
		}
		return nil
	})
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.Run(rctx, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		want := 1
		if i == 7 || i == 9 {
			want = 2
		}
		if calls[i] != want {
			t.Errorf("job %d applied %d times, want %d", i, calls[i], want)
		}
	}
	d, err := q.Depth(ctx, nil)
	if err != nil || d.Messages != 0 || d.Poison != 1 {
		t.Fatalf("depth after the run: %+v, %v; want 0 messages, 1 poison", d, err)
	}
	recs, err := q.Poisoned(ctx, 10, nil)
	if err != nil || len(recs) != 1 || recs[0].TxID != "job9" {
		t.Fatalf("poison records: %+v, %v", recs, err)
	}
}

package consistency

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestPoisonAfterLimit: a transaction that keeps failing with a
// retryable error is delivered MaxDequeueCount times, then lands in the
// poison queue with its last error; Requeue brings it back and a fixed
// handler applies it. The backoff before the third delivery passes on
// the test's clock (real time on Azurite or an account).
func TestPoisonAfterLimit(t *testing.T) {
	ctx, acct, q, clock := clockEnv(t)
	var calls atomic.Int64
	var fixed atomic.Bool
	var applied atomic.Int64
	w := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 3})
	w.Handle("flaky", func(ctx context.Context, c *Call) error {
		if fixed.Load() {
			applied.Add(1)
			return nil
		}
		n := calls.Add(1)
		if c.DequeueCount != n {
			t.Errorf("call %d saw DequeueCount %d", n, c.DequeueCount)
		}
		return errors.New("downstream said no (attempt " + string(rune('0'+n)) + ")")
	})
	tx := NewTransaction(NewStep("flaky", map[string]string{"x": "y"}))
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	stop := startWorker(t, w)
	// fastBackoff: the second delivery at once, the third a second on.
	testenv.WaitFor(t, 20*time.Second, "the second failure", func() bool { return w.Metrics().Retried() == 2 && w.Metrics().InFlight() == 0 })
	clock.Pass(time.Second)
	testenv.WaitFor(t, 20*time.Second, "the poison queue", func() bool { return w.Metrics().Poisoned() == 1 })
	stop()
	if calls.Load() != 3 || w.Metrics().Retried() != 2 {
		t.Fatalf("handler ran %d times, %d retries; want 3 and 2", calls.Load(), w.Metrics().Retried())
	}
	if n := messageCount(t, q.qc); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
	recs, err := q.Poisoned(ctx, 10, nil)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Poisoned: %v %v", recs, err)
	}
	r := recs[0]
	if r.TxID != tx.ID || r.DequeueCount != 3 || r.Step != 0 || r.Kind != "flaky" || r.Permanent ||
		!strings.Contains(r.Error, "downstream said no (attempt 3)") || r.Queue != q.Name() || r.PoisonMessageID == "" {
		t.Fatalf("poison record: %+v", r)
	}
	if back, err := ParseTransaction([]byte(r.Message), false); err != nil || back.ID != tx.ID {
		t.Fatalf("poison record's message: %v %v", back, err)
	}

	n, err := q.Requeue(ctx, nil)
	if err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	if recs, _ := q.Poisoned(ctx, 10, nil); len(recs) != 0 {
		t.Fatalf("poison queue still holds %d", len(recs))
	}
	fixed.Store(true)
	w2 := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 3})
	w2.Handle("flaky", w.reg.m["flaky"])
	stop2 := startWorker(t, w2)
	testenv.WaitFor(t, 20*time.Second, "the requeued transaction", func() bool { return w2.Metrics().Processed() == 1 })
	stop2()
	if applied.Load() != 1 {
		t.Fatalf("applied %d times", applied.Load())
	}
}

// TestPermanentFailuresPoisonAtOnce: a missing table, an unknown step and
// a message that is not an envelope are not retried.
func TestPermanentFailuresPoisonAtOnce(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	missing := testenv.TableName(t) // never created
	if err := q.Enqueue(ctx, &Transaction{ID: "missing-table", Steps: []Step{UpsertEntity(missing, []byte(`{"PartitionKey":"p","RowKey":"r"}`), tablekit.UpsertReplace)}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, &Transaction{ID: "unknown-kind", Steps: []Step{NewStep("no-such-kind", nil)}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.qc.EnqueueMessage(ctx, "this is not JSON", nil); err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 5})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "three poisoned messages", func() bool { return w.Metrics().Poisoned() == 3 })
	stop()
	if w.Metrics().Retried() != 0 {
		t.Fatalf("%d retries of permanent failures", w.Metrics().Retried())
	}
	recs, err := q.Poisoned(ctx, 10, nil)
	if err != nil || len(recs) != 3 {
		t.Fatalf("Poisoned: %d %v", len(recs), err)
	}
	byTx := map[string]PoisonRecord{}
	for _, r := range recs {
		if !r.Permanent || r.DequeueCount != 1 {
			t.Errorf("record %+v: want permanent after 1 delivery", r)
		}
		byTx[r.TxID] = r
	}
	if r := byTx["missing-table"]; !strings.Contains(r.Error, "TableNotFound") || r.Kind != KindUpsertEntity {
		t.Errorf("missing table: %+v", r)
	}
	if r := byTx["unknown-kind"]; !strings.Contains(r.Error, "no handler for step kind no-such-kind") {
		t.Errorf("unknown kind: %+v", r)
	}
	if r := byTx[""]; r.Message != "this is not JSON" || !strings.Contains(r.Error, "malformed") || r.Step != -1 {
		t.Errorf("malformed: %+v", r)
	}
}

// TestVisibilityExtension: a step slower than the visibility timeout is
// not redelivered to another worker while it runs. The step is held
// while the service's clock runs 1.75 timeouts, three extensions of the
// worker's (holdPastVisibility), which run in real time.
func TestVisibilityExtension(t *testing.T) {
	t.Parallel()
	ctx, acct, q, clock, ext := extendedClockEnv(t)
	var calls atomic.Int64
	release := make(chan struct{})
	slow := func(ctx context.Context, c *Call) error {
		calls.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	var ws []*Worker
	for range 2 {
		w := newWorker(t, acct, q, WorkerOptions{VisibilityTimeout: holdVisibility, PollInterval: 50 * time.Millisecond})
		w.Handle("slow", slow)
		ws = append(ws, w)
	}
	if err := q.Enqueue(ctx, NewTransaction(NewStep("slow", nil)), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		startWorker(t, w)
	}
	testenv.WaitFor(t, 20*time.Second, "the slow step to start", func() bool { return calls.Load() == 1 })
	holdPastVisibility(t, clock, ext, 1, holdVisibility)
	close(release)
	testenv.WaitFor(t, 20*time.Second, "the slow transaction", func() bool { return ws[0].Metrics().Processed()+ws[1].Metrics().Processed() >= 1 })
	letRedeliveriesShow(clock, 50*time.Millisecond)
	if calls.Load() != 1 {
		t.Fatalf("slow step ran %d times, want 1", calls.Load())
	}
	if n := messageCount(t, q.qc); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}

// TestOversizeTransactionThroughBlob: an envelope over 64 KiB goes through
// a blob, is applied, and the blob is deleted afterwards.
func TestOversizeTransactionThroughBlob(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	table := createTable(t, acct)
	big := strings.Repeat("é\"x", 10000) // 40,000 bytes of JSON per entity after escaping
	tx := NewTransaction()
	for i := range 3 {
		tx.Add(UpsertEntity(table, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": string(rune('a' + i)), "Text": big}), tablekit.UpsertReplace))
	}
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	blobs := func() []string { return blobNames(t, acct, q.container, "tx/") }
	if got := blobs(); len(got) != 1 || got[0] != "tx/"+tx.ID+".json" {
		t.Fatalf("blobs after enqueue: %v", got)
	}
	w := newWorker(t, acct, q, WorkerOptions{})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "the oversize transaction", func() bool { return w.Metrics().Processed() == 1 })
	stop()
	for i := range 3 {
		p := getProps(t, acct, EntityRef{table, "p", string(rune('a' + i))})
		if p == nil || p["Text"] != big {
			t.Fatalf("entity %d not written", i)
		}
	}
	if got := blobs(); len(got) != 0 {
		t.Fatalf("blobs after success: %v", got)
	}
}

// TestGracefulShutdown: stopping a worker mid-stream loses nothing and
// applies nothing twice; released messages are visible again at once.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		drain time.Duration
		step  time.Duration
	}{
		{"in-flight work finishes", 30 * time.Second, 100 * time.Millisecond},
		{"drain timeout releases", 50 * time.Millisecond, 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each case has its own queue and workers
			acct := testenv.Account(t)
			ctx := context.Background()
			q := newQueue(t, acct)
			var mu sync.Mutex
			applied := map[string]int{}
			var started atomic.Int64
			// The first worker's work takes c.step; once it has
			// stopped, the second's takes none (24 steps of 3 s at 4
			// at once took 18 s of the test).
			var slow atomic.Bool
			slow.Store(true)
			handler := func(ctx context.Context, call *Call) error {
				started.Add(1)
				step := c.step
				if !slow.Load() {
					step = 0
				}
				select {
				case <-time.After(step):
				case <-ctx.Done():
					return ctx.Err()
				}
				mu.Lock()
				applied[call.TxID]++
				mu.Unlock()
				return nil
			}
			const n = 24
			for range n {
				if err := q.Enqueue(ctx, NewTransaction(NewStep("work", nil)), nil); err != nil {
					t.Fatal(err)
				}
			}
			// A long visibility timeout: a message hidden instead of
			// released would not come back within this test.
			opts := WorkerOptions{Concurrency: 4, VisibilityTimeout: 60 * time.Second, DrainTimeout: c.drain}
			w1 := newWorker(t, acct, q, opts)
			w1.Handle("work", handler)
			stop1 := startWorker(t, w1)
			testenv.WaitFor(t, 20*time.Second, "work to start", func() bool { return started.Load() >= 4 })
			stop1()
			slow.Store(false)
			if w1.Metrics().InFlight() != 0 {
				t.Fatalf("in flight after Run returned: %d", w1.Metrics().InFlight())
			}
			if c.drain > time.Second && w1.Metrics().Processed() < 4 {
				t.Fatalf("in-flight work did not finish: processed %d", w1.Metrics().Processed())
			}
			if c.drain < time.Second && w1.Metrics().Released() == 0 {
				t.Fatal("drain timeout released nothing")
			}
			w2 := newWorker(t, acct, q, opts)
			w2.Handle("work", handler)
			stop2 := startWorker(t, w2)
			testenv.WaitFor(t, 30*time.Second, "the remaining transactions", func() bool {
				return w1.Metrics().Processed()+w2.Metrics().Processed() == n
			})
			stop2()
			mu.Lock()
			defer mu.Unlock()
			if len(applied) != n {
				t.Fatalf("%d of %d transactions applied", len(applied), n)
			}
			for id, k := range applied {
				if k != 1 {
					t.Errorf("transaction %s applied %d times", id, k)
				}
			}
			if m := messageCount(t, q.qc); m != 0 {
				t.Fatalf("%d messages left", m)
			}
		})
	}
}

// TestCrashLoopMessagePoisoned: a message delivered more often than the
// limit without ever completing (workers died holding it) is poisoned
// without running its steps again.
func TestCrashLoopMessagePoisoned(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	tx := NewTransaction(NewStep("crash", nil))
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 { // three deliveries that never complete
		resp, err := q.qc.DequeueMessages(ctx, nil)
		if err != nil || len(resp.Messages) != 1 {
			t.Fatalf("dequeue: %v", err)
		}
		m := resp.Messages[0]
		if _, err := q.qc.UpdateMessage(ctx, *m.MessageID, *m.PopReceipt, *m.MessageText, nil); err != nil {
			t.Fatal(err)
		}
	}
	var ran atomic.Int64
	w := newWorker(t, acct, q, WorkerOptions{MaxDequeueCount: 3})
	w.Handle("crash", func(context.Context, *Call) error { ran.Add(1); return nil })
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "the poisoned message", func() bool { return w.Metrics().Poisoned() == 1 })
	stop()
	if ran.Load() != 0 {
		t.Fatalf("steps ran %d times on the 4th delivery", ran.Load())
	}
	recs, err := q.Poisoned(ctx, 1, nil)
	if err != nil || len(recs) != 1 || recs[0].TxID != tx.ID || recs[0].DequeueCount != 4 || !strings.Contains(recs[0].Error, "delivered 4 times (limit 3)") {
		t.Fatalf("poison record %+v %v", recs, err)
	}
}

package consistency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/emulator"
)

// drainEnv starts an emulator of the test's own (its clock is the
// test's) and returns it with an account on it and a created queue.
func drainEnv(t *testing.T) (*emulator.Instance, *tablekit.Account, *consistency.Queue) {
	t.Helper()
	em := emulator.StartTB(t, nil)
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := consistency.NewQueue(acct, "intents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return em, acct, q
}

// DrainOptions.Wait waits for a delayed message to become visible and
// applies it; a message that stays invisible past Wait is ErrNotDrained.
func TestDrainWaitsForInvisibleUpToWait(t *testing.T) {
	t.Parallel()
	em, acct, q := drainEnv(t)
	ctx := context.Background()
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	w.Handle("mark", func(ctx context.Context, c *consistency.Call) error { ran.Add(1); return nil })
	if err := q.Enqueue(ctx, consistency.NewTransaction(consistency.NewStep("mark", nil)), &consistency.EnqueueOptions{Delay: time.Second}); err != nil {
		t.Fatal(err)
	}
	// The clock moves while Drain waits, as time or another test's
	// Advance would.
	go func() { time.Sleep(50 * time.Millisecond); em.Advance(time.Second) }()
	if err := w.Drain(ctx, &consistency.DrainOptions{Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Fatalf("the delayed step ran %d times; want 1", ran.Load())
	}

	if err := q.Enqueue(ctx, consistency.NewTransaction(consistency.NewStep("mark", nil)), &consistency.EnqueueOptions{Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = w.Drain(ctx, &consistency.DrainOptions{Wait: 200 * time.Millisecond})
	if !errors.Is(err, consistency.ErrNotDrained) || !strings.Contains(err.Error(), q.Name()+" 1 message") {
		t.Fatalf("Drain with a message a minute away: %v; want ErrNotDrained naming %s 1 message", err, q.Name())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Drain took %v past a Wait of 200ms", d)
	}
}

// A failing transaction is retried at once, not after the worker's
// backoff, then poisoned; Drain says so.
func TestDrainRetriesWithoutBackoffAndReportsPoison(t *testing.T) {
	_, acct, q := drainEnv(t)
	ctx := context.Background()
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}, MaxDequeueCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	var tries atomic.Int64
	w.Handle("flaky", func(ctx context.Context, c *consistency.Call) error { tries.Add(1); return errors.New("not yet") })
	if err := q.Enqueue(ctx, consistency.NewTransaction(consistency.NewStep("flaky", nil)), nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = w.Drain(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "1 transaction poisoned") {
		t.Fatalf("Drain: %v; want 1 transaction poisoned", err)
	}
	if tries.Load() != 3 {
		t.Errorf("tried %d times; want 3 (MaxDequeueCount)", tries.Load())
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v: the retries waited for the backoff (2 s, 4 s)", d)
	}
}

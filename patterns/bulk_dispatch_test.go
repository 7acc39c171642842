package patterns

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/throttle"
	"github.com/tablekit/tablekit/tools/testenv"
)

type dispatchRow struct {
	PartitionKey string
	RowKey       string
	N            int
}

// dispatchJob returns a bulk job of n workers on a new table, whose
// transactions are recorded (by partition) as they are sent, and a
// partition the job's limiter holds back for hold: paused as after a
// throttling answer with that retry-after.
func dispatchJob(t *testing.T, ctx context.Context, n int, held string, hold time.Duration) (*bulk, func() []string) {
	t.Helper()
	tbl, err := NewTable[dispatchRow](testenv.Account(t), testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	b := newBulk(ctx, tbl.ops(), n, defaultMaxBatchBytes)
	s, _ := b.lim.TryAcquire(held, 1)
	s.Throttled(throttle.Partition, hold)
	var mu sync.Mutex
	var sent []string
	submit := b.submit
	b.submit = func(ctx context.Context, ops []Op, slot *throttle.Slot) ([]OpResult, error) {
		mu.Lock()
		sent = append(sent, ops[0].PartitionKey)
		mu.Unlock()
		return submit(ctx, ops, slot)
	}
	return b, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

func dispatchGroup(pk string, index int) *group {
	return &group{
		items: []any{&dispatchRow{PartitionKey: pk, RowKey: "r", N: index}},
		ops:   []Op{{Type: OpUpsertReplace, PartitionKey: pk, RowKey: "r", Unique: true}},
		index: []int{index},
		bytes: 100,
	}
}

// A free worker takes the first queued group whose partition may send
// now: a partition the limiter holds back delays its own transactions
// only, and they still leave once it may send. One worker: in input
// order it would wait for the held partition first.
func TestBulkDispatchPassesAHeldPartition(t *testing.T) {
	t.Parallel()
	b, sent := dispatchJob(t, context.Background(), 1, "held", 300*time.Millisecond)
	finish := b.start(1)
	b.dispatch(dispatchGroup("held", 0))
	b.dispatch(dispatchGroup("free", 1))
	finish()
	if got := sent(); len(got) != 2 || got[0] != "free" || got[1] != "held" {
		t.Fatalf("transactions sent in the order %q, want [free held]: the held partition's went first", got)
	}
	if b.written != 2 || len(b.failed) != 0 {
		t.Fatalf("written %d, failed %v; want 2 and none", b.written, b.failed)
	}
}

// A job cancelled while its only group waits for a held partition ends at
// once: the workers return, and the group's entities are reported failed
// with ctx's error, not sent.
func TestBulkDispatchCancelledWhileHeld(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, sent := dispatchJob(t, ctx, 2, "held", time.Minute)
	finish := b.start(2)
	b.dispatch(dispatchGroup("held", 0))
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan struct{})
	go func() {
		finish()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the workers did not return after the cancellation")
	}
	if got := sent(); len(got) != 0 {
		t.Fatalf("transactions sent after the cancellation: %q", got)
	}
	if len(b.failed) != 1 || !errors.Is(b.failed[0].Err, context.Canceled) {
		t.Fatalf("failed %v, want the one entity, with context.Canceled", b.failed)
	}
}

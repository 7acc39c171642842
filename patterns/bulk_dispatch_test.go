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
// throttling answer with that retry-after. The hold ends hold after
// dispatchJob returns, or sooner.
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
//
// The hold is real time, so a machine that leaves the test's goroutines
// unscheduled for longer than the hold ends it before the free
// partition's group is queued (make test's race run, first run on a cold
// build cache, failed so). When the held partition's group went first
// and the hold had run out by then, the test runs again, holding four
// times as long (300 ms, 1.2 s, 4.8 s, 19.2 s); while the hold lasts, the
// free group must go first.
func TestBulkDispatchPassesAHeldPartition(t *testing.T) {
	t.Parallel()
	for hold := 300 * time.Millisecond; ; hold *= 4 {
		start := time.Now()
		b, sent := dispatchJob(t, context.Background(), 1, "held", hold)
		finish := b.start(1)
		b.dispatch(dispatchGroup("held", 0))
		b.dispatch(dispatchGroup("free", 1))
		queued := time.Since(start)
		finish()
		got := sent()
		if len(got) == 2 && got[0] == "held" && queued >= hold && hold < 19*time.Second {
			t.Logf("both groups were queued %v after the %v hold began, when it may have ended; again, holding 4 times as long", queued.Round(time.Millisecond), hold)
			continue
		}
		if len(got) != 2 || got[0] != "free" || got[1] != "held" {
			t.Fatalf("transactions sent in the order %q, want [free held]: the held partition's went first (%v hold, both groups queued %v after it began)", got, hold, queued.Round(time.Millisecond))
		}
		if b.written != 2 || len(b.failed) != 0 {
			t.Fatalf("written %d, failed %v; want 2 and none", b.written, b.failed)
		}
		return
	}
}

// A job cancelled while its only group waits for a held partition ends at
// once: the workers return, and the group's entities are reported failed
// with ctx's error, not sent.
func TestBulkDispatchCancelledWhileHeld(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The hold is far longer than the wait for the workers, which is far
	// longer than they take: a passing run returns in milliseconds, and a
	// loaded machine (make test's race run) does not fail it by being slow.
	b, sent := dispatchJob(t, ctx, 2, "held", 10*time.Minute)
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
	case <-time.After(2 * time.Minute):
		t.Fatal("the workers did not return within 2 minutes of the cancellation (the partition is held for 10)")
	}
	if got := sent(); len(got) != 0 {
		t.Fatalf("transactions sent after the cancellation: %q", got)
	}
	if len(b.failed) != 1 || !errors.Is(b.failed[0].Err, context.Canceled) {
		t.Fatalf("failed %v, want the one entity, with context.Canceled", b.failed)
	}
}

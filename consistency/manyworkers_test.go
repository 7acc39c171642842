package consistency

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/tools/testenv"
)

// TestManyWorkersOnOneQueue runs four workers, each with several
// transactions in flight, on one queue: every transaction is applied once
// its message is gone, none is lost or poisoned, and the workers share the
// load.
func TestManyWorkersOnOneQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	current, archive := createTable(t, acct), createTable(t, acct)
	q := newQueue(t, acct)
	const n = 120
	for i := 0; i < n; i++ {
		rk := fmt.Sprintf("%06d", i)
		if _, err := acct.Tables().NewClient(current).AddEntity(ctx, mustJSON(t, employee("Sales", rk)), nil); err != nil {
			t.Fatal(err)
		}
		tx := NewTransaction(
			MoveEntity(EntityRef{current, "Sales", rk}, EntityRef{Table: archive}),
			NewStep("count", map[string]string{"rk": rk}),
		)
		if err := q.Enqueue(ctx, tx, nil); err != nil {
			t.Fatal(err)
		}
	}
	var applied atomic.Int64
	seen := make([]atomic.Int32, n)
	var processed [4]*Worker
	for i := range processed {
		w := newWorker(t, acct, q, WorkerOptions{Concurrency: 4, VisibilityTimeout: 10 * time.Second, PollInterval: 50 * time.Millisecond})
		w.Handle("count", func(ctx context.Context, c *Call) error {
			var args struct{ RK string }
			if err := c.Decode(&args); err != nil {
				return err
			}
			i, err := strconv.Atoi(args.RK)
			if err != nil {
				return Permanent(err)
			}
			seen[i].Add(1)
			applied.Add(1)
			return nil
		})
		processed[i] = w
		startWorker(t, w)
	}
	testenv.WaitFor(t, 60*time.Second, "all transactions", func() bool {
		var total int64
		for _, w := range processed {
			total += w.Metrics().Processed()
		}
		return total >= n
	})
	for i := range seen {
		if seen[i].Load() == 0 {
			t.Errorf("transaction %d never ran its last step", i)
		}
	}
	var perWorker []int64
	for _, w := range processed {
		perWorker = append(perWorker, w.Metrics().Processed())
	}
	t.Logf("transactions per worker: %v; count steps run: %d for %d transactions", perWorker, applied.Load(), n)
	for i := 0; i < n; i++ {
		rk := fmt.Sprintf("%06d", i)
		if getProps(t, acct, EntityRef{current, "Sales", rk}) != nil {
			t.Errorf("%s still in the source table", rk)
		}
		if getProps(t, acct, EntityRef{archive, "Sales", rk}) == nil {
			t.Errorf("%s missing from the archive", rk)
		}
	}
	if rec, err := q.Poisoned(ctx, 32, nil); err != nil || len(rec) != 0 {
		t.Errorf("poisoned: %v, %v", rec, err)
	}
}

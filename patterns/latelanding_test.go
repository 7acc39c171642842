package patterns_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A write that lands after the worker stopped waiting for it still reaches
// its views. The writer's write request is held before it reaches the
// service until the worker, whose ExpectWindow is 1 s, has given up
// waiting and applied the announced sync to the entity as it was (no
// entity yet) and deleted the message; then azcore's retry lands the
// insert. The writer, told of success more than half the window after its
// announcement, sends the sync again without its expectation, and once
// the worker drains, the index matches the primaries. Without the
// follow-up the copy is missing for good. (An update's conditional write
// is sent once, without azcore's retries, and a failed send is settled by
// reading back and announcing again: a held send cannot land late there,
// only a slow one.)
func TestLateWriteReachesItsViews(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		seeded bool
		match  func(table string) func(*http.Request) bool
		write  func(ctx context.Context, x *patterns.EventualIndexedTable[Employee]) error
	}{
		{"Insert", false, func(table string) func(*http.Request) bool { return faults.Request(http.MethodPost, "/"+table) },
			func(ctx context.Context, x *patterns.EventualIndexedTable[Employee]) error {
				return x.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000001", Email: "new@contoso.com"}, nil)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			const window = time.Second
			cs := testenv.ConnectionString(t)
			table := testenv.TableName(t)
			var w *consistency.Worker
			applied := int64(1 << 62) // the worker's processed count once it applied the write's announcement
			hold := func() {
				for deadline := time.Now().Add(10 * time.Second); w.Metrics().Processed() < applied && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
			}
			fp, err := faults.New(1, faults.Rule{Kind: faults.Status503, Rate: 1, Match: faults.Once(c.match(table)), Hold: hold})
			must(t, err)
			fp.SetEnabled(false)
			acct := testenv.AccountOn(t, cs, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
				Retry: fastFaultRetry, PerRetryPolicies: []policy.Policy{fp},
			}})
			qname := testenv.QueueName(t)
			t.Cleanup(func() {
				_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(qname), nil)
			})
			container := testenv.ContainerName(t)
			q, err := consistency.NewQueue(acct, qname, &consistency.QueueOptions{BlobContainer: container, ExpectWindow: window})
			must(t, err)
			must(t, q.Create(ctx, nil))
			x, err := patterns.NewEventualIndexedTable(acct, table, q, []patterns.Index[Employee]{{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }}}, nil)
			must(t, err)
			must(t, x.CreateIfNotExists(ctx, nil))
			w, err = consistency.NewWorker(testenv.Account(t), &consistency.WorkerOptions{
				Queues: []string{q.Name()}, PollInterval: 10 * time.Millisecond, MaxDequeueCount: 20, ExpectWindow: window,
				// Three quick deliveries, then the next one past the window.
				Backoff:       &consistency.Backoff{Delays: []time.Duration{0, 0, window}},
				BlobContainer: container, Logger: testLogger(),
			})
			must(t, err)
			runWorker(t, w)
			drained := func(n int64, wait time.Duration) {
				t.Helper()
				for deadline := time.Now().Add(wait); w.Metrics().Processed() < n; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Errorf("the worker processed %d transactions in %v, want %d", w.Metrics().Processed(), wait, n)
						return
					}
				}
			}
			var base int64
			if c.seeded {
				must(t, x.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000001", Email: "old@contoso.com"}, nil))
				base = 1
				drained(base, 10*time.Second)
			}
			applied = base + 1
			fp.SetEnabled(true)
			start := time.Now()
			must(t, c.write(ctx, x))
			took := time.Since(start)
			if fp.Injected() != 1 || took < window {
				t.Fatalf("the write took %v with %d faults injected: want it held past the worker's window (%v)", took, fp.Injected(), window)
			}
			drained(base+2, 2*time.Second) // the announcement, applied early, and the writer's follow-up
			if n := w.Metrics().Retried(); n < consistency.ExpectDeliveries-1 {
				t.Errorf("the worker retried %d times: want the announcement to have waited for the write first", n)
			}
			rep, err := x.Verify(ctx, nil)
			must(t, err)
			if !rep.OK() || rep.Primaries != 1 {
				t.Fatalf("Verify after the late write (%v) and the drain: %+v", took.Round(time.Millisecond), rep)
			}
			if _, err := x.Lookup(ctx, "email", "Sales", "new@contoso.com", nil); err != nil {
				t.Fatalf("the copy of the late write: %v", err)
			}
		})
	}
}

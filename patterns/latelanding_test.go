package patterns_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
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
// follow-up the copy is missing for good. An Update's and a Delete's
// conditional writes are sent once, without azcore's retries, and a failed
// send is settled by reading back and announcing again: a held send cannot
// land late there, only a slow one, so their write is held on its way out
// and then sent (slow); the Update's copy must move to the new email, the
// Delete's must go. The same holds for a Model's eventual index: every
// eventual writer announces and settles its writes the same way.
func TestLateWriteReachesItsViews(t *testing.T) {
	t.Parallel()
	entityWrite := func(method string) func(table string) func(*http.Request) bool {
		return func(table string) func(*http.Request) bool {
			return func(r *http.Request) bool {
				return (method == "" && r.Method != http.MethodGet || r.Method == method) && strings.Contains(r.URL.Path, "/"+table+"(")
			}
		}
	}
	cases := []lateCase{
		{"Insert", false, false, func(table string) func(*http.Request) bool { return faults.Request(http.MethodPost, "/"+table) },
			func(ctx context.Context, x lateRepo) error {
				return x.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000001", Email: "new@contoso.com"}, nil)
			}, 1},
		{"Update", true, true, entityWrite(""),
			func(ctx context.Context, x lateRepo) error {
				_, err := x.Update(ctx, "Sales", "000001", func(e *Employee) error { e.Email = "new@contoso.com"; return nil }, nil)
				return err
			}, 1},
		{"Delete", true, true, entityWrite(http.MethodDelete),
			func(ctx context.Context, x lateRepo) error {
				return x.Delete(ctx, &Employee{PartitionKey: "Sales", RowKey: "000001"}, &patterns.WriteOptions{Unconditional: true})
			}, 0},
	}
	repos := []struct {
		name string
		open func(acct *tablekit.Account, table string, q *consistency.Queue) (lateRepo, error)
	}{
		{"EventualIndexedTable", func(acct *tablekit.Account, table string, q *consistency.Queue) (lateRepo, error) {
			return patterns.NewEventualIndexedTable(acct, table, q, []patterns.Index[Employee]{lateEmailIndex}, nil)
		}},
		{"Model", func(acct *tablekit.Account, table string, q *consistency.Queue) (lateRepo, error) {
			return patterns.NewModel(acct, table, patterns.Views[Employee]{EventualIndexes: []patterns.Index[Employee]{lateEmailIndex}}, &patterns.ModelOptions{Queue: q})
		}},
	}
	for _, r := range repos {
		for _, c := range cases {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				lateWriteReachesItsViews(t, c, r.open)
			})
		}
	}
}

// lateEmailIndex is the unique email index of TestLateWriteReachesItsViews.
var lateEmailIndex = patterns.Index[Employee]{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }}

// lateRepo is what TestLateWriteReachesItsViews needs of an eventual
// writer: EventualIndexedTable's and Model's methods.
type lateRepo interface {
	CreateIfNotExists(ctx context.Context, opts *patterns.CreateOptions) error
	Insert(ctx context.Context, v *Employee, opts *patterns.InsertOptions) error
	Update(ctx context.Context, pk, rk string, fn func(*Employee) error, opts *patterns.UpdateOptions) (Employee, error)
	Delete(ctx context.Context, v *Employee, opts *patterns.WriteOptions) error
	Lookup(ctx context.Context, index, part, value string, opts *patterns.GetOptions) (Employee, error)
	Verify(ctx context.Context, opts *patterns.MaintenanceOptions) (*patterns.IndexReport, error)
}

// lateCase is a case of TestLateWriteReachesItsViews.
type lateCase struct {
	name   string
	seeded bool // an entity with old@contoso.com is there first
	slow   bool // the write is held, then sent (no fault, no retry)
	match  func(table string) func(*http.Request) bool
	write  func(ctx context.Context, x lateRepo) error
	want   int // primaries after; with one, its copy is new@contoso.com's
}

// lateWriteReachesItsViews runs case c of TestLateWriteReachesItsViews on
// the repository open returns.
func lateWriteReachesItsViews(t *testing.T, c lateCase, open func(acct *tablekit.Account, table string, q *consistency.Queue) (lateRepo, error)) {
	ctx := context.Background()
	const window = time.Second
	cs := testenv.ConnectionString(t)
	table := testenv.TableName(t)
	var w *consistency.Worker
	applied := int64(1 << 62) // the worker's processed count once it applied the write's announcement
	hold := func() {
		// The write waits for the worker as long as a loaded machine may
		// take (under -race at -parallel 64 on a loaded machine, 10 s was
		// not enough):
		// let go sooner, it lands before the worker applied its
		// announcement, and the case tests nothing.
		for deadline := time.Now().Add(time.Minute); w.Metrics().Processed() < applied && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	var fp *faults.Policy
	var late policy.Policy
	slow := &slowSend{match: faults.Once(c.match(table)), hold: hold}
	if c.slow {
		late = slow
	} else {
		var err error
		fp, err = faults.New(1, faults.Rule{Kind: faults.Status503, Rate: 1, Match: faults.Once(c.match(table)), Hold: hold})
		must(t, err)
		fp.SetEnabled(false)
		late = fp
	}
	enable := func() {
		if fp != nil {
			fp.SetEnabled(true)
		}
		slow.on.Store(true)
	}
	held := func() int64 {
		if fp != nil {
			return fp.Injected()
		}
		return slow.held.Load()
	}
	qname := testenv.QueueName(t)
	requests := &tablekit.RequestCounter{} // each once, however often azcore tried it
	acct := testenv.AccountOn(t, cs, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry: fastFaultRetry, PerCallPolicies: []policy.Policy{requests}, PerRetryPolicies: []policy.Policy{late},
	}})
	t.Cleanup(func() {
		_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(qname), nil)
	})
	container := testenv.ContainerName(t)
	q, err := consistency.NewQueue(acct, qname, &consistency.QueueOptions{BlobContainer: container, ExpectWindow: window})
	must(t, err)
	must(t, q.Create(ctx, nil))
	x, err := open(acct, table, q)
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
		// The seed's messages, as its writer enqueued them: its
		// announcement, and its follow-up when its Insert took half the
		// window or more (under -race on a loaded machine it did). base counts both, else the held write would be
		// let go when the worker applied the follow-up, before the
		// write's own announcement.
		for _, r := range strings.Split(requests.Requests(), "\n") {
			if strings.HasPrefix(r, "POST ") && strings.HasSuffix(r, "/"+qname+"/messages") {
				base++
			}
		}
		if base < 1 {
			t.Fatalf("the seeding Insert enqueued %d messages on %s, want its announcement at least", base, qname)
		}
		drained(base, time.Minute)
	}
	applied = base + 1
	enable()
	start := time.Now()
	must(t, c.write(ctx, x))
	took := time.Since(start)
	if held() != 1 || took < window {
		t.Fatalf("the write took %v with %d held: want it held past the worker's window (%v)", took, held(), window)
	}
	drained(base+2, time.Minute) // the announcement, applied early, and the writer's follow-up
	if n := w.Metrics().Retried(); n < consistency.ExpectDeliveries-1 {
		t.Errorf("the worker retried %d times: want the announcement to have waited for the write first", n)
	}
	rep, err := x.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != c.want {
		t.Fatalf("Verify after the late write (%v) and the drain: %+v; want %d primaries, every copy right", took.Round(time.Millisecond), rep, c.want)
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "new@contoso.com", nil); c.want == 1 && err != nil {
		t.Fatalf("the copy of the late write: %v", err)
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "old@contoso.com", nil); c.seeded && !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("the copy under the email the late write replaced or deleted: %v; want it gone", err)
	}
}

// slowSend holds the first request match accepts, once on is set, until
// hold returns, and then sends it: a write that reaches the service late
// without failing, as a slow network or service makes it.
type slowSend struct {
	match func(*http.Request) bool
	hold  func()
	on    atomic.Bool
	held  atomic.Int64
}

func (s *slowSend) Do(req *policy.Request) (*http.Response, error) {
	if s.on.Load() && s.match(req.Raw()) {
		s.held.Add(1)
		s.hold()
	}
	return req.Next()
}

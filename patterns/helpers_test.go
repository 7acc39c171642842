package patterns_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The helpers the package's tests share: setup steps many tests repeat.

// must fails the test at once when err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// concurrently runs fn(0), …, fn(n-1) in n goroutines at once, reports
// each error with t.Error once all are done, and reports whether none
// failed.
func concurrently(t testing.TB, n int, fn func(i int) error) bool {
	t.Helper()
	return eachOf(t, n, n, fn)
}

// eachOf runs fn(0), …, fn(n-1), each once, on workers goroutines at once
// (each takes the next i when it is done with one), reports each error
// with t.Error once all are done, and reports whether none failed. The
// fault tests write disjoint entities this way, so that azcore's retry
// delays overlap instead of adding up.
func eachOf(t testing.TB, n, workers int, fn func(i int) error) bool {
	t.Helper()
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				errs[i] = fn(i)
			}
		}()
	}
	wg.Wait()
	ok := true
	for _, err := range errs {
		if err != nil {
			t.Error(err)
			ok = false
		}
	}
	return ok
}

// testQueue creates a consistency queue on acct with a blob container of
// its own, and returns both. The queue, its poison queue and the
// container are deleted when the test ends.
func testQueue(t testing.TB, acct *tablekit.Account) (*consistency.Queue, string) {
	t.Helper()
	qname := testenv.QueueName(t)
	t.Cleanup(func() {
		_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(qname), nil)
	})
	container := testenv.ContainerName(t)
	q, err := consistency.NewQueue(acct, qname, &consistency.QueueOptions{BlobContainer: container})
	must(t, err)
	must(t, q.Create(context.Background(), nil))
	return q, container
}

// runWorker runs w in this process until stop is called or the test ends;
// the first call of stop cancels Run, waits for it to return and reports
// its error with t.Error.
func runWorker(t testing.TB, w *consistency.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// ixRepo is what ixFixture needs of an index repository over ixEmployee.
type ixRepo interface {
	CreateIfNotExists(ctx context.Context, opts *patterns.CreateOptions) error
	Table() *patterns.Table[ixEmployee]
}

// ixFixture builds an index repository with build on a request-counting
// account and a table of its own, creates its tables (dropped when the
// test ends), and returns it with the counter reset.
func ixFixture[X ixRepo](t *testing.T, build func(acct *tablekit.Account, table string) (X, error)) (X, *tablekit.RequestCounter) {
	t.Helper()
	acct, counter := testenv.CountingAccount(t)
	x, err := build(acct, testenv.TableName(t))
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	t.Cleanup(func() { _ = x.Table().Drop(context.Background(), nil) })
	counter.Reset()
	return x, counter
}

// widePut writes e as the old WideEntities.Put did: Replace, conditional
// on e.ETag, when e was read or written; Upsert otherwise.
func widePut(w *patterns.WideEntities, ctx context.Context, e *patterns.WideEntity) error {
	if e.ETag != "" {
		return w.Replace(ctx, e, nil)
	}
	return w.Upsert(ctx, e, nil)
}

package consistency

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestQueueDepthAndGauges: Queue.Depth counts visible and invisible
// messages and the poison queue's, and the worker's /metrics shows the same
// counts per queue.
func TestQueueDepthAndGauges(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	for _, d := range []time.Duration{0, 0, time.Hour} { // the last one stays invisible
		if err := q.Enqueue(ctx, NewTransaction(NewStep("hold", nil)), &EnqueueOptions{Delay: d}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.pc.EnqueueMessage(ctx, "poisoned", nil); err != nil {
		t.Fatal(err)
	}
	d, err := q.Depth(ctx, nil)
	if err != nil || d != (QueueDepth{Queue: q.Name(), Messages: 3, Poison: 1}) {
		t.Fatalf("Depth = %+v, %v; want 3 messages and 1 poisoned", d, err)
	}

	release := make(chan struct{})
	w := newWorker(t, acct, q, WorkerOptions{DepthInterval: 50 * time.Millisecond})
	var held atomic.Int64
	w.Handle("hold", func(ctx context.Context, c *Call) error {
		held.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	stop := startWorker(t, w)
	// Two messages in flight still count: they are in the queue until
	// deleted.
	testenv.WaitFor(t, 10*time.Second, "the gauges", func() bool {
		m := get(t, srv.URL+"/metrics")
		return held.Load() == 2 &&
			strings.Contains(m, `tablekit_worker_queue_messages{queue="`+q.Name()+`"} 3`+"\n") &&
			strings.Contains(m, `tablekit_worker_poison_messages{queue="`+q.Name()+`"} 1`+"\n")
	})
	close(release)
	testenv.WaitFor(t, 10*time.Second, "the applied messages to leave the gauge", func() bool {
		return strings.Contains(get(t, srv.URL+"/metrics"), `tablekit_worker_queue_messages{queue="`+q.Name()+`"} 1`+"\n")
	})
	stop()
	if ds := w.Metrics().QueueDepths(); len(ds) != 1 || ds[0] != (QueueDepth{Queue: q.Name(), Messages: 1, Poison: 1}) {
		t.Fatalf("QueueDepths = %+v", ds)
	}

	// A missing poison queue counts 0; a missing queue is ErrNotFound.
	if _, err := q.pc.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := q.Depth(ctx, nil); err != nil || d.Poison != 0 || d.Messages != 1 {
		t.Fatalf("Depth without a poison queue = %+v, %v", d, err)
	}
	gone, err := NewQueue(acct, testenv.QueueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Depth(ctx, nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Depth of a missing queue: %v, want ErrNotFound", err)
	}
}

func get(t testing.TB, url string) string {
	t.Helper()
	code, body := testenv.HTTPGet(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// TestUntilEmpty: Run with UntilEmpty returns by itself once the queue is
// empty, and not while a message is invisible: one enqueued with a Delay,
// and one waiting for its retry backoff. Every transaction is applied
// once, and a worker started on an empty queue returns at once. The
// delay and the backoff pass on the test's clock (real time on Azurite
// or an account).
func TestUntilEmpty(t *testing.T) {
	t.Parallel()
	ctx, acct, q, clock := clockEnv(t)
	var mu sync.Mutex
	applied := map[string]int{}
	var failed atomic.Bool
	handler := func(ctx context.Context, c *Call) error {
		var a struct{ Fail bool }
		if err := c.Decode(&a); err != nil {
			return err
		}
		if a.Fail && failed.CompareAndSwap(false, true) {
			return errors.New("fails once")
		}
		mu.Lock()
		applied[c.TxID]++
		mu.Unlock()
		return nil
	}
	appliedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(applied)
	}
	const n = 10
	for i := range n {
		var o *EnqueueOptions
		if i == 0 {
			o = &EnqueueOptions{Delay: 2 * time.Second}
		}
		if err := q.Enqueue(ctx, &Transaction{ID: "tx" + strconv.Itoa(i), Steps: []Step{NewStep("work", map[string]bool{"Fail": i == 1})}}, o); err != nil {
			t.Fatal(err)
		}
	}
	w := newWorker(t, acct, q, WorkerOptions{UntilEmpty: true, Backoff: &Backoff{Delays: []time.Duration{2 * time.Second}}, PollInterval: 100 * time.Millisecond})
	w.Handle("work", handler)
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- w.Run(runCtx, nil) }()
	// The eight visible ones applied and the failed one released for its
	// backoff, the delayed one not visible yet: Run keeps polling.
	testenv.WaitFor(t, 20*time.Second, "the visible transactions", func() bool {
		return appliedCount() == n-2 && w.Metrics().Retried() == 1 && w.Metrics().InFlight() == 0
	})
	select {
	case err := <-returned:
		t.Fatalf("Run returned (%v) with 2 messages invisible, after %d of %d transactions", err, appliedCount(), n)
	case <-time.After(300 * time.Millisecond): // three polls
	}
	clock.Pass(2 * time.Second)
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	if runCtx.Err() != nil {
		t.Fatal("Run did not return by itself")
	}
	mu.Lock()
	if len(applied) != n {
		t.Errorf("%d of %d transactions applied before Run returned", len(applied), n)
	}
	for id, k := range applied {
		if k != 1 {
			t.Errorf("%s applied %d times", id, k)
		}
	}
	mu.Unlock()
	if w.Metrics().Retried() != 1 {
		t.Errorf("retried %d, want 1", w.Metrics().Retried())
	}
	if c := messageCount(t, q.qc); c != 0 {
		t.Errorf("%d messages left", c)
	}

	// An empty queue: Run returns after one receive and one count.
	w2 := newWorker(t, acct, q, WorkerOptions{UntilEmpty: true})
	if err := w2.Run(runCtx, nil); err != nil || runCtx.Err() != nil {
		t.Fatalf("Run on an empty queue: %v %v", err, runCtx.Err())
	}
}

// TestLivezApartFromReadyz: during a storage outage /readyz turns 503 and
// /livez stays 200; /readyz recovers with storage. /healthz follows
// /readyz.
func TestLivezApartFromReadyz(t *testing.T) {
	t.Parallel()
	outage, err := faults.New(1, faults.Rule{Kind: faults.ConnReset, Rate: 1})
	if err != nil {
		t.Fatal(err)
	}
	outage.SetEnabled(false)
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerRetryPolicies: []policy.Policy{outage},
		Retry:            policy.RetryOptions{MaxRetries: -1},
	}})
	q := newQueue(t, acct)
	w := newWorker(t, acct, q, WorkerOptions{DepthInterval: -1})
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	status := func(path string) (int, string) { return testenv.HTTPGet(t, srv.URL+path) }

	if code, body := status("/readyz"); code != 503 || body != "not running\n" {
		t.Fatalf("/readyz before Run: %d %q", code, body)
	}
	if code, _ := status("/livez"); code != 200 {
		t.Fatalf("/livez before Run: %d", code)
	}
	stop := startWorker(t, w)
	testenv.WaitFor(t, 10*time.Second, "/readyz 200", func() bool { code, _ := status("/readyz"); return code == 200 })

	outage.SetEnabled(true)
	testenv.WaitFor(t, 10*time.Second, "/readyz 503 in the outage", func() bool {
		code, body := status("/readyz")
		return code == 503 && strings.Contains(body, "consecutive receive failures")
	})
	for _, p := range []string{"/livez", "/healthz"} {
		code, body := status(p)
		if want := map[string]int{"/livez": 200, "/healthz": 503}[p]; code != want {
			t.Errorf("%s in the outage: %d %q, want %d", p, code, body, want)
		}
	}
	outage.SetEnabled(false)
	testenv.WaitFor(t, 10*time.Second, "/readyz 200 after the outage", func() bool { code, _ := status("/readyz"); return code == 200 })
	if code, _ := status("/healthz"); code != 200 {
		t.Errorf("/healthz after the outage: %d", code)
	}
	stop()
	if code, _ := status("/livez"); code != 200 {
		t.Errorf("/livez after Run: %d", code)
	}
}

// TestPrefetchKeepsPipelineFull: two workers of concurrency 2 and
// BatchSize 8 keep up to 16 received messages waiting each (a receive of 8
// when 8 are left), never process more than 2 at once, and
// extend the visibility of the waiting messages, which wait longer than
// the visibility timeout: no message is delivered twice. The steps are
// held while the service's clock runs 1.75 timeouts, three extensions of
// every message the workers hold (holdPastVisibility).
func TestPrefetchKeepsPipelineFull(t *testing.T) {
	t.Parallel()
	ctx, acct, q, clock, ext := extendedClockEnv(t)
	const n = 16
	for range n {
		if err := q.Enqueue(ctx, NewTransaction(NewStep("slow", nil)), nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	applied := map[string]int{}
	var maxWaiting int64
	var ws []*Worker
	release := make(chan struct{})
	for range 2 {
		w := newWorker(t, acct, q, WorkerOptions{Concurrency: 2, BatchSize: 8, VisibilityTimeout: holdVisibility})
		var running, maxRunning atomic.Int64
		w.Handle("slow", func(ctx context.Context, c *Call) error {
			r := running.Add(1)
			defer running.Add(-1)
			mu.Lock()
			if r > maxRunning.Load() {
				maxRunning.Store(r)
			}
			maxWaiting = max(maxWaiting, w.Metrics().Waiting())
			mu.Unlock()
			if c.DequeueCount != 1 {
				t.Errorf("%s delivered %d times", c.TxID, c.DequeueCount)
			}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			applied[c.TxID]++
			mu.Unlock()
			return nil
		})
		t.Cleanup(func() {
			if m := maxRunning.Load(); m > 2 {
				t.Errorf("%d transactions ran at once, concurrency 2", m)
			}
		})
		ws = append(ws, w)
	}
	for _, w := range ws {
		startWorker(t, w)
	}
	held := func() int64 {
		return ws[0].Metrics().Waiting() + ws[0].Metrics().InFlight() + ws[1].Metrics().Waiting() + ws[1].Metrics().InFlight()
	}
	testenv.WaitFor(t, 20*time.Second, "every message received", func() bool { return held() == n })
	holdPastVisibility(t, clock, ext, n, holdVisibility)
	close(release)
	testenv.WaitFor(t, 30*time.Second, "every transaction", func() bool {
		return ws[0].Metrics().Processed()+ws[1].Metrics().Processed() == n
	})
	letRedeliveriesShow(clock, 100*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != n {
		t.Fatalf("%d of %d applied", len(applied), n)
	}
	for id, k := range applied {
		if k != 1 {
			t.Errorf("%s applied %d times", id, k)
		}
	}
	if maxWaiting == 0 || maxWaiting > 16 {
		t.Errorf("at most %d messages waited for a slot; want some, and at most twice BatchSize 8", maxWaiting)
	}
}

// TestBase64Envelopes: a queue with Base64 writes base64 messages (an
// oversize one through a blob once encoded), and the worker applies them
// as well as a base64 message written by another producer, such as an
// Azure Functions output binding.
func TestBase64Envelopes(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	plain, q := queuePair(t, acct, QueueOptions{Base64: true})
	table := createTable(t, acct)
	upsert := func(rk, text string) Step {
		return UpsertEntity(table, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": rk, "Text": text, "More": text}), tablekit.UpsertReplace)
	}
	small := NewTransaction(upsert("small", "x"))
	if err := q.Enqueue(ctx, small, nil); err != nil {
		t.Fatal(err)
	}
	// 52 KB of JSON fits a plain message but not a base64 one.
	big := NewTransaction(upsert("big", strings.Repeat("y", 26_000)))
	if err := q.Enqueue(ctx, big, nil); err != nil {
		t.Fatal(err)
	}
	foreign := base64.StdEncoding.EncodeToString(mustJSON(t, NewTransaction(upsert("foreign", "z"))))
	if _, err := q.qc.EnqueueMessage(ctx, foreign, nil); err != nil {
		t.Fatal(err)
	}
	peek, err := q.qc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: toInt32(3)})
	if err != nil || len(peek.Messages) != 3 {
		t.Fatalf("peek: %v", err)
	}
	for i, m := range peek.Messages {
		b, err := base64.StdEncoding.DecodeString(*m.MessageText)
		if err != nil || !strings.HasPrefix(string(b), `{"v":1,"id":"`) {
			t.Fatalf("message %d is not a base64 envelope: %.80q", i, *m.MessageText)
		}
		if i == 1 && !strings.Contains(string(b), `"blob":{"container":"`+q.container+`","name":"tx/`+big.ID+`.json"}`) {
			t.Fatalf("the oversize envelope does not reference its blob: %s", b)
		}
	}
	w := newWorker(t, acct, plain, WorkerOptions{})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "three transactions", func() bool { return w.Metrics().Processed() == 3 })
	stop()
	for rk, text := range map[string]string{"small": "x", "big": strings.Repeat("y", 26_000), "foreign": "z"} {
		if p := getProps(t, acct, EntityRef{table, "p", rk}); p == nil || p["Text"] != text {
			t.Errorf("entity %s not written", rk)
		}
	}
	if w.Metrics().Poisoned() != 0 {
		t.Errorf("%d poisoned", w.Metrics().Poisoned())
	}
}

func toInt32(n int32) *int32 { return &n }

package consistency

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	azblobcontainer "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fastBackoff keeps retries immediate in tests.
var fastBackoff = &Backoff{Delays: []time.Duration{0, time.Second}}

// newQueue creates a transaction queue (and its poison queue and blob
// container) for this test.
func newQueue(t testing.TB, acct *tablekit.Account) *Queue {
	t.Helper()
	name := testenv.QueueName(t)
	poison := PoisonQueueName(name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = testenv.Account(t).Queues().DeleteQueue(ctx, poison, nil)
	})
	q, err := NewQueue(acct, name, &QueueOptions{BlobContainer: testenv.ContainerName(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return q
}

// queueEnv is how most worker tests start: a context, the test account
// and a new queue on it.
func queueEnv(t testing.TB) (context.Context, *tablekit.Account, *Queue) {
	t.Helper()
	acct := testenv.Account(t)
	return context.Background(), acct, newQueue(t, acct)
}

// clockEnv is queueEnv on a service whose clock the test moves
// (testenv.ClockAccount): an emulator of the test's own, or on Azurite or
// an account the shared service, whose clock only real time moves.
func clockEnv(t testing.TB) (context.Context, *tablekit.Account, *Queue, *testenv.Clock) {
	t.Helper()
	acct, clock := testenv.ClockAccount(t)
	return context.Background(), acct, newQueue(t, acct), clock
}

// extensions is a per-retry policy that records the messages whose
// visibility an update extended (Update Message answered 204): on a
// worker's account, it shows when the worker's keeper has extended what
// it holds.
type extensions struct {
	mu  sync.Mutex
	ids map[string]bool // extended since the last reset
}

func (e *extensions) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	r := req.Raw()
	if err == nil && resp.StatusCode == http.StatusNoContent && r.Method == http.MethodPut && r.URL.Query().Has("popreceipt") {
		e.mu.Lock()
		if e.ids == nil {
			e.ids = map[string]bool{}
		}
		e.ids[path.Base(r.URL.Path)] = true
		e.mu.Unlock()
	}
	return resp, err
}

func (e *extensions) reset() {
	e.mu.Lock()
	clear(e.ids)
	e.mu.Unlock()
}

func (e *extensions) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ids)
}

// extendedClockEnv is clockEnv with the account's visibility updates
// recorded: the workers of a test of extensions run on it.
func extendedClockEnv(t testing.TB) (context.Context, *tablekit.Account, *Queue, *testenv.Clock, *extensions) {
	t.Helper()
	cs, clock := testenv.ClockConnectionString(t)
	ext := &extensions{}
	acct := testenv.AccountOn(t, cs, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{ext}}})
	return context.Background(), acct, newQueue(t, acct), clock, ext
}

// holdPastVisibility lets the service's clock run 1.75 visibility
// timeouts vis, at least, while workers hold held messages whose
// visibility they keep extending, without the test waiting that long:
// three times, once every held message has been extended since the last
// time (the keeper extends each a third of the timeout after the last
// update, in real time: vis/3 to 4vis/9), it moves the clock vis/4 on. A
// message thus sees at most one move between two of its extensions, and
// an extension lands at most 25/36 vis of the service's time after the
// one before, plus the request's own time: 0.31 vis to spare, where a
// message not extended would be visible again within the first two moves.
// The tests hold for vis = 2 s (holdVisibility): at 1 s, 306 ms to spare
// were not enough for make test's race run, where 16 messages' extensions
// under load left two of them visible again (2026-11-29). Where the clock
// does not move, the moves are real waits.
func holdPastVisibility(t *testing.T, clock *testenv.Clock, ext *extensions, held int, vis time.Duration) {
	t.Helper()
	for i := range 3 {
		ext.reset()
		testenv.WaitFor(t, 20*time.Second, fmt.Sprintf("extension %d of %d held messages", i+1, held), func() bool { return ext.count() >= held })
		clock.Pass(vis / 4)
	}
}

// holdVisibility is the visibility timeout of the workers whose messages
// holdPastVisibility holds.
const holdVisibility = 2 * time.Second

// letRedeliveriesShow waits long enough for a message a worker applied
// but did not delete to be delivered again, so that a test can check
// that none was: its visibility timeout (at most holdVisibility in the
// tests that call it) passed on the test's clock, then three polls of
// the workers (each poll at most poll); where the clock does not move,
// holdVisibility and half a second more.
func letRedeliveriesShow(clock *testenv.Clock, poll time.Duration) {
	if clock.Advance(time.Minute) {
		time.Sleep(3 * poll)
		return
	}
	time.Sleep(holdVisibility + 500*time.Millisecond)
}

// queuePair creates a queue (plain, with default options) and returns it
// with a second Queue on the same queue and blob container with options o.
func queuePair(t testing.TB, acct *tablekit.Account, o QueueOptions) (plain, q *Queue) {
	t.Helper()
	plain = newQueue(t, acct)
	o.BlobContainer = plain.container
	q, err := NewQueue(acct, plain.Name(), &o)
	if err != nil {
		t.Fatal(err)
	}
	return plain, q
}

// blobNames lists the names of the blobs in container that start with
// prefix.
func blobNames(t testing.TB, acct *tablekit.Account, container, prefix string) []string {
	t.Helper()
	var o *azblobcontainer.ListBlobsFlatOptions
	if prefix != "" {
		o = &azblobcontainer.ListBlobsFlatOptions{Prefix: &prefix}
	}
	var names []string
	pager := acct.Blobs().NewListBlobsFlatPager(container, o)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	return names
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("CONSISTENCY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startWorker runs a worker until the returned stop function is called
// (or the test ends). stop waits for Run to return.
func startWorker(t testing.TB, w *Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.Run(ctx, nil); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func newWorker(t testing.TB, acct *tablekit.Account, q *Queue, o WorkerOptions) *Worker {
	t.Helper()
	o.Queues = append(o.Queues, q.Name())
	o.BlobContainer = q.container
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = 5 * time.Second
	}
	if o.Backoff == nil {
		o.Backoff = fastBackoff
	}
	if o.PollInterval == 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	w, err := NewWorker(acct, &o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// messageCount is the queue's approximate message count (visible and
// invisible).
func messageCount(t testing.TB, qc *azqueue.QueueClient) int32 {
	t.Helper()
	resp, err := qc.GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return deref(resp.ApproximateMessagesCount)
}

// visibleMessages reports whether q holds a visible message (Peek
// Messages sees only those).
func visibleMessages(t testing.TB, q *Queue) bool {
	t.Helper()
	resp, err := q.qc.PeekMessages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Messages) > 0
}

// getProps reads an entity as the worker does (raw body, full metadata,
// stripped, doubles annotated); nil when missing.
func getProps(t testing.TB, acct *tablekit.Account, ref EntityRef) map[string]any {
	t.Helper()
	p, _, found, err := readEntity(context.Background(), acct, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return nil
	}
	out := map[string]any{}
	for k, v := range p {
		var x any
		_ = json.Unmarshal(v, &x)
		out[k] = x
	}
	return out
}

func createTable(t testing.TB, acct *tablekit.Account) string {
	t.Helper()
	name := testenv.TableName(t)
	if _, err := acct.Tables().CreateTable(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

package patterns_test

// The conformance suite, in the spirit of gocloud.dev's docstore/drivertest:
// one harness runs every repository's contract in every mode, so a new
// repository joins the table below instead of growing its own fault tests.
//
// Modes: each transport (tablekit's REST calls, and the aztables SDK path
// chosen with TableOptions.SDKPath), without faults, and under a fault
// policy (tools/faults: 10% of the attempts fail, half of them after the
// service applied the request, the response lost) with azcore's default
// retry options (first retry after about 0.8 s) and with fast ones (1 ms).
//
// Each repository's scenario writes, reads, updates and deletes a handful of
// entities through its public API, with concurrent increments through its
// update verb, then checks the final state exactly: nothing lost, nothing
// applied twice. An error wrapping tablekit.ErrOutcomeUnknown is allowed
// under faults and counted as "maybe" (a counter then lies between the
// successes and the successes plus the maybes). A transient failure after
// azcore gave up (about one attempt in 10,000 fails four times in a row)
// is counted as not applied, and the final state proves it: a write that
// landed but said it failed shows up as an extra increment, or as a
// conflict when the caller tries again. Any other error fails. In
// the modes without faults each operation's request count is checked
// against the repository's documented budget (its doc comment), and in every mode
// the repository's entity requests must all go through the transport it
// was asked for. Eventually consistent repositories run a worker in this
// process until their queue is drained, then their index copies, lists
// and copied properties are checked too; one of their writes lands late
// (lateWrite), after its intent became visible to the worker.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
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

// cfMode is one way of running a repository's contract.
type cfMode struct {
	name   string
	sdk    bool // TableOptions.SDKPath
	faults bool // 10% transient faults, half of them lost responses
	fast   bool // retry after 1 ms instead of azcore's default 0.8 s
}

var cfModes = []cfMode{
	{name: "rest"},
	{name: "sdk", sdk: true},
	{name: "rest-faults-defaultretry", faults: true},
	{name: "sdk-faults-defaultretry", sdk: true, faults: true},
	{name: "rest-faults-fastretry", faults: true, fast: true},
	{name: "sdk-faults-fastretry", sdk: true, faults: true, fast: true},
}

// cost ranks the modes by run time: faults with azcore's default delays
// take longest.
func (m cfMode) cost() int {
	switch {
	case m.faults && !m.fast:
		return 2
	case m.faults:
		return 1
	}
	return 0
}

// cfFaultRate is the share of HTTP attempts that fail in the fault modes.
const cfFaultRate = 0.10

// retry is the mode's azcore retry options: azcore's defaults (3 retries,
// the first after about 0.8 s) unless fast.
func (m cfMode) retry() policy.RetryOptions {
	if m.fast {
		return policy.RetryOptions{MaxRetries: 12, RetryDelay: time.Millisecond, MaxRetryDelay: 20 * time.Millisecond}
	}
	return policy.RetryOptions{}
}

// cfRepos is the suite: every repository of package patterns and its
// scenario (conformance_repos_test.go). Those whose scenario runs a worker
// (cfEnv.startWorker) say so: they run on an emulator of their own, whose
// clock drain moves.
var cfRepos = []struct {
	name   string
	run    func(e *cfEnv)
	worker bool
}{
	{"Table", cfTable, false},
	{"MixedTable", cfMixedTable, false},
	{"IndexedTable", cfIndexedTable, false},
	{"EventualIndexedTable", cfEventualIndexedTable, true},
	{"BlobIndexedTable", cfBlobIndexedTable, false},
	{"ListIndexedTable", cfListIndexedTable, false},
	{"EventualListIndexedTable", cfEventualListIndexedTable, true},
	{"Denormalization", cfDenormalization, false},
	{"EventualDenormalization", cfEventualDenormalization, true},
	{"LogTail", cfLogTail, false},
	{"DataSeries", cfDataSeries, false},
	{"WideEntities", cfWideEntities, false},
	{"LargeEntities", cfLargeEntities, true},
	{"Bucketed", cfBucketed, false},
	{"PeriodTables", cfPeriodTables, false},
	{"CompoundKeys", cfCompoundKeys, false},
	{"Model", cfComposed, true},
}

// cfConcurrency bounds the runs at once: enough to overlap azcore's retry
// delays, few enough that Azurite answers in its usual milliseconds (the
// eventually consistent repositories count on a write landing within its
// intent's delay).
const cfConcurrency = 24

// TestConformance runs every repository in every mode, the slowest modes
// first. The runs start side by side (testenv.SideBySide) rather than
// through t.Parallel, which -parallel would bound and queue behind every
// top-level test: most of a fault mode's time is spent in azcore's retry
// delays, not on a CPU.
func TestConformance(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, cfConcurrency)
	modes := slices.Clone(cfModes)
	slices.SortStableFunc(modes, func(a, b cfMode) int { return cmp.Compare(b.cost(), a.cost()) })
	for _, m := range modes {
		for _, r := range cfRepos {
			g.Run(m.name+"/"+r.name, func(t *testing.T) {
				e := newCfEnv(t, m, r.name, r.worker)
				r.run(e)
				e.finish()
			})
		}
	}
	g.Wait()
}

// cfEnv is one repository's run in one mode.
type cfEnv struct {
	t    *testing.T
	ctx  context.Context
	mode cfMode
	seed uint64
	// acct is the repository's account: every request counted (counter,
	// once however often azcore retried it; attempts, every try) and its
	// transport recorded, and failing at cfFaultRate in the fault modes.
	acct     *tablekit.Account
	counter  *tablekit.RequestCounter
	attempts *tablekit.RequestCounter
	fp       *faults.Policy // nil without faults
	stall    *cfStall
	wit      *cfWitness
	// plain is an account without faults or counting, for checks that
	// look past the repository (queues, blobs).
	plain *tablekit.Account
	// connStr is the service's; clock moves its time where it can (an
	// emulator of the run's own, for the scenarios that run a worker).
	connStr string
	clock   *testenv.Clock
	start   time.Time // of the run, for the times settle and drain log

	mu         sync.Mutex
	maybes     int
	containers map[*consistency.Queue]string // each queue's blob container
}

// newCfEnv starts repo's run in mode m. With worker (its scenario runs a
// worker) it runs on a service whose clock drain may move
// (testenv.ClockConnectionString: an emulator of its own where the clock
// moves), else on the shared one.
func newCfEnv(t *testing.T, m cfMode, repo string, worker bool) *cfEnv {
	t.Helper()
	h := fnv.New64a()
	h.Write([]byte(m.name + "/" + repo))
	e := &cfEnv{t: t, ctx: context.Background(), mode: m, counter: &tablekit.RequestCounter{}, attempts: &tablekit.RequestCounter{}, start: time.Now()}
	if worker {
		e.connStr, e.clock = testenv.ClockConnectionString(t)
	} else {
		e.connStr = testenv.ConnectionString(t)
	}
	e.plain = testenv.AccountOn(t, e.connStr, nil)
	e.wit = &cfWitness{host: hostOf(t, e.plain.TableEndpoint())}
	e.stall = &cfStall{}
	pols := []policy.Policy{e.attempts, e.wit, e.stall}
	if m.faults {
		e.seed = faultSeed(t, h.Sum64())
		e.fp = cfFaultPolicy(t, e.seed)
		e.fp.SetEnabled(false) // until setup is done
		pols = append(pols, e.fp)
	}
	e.acct = testenv.AccountOn(t, e.connStr, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry: m.retry(), PerCallPolicies: []policy.Policy{e.counter}, PerRetryPolicies: pols,
	}})
	return e
}

func cfFaultPolicy(t *testing.T, seed uint64) *faults.Policy {
	t.Helper()
	fp, err := faults.New(seed, faults.Transient(cfFaultRate)...)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func hostOf(t *testing.T, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// cfMaxAttempts bounds the read-modify-write loops, as the project's other
// fault tests do: with six writers on one entity and every round trip
// slowed by faults, 16 attempts are not always enough, and a loop that
// gives up says so plainly (nothing applied), which is not what the suite
// is after.
const cfMaxAttempts = 100

// tableOpts chooses the mode's transport.
func (e *cfEnv) tableOpts() *patterns.TableOptions {
	return &patterns.TableOptions{SDKPath: e.mode.sdk, MaxAttempts: cfMaxAttempts}
}

// n is a count of operations: full, or fewer under faults with azcore's
// default retry delays, where each fault costs about a second.
func (e *cfEnv) n(full, slow int) int {
	if e.mode.faults && !e.mode.fast {
		return slow
	}
	return full
}

// setup runs fns (creating tables, queues, containers) without faults, then
// turns the faults on and forgets the requests counted so far.
// cfQueue is q's Create in the form setup takes.
func cfQueue(q *consistency.Queue) func(context.Context, *patterns.CreateOptions) error {
	return func(ctx context.Context, _ *patterns.CreateOptions) error { return q.Create(ctx, nil) }
}

func (e *cfEnv) setup(fns ...func(context.Context, *patterns.CreateOptions) error) {
	e.t.Helper()
	if e.fp != nil {
		e.fp.SetEnabled(false)
	}
	for _, fn := range fns {
		if err := fn(e.ctx, nil); err != nil {
			e.t.Fatalf("setup: %v", err)
		}
	}
	if e.fp != nil {
		e.fp.SetEnabled(true)
	}
	e.counter.Reset()
}

// settle turns the faults off for the final checks and logs what the
// scenario met.
func (e *cfEnv) settle() {
	if e.fp != nil {
		e.fp.SetEnabled(false)
		e.t.Logf("%d faults injected, %d outcomes unknown; written in %v", e.fp.Injected(), e.maybes, time.Since(e.start).Round(time.Millisecond))
		if e.fp.Injected() == 0 {
			e.t.Errorf("no fault was injected: the fault mode proves nothing")
		}
	}
}

// finish checks the transport every entity request took.
func (e *cfEnv) finish() {
	e.t.Helper()
	rest, sdk := e.wit.counts()
	switch {
	case e.mode.sdk && rest > 0:
		e.t.Errorf("SDKPath is set, but %d entity requests went through tablekit's REST transport:\n%s", rest, e.wit.sample("rest"))
	case !e.mode.sdk && sdk > 0:
		e.t.Errorf("the REST transport is the default, but %d entity requests went through the aztables client:\n%s", sdk, e.wit.sample("sdk"))
	case rest+sdk == 0:
		e.t.Errorf("no entity request was seen: the transport check proves nothing")
	}
}

// cfOutcome is what an operation's error says about its effect.
type cfOutcome int

const (
	cfFailed    cfOutcome = iota // an error the contract does not allow
	cfApplied                    // nil: the change was applied once
	cfMaybe                      // tablekit.ErrOutcomeUnknown: applied once or not at all
	cfTransient                  // a transient failure after azcore's retries: not applied
)

// outcome classifies err; under faults ErrOutcomeUnknown and transient
// failures are allowed, any other error fails the test, naming the
// operation.
func (e *cfEnv) outcome(err error, what string) cfOutcome {
	e.t.Helper()
	switch {
	case err == nil:
		return cfApplied
	case errors.Is(err, consistency.ErrLandedUnsettled):
		// The write landed (the error says so) and its late follow-up
		// could not be enqueued: the final checks (Verify after the
		// worker drained) say whether its views missed it.
		e.t.Logf("landed, follow-up not enqueued: %s: %v", what, err)
		return cfApplied
	case e.fp != nil && errors.Is(err, tablekit.ErrOutcomeUnknown):
		e.mu.Lock()
		e.maybes++
		e.mu.Unlock()
		e.t.Logf("outcome unknown: %s: %v", what, err)
		return cfMaybe
	case e.fp != nil && tablekit.IsTransient(err):
		e.t.Logf("failed after azcore's retries, so not applied (the final state checks it): %s: %v", what, err)
		return cfTransient
	}
	e.t.Errorf("%s: %v", what, err)
	return cfFailed
}

// cfExpectWindow is the ExpectWindow of the suite's workers and of the
// queues its writers announce their writes on.
const cfExpectWindow = 10 * time.Second

// cost runs op and, in the modes without faults, checks that it made want
// requests, the budget its repository documents. An announced write that
// returned half the ExpectWindow or more after it began may add one
// request, its last: the follow-up enqueue of consistency's
// Announcement.Landed (on Azurite at a load of 30, an Insert took that
// long).
func (e *cfEnv) cost(want int64, what string, op func() error) error {
	e.t.Helper()
	if e.fp != nil {
		return op()
	}
	e.counter.Reset()
	e.attempts.Reset()
	start := time.Now()
	err := op()
	took := time.Since(start)
	got, log := e.counter.Count(), e.counter.Requests()
	if tries := e.attempts.Count(); tries > got {
		// A request azcore tried again is one request of the budget: the
		// retry is the service's or the network's doing, not the
		// repository's (most likely, on Azurite: a pooled connection its
		// server closed as idle, 5 s after its last answer, just as a
		// request set off on it).
		e.t.Logf("request budget: %s: %d requests took %d tries:\n%s", what, got, tries, e.attempts.Requests())
	}
	lines := strings.Split(log, "\n")
	followUp := got == want+1 && took >= cfExpectWindow/2 && strings.HasPrefix(lines[len(lines)-1], "POST ") && strings.HasSuffix(lines[len(lines)-1], "/messages")
	switch {
	case err != nil || got == want:
	case followUp:
		e.t.Logf("request budget: %s took %d requests, %v: its write's follow-up was enqueued (Announcement.Landed)", what, got, took.Round(time.Millisecond))
	default:
		e.t.Errorf("request budget: %s took %d requests, want %d:\n%s", what, got, want, log)
	}
	e.counter.Reset()
	return err
}

// do runs a write that must end applied: op within its budget; after an
// unknown outcome, landed reads the state as a caller would and op runs
// again when it had not landed (nil: op is idempotent), and after a
// transient failure op runs again. It reports whether the write is
// applied.
func (e *cfEnv) do(want int64, what string, op func() error, landed func() bool) bool {
	e.t.Helper()
	for range 5 {
		switch e.outcome(e.cost(want, what, op), what) {
		case cfApplied:
			return true
		case cfFailed:
			return false
		case cfMaybe:
			if landed != nil && landed() {
				return true
			}
		}
	}
	e.t.Errorf("%s: not applied after 5 attempts", what)
	return false
}

// read runs a read that must succeed within its budget (under faults, a
// transient failure after azcore's retries is allowed).
func (e *cfEnv) read(want int64, what string, op func() error) {
	e.t.Helper()
	if err := e.cost(want, what, op); err != nil && !(e.fp != nil && tablekit.IsTransient(err)) {
		e.t.Errorf("%s: %v", what, err)
	}
}

// must fails the test now when err is not nil (setup and final reads).
func (e *cfEnv) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// cfCounter tallies the increments of one counter.
type cfCounter struct {
	mu      sync.Mutex
	applied int
	maybe   int
}

func (c *cfCounter) add(o cfOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o {
	case cfApplied:
		c.applied++
	case cfMaybe:
		c.maybe++
	}
}

// check fails the test unless got (counted from base) is one of the
// values the increments allow.
func (c *cfCounter) check(e *cfEnv, what string, base, got int) {
	e.t.Helper()
	n := got - base
	switch {
	case n < c.applied:
		e.t.Errorf("%s: %d increments stored, but %d succeeded (%d outcomes unknown): %d lost", what, n, c.applied, c.maybe, c.applied-n)
	case n > c.applied+c.maybe:
		e.t.Errorf("%s: %d increments stored, but only %d succeeded and %d had an unknown outcome: %d applied twice", what, n, c.applied, c.maybe, n-c.applied-c.maybe)
	}
}

// hammer increments every counter of keys from workers goroutines, each
// making rounds increments per counter through inc, and returns the tally
// of each key.
func (e *cfEnv) hammer(keys []string, workers, rounds int, what string, inc func(key string) error) map[string]*cfCounter {
	tally := map[string]*cfCounter{}
	for _, k := range keys {
		tally[k] = &cfCounter{}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				for j := range keys {
					k := keys[(j+w)%len(keys)]
					tally[k].add(e.outcome(inc(k), fmt.Sprintf("%s %s (worker %d, round %d)", what, k, w, i)))
				}
			}
		}()
	}
	wg.Wait()
	applied, maybe := 0, 0
	for _, c := range tally {
		applied, maybe = applied+c.applied, maybe+c.maybe
	}
	e.t.Logf("hammer %s: %d contended calls, %d applied, %d ErrOutcomeUnknown", what, workers*rounds*len(keys), applied, maybe)
	return tally
}

// cfWitness records which transport sent each entity request of the
// table service, by the User-Agent azcore's telemetry policy sets:
// "azsdk-go-tablekit" for tablekit's REST calls, "azsdk-go-aztables" for
// the SDK's. Table-level requests (create, delete, list tables) always go
// through the SDK's service client and are not counted.
type cfWitness struct {
	host string
	mu   sync.Mutex
	rest []string
	sdk  []string
}

func (w *cfWitness) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.URL.Host == w.host && !strings.Contains(raw.URL.Path, "/Tables") {
		ua := raw.Header.Get("User-Agent")
		line := raw.Method + " " + raw.URL.Path + " (" + ua + ")"
		w.mu.Lock()
		switch {
		case strings.Contains(ua, "azsdk-go-aztables"):
			w.sdk = append(w.sdk, line)
		default:
			w.rest = append(w.rest, line)
		}
		w.mu.Unlock()
	}
	return req.Next()
}

func (w *cfWitness) counts() (rest, sdk int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.rest), len(w.sdk)
}

func (w *cfWitness) sample(which string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.rest
	if which == "sdk" {
		lines = w.sdk
	}
	return strings.Join(lines[:min(len(lines), 10)], "\n")
}

// queue creates a consistency queue on the repository's account (and its
// blob container), deleted with its poison queue when the test ends.
func (e *cfEnv) queue() *consistency.Queue {
	e.t.Helper()
	qname := testenv.QueueName(e.t)
	e.t.Cleanup(func() {
		_, _ = e.plain.Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(qname), nil)
	})
	container := testenv.ContainerName(e.t)
	// ExpectWindow: the window of startWorker's workers, so that a write
	// landing after it sends its intent again.
	q, err := consistency.NewQueue(e.acct, qname, &consistency.QueueOptions{BlobContainer: container, ExpectWindow: cfExpectWindow})
	e.must(err, "new queue")
	if e.containers == nil {
		e.containers = map[*consistency.Queue]string{}
	}
	e.containers[q] = container
	return q
}

// cfWorker is a consistency worker running in this process.
type cfWorker struct {
	q    *consistency.Queue
	w    *consistency.Worker
	fp   *faults.Policy
	stop context.CancelFunc
	done chan error
}

// startWorker runs a worker on q until drain. In the fault modes it has
// faults of its own, with the mode's retry options. Its options are a
// deployment's, not the repository's contract: a short visibility timeout
// (a receive whose response is lost hides its messages that long), enough
// deliveries that lost receives do not poison a message, and a step
// waiting for its writer's write retried every second for 10 s
// (ExpectWindow), not DefaultBackoff's 2, 4, 10 and 30 s for 30 s: an
// intent whose entity a later write deleted or moved waits the whole
// window, and the default made the Model's scenario 54 s long instead of
// 12 (its rest mode alone, go test -run 'TestConformance$/^rest$/^Model$'
// ./patterns/, 2026-11-28).
func (e *cfEnv) startWorker(q *consistency.Queue) *cfWorker {
	e.t.Helper()
	if e.clock == nil {
		e.t.Fatal("this scenario runs a worker: mark its repository's worker in cfRepos, so that drain can move its clock")
	}
	acct := e.plain
	cw := &cfWorker{q: q, done: make(chan error, 1)}
	if e.fp != nil {
		cw.fp = cfFaultPolicy(e.t, e.seed+1)
		acct = testenv.AccountOn(e.t, e.connStr, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
			Retry: e.mode.retry(), PerRetryPolicies: []policy.Policy{cw.fp},
		}})
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: []string{q.Name()}, PollInterval: 100 * time.Millisecond,
		VisibilityTimeout: 5 * time.Second, MaxDequeueCount: 20,
		ExpectWindow: cfExpectWindow, Backoff: &consistency.Backoff{Delays: []time.Duration{time.Second}},
		BlobContainer: e.containers[q], Logger: testLogger(),
	})
	e.must(err, "new worker")
	cw.w = w
	e.stall.mu.Lock()
	e.stall.worker = w
	e.stall.mu.Unlock()
	ctx, stop := context.WithCancel(context.Background())
	cw.stop = stop
	go func() { cw.done <- w.Run(ctx, nil) }()
	e.t.Cleanup(func() {
		stop()
		<-cw.done
	})
	return cw
}

// cfDrainStep is how far drain moves the service's clock while the worker
// is idle and its queue is not empty: past the worker's ExpectWindow
// (startWorker's 10 s), and so past an intent's delay, a backoff and a
// visibility timeout too.
const cfDrainStep = 11 * time.Second

// drain waits until the worker has emptied its queue (every intent
// applied or poisoned), stops it, and fails the test when a transaction
// was poisoned. The scenario's writes have all returned: what the queue
// still holds waits for time on the service's clock (an intent's delay, a
// backoff, a receive whose answer was lost hiding messages for the
// visibility timeout, a step waiting out the ExpectWindow for a write
// that will not come, 10 s). Where the clock moves, drain moves it
// cfDrainStep whenever the worker holds no message, so no message the
// worker is processing is handed out again; elsewhere it waits.
func (e *cfEnv) drain(cw *cfWorker) {
	e.t.Helper()
	qc := e.plain.Queues().NewQueueClient(cw.q.Name())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := qc.GetProperties(e.ctx, nil)
		e.must(err, "queue properties")
		if resp.ApproximateMessagesCount != nil && *resp.ApproximateMessagesCount == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the worker did not drain queue %s in 2 minutes (%d messages left)", cw.q.Name(), *resp.ApproximateMessagesCount)
		}
		time.Sleep(200 * time.Millisecond)
		if e.clock != nil && cw.w.Metrics().InFlight() == 0 && cw.w.Metrics().Waiting() == 0 {
			e.clock.Advance(cfDrainStep)
		}
	}
	drained := time.Since(e.start)
	cw.stop()
	if err := <-cw.done; err != nil {
		e.t.Errorf("worker: %v", err)
	}
	e.t.Logf("queue drained at %v, worker stopped at %v", drained.Round(time.Millisecond), time.Since(e.start).Round(time.Millisecond))
	cw.done <- nil // for the cleanup
	if cw.fp != nil {
		e.t.Logf("worker: %d faults injected", cw.fp.Injected())
	}
	if n := cw.w.Metrics().Poisoned(); n != 0 {
		e.t.Errorf("the worker poisoned %d transactions", n)
	}
	rec, err := cw.q.Poisoned(e.ctx, 32, nil)
	e.must(err, "poisoned")
	for _, r := range rec {
		e.t.Errorf("poisoned: %+v", r)
	}
}

// cfStall holds the next write to one table, once armed, for cfLate
// before sending it: a write that lands late. Where the service's clock
// moves (clock), it moves the clock cfLate instead, so that the write's
// intent is due at once, and holds the write until the worker (worker)
// has handled a message, cfLate at most: the write still lands after
// the worker met its intent, without waiting cfLate of real time.
type cfStall struct {
	mu     sync.Mutex
	match  func(*http.Request) bool
	clock  *testenv.Clock
	worker *consistency.Worker
}

func (s *cfStall) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	s.mu.Lock()
	stall := s.match != nil && s.match(raw)
	if stall {
		s.match = nil
	}
	clock, w := s.clock, s.worker
	s.mu.Unlock()
	if stall {
		late := time.NewTimer(cfLate)
		defer late.Stop()
		var handled <-chan struct{}
		if clock != nil && w != nil {
			handled = cfHandled(raw.Context(), w)
			clock.Advance(cfLate)
		}
		select {
		case <-late.C:
		case <-handled:
		case <-raw.Context().Done():
			return nil, raw.Context().Err()
		}
	}
	return req.Next()
}

// cfHandled is closed once w has handled a message after the call
// (applied, retried or released it), or when ctx ends.
func cfHandled(ctx context.Context, w *consistency.Worker) <-chan struct{} {
	count := func() int64 { m := w.Metrics(); return m.Processed() + m.Retried() + m.Released() }
	before := count()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for count() == before {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return done
}

// cfLate is how late lateWrite makes a write land: what two transient
// faults cost a write under azcore's default retry options (0.8 s, then
// 2.4 s), and longer than an intent's default delay (1 s).
const cfLate = 3200 * time.Millisecond

// lateWrite makes the next write to table (not a read or a delete; an
// entity group transaction, which a Model writes its entity and its
// views in the entity's partition with, counts: the repository's account
// writes to no other table) reach the service cfLate after it was sent,
// on the service's clock: where it moves, the clock is moved and the
// write waits only for the worker to handle a message (cfStall). The
// eventually consistent repositories enqueue their intent first and must
// converge whenever the write lands.
func (e *cfEnv) lateWrite(table string) {
	e.stall.mu.Lock()
	defer e.stall.mu.Unlock()
	if e.clock != nil && e.clock.Moves() {
		e.stall.clock = e.clock
	}
	e.stall.match = func(r *http.Request) bool {
		return r.Method != http.MethodGet && r.Method != http.MethodDelete &&
			(strings.Contains(r.URL.Path, "/"+table) || strings.HasSuffix(r.URL.Path, "/$batch"))
	}
}

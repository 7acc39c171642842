package consistency

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/queuehttp"
	"github.com/tablekit/tablekit/keys"
)

// WorkerOptions configures a Worker. Zero fields take the defaults shown.
type WorkerOptions struct {
	// Queues are the transaction queues to read (at least one).
	Queues []string
	// Concurrency bounds the transactions processed at once, over all
	// queues (default 16). Steps of one transaction run in order.
	Concurrency int
	// BatchSize is how many messages one receive asks for (1 to 32;
	// default twice Concurrency, at most 32). Received messages wait in
	// the worker for a free slot, so that a slot that frees starts the
	// next transaction without a round trip: each queue receives again
	// as soon as no more than BatchSize is waiting, asking for a whole
	// BatchSize (a receive costs one request, and one billed operation,
	// whatever it returns), so the next batch arrives before the runners
	// have used up the one waiting. A worker thus holds at most
	// Concurrency messages being processed plus twice BatchSize waiting
	// per queue, as a loop that receives 32 messages while 32 wait does;
	// lower BatchSize where many workers share a queue of slow
	// transactions. With the defaults a backlog costs one receive per 2 x
	// Concurrency transactions, at most 32. The visibility of waiting
	// messages is extended like that of running ones.
	BatchSize int
	// VisibilityTimeout hides a received message from other workers
	// (whole seconds, default 30 s). From the receive until the message is
	// settled, the worker extends it every third of this period, so a
	// slow step is not redelivered.
	VisibilityTimeout time.Duration
	// MaxDequeueCount is how many deliveries a message gets (default 5):
	// a retryable failure on the last one, or a message delivered more
	// often (a worker crashed while processing it), goes to the poison
	// queue.
	MaxDequeueCount int64
	// Backoff is the retry schedule after a retryable failure (default
	// DefaultBackoff).
	Backoff *Backoff
	// ExpectWindow is how long a step waits for the write its writer
	// announced (an Expectation) to show in the source, counted from when
	// the message was enqueued, by the queue service's clock (default
	// DefaultExpectWindow). A step waits at least ExpectDeliveries
	// deliveries and never into the poison queue (MaxDequeueCount). A
	// writer whose write returns after half of its queue's
	// QueueOptions.ExpectWindow sends its transaction again without
	// expectations (Announcement.Landed): give writers' queues this
	// value, or a lower one.
	ExpectWindow time.Duration
	// PollInterval is the longest wait between receives when the queues
	// are empty (default 2 s); the wait starts at an eighth of it (at most
	// 50 ms) and doubles.
	PollInterval time.Duration
	// DrainTimeout is how long Run lets in-flight transactions finish
	// after its context is cancelled (default 30 s); those still running
	// then are cancelled and their messages released for another worker.
	DrainTimeout time.Duration
	// UntilEmpty makes Run return nil, after a normal drain, once the
	// queues are empty. Empty means: a receive of one of the queues found
	// no visible message, and then the service's approximate message
	// count (Queue.Depth) of every queue was zero. That count includes
	// invisible messages, so the queues are not empty while this worker
	// or another one holds a message, while a failed transaction waits
	// for its retry backoff, or while a message enqueued with a Delay has
	// not yet become visible; poisoned messages have left their queue and
	// do not count. For KEDA ScaledJobs, scripts and tests.
	UntilEmpty bool
	// DepthInterval is how often the queues' approximate depths (Queue.Depth,
	// 2 requests per queue) are refreshed for Metrics (default 30 s;
	// negative disables).
	DepthInterval time.Duration
	// Propagator reads the trace context that a Queue with a Propagator
	// wrote into each envelope; the worker's "Worker.ProcessMessage" span
	// then continues the enqueueing trace. Nil, or an envelope without a
	// valid traceparent, starts a new trace (spans are emitted only when
	// the account has a tracing provider).
	Propagator TracePropagator
	// BlobContainer is where oversize transactions and poison records
	// live (default DefaultBlobContainer).
	BlobContainer string
	// Registry maps step kinds to handlers (default NewRegistry(): the
	// built-in steps).
	Registry *Registry
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
}

// Worker receives transactions from queues and applies them. Create it
// with NewWorker, add custom steps with Handle, then call Run.
type Worker struct {
	acct      *tablekit.Account
	tables    *tableSet // one core handle per table, for every message
	opts      WorkerOptions
	backoff   Backoff
	reg       *Registry
	log       *slog.Logger
	metrics   *Metrics
	tracer    tracing.Tracer
	queues    []*workerQueue
	keeper    *keeper // extends the visibility of held messages
	running   atomic.Bool
	draining  atomic.Bool
	received  atomic.Bool // a receive has succeeded since Run started
	recvFails atomic.Int64
}

type workerQueue struct {
	name    string
	q       *Queue
	qc      *azqueue.QueueClient
	pc      *azqueue.QueueClient
	mc      *queuehttp.Client // receives, deletes and updates messages
	waiting atomic.Int64      // received messages not yet started
}

// NewWorker validates opts and returns a worker on acct. It makes no
// request.
func NewWorker(acct *tablekit.Account, opts *WorkerOptions) (*Worker, error) {
	if acct == nil || acct.Queues() == nil || acct.Tables() == nil {
		return nil, tablekit.ErrNoEndpoint
	}
	var o WorkerOptions
	if opts != nil {
		o = *opts
	}
	if len(o.Queues) == 0 {
		return nil, errors.New("consistency: WorkerOptions.Queues names no queue")
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 2 * o.Concurrency
	}
	o.BatchSize = min(o.BatchSize, 32)
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = 30 * time.Second
	}
	if o.VisibilityTimeout < time.Second {
		o.VisibilityTimeout = time.Second
	}
	if o.MaxDequeueCount <= 0 {
		o.MaxDequeueCount = 5
	}
	if o.ExpectWindow <= 0 {
		o.ExpectWindow = DefaultExpectWindow
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.DepthInterval == 0 {
		o.DepthInterval = 30 * time.Second
	}
	if o.BlobContainer == "" {
		o.BlobContainer = DefaultBlobContainer
	}
	if err := keys.ValidateContainerName(o.BlobContainer); err != nil {
		return nil, err
	}
	w := &Worker{acct: acct, tables: newTableSet(acct), opts: o, backoff: DefaultBackoff, reg: o.Registry, log: o.Logger, metrics: &Metrics{}, tracer: newTracer(acct)}
	w.keeper = newKeeper(w)
	if o.Backoff != nil {
		w.backoff = *o.Backoff
	}
	if w.reg == nil {
		w.reg = NewRegistry()
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	for _, name := range o.Queues {
		q, err := NewQueue(acct, name, &QueueOptions{BlobContainer: o.BlobContainer})
		if err != nil {
			return nil, err
		}
		w.queues = append(w.queues, &workerQueue{name: name, q: q, qc: q.qc, pc: q.pc, mc: queuehttp.Of(acct)})
	}
	return w, nil
}

// Handle registers a handler for a custom step kind (or replaces a
// built-in one). Call it before Run.
func (w *Worker) Handle(kind string, h Handler) { w.reg.Handle(kind, h) }

// Registry returns the worker's step registry.
func (w *Worker) Registry() *Registry { return w.reg }

// Metrics returns the worker's counters.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// Handler serves the worker's HTTP endpoints:
//   - /metrics: the Metrics in the Prometheus text format;
//   - /livez: 200 "ok" while the process serves HTTP. It checks nothing
//     outside the process, so that a storage outage does not make
//     Kubernetes restart every worker: use it as the liveness probe;
//   - /readyz: 200 "ok" when Ready, else 503 with the reason (not
//     running, draining, no receive succeeded yet, or the last receives
//     failed): the readiness probe, and what an alert on storage reach
//     watches;
//   - /healthz: the same as /readyz, kept for existing probes (do not use
//     it as a liveness probe).
func (w *Worker) Handler() http.Handler { return metricsHandler(w.metrics, w.Ready) }

// Ready reports whether the worker can reach its queues, and why not: it
// is running, not draining, a receive has succeeded since Run started, and
// fewer than three receives in a row have failed since.
func (w *Worker) Ready() (bool, string) {
	switch {
	case !w.running.Load():
		return false, "not running"
	case w.draining.Load():
		return false, "draining"
	case w.recvFails.Load() >= 3:
		return false, strconv.FormatInt(w.recvFails.Load(), 10) + " consecutive receive failures"
	case !w.received.Load():
		return false, "no receive has succeeded yet"
	}
	return true, ""
}

// Healthy is Ready, under its former name.
func (w *Worker) Healthy() (bool, string) { return w.Ready() }

// Run receives and applies transactions until ctx is cancelled (or, with
// UntilEmpty, until the queues are empty), then drains: it stops
// receiving, releases the received messages that have not started (visible
// again at once), lets in-flight transactions finish for up to
// DrainTimeout, cancels the rest and releases their messages too, and
// returns nil. A ctx cancelled before or during Run's start drains the
// same way. Messages are deleted only after every step succeeded; a
// failure is retried after a backoff or moved to the poison queue, never
// dropped.
func (w *Worker) Run(ctx context.Context, opts *RunOptions) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("consistency: Worker.Run called twice")
	}
	defer w.running.Store(false)
	w.draining.Store(false)
	w.received.Store(false)
	w.recvFails.Store(0)
	recvCtx, stopReceiving := context.WithCancel(ctx)
	defer stopReceiving()
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	// Messages run on Concurrency long-lived goroutines: a goroutine
	// started for each one would grow its stack again for every message
	// (the SDK's call depth), a cost the profile showed per transaction.
	// The queues' receive loops put what they receive on ready, and an
	// idle runner takes it from there: no goroutine between a receive and
	// a runner, no semaphore or closure per message. ready holds what
	// every queue may keep waiting, so a receive loop never blocks on it.
	capacity := 0
	for range w.queues {
		capacity += 2 * w.opts.BatchSize
	}
	ready := make(chan job, capacity)
	var work, loops sync.WaitGroup
	var runners sync.WaitGroup
	for range w.opts.Concurrency {
		runners.Add(1)
		go func() {
			defer runners.Done()
			for j := range ready {
				if recvCtx.Err() != nil {
					// Draining: a message not started is released.
					w.release(workCtx, j, &work)
					continue
				}
				w.metrics.inFlight.Add(1)
				w.unwait(j)
				w.process(workCtx, j.q, j.l)
				w.metrics.inFlight.Add(-1)
				work.Done()
			}
		}()
	}
	defer runners.Wait()
	readyOpen := true
	closeReady := func() {
		if readyOpen {
			readyOpen = false
			close(ready)
		}
	}
	defer closeReady()
	var emptied atomic.Bool
	onEmpty := func() {
		if w.queuesEmpty(recvCtx) && emptied.CompareAndSwap(false, true) {
			w.log.Info("queues empty; stopping", "queues", w.opts.Queues)
			stopReceiving()
		}
	}
	for _, q := range w.queues {
		loops.Add(1)
		go func() {
			defer loops.Done()
			w.receiveLoop(recvCtx, q, ready, &work, onEmpty)
		}()
	}
	if w.opts.DepthInterval > 0 {
		loops.Add(1)
		go func() {
			defer loops.Done()
			w.depthLoop(recvCtx)
		}()
	}
	w.log.Info("worker started", "queues", w.opts.Queues, "concurrency", w.opts.Concurrency, "batch", w.opts.BatchSize, "until_empty", w.opts.UntilEmpty)
	loops.Wait()
	w.draining.Store(true)
	// The messages still waiting are released at once, by this
	// goroutine and by every idle runner, while busy runners finish.
	closeReady()
	work.Add(1)
	go func() {
		defer work.Done()
		for j := range ready {
			w.release(workCtx, j, &work)
		}
	}()
	w.log.Info("worker draining", "in_flight", w.metrics.InFlight())
	done := make(chan struct{})
	go func() { work.Wait(); close(done) }()
	timer := time.NewTimer(w.opts.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		w.log.Warn("drain timeout: cancelling in-flight transactions", "in_flight", w.metrics.InFlight())
		cancelWork()
		<-done
	}
	w.log.Info("worker stopped", "processed", w.metrics.Processed(), "poisoned", w.metrics.Poisoned(), "released", w.metrics.Released())
	return nil
}

// queuesEmpty reports whether no message is held by this worker and the
// approximate count of every queue is zero.
func (w *Worker) queuesEmpty(ctx context.Context) bool {
	if w.metrics.InFlight() > 0 || w.metrics.Waiting() > 0 {
		return false // held messages are still in their queue
	}
	for _, q := range w.queues {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := approxCount(rctx, q.qc)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("cannot count the queue's messages", "queue", q.name, "error", err)
			}
			return false
		}
		if n > 0 {
			return false
		}
	}
	return true
}

// depthLoop refreshes the queue depths of Metrics every DepthInterval.
func (w *Worker) depthLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.DepthInterval)
	defer t.Stop()
	for {
		for _, q := range w.queues {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			d, err := q.q.Depth(rctx, nil)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				w.metrics.depthErrors.Add(1)
				w.log.Warn("cannot read the queue depth", "queue", q.name, "error", err)
				continue
			}
			w.metrics.setDepth(d)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// job is a received message waiting for a runner; the runner signals
// taken once it has moved the message from waiting to in flight.
type job struct {
	q     *workerQueue
	l     *lease
	taken chan<- struct{}
}

// unwait counts j as no longer waiting and tells its receive loop.
func (w *Worker) unwait(j job) {
	j.q.waiting.Add(-1)
	w.metrics.waiting.Add(-1)
	select {
	case j.taken <- struct{}{}:
	default:
	}
}

// release hands a message that was not started back to its queue,
// visible again at once.
func (w *Worker) release(workCtx context.Context, j job, work *sync.WaitGroup) {
	defer work.Done()
	w.unwait(j)
	j.l.stopKeeper()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(workCtx), 30*time.Second)
	defer cancel()
	w.releaseLease(sctx, j.q, j.l, 0, w.log.With("queue", j.q.name, "message", j.l.id))
	w.metrics.released.Add(1)
}

// receiveLoop keeps received messages of q waiting on ready for a runner,
// receiving a whole BatchSize again when at most one is left (so at most
// two wait), until ctx is cancelled.
func (w *Worker) receiveLoop(ctx context.Context, q *workerQueue, ready chan<- job, work *sync.WaitGroup, onEmpty func()) {
	idle := newPollWait(w.opts.PollInterval)
	vis := seconds(w.opts.VisibilityTimeout)
	batch := int64(w.opts.BatchSize)
	taken := make(chan struct{}, 1)
	for {
		for q.waiting.Load() > batch {
			select {
			case <-taken:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		n := batch
		// The receive is not cancelled by ctx: messages the service hands
		// out must reach this process, to be processed or released.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		msgs, err := q.mc.Receive(rctx, q.name, int32(n), vis)
		cancel()
		if err != nil {
			w.metrics.receiveErrors.Add(1)
			fails := w.recvFails.Add(1)
			w.log.Warn("receive failed", "queue", q.name, "error", tablekit.MapError(err, "receive messages", q.name), "consecutive", fails)
			if !sleepCtx(ctx, min(w.opts.PollInterval, time.Duration(fails)*firstPollWait*4)) {
				return
			}
			continue
		}
		w.recvFails.Store(0)
		w.received.Store(true)
		if len(msgs) == 0 {
			if w.opts.UntilEmpty {
				onEmpty()
			}
			if !sleepCtx(ctx, idle.next()) {
				return
			}
			continue
		}
		idle.reset()
		for i := range msgs {
			q.waiting.Add(1)
			w.metrics.waiting.Add(1)
			work.Add(1)
			ready <- job{q: q, l: w.hold(q, &msgs[i]), taken: taken}
		}
	}
}

// firstPollWait bounds the wait after the first empty receive that
// follows messages; each further empty receive doubles it, up to
// PollInterval.
const firstPollWait = 50 * time.Millisecond

// pollWait is the wait between empty receives: an eighth of PollInterval
// at most firstPollWait, doubling up to PollInterval. Under a steady load
// the queue is empty for moments only (a receive took what the producers
// had sent): polling again soon picks the next messages up in a few
// milliseconds, and a queue that stays empty is polled every PollInterval
// after three or four more receives.
type pollWait struct{ first, max, cur time.Duration }

func newPollWait(max time.Duration) pollWait {
	first := min(firstPollWait, max/8)
	return pollWait{first: first, max: max, cur: first}
}

// next returns the wait after an empty receive.
func (p *pollWait) next() time.Duration {
	d := p.cur
	p.cur = min(p.cur*2, p.max)
	return d
}

// reset starts the schedule again after a receive that found messages.
func (p *pollWait) reset() { p.cur = p.first }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// lease is a received message whose pop receipt changes with every
// visibility update. The worker's keeper extends its visibility from the
// receive until stopKeeper.
type lease struct {
	mu       sync.Mutex // held during a visibility update
	id       string
	pop      string
	text     string
	lost     bool          // the service no longer knows this receipt
	stopped  bool          // stopKeeper was called: no more updates
	count    int64         // the message's dequeue count
	inserted time.Time     // when the message was enqueued
	age      time.Duration // how long it had been queued when received (queuedFor)
	received time.Time
	k        *keeper
	q        *workerQueue

	// Guarded by k.mu.
	due  time.Time // when the next update is due
	busy bool      // an update is in flight
}

func (l *lease) receipt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pop
}

// stopKeeper stops extending the visibility and waits for an update in
// flight, so that the pop receipt is known.
func (l *lease) stopKeeper() {
	l.k.remove(l)
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// hold returns the lease of a received message, its visibility kept.
func (w *Worker) hold(q *workerQueue, m *queuehttp.Message) *lease {
	l := &lease{id: m.ID, pop: m.PopReceipt, text: m.Text, count: m.DequeueCount, inserted: m.InsertionTime,
		age: queuedFor(m.InsertionTime, m.TimeNextVisible, w.opts.VisibilityTimeout), received: time.Now(), k: w.keeper, q: q}
	w.keeper.add(l)
	return l
}

// keeper extends the visibility of the messages a worker holds, every
// third of the visibility timeout from the receive until the message is
// settled. One goroutine serves every held message, and runs only while
// some are held: a goroutine and a ticker per message were a cost the
// profile showed per transaction, for an update most messages never need.
type keeper struct {
	w       *Worker
	mu      sync.Mutex
	held    map[*lease]struct{}
	running bool
	idle    chan struct{} // a remove left nothing held
}

func newKeeper(w *Worker) *keeper {
	return &keeper{w: w, held: map[*lease]struct{}{}, idle: make(chan struct{}, 1)}
}

// period is the time between two updates of a message's visibility.
func (k *keeper) period() time.Duration { return k.w.opts.VisibilityTimeout / 3 }

func (k *keeper) add(l *lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	l.due = l.received.Add(k.period())
	k.held[l] = struct{}{}
	if !k.running {
		k.running = true
		go k.loop()
	}
}

func (k *keeper) remove(l *lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.held, l)
	if len(k.held) == 0 {
		select {
		case k.idle <- struct{}{}:
		default:
		}
	}
}

// loop starts the updates that are due, checking every ninth of the
// visibility timeout (an update is thus sent between a third and four
// ninths of the timeout after the previous one), until nothing is held.
func (k *keeper) loop() {
	t := time.NewTicker(k.period() / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-k.idle:
		}
		now := time.Now()
		k.mu.Lock()
		if len(k.held) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		for l := range k.held {
			if !l.busy && !now.Before(l.due) {
				l.busy = true
				go k.extend(l)
			}
		}
		k.mu.Unlock()
	}
}

// extend updates l's visibility. It holds l.mu meanwhile, so that
// stopKeeper waits for it and the pop receipt stays known.
func (k *keeper) extend(l *lease) {
	w, q := k.w, l.q
	l.mu.Lock()
	lost := l.lost
	if !l.stopped && !lost {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.VisibilityTimeout)
		pop, err := q.mc.Update(ctx, q.name, l.id, l.pop, l.text, seconds(w.opts.VisibilityTimeout))
		cancel()
		if err == nil && pop != "" {
			l.pop = pop
		} else if err != nil {
			err = tablekit.MapError(err, "extend visibility", q.name)
			if tablekit.IsNotFound(err) || errors.Is(err, tablekit.ErrBadRequest) {
				l.lost = true
			}
			w.log.Warn("cannot extend visibility", "queue", q.name, "message", l.id, "error", err)
		}
		lost = l.lost
	}
	l.mu.Unlock()
	k.mu.Lock()
	l.busy = false
	l.due = time.Now().Add(k.period())
	if lost {
		delete(k.held, l)
	}
	k.mu.Unlock()
}

// process applies one message and settles it: deleted, released for a
// retry, or poisoned.
func (w *Worker) process(workCtx context.Context, q *workerQueue, l *lease) {
	count := l.count
	env, err := decodeMessage(l.text)

	ctx := workCtx
	if env != nil && env.TraceParent != "" && w.opts.Propagator != nil {
		if validTraceParent(env.TraceParent) && len(env.TraceState) <= maxTraceState {
			ctx = w.opts.Propagator.Extract(ctx, env.TraceParent, env.TraceState)
		} else {
			w.messageLog(q, l, count, "").Debug("ignoring an invalid trace context", "traceparent", env.TraceParent)
		}
	}
	// Without a tracing provider no span is started: its attributes would
	// be built for nothing, per message.
	endSpan := func(error) {}
	if w.tracer.Enabled() {
		ctx, endSpan = startSpan(ctx, w.tracer, "Worker.ProcessMessage", tracing.SpanKindConsumer,
			tracing.Attribute{Key: "messaging.destination.name", Value: q.name},
			tracing.Attribute{Key: "messaging.message.id", Value: l.id},
			tracing.Attribute{Key: "messaging.message.delivery_count", Value: count})
	}
	var spanErr error
	defer func() { endSpan(spanErr) }()

	// settle runs after the steps, even during a drain.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer scancel()

	if count > w.opts.MaxDequeueCount {
		l.stopKeeper()
		rec := &PoisonRecord{DequeueCount: count, Step: -1,
			Error: "delivered " + strconv.FormatInt(count, 10) + " times (limit " + strconv.FormatInt(w.opts.MaxDequeueCount, 10) + ") without completing: a worker crashed or was stopped while processing it"}
		if env != nil {
			rec.TxID = env.ID
		}
		spanErr = errors.New(rec.Error)
		w.poison(sctx, q, l, rec, w.messageLog(q, l, count, ""))
		return
	}

	var tx *Transaction
	var blob *BlobRef
	var parsed []any
	if err == nil {
		tx, blob, parsed, err = w.decode(ctx, env)
	}
	// The message's logger carries its attributes without formatting them
	// until a record is written (withAttrs); the transaction's id is on it
	// once the transaction is decoded.
	txID := ""
	if err == nil {
		txID = tx.ID
	}
	log := w.messageLog(q, l, count, txID)
	if err == nil {
		d := delivery{count: count, max: w.opts.MaxDequeueCount, age: l.age, window: w.opts.ExpectWindow}
		err = runStepsOn(ctx, w.tables, w.reg, tx, parsed, d, log)
	}
	l.stopKeeper()
	spanErr = err

	switch {
	case err == nil:
		if derr := q.mc.Delete(sctx, q.name, l.id, l.receipt()); derr != nil {
			// Another worker holds the message now (our lease expired):
			// it will apply the idempotent steps again and delete it.
			log.Warn("cannot delete the applied message", "error", tablekit.MapError(derr, "delete message", q.name))
		} else if blob != nil {
			if berr := deleteBlobIfExists(sctx, w.acct, *blob); berr != nil {
				log.Warn("cannot delete the transaction blob", "blob", blob.Container+"/"+blob.Name, "error", berr)
			}
		}
		w.metrics.processed.Add(1)
		w.metrics.apply.observe(time.Since(l.received))
		if !l.inserted.IsZero() {
			w.metrics.age.observe(time.Since(l.inserted))
		}
		if log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("transaction applied", "duration", time.Since(l.received))
		}
	case workCtx.Err() != nil:
		w.releaseLease(sctx, q, l, 0, log)
		w.metrics.released.Add(1)
	default:
		rec := &PoisonRecord{DequeueCount: count, Step: -1, Error: err.Error(), Permanent: IsPermanent(err)}
		var se *StepError
		if errors.As(err, &se) {
			rec.Step, rec.Kind = se.Index, se.Kind
		}
		if tx != nil {
			rec.TxID = tx.ID
		} else if env != nil {
			rec.TxID = env.ID
		}
		if rec.Permanent || count >= w.opts.MaxDequeueCount {
			w.poison(sctx, q, l, rec, log)
			return
		}
		delay := w.backoff.Delay(count)
		log.Warn("transaction failed; will retry", "error", err, "retry_in", delay)
		// Counted once the release is answered: a reader who sees the
		// count may move on, and the message's retry time is set.
		w.releaseLease(sctx, q, l, delay, log)
		w.metrics.retried.Add(1)
	}
}

// messageLog is the logger of one message: the worker's, with the
// queue, the message id, the dequeue count and the transaction id (when
// known) on every record.
func (w *Worker) messageLog(q *workerQueue, l *lease, count int64, txID string) *slog.Logger {
	attrs := []slog.Attr{slog.String("queue", q.name), slog.String("message", l.id), slog.Int64("dequeue_count", count)}
	if txID != "" {
		attrs = append(attrs, slog.String("tx", txID))
	}
	return withAttrs(w.log, attrs...)
}

// decode returns the envelope's transaction, fetching it from its blob
// when needed, and its steps' arguments as their validation decoded them.
func (w *Worker) decode(ctx context.Context, env *envelope) (*Transaction, *BlobRef, []any, error) {
	if env.Blob == nil {
		tx := &Transaction{ID: env.ID, Steps: env.Steps}
		// Every step is checked before the first one runs: a message put
		// on the queue without Enqueue (or by an older writer) gets the
		// checks Enqueue makes, Azure's limits included.
		parsed, err := w.reg.parse(tx, true)
		return tx, nil, parsed, err
	}
	body, err := downloadBlob(ctx, w.acct, *env.Blob)
	if err != nil {
		if tablekit.IsNotFound(err) {
			err = malformed("the transaction's blob "+env.Blob.Container+"/"+env.Blob.Name+" does not exist", err)
		}
		return nil, nil, nil, err
	}
	tx, err := ParseTransaction(body, false)
	if err != nil {
		return nil, nil, nil, err
	}
	if tx.ID != env.ID {
		return nil, nil, nil, malformed("the blob holds transaction "+strconv.Quote(tx.ID)+", the message names "+strconv.Quote(env.ID), nil)
	}
	parsed, err := w.reg.parse(tx, true)
	return tx, env.Blob, parsed, err
}

// releaseLease makes the message visible again after delay.
func (w *Worker) releaseLease(ctx context.Context, q *workerQueue, l *lease, delay time.Duration, log *slog.Logger) {
	_, err := q.mc.Update(ctx, q.name, l.id, l.receipt(), l.text, seconds(delay))
	if err != nil {
		// The message reappears when its visibility timeout ends anyway.
		log.Warn("cannot release the message", "error", tablekit.MapError(err, "release message", q.name))
	}
}

// poison moves the message to the poison queue, then deletes it. When the
// poison queue cannot be written, the message is released for a later
// attempt instead: it is never dropped.
func (w *Worker) poison(ctx context.Context, q *workerQueue, l *lease, rec *PoisonRecord, log *slog.Logger) {
	rec.V, rec.Queue, rec.MessageID, rec.At, rec.Message = Version, q.name, l.id, time.Now().UTC(), l.text
	if err := poisonMessage(ctx, w.acct, q.pc, w.opts.BlobContainer, rec); err != nil {
		log.Error("cannot write the poison queue; releasing the message", "error", err)
		w.releaseLease(ctx, q, l, w.backoff.Delay(rec.DequeueCount), log)
		return
	}
	if err := q.mc.Delete(ctx, q.name, l.id, l.receipt()); err != nil {
		log.Warn("poisoned message not deleted (it may be poisoned twice)", "error", tablekit.MapError(err, "delete message", q.name))
	}
	w.metrics.poisoned.Add(1)
	log.Error("transaction poisoned", "tx", rec.TxID, "step", rec.Step, "kind", rec.Kind, "permanent", rec.Permanent, "error", rec.Error)
}

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

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// WorkerOptions configures a Worker. Zero fields take the defaults shown.
type WorkerOptions struct {
	// Queues are the transaction queues to read (at least one).
	Queues []string
	// Concurrency bounds the transactions processed at once, over all
	// queues (default 16). Steps of one transaction run in order.
	Concurrency int
	// BatchSize is the most messages one receive asks for (1 to 32,
	// default 32); a receive never asks for more than the free
	// concurrency slots.
	BatchSize int
	// VisibilityTimeout hides a received message from other workers
	// (whole seconds, default 30 s). While a transaction runs, the worker
	// extends it every third of this period, so a slow step is not
	// redelivered.
	VisibilityTimeout time.Duration
	// MaxDequeueCount is how many deliveries a message gets (default 5):
	// a retryable failure on the last one, or a message delivered more
	// often (a worker crashed while processing it), goes to the poison
	// queue.
	MaxDequeueCount int64
	// Backoff is the retry schedule after a retryable failure (default
	// DefaultBackoff).
	Backoff *Backoff
	// PollInterval is the longest wait between receives when the queues
	// are empty (default 2 s); the wait starts at 50 ms and doubles.
	PollInterval time.Duration
	// DrainTimeout is how long Run lets in-flight transactions finish
	// after its context is cancelled (default 30 s); those still running
	// then are cancelled and their messages released for another worker.
	DrainTimeout time.Duration
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
	queues    []*workerQueue
	running   atomic.Bool
	draining  atomic.Bool
	recvFails atomic.Int64
}

type workerQueue struct {
	name string
	qc   *azqueue.QueueClient
	pc   *azqueue.QueueClient
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
	if o.BatchSize <= 0 || o.BatchSize > 32 {
		o.BatchSize = 32
	}
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = 30 * time.Second
	}
	if o.VisibilityTimeout < time.Second {
		o.VisibilityTimeout = time.Second
	}
	if o.MaxDequeueCount <= 0 {
		o.MaxDequeueCount = 5
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 30 * time.Second
	}
	if o.BlobContainer == "" {
		o.BlobContainer = DefaultBlobContainer
	}
	if err := keys.ValidateContainerName(o.BlobContainer); err != nil {
		return nil, err
	}
	w := &Worker{acct: acct, tables: newTableSet(acct), opts: o, backoff: DefaultBackoff, reg: o.Registry, log: o.Logger, metrics: &Metrics{}}
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
		w.queues = append(w.queues, &workerQueue{name: name, qc: q.qc, pc: q.pc})
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

// Handler serves /metrics (Prometheus text format) and /healthz (200 "ok"
// while Run receives normally; 503 with the reason when it is not running,
// draining, or its last receives failed).
func (w *Worker) Handler() http.Handler { return metricsHandler(w.metrics, w.Healthy) }

// Healthy reports whether the worker is running normally, and why not.
func (w *Worker) Healthy() (bool, string) {
	switch {
	case !w.running.Load():
		return false, "not running"
	case w.draining.Load():
		return false, "draining"
	case w.recvFails.Load() >= 3:
		return false, strconv.FormatInt(w.recvFails.Load(), 10) + " consecutive receive failures"
	}
	return true, ""
}

// Run receives and applies transactions until ctx is cancelled, then
// drains: it stops receiving, lets in-flight transactions finish for up to
// DrainTimeout, cancels the rest and releases their messages (visible again
// at once), and returns nil. Messages are deleted only after every step
// succeeded; a failure is retried after a backoff or moved to the poison
// queue, never dropped.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("consistency: Worker.Run called twice")
	}
	defer w.running.Store(false)
	w.draining.Store(false)
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	sem := make(chan struct{}, w.opts.Concurrency)
	var work, loops sync.WaitGroup
	for _, q := range w.queues {
		loops.Add(1)
		go func() {
			defer loops.Done()
			w.receiveLoop(ctx, workCtx, q, sem, &work)
		}()
	}
	w.log.Info("worker started", "queues", w.opts.Queues, "concurrency", w.opts.Concurrency)
	loops.Wait()
	w.draining.Store(true)
	w.log.Info("worker draining", "in_flight", w.metrics.InFlight())
	done := make(chan struct{})
	go func() { work.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.opts.DrainTimeout):
		w.log.Warn("drain timeout: cancelling in-flight transactions", "in_flight", w.metrics.InFlight())
		cancelWork()
		<-done
	}
	w.log.Info("worker stopped", "processed", w.metrics.Processed(), "poisoned", w.metrics.Poisoned())
	return nil
}

func (w *Worker) receiveLoop(ctx, workCtx context.Context, q *workerQueue, sem chan struct{}, work *sync.WaitGroup) {
	const minIdle = 50 * time.Millisecond
	idle := minIdle
	vis := seconds(w.opts.VisibilityTimeout)
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	grab:
		for n < w.opts.BatchSize {
			select {
			case sem <- struct{}{}:
				n++
			default:
				break grab
			}
		}
		release := func(k int) {
			for range k {
				<-sem
			}
		}
		// The receive is not cancelled by ctx: messages the service hands
		// out must reach this process, to be processed or released.
		rctx, cancel := context.WithTimeout(workCtx, 30*time.Second)
		resp, err := q.qc.DequeueMessages(rctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(n)), VisibilityTimeout: to.Ptr(vis)})
		cancel()
		if err != nil {
			release(n)
			w.metrics.receiveErrors.Add(1)
			fails := w.recvFails.Add(1)
			w.log.Warn("receive failed", "queue", q.name, "error", tablekit.MapError(err, "receive messages", q.name), "consecutive", fails)
			if !sleepCtx(ctx, min(w.opts.PollInterval, time.Duration(fails)*minIdle*4)) {
				return
			}
			continue
		}
		w.recvFails.Store(0)
		msgs := resp.Messages
		release(n - len(msgs))
		if ctx.Err() != nil {
			for _, m := range msgs {
				w.releaseMsg(workCtx, q, m)
				<-sem
			}
			return
		}
		if len(msgs) == 0 {
			if !sleepCtx(ctx, idle) {
				return
			}
			idle = min(idle*2, w.opts.PollInterval)
			continue
		}
		idle = minIdle
		for _, m := range msgs {
			work.Add(1)
			go func() {
				defer work.Done()
				defer func() { <-sem }()
				w.process(workCtx, q, m)
			}()
		}
	}
}

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
// visibility update.
type lease struct {
	mu   sync.Mutex
	id   string
	pop  string
	text string
	lost bool
}

func (l *lease) receipt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pop
}

// keepAlive extends the message's visibility every third of the timeout
// until stop is closed. An update in flight when stop closes completes, so
// the pop receipt stays known.
func (w *Worker) keepAlive(q *workerQueue, l *lease, stop <-chan struct{}) {
	period := w.opts.VisibilityTimeout / 3
	vis := seconds(w.opts.VisibilityTimeout)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.VisibilityTimeout)
		resp, err := q.qc.UpdateMessage(ctx, l.id, l.pop, l.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(vis)})
		cancel()
		if err == nil && resp.PopReceipt != nil {
			l.pop = *resp.PopReceipt
		} else if err != nil {
			err = tablekit.MapError(err, "extend visibility", q.name)
			if tablekit.IsNotFound(err) || errors.Is(err, tablekit.ErrBadRequest) {
				l.lost = true
			}
			w.log.Warn("cannot extend visibility", "queue", q.name, "message", l.id, "error", err)
		}
		l.mu.Unlock()
	}
}

// process applies one message and settles it: deleted, released for a
// retry, or poisoned.
func (w *Worker) process(workCtx context.Context, q *workerQueue, m *azqueue.DequeuedMessage) {
	w.metrics.inFlight.Add(1)
	defer w.metrics.inFlight.Add(-1)
	start := time.Now()
	l := &lease{id: deref(m.MessageID), pop: deref(m.PopReceipt), text: deref(m.MessageText)}
	count := deref(m.DequeueCount)
	log := w.log.With("queue", q.name, "message", l.id, "dequeue_count", count)

	stop := make(chan struct{})
	var keeper sync.WaitGroup
	keeper.Add(1)
	go func() { defer keeper.Done(); w.keepAlive(q, l, stop) }()
	stopKeeper := func() { close(stop); keeper.Wait() }

	// settle runs after the steps, even during a drain.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(workCtx), 60*time.Second)
	defer scancel()

	if count > w.opts.MaxDequeueCount {
		stopKeeper()
		rec := &PoisonRecord{DequeueCount: count, Step: -1,
			Error: "delivered " + strconv.FormatInt(count, 10) + " times (limit " + strconv.FormatInt(w.opts.MaxDequeueCount, 10) + ") without completing: a worker crashed or was stopped while processing it"}
		if env, err := decodeEnvelope([]byte(l.text)); err == nil {
			rec.TxID = env.ID
		}
		w.poison(sctx, q, l, rec, log)
		return
	}

	tx, blob, err := w.decode(workCtx, l.text)
	if err == nil {
		log = log.With("tx", tx.ID)
		err = runStepsOn(workCtx, w.tables, w.reg, tx, count, w.opts.MaxDequeueCount, log)
	}
	stopKeeper()

	switch {
	case err == nil:
		if _, derr := q.qc.DeleteMessage(sctx, l.id, l.receipt(), nil); derr != nil {
			// Another worker holds the message now (our lease expired):
			// it will apply the idempotent steps again and delete it.
			log.Warn("cannot delete the applied message", "error", tablekit.MapError(derr, "delete message", q.name))
		} else if blob != nil {
			if berr := deleteBlobIfExists(sctx, w.acct, *blob); berr != nil {
				log.Warn("cannot delete the transaction blob", "blob", blob.Container+"/"+blob.Name, "error", berr)
			}
		}
		w.metrics.processed.Add(1)
		w.metrics.apply.observe(time.Since(start))
		if m.InsertionTime != nil {
			w.metrics.age.observe(time.Since(*m.InsertionTime))
		}
		log.Debug("transaction applied", "duration", time.Since(start))
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
		}
		if rec.Permanent || count >= w.opts.MaxDequeueCount {
			w.poison(sctx, q, l, rec, log)
			return
		}
		delay := w.backoff.Delay(count)
		log.Warn("transaction failed; will retry", "error", err, "retry_in", delay)
		w.metrics.retried.Add(1)
		w.releaseLease(sctx, q, l, delay, log)
	}
}

// decode reads the envelope, fetching it from its blob when needed.
func (w *Worker) decode(ctx context.Context, text string) (*Transaction, *BlobRef, error) {
	env, err := decodeEnvelope([]byte(text))
	if err != nil {
		return nil, nil, err
	}
	if env.Blob == nil {
		tx := &Transaction{ID: env.ID, Steps: env.Steps}
		// Every step is checked before the first one runs: a message put
		// on the queue without Enqueue (or by an older writer) gets the
		// checks Enqueue makes, Azure's limits included.
		return tx, nil, w.reg.validate(tx)
	}
	body, err := downloadBlob(ctx, w.acct, *env.Blob)
	if err != nil {
		if tablekit.IsNotFound(err) {
			err = malformed("the transaction's blob "+env.Blob.Container+"/"+env.Blob.Name+" does not exist", err)
		}
		return nil, nil, err
	}
	tx, err := ParseTransaction(body, false)
	if err != nil {
		return nil, nil, err
	}
	if tx.ID != env.ID {
		return nil, nil, malformed("the blob holds transaction "+strconv.Quote(tx.ID)+", the message names "+strconv.Quote(env.ID), nil)
	}
	return tx, env.Blob, w.reg.validate(tx)
}

// releaseLease makes the message visible again after delay.
func (w *Worker) releaseLease(ctx context.Context, q *workerQueue, l *lease, delay time.Duration, log *slog.Logger) {
	_, err := q.qc.UpdateMessage(ctx, l.id, l.receipt(), l.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(seconds(delay))})
	if err != nil {
		// The message reappears when its visibility timeout ends anyway.
		log.Warn("cannot release the message", "error", tablekit.MapError(err, "release message", q.name))
	}
}

func (w *Worker) releaseMsg(ctx context.Context, q *workerQueue, m *azqueue.DequeuedMessage) {
	l := &lease{id: deref(m.MessageID), pop: deref(m.PopReceipt), text: deref(m.MessageText)}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	w.releaseLease(sctx, q, l, 0, w.log.With("queue", q.name, "message", l.id))
	w.metrics.released.Add(1)
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
	if _, err := q.qc.DeleteMessage(ctx, l.id, l.receipt(), nil); err != nil {
		log.Warn("poisoned message not deleted (it may be poisoned twice)", "error", tablekit.MapError(err, "delete message", q.name))
	}
	w.metrics.poisoned.Add(1)
	log.Error("transaction poisoned", "tx", rec.TxID, "step", rec.Step, "kind", rec.Kind, "permanent", rec.Permanent, "error", rec.Error)
}

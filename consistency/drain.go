package consistency

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// ErrNotDrained is returned by Drain when its queues still hold messages
// once DrainOptions.Wait is up.
var ErrNotDrained = errors.New("consistency: the queues still hold messages")

// DrainOptions configures Drain. A nil *DrainOptions means the defaults.
type DrainOptions struct {
	// Wait is how long Drain waits, after the queues have no visible
	// message left, for those that are in them but not visible to become
	// visible, and applies them too: messages enqueued with a Delay,
	// held by another worker, or released after a failure elsewhere. It
	// polls the queues' approximate message count, which counts them. If
	// messages remain when Wait is up, Drain returns ErrNotDrained. Zero
	// (the default) waits for none: a test on tablekit's emulator
	// advances its clock (emulator.Instance.Advance) past the delay
	// before calling Drain instead of waiting.
	Wait time.Duration
}

// Drain receives and applies every transaction visible in the worker's
// queues, as Run would, until a receive of every queue finds none, and
// returns: what a test calls after writes to an eventually consistent
// repository (an EventualIndexedTable and the like) and before reading
// its views.
//
// Messages in a queue but not visible yet are not waited for, unless
// DrainOptions.Wait says how long to: an EventualIndexedTable's intents
// are enqueued with a Delay (1 s by default), so a test either advances
// the emulator's clock by it first (no real wait) or sets Wait.
//
// Drain makes no real wait of its own: a transaction that fails is
// retried at once, without the worker's Backoff, up to MaxDequeueCount
// deliveries, then moved to the poison queue as Run moves it. Drain
// returns an error if one was poisoned while it ran, if a receive fails,
// or ctx's error if ctx ends first. What it does is counted in Metrics.
// It may run beside Run (each receives its own messages), and Drains
// may run concurrently.
func (w *Worker) Drain(ctx context.Context, opts *DrainOptions) error {
	var o DrainOptions
	if opts != nil {
		o = *opts
	}
	d := w.drainer()
	poisoned := w.metrics.Poisoned()
	deadline := time.Now().Add(o.Wait)
	idle := newPollWait(w.opts.PollInterval)
	for {
		if err := d.drainVisible(ctx); err != nil {
			return err
		}
		if n := w.metrics.Poisoned() - poisoned; n > 0 {
			return errors.New("consistency: drain: " + plural(n, "transaction") + " poisoned (see the poison queue)")
		}
		if o.Wait <= 0 {
			return nil
		}
		left, err := d.queueCounts(ctx)
		if err != nil {
			return err
		}
		if left == nil {
			return nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return &wrapped{msg: "consistency: drain: after waiting " + o.Wait.String() + ", " + strings.Join(left, ", "), err: ErrNotDrained}
		}
		if !sleepCtx(ctx, min(idle.next(), remaining)) {
			return ctx.Err()
		}
	}
}

// drainer returns a worker on w's queues, registry, log and metrics that
// retries a failed transaction at once: Drain's, which never waits for a
// backoff.
func (w *Worker) drainer() *Worker {
	return &Worker{acct: w.acct, tables: w.tables, opts: w.opts, reg: w.reg, log: w.log,
		metrics: w.metrics, tracer: w.tracer, queues: w.queues, keeper: w.keeper}
}

// drainVisible receives the visible messages of every queue and applies
// them, Concurrency at once, until a round of receives finds none.
func (w *Worker) drainVisible(ctx context.Context) error {
	sem := make(chan struct{}, w.opts.Concurrency)
	vis := seconds(w.opts.VisibilityTimeout)
	for {
		found := false
		var work sync.WaitGroup
		for _, q := range w.queues {
			if err := ctx.Err(); err != nil {
				work.Wait()
				return err
			}
			msgs, err := q.mc.Receive(ctx, q.name, int32(w.opts.BatchSize), vis)
			if err != nil {
				work.Wait()
				w.metrics.receiveErrors.Add(1)
				err = tablekit.MapError(err, "receive messages", q.name)
				return &wrapped{msg: "consistency: drain: " + err.Error(), err: err}
			}
			for i := range msgs {
				found = true
				l := w.hold(q, &msgs[i])
				sem <- struct{}{}
				w.metrics.inFlight.Add(1)
				work.Add(1)
				go func() {
					defer work.Done()
					defer func() { <-sem }()
					defer w.metrics.inFlight.Add(-1)
					w.process(ctx, q, l)
				}()
			}
		}
		work.Wait()
		if !found {
			return ctx.Err()
		}
	}
}

// queueCounts returns each queue that holds messages, with their
// approximate count, or nil when none does.
func (w *Worker) queueCounts(ctx context.Context) ([]string, error) {
	var left []string
	for _, q := range w.queues {
		n, err := approxCount(ctx, q.qc)
		if err != nil {
			return nil, &wrapped{msg: "consistency: drain: " + err.Error(), err: err}
		}
		if n > 0 {
			left = append(left, q.name+" "+plural(n, "message"))
		}
	}
	return left, nil
}

// plural is n and noun, in the plural unless n is 1.
func plural(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

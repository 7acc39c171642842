// Package throttle adapts the concurrency of bulk writes to the service's
// throttling answers. Azure Table storage answers 503 ServerBusy (or 500
// OperationTimedOut) when a partition (~2,000 entities/s) or the account
// (~20,000 entities/s) is over its target, and Cosmos DB answers 429 with
// x-ms-retry-after-ms; the guide's advice is to back off, lower
// concurrency and raise it again slowly. A Limiter does that for the
// transactions of one job (a BulkWrite, a DeleteWhere): every transaction
// takes a slot before it is sent and reports how the service answered.
//
// The algorithm is AIMD, as TCP's congestion avoidance, on two windows:
// the account's (transactions in flight in all) and each partition's
// (transactions in flight in it). Both start at the ceiling, so a job the
// service keeps up with runs exactly as without a Limiter. A throttling
// answer halves the window it points at (a partition's, or the account's
// when the service says the account is over its limit) and pauses it: for
// the service's retry-after when it gave one, else for an exponential
// backoff. Only one cut per round trip: the answers to transactions sent
// before the last cut tell nothing new, and cutting again for each of
// them would drop a window of 8 to 1 at the first burst. Every answer the
// service keeps up with raises the windows by 1/window (one transaction
// per window's worth of answers), up to the ceiling.
//
// A window counts transactions, not entities: a transaction is what is in
// flight, and the service's answers, which do count entities (a batch of
// 100 weighs 100), set where the windows settle.
package throttle

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Scope is what a throttling answer points at.
type Scope int

const (
	// Partition is one partition over its target (Azure's ServerBusy or
	// OperationTimedOut on a transaction, which covers one partition).
	Partition Scope = iota
	// Account is the account (or Cosmos DB table) over its target: a
	// message saying "account limit", or Cosmos DB's 429.
	Account
)

// Defaults and bounds.
const (
	// DefaultCeiling is the most transactions in flight when Options
	// leaves it 0 (BulkOptions.Concurrency's default).
	DefaultCeiling = 8
	// DefaultBaseDelay is the first pause after a throttling answer that
	// names no retry-after: azcore's default first retry delay.
	DefaultBaseDelay = 800 * time.Millisecond
	// DefaultMaxDelay bounds the backoff: azcore's default MaxRetryDelay.
	DefaultMaxDelay = 60 * time.Second
	// MaxRetryAfter bounds the pause a retry-after header can ask for,
	// so a broken header cannot stall a job for days.
	MaxRetryAfter = 5 * time.Minute
)

// Clock is the time a Limiter waits by; tests pass a fake one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configures a Limiter. The zero value means the defaults.
type Options struct {
	// Ceiling is the most transactions in flight, in all and in one
	// partition. Default DefaultCeiling.
	Ceiling int
	// BaseDelay is the pause after the first throttling answer without a
	// retry-after; it doubles with each further one in a row, up to
	// MaxDelay, jittered by ±20%. Defaults DefaultBaseDelay and
	// DefaultMaxDelay.
	BaseDelay, MaxDelay time.Duration
	// Clock is the time the Limiter waits by; nil means the real one.
	Clock Clock
}

// window is the AIMD state of the account or of one partition.
type window struct {
	size     float64   // transactions allowed in flight (its floor, at least 1)
	inflight int       // transactions in flight
	pause    time.Time // no transaction leaves before this
	cutSeq   uint64    // answers to slots taken before this sequence number are old news
	streak   int       // throttling answers in a row, for the backoff
}

func (w *window) open(now time.Time) bool {
	return w.inflight < max(1, int(w.size)) && !now.Before(w.pause)
}

// Limiter hands out slots to send transactions, within the account's
// window and the partition's, and adapts both to the answers. It is safe
// for concurrent use.
type Limiter struct {
	ceiling         float64
	base, maxDelay  time.Duration
	clock           Clock
	mu              sync.Mutex
	changed         chan struct{} // closed and replaced when a slot is freed
	seq             uint64
	account         window
	parts           map[string]*window
	sent, throttled int
}

// New returns a Limiter configured by o.
func New(o Options) *Limiter {
	if o.Ceiling <= 0 {
		o.Ceiling = DefaultCeiling
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.MaxDelay < o.BaseDelay {
		o.MaxDelay = o.BaseDelay
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	l := &Limiter{
		ceiling: float64(o.Ceiling), base: o.BaseDelay, maxDelay: o.MaxDelay, clock: o.Clock,
		changed: make(chan struct{}), parts: map[string]*window{},
	}
	l.account.size = l.ceiling
	return l
}

// Slot is the permission to send one transaction. Exactly one of its
// methods OK, Throttled and Release must be called once, when the answer
// is in.
type Slot struct {
	l    *Limiter
	pk   string
	seq  uint64
	done bool
}

// Acquire waits until a transaction on partition pk may be sent: a slot
// free in the account's window and in the partition's, and neither
// paused. It returns ctx's error if ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, pk string) (*Slot, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.mu.Lock()
		now := l.clock.Now()
		p := l.part(pk)
		if l.account.open(now) && p.open(now) {
			l.account.inflight++
			p.inflight++
			l.sent++
			s := &Slot{l: l, pk: pk, seq: l.seq}
			l.seq++
			l.mu.Unlock()
			return s, nil
		}
		// Wait for a slot to be freed, or for a pause to end.
		var wake <-chan time.Time
		until := l.account.pause
		if p.pause.After(until) {
			until = p.pause
		}
		if now.Before(until) {
			wake = l.clock.After(until.Sub(now))
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-wake:
		}
	}
}

// part returns pk's window, created at the ceiling. Called with mu held.
func (l *Limiter) part(pk string) *window {
	p := l.parts[pk]
	if p == nil {
		p = &window{size: l.ceiling}
		l.parts[pk] = p
	}
	return p
}

// finish frees s's slot and wakes the waiters. Called with mu held.
func (s *Slot) finish() (*window, bool) {
	if s.done {
		return nil, false
	}
	s.done = true
	l := s.l
	p := l.part(s.pk)
	l.account.inflight--
	p.inflight--
	close(l.changed)
	l.changed = make(chan struct{})
	return p, true
}

// forget drops a partition's window once it holds nothing the defaults
// would not: a job over millions of partitions keeps only the throttled
// ones. Called with mu held.
func (l *Limiter) forget(pk string, p *window, now time.Time) {
	if p.inflight == 0 && p.size >= l.ceiling && p.streak == 0 && !now.Before(p.pause) {
		delete(l.parts, pk)
	}
}

// OK reports that the service kept up with the transaction (it applied
// it, or refused it for a reason of its own, such as a conflict): both
// windows grow by 1/size, up to the ceiling.
func (s *Slot) OK() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := s.finish()
	if !ok {
		return
	}
	for _, w := range []*window{&l.account, p} {
		w.streak = 0
		w.size = min(l.ceiling, w.size+1/w.size)
	}
	l.forget(s.pk, p, l.clock.Now())
}

// Release frees the slot without a verdict: the answer says nothing
// about the service's load (the request did not reach it, say).
func (s *Slot) Release() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := s.finish(); ok {
		l.forget(s.pk, p, l.clock.Now())
	}
}

// Throttled reports a throttling answer pointing at scope, with the
// service's retry-after (0 when it named none). The window of scope is
// halved, unless an answer to a later transaction already cut it, and
// paused for retryAfter (at most MaxRetryAfter), else for the backoff.
func (s *Slot) Throttled(scope Scope, retryAfter time.Duration) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := s.finish()
	if !ok {
		return
	}
	l.throttled++
	w := p
	if scope == Account {
		w = &l.account
	}
	now := l.clock.Now()
	if s.seq >= w.cutSeq {
		w.size = max(1, w.size/2)
		w.cutSeq = l.seq
		w.streak++
	}
	d := min(retryAfter, MaxRetryAfter)
	if d <= 0 {
		d = l.backoff(w.streak)
	}
	if until := now.Add(d); until.After(w.pause) {
		w.pause = until
	}
}

// backoff is the pause after the n-th throttling answer in a row (from
// 1): BaseDelay doubled n-1 times, at most MaxDelay, ±20%.
func (l *Limiter) backoff(n int) time.Duration {
	d := float64(l.base) * math.Pow(2, float64(max(n, 1)-1))
	d = min(d, float64(l.maxDelay))
	return time.Duration(d * (0.8 + 0.4*rand.Float64()))
}

// Limit is the account's window now: the most transactions in flight.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(1, int(l.account.size))
}

// PartitionLimit is partition pk's window now.
func (l *Limiter) PartitionLimit(pk string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.parts[pk]; p != nil {
		return max(1, int(p.size))
	}
	return int(l.ceiling)
}

// Sent is the number of slots handed out: transactions sent, throttled
// ones and their resends included.
func (l *Limiter) Sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

// Throttled is the number of throttling answers reported.
func (l *Limiter) Throttled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.throttled
}

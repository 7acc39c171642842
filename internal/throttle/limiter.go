// Package throttle adapts the pace of bulk writes to the service's
// throttling answers. Azure Table storage answers 503 ServerBusy (or 500
// OperationTimedOut) when a partition (~2,000 entities/s) or the account
// (~20,000 entities/s) is over its target, and Cosmos DB answers 429 with
// x-ms-retry-after-ms; the guide's advice is to back off, lower
// concurrency and raise it again slowly. A Limiter does that for the
// transactions of one job (a BulkWrite, a DeleteWhere): every transaction
// takes a slot before it is sent, saying how many entities it carries,
// and reports how the service answered.
//
// Each scope (the account, and partitions) has a control with two
// regimes, as TCP has a window and pacing:
//   - a window: transactions in flight, from the ceiling (both start
//     there, so a job the service keeps up with runs exactly as without a
//     Limiter). A throttling answer halves it; every answer the service
//     keeps up with raises it by 1/window;
//   - below a window of 4 (once an answer got through, so a round trip
//     is known), a rate in entities per second. A window's step
//     (a whole transaction per round trip) is too coarse near a target,
//     and one transaction in flight already sends faster than a
//     partition's target when a round trip is short (100 entities per
//     10 ms are 10,000/s against a partition's 2,000). So the sends are
//     paced: a transaction of n entities leaves n/rate after the previous
//     one of the same account or partition, with up to the ceiling in
//     flight. The rate starts at 0.8 of what the window sent (its size in
//     transactions per smoothed round trip of the answers that got
//     through); a throttling answer multiplies it by 0.8, or by 0.25 when
//     nothing got through since the last cut (the first estimate is far
//     off: search fast); an answer that gets through raises it by 0.4%,
//     or, while it is below 0.9 of the rate last refused, by an eighth of
//     the distance to that. With a cut of b a sawtooth averages (1+b)/2
//     of where it is cut: 0.9 at 0.8, which halving cannot reach; and
//     from 0.9 to 1.0 of the refused rate at 0.4% takes about 26 answers,
//     so about one transaction in 27 is throttled.
//
// The account has its own control; the partitions share one, as the
// service's partition target is the same for every partition: what one
// hot partition learned paces the others from their second transaction
// on (a partition's first transaction leaves at once, as the service
// holds a burst for it). Each partition keeps its own schedule and pause.
//
// Only one cut per round trip: the answers to transactions sent before the
// last cut tell nothing new, and cutting again for each of them would drop
// a window of 8 to 1 at the first burst.
//
// After a throttling answer its account or partition pauses: for the
// service's retry-after, exactly, when it gave one (Cosmos DB does); else,
// when pacing, for the gap (which doubles as the rate is cut), and when
// not, for BaseDelay (50 ms) doubled with each throttling answer in a
// row, a streak any answer that gets through ends.
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

// Defaults, bounds and the control's constants.
const (
	// DefaultCeiling is the most transactions in flight when Options
	// leaves it 0 (BulkOptions.Concurrency's default).
	DefaultCeiling = 8
	// DefaultBaseDelay is the first pause after a throttling answer that
	// names no retry-after, when not pacing: about the gap a partition's
	// target asks between two transactions of 100 entities (20 to 50 ms
	// at 2,000 to 5,000 entities/s), not azcore's 0.8 s.
	DefaultBaseDelay = 50 * time.Millisecond
	// DefaultMaxDelay bounds the backoff and the paced gap: azcore's
	// default MaxRetryDelay.
	DefaultMaxDelay = 60 * time.Second
	// MaxRetryAfter bounds the pause a retry-after header can ask for,
	// so a broken header cannot stall a job for days.
	MaxRetryAfter = 5 * time.Minute

	// cutWindow is the cut of a window; cutSmall the cut of a rate, and
	// of a window's rate as it turns into one. With a cut b, a sawtooth
	// averages (1+b)/2 of where it is cut: 0.9 at 0.8, which halving
	// cannot reach.
	cutWindow = 0.5
	cutSmall  = 0.8
	// minWindow is the smallest window: below it the window's steps (a
	// whole transaction per round trip) are too coarse to settle within
	// 5% of throttled answers, and a rate takes over.
	minWindow = 4
	// cutStreak cuts a rate when nothing got through since the last cut:
	// the rate is far off (a first estimate, from a round trip), search
	// faster; the climb back toward the rate last refused (approachTo)
	// makes up for a cut too deep within a few answers.
	cutStreak = 0.25
	// rateIncrease is the rise of a rate per answer that gets through,
	// near the rate last refused: from 0.9 of it back to it takes about
	// 26 answers, so about one transaction in 27 (under 4%) is throttled.
	rateIncrease = 0.004
	// approachTo is where a rate far below the one last refused climbs
	// back quickly to: just under it.
	approachTo = 0.9
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
	// retry-after when not pacing (when pacing, the gap); it doubles with
	// each further one in a row, up to MaxDelay, jittered by ±20%.
	// MaxDelay also bounds the paced gap. Defaults DefaultBaseDelay and
	// DefaultMaxDelay.
	BaseDelay, MaxDelay time.Duration
	// Clock is the time the Limiter waits by; nil means the real one.
	Clock Clock
}

// control is how fast a scope may send: a window, and below a window of
// one a rate.
type control struct {
	size   float64 // transactions allowed in flight, 1 to the ceiling
	rate   float64 // entities per second when pacing (size 1); 0: not pacing
	peak   float64 // the rate when last cut: the service refused it
	cutSeq uint64  // answers to slots taken before this sequence number are old news
	streak int     // throttling answers in a row, for the backoff and cutStreak
}

// window is the most transactions c lets be in flight: its window, or
// the ceiling once it paces (the rate decides, and more than one
// transaction may be in flight when the gap is shorter than a round trip).
func (c *control) window(ceiling float64) int {
	if c.rate > 0 {
		return int(ceiling)
	}
	return max(1, int(c.size))
}

// lane is where one account or partition is: what it has in flight, when
// it last sent, and its pause.
type lane struct {
	inflight int
	last     time.Time // when its last transaction left
	lastN    int       // that transaction's entities
	pause    time.Time // no transaction leaves before this
}

// gate is when l may send under c, not counting its window.
func (l *lane) gate(c *control) time.Time {
	at := l.pause
	if c.rate > 0 && !l.last.IsZero() {
		if next := l.last.Add(seconds(float64(l.lastN) / c.rate)); next.After(at) {
			at = next
		}
	}
	return at
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Limiter hands out slots to send transactions, within the account's
// control and the partitions', and adapts both to the answers. It is safe
// for concurrent use.
type Limiter struct {
	ceiling         float64
	base, maxDelay  time.Duration
	clock           Clock
	mu              sync.Mutex
	changed         chan struct{} // closed and replaced when a slot is freed
	seq             uint64
	account, part   control
	srtt            time.Duration // smoothed round trip of the answers that got through
	acctLane        lane
	parts           map[string]*lane
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
		changed: make(chan struct{}), parts: map[string]*lane{},
	}
	l.account.size = l.ceiling
	l.part.size = l.ceiling
	return l
}

// Slot is the permission to send one transaction. Exactly one of its
// methods OK, Throttled and Release must be called once, when the answer
// is in.
type Slot struct {
	l    *Limiter
	pk   string
	n    int
	seq  uint64
	sent time.Time
	done bool
}

// Acquire waits until a transaction of n entities on partition pk may be
// sent: a place free in the account's window and in the partition's,
// neither paused, and the paced gap after each's last transaction passed.
// It returns ctx's error if ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, pk string, n int) (*Slot, error) {
	n = max(n, 1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.mu.Lock()
		now := l.clock.Now()
		p := l.lane(pk)
		ag, pg := l.acctLane.gate(&l.account), p.gate(&l.part)
		until := ag
		if pg.After(until) {
			until = pg
		}
		room := l.acctLane.inflight < l.account.window(l.ceiling) && p.inflight < l.part.window(l.ceiling)
		if room && !now.Before(until) {
			s := &Slot{l: l, pk: pk, n: n, seq: l.seq, sent: now}
			for _, ln := range []*lane{&l.acctLane, p} {
				ln.inflight++
				ln.last, ln.lastN = now, n
			}
			l.sent++
			l.seq++
			l.mu.Unlock()
			return s, nil
		}
		// Wait for a place to be freed, or for the gate to open.
		var wake <-chan time.Time
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

// lane returns pk's lane, created empty. Called with mu held.
func (l *Limiter) lane(pk string) *lane {
	p := l.parts[pk]
	if p == nil {
		p = &lane{}
		l.parts[pk] = p
	}
	return p
}

// finish frees s's place and wakes the waiters. Called with mu held.
func (s *Slot) finish() (*lane, bool) {
	if s.done {
		return nil, false
	}
	s.done = true
	l := s.l
	p := l.lane(s.pk)
	l.acctLane.inflight--
	p.inflight--
	close(l.changed)
	l.changed = make(chan struct{})
	return p, true
}

// forget drops a partition's lane once it holds nothing a new one would
// not: a job over millions of partitions keeps only those it is pacing or
// pausing. Called with mu held.
func (l *Limiter) forget(pk string, p *lane, now time.Time) {
	if p.inflight == 0 && !now.Before(p.gate(&l.part)) {
		delete(l.parts, pk)
	}
}

// OK reports that the service kept up with the transaction (it applied
// it, or refused it for a reason of its own, such as a conflict): the
// streaks end, windows grow by 1/size up to the ceiling, and rates by 1%.
func (s *Slot) OK() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := s.finish()
	if !ok {
		return
	}
	now := l.clock.Now()
	if rtt := now.Sub(s.sent); l.srtt == 0 {
		l.srtt = rtt
	} else {
		l.srtt += (rtt - l.srtt) / 8
	}
	for _, c := range []*control{&l.account, &l.part} {
		c.streak = 0
		switch {
		case c.rate == 0:
			c.size = min(l.ceiling, c.size+1/c.size)
		case c.rate < approachTo*c.peak:
			// Far below the rate last refused (after a search that cut
			// too far): close an eighth of the distance.
			c.rate += max(c.rate*rateIncrease, (approachTo*c.peak-c.rate)/8)
		default:
			c.rate *= 1 + rateIncrease
		}
	}
	l.forget(s.pk, p, now)
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
// service's retry-after (0 when it named none). The control of scope is
// cut, unless an answer to a later transaction already cut it, and the
// account or partition paused for retryAfter (at most MaxRetryAfter),
// else for the backoff.
func (s *Slot) Throttled(scope Scope, retryAfter time.Duration) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := s.finish()
	if !ok {
		return
	}
	l.throttled++
	c, ln := &l.part, p
	if scope == Account {
		c, ln = &l.account, &l.acctLane
	}
	now := l.clock.Now()
	if s.seq >= c.cutSeq {
		l.cut(c, s)
		c.cutSeq = l.seq
		c.streak++
	}
	d := min(retryAfter, MaxRetryAfter)
	if d <= 0 {
		d = l.backoff(c, s.n)
	}
	if until := now.Add(d); until.After(ln.pause) {
		ln.pause = until
	}
}

// cut lowers c after a throttling answer to s. Called with mu held.
func (l *Limiter) cut(c *control, s *Slot) {
	switch {
	case c.rate == 0 && (c.size*cutWindow >= minWindow || l.srtt == 0):
		// A window; or no answer got through yet, so no round trip to
		// pace from (a throttled answer comes back faster than an
		// applied one).
		c.size = max(1, c.size*cutWindow)
	case c.rate == 0:
		// A small window was too fast: pace, at 0.8 of what the window
		// sends (size transactions per round trip of the answers that
		// got through).
		c.rate = cutSmall * c.size * float64(s.n) / max(l.srtt, time.Millisecond).Seconds()
	case c.streak > 0:
		c.peak = c.rate
		c.rate *= cutStreak
	default:
		c.peak = c.rate
		c.rate *= cutSmall
	}
	if c.rate > 0 {
		// The gap of a transaction like s stays within MaxDelay.
		c.rate = max(c.rate, float64(s.n)/l.maxDelay.Seconds())
	}
}

// backoff is the pause after a throttling answer on c for a transaction
// of n entities: the paced gap (which doubles within a streak as the rate
// halves), or when not pacing BaseDelay doubled for each answer of the
// streak after the first; at most MaxDelay, ±20%.
// Called with mu held.
func (l *Limiter) backoff(c *control, n int) time.Duration {
	var d float64
	if c.rate > 0 {
		// The rate already halves within a streak: the gap doubles.
		d = float64(n) / c.rate * float64(time.Second)
	} else {
		d = float64(l.base) * math.Pow(2, float64(max(c.streak, 1)-1))
	}
	d = min(d, float64(l.maxDelay))
	return time.Duration(d * (0.8 + 0.4*rand.Float64()))
}

// Limit is the most transactions the account lets be in flight now.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.account.window(l.ceiling)
}

// PartitionLimit is the most transactions a partition lets be in flight
// now.
func (l *Limiter) PartitionLimit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.part.window(l.ceiling)
}

// Rate is the account's paced rate now, in entities per second; 0 when
// it is not paced.
func (l *Limiter) Rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.account.rate
}

// PartitionRate is the partitions' paced rate now, in entities per
// second; 0 when they are not paced.
func (l *Limiter) PartitionRate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.part.rate
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

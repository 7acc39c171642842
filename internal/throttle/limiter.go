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
//     Limiter). A throttling answer halves it when the lane it points at
//     had more in flight than the halved window (else the cut would slow
//     nothing); every answer the service keeps up with raises it by
//     1/window;
//   - below a window of 4, or when halving would not restrain the lane
//     (once an answer got through, so a round trip is known), a rate in
//     entities per second. A window's step (a whole transaction per round
//     trip) is too coarse near a target, and one transaction in flight
//     already sends faster than a partition's target when a round trip is
//     short (100 entities per 10 ms are 10,000/s against a partition's
//     2,000). So the sends are paced: a transaction of n entities leaves
//     n/rate after the previous one of the same account or partition,
//     with up to the ceiling in flight.
//
// The first rate is 0.8 of what the window sent (its size in transactions
// per smoothed round trip of the answers that got through), or, when the
// refused lane held one transaction at a time and sent slower than that
// (one partition among many gets one transaction in flight, not the
// window's), half of what the lane sent: the previous transaction's
// entities over the gap to the refused one, a bound on the target the
// service just refused. A throttling answer then multiplies the rate by
// 0.8 (by 0.9 when refused near the rate last refused: the target is
// known; by 0.5 when nothing got through since the last cut: the estimate
// is far off, search fast). An answer that gets through raises it by an
// eighth of the distance to 0.95 of the rate last refused while below
// that, then by 0.05% up to it, then by 0.4%: the sawtooth spends its
// time near the target, and from 0.95 back to the refused rate takes about
// 100 answers, so about one transaction in 100 is throttled in steady
// state. A rate rises only while it holds a transaction back, and the
// account's no further than 1.5 times what the job sent over the last
// second: a rate that limits nothing (the job sends slower, held by the
// partitions' paces) would otherwise climb far above what the service
// takes, and its gap would let through bursts the service refuses.
//
// The account has its own control; the partitions share one, as the
// service's partition target is the same for every partition: what one
// hot partition learned paces the others from their second transaction
// on (a partition's first transaction leaves at once, as the service
// holds a burst for it, and its refusal cuts nothing: it pauses its
// partition). Each partition keeps its own lane: its schedule and pause,
// kept for a second after its last transaction (the service may still
// count it), so a paced partition does not pass for a new one. After a
// partition's throttling answer (a cut of the partitions' rate, or a
// refused first transaction), one partition that sent before tries again
// and the others that sent before wait for its answer: lanes due at the
// same moment would each be refused at a rate one of them proves too
// fast (or by the debt a previous job left on every partition).
//
// Only one cut per round trip: the answers to transactions sent before the
// last cut tell nothing new, and cutting again for each of them would drop
// a window of 8 to 1 at the first burst. Nor do their answers that get
// through raise the rate.
//
// A refused transaction took nothing from the service: the paced gap of
// the next one runs from the transaction before it. After a throttling
// answer its account or partition pauses: for the service's retry-after,
// exactly, when it gave one (Cosmos DB does); else, a paced partition for
// that gap at the cut rate and no more, a paced account for the gap from
// the answer (the account's refusal comes from many partitions'
// transactions at once, not from one lane's gap); and when not pacing,
// for BaseDelay (50 ms) doubled with each throttling answer in a row, a
// streak any answer that gets through ends.
//
// TryAcquire and Changed let a caller with several partitions'
// transactions waiting send whichever may leave now, rather than wait on
// the first in line.
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

	// cutWindow is the cut of a window, and of what a lane sent as it
	// turns into a rate; cutSmall the cut of a rate, and of a window's
	// rate as it turns into one. With a cut b, a sawtooth averages
	// (1+b)/2 of where it is cut: 0.9 at 0.8, which halving cannot reach.
	cutWindow = 0.5
	cutSmall  = 0.8
	// cutNear is the cut of a rate refused near where it was last
	// refused (at least approachTo of it): the target is known, and the
	// sawtooth then averages 0.95 of it.
	cutNear = 0.9
	// minWindow is the smallest window: below it the window's steps (a
	// whole transaction per round trip) are too coarse to settle within
	// 5% of throttled answers, and a rate takes over.
	minWindow = 4
	// cutStreak cuts a rate when nothing got through since the last cut:
	// the rate is far off (a first estimate), search faster; the climb
	// back toward the rate last refused (approachTo) makes up for a cut
	// too deep within a few answers. Not a quarter: a first estimate
	// from what a lane sent is a bound, seldom more than a few times the
	// target, and a partition paced at a quarter of its target idles.
	cutStreak = 0.5
	// rateIncrease is the rise of a rate per answer that gets through
	// above the rate last refused: the target may have risen, probe it.
	rateIncrease = 0.004
	// approachTo is where a rate far below the one last refused climbs
	// back quickly to (an eighth of the distance per answer): just under
	// it.
	approachTo = 0.95
	// nearIncrease is the rise per answer between approachTo and the
	// rate last refused: from 0.95 of it back to it takes about 100
	// answers, so the sawtooth spends most of its time near the target
	// and about one answer in 100 is throttled.
	nearIncrease = 0.0005
	// laneMemory is how long a partition's lane outlives its last
	// transaction. The service may still hold that transaction against
	// the partition (100 entities at a target of 300 per second take a
	// third of a second to pay for), and a partition without a lane sends
	// its next transaction at once, as a new one; dropped too early, a
	// paced partition's next transaction escapes its gap and is refused.
	laneMemory = time.Second
	// accountHeadroom bounds the account's rate, when it rises, by what
	// the job sent over the last second: the rate is then within reach of
	// what the job sends, and its gap spaces the job's bursts.
	accountHeadroom = 1.5
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
	// held says a transaction waited for the rate's gap since the last
	// answer that got through: the rate is what limits the job, and may
	// rise. A rate that holds nothing back (the job sends slower, held
	// by other limits) stays where it is: raised freely it would let
	// bursts through that the service refuses.
	held bool
	// probe is set by a partition's throttling answer (a cut of the
	// partitions' control, or a refused first transaction): the next
	// transaction of a partition that sent before (probeSeq, its slot)
	// tries again, and the others wait for its answer. Lanes due at the
	// same moment would each be refused at a rate one of them proves too
	// fast (or, at the start of a job, by a debt a previous job left on
	// every partition).
	probe    bool
	probeSeq uint64 // the probe's slot + 1; 0 while none is in flight
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
	lastSeq  uint64    // that transaction's slot
	pause    time.Time // no transaction leaves before this
	// What the lane sent: entities since winStart, and per second over
	// the last whole window of a second (0 before one ends).
	winStart time.Time
	winN     int
	achieved float64
}

// count adds a departure of n entities at now to what l sent.
func (l *lane) count(now time.Time, n int) {
	if l.winStart.IsZero() {
		l.winStart = now
	}
	l.winN += n
	if d := now.Sub(l.winStart); d >= time.Second {
		l.achieved = float64(l.winN) / d.Seconds()
		l.winStart, l.winN = now, 0
	}
}

// sent is l's last departure.
func (l *lane) sent() departure { return departure{l.last, l.lastN} }

// departure is when a transaction left, and its entities.
type departure struct {
	at time.Time
	n  int
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
	swept           time.Time // when parts was last swept
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
	// prev is the departure before this one on the partition's lane and
	// the account's (indexed by Scope), and held what each had in flight
	// with this one: a throttling answer measures what its lane sent.
	prev [2]departure
	held [2]int
	// probe says this transaction tries the partitions' control after a
	// partition's throttling answer.
	probe bool
	done  bool
}

// Acquire waits until a transaction of n entities on partition pk may be
// sent: a place free in the account's window and in the partition's,
// neither paused, and the paced gap after each's last transaction passed.
// It returns ctx's error if ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, pk string, n int) (*Slot, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Take the channel before trying: a place freed in between closes it.
		changed := l.Changed()
		s, wait := l.TryAcquire(pk, n)
		if s != nil {
			return s, nil
		}
		// Wait for a place to be freed, or for the gate to open.
		var wake <-chan time.Time
		if wait > 0 {
			wake = l.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-wake:
		}
	}
}

// TryAcquire is Acquire without the wait, for a caller that has other
// transactions to send meanwhile (a bulk job holding several partitions'
// transactions sends whichever may leave first). It returns a slot when
// a transaction of n entities on pk may be sent now. Otherwise it returns
// nil and how long, on the Limiter's clock, until the transaction may be
// sent if no answer comes in before; 0 when only a freed place lets it
// go (wait for Changed).
func (l *Limiter) TryAcquire(pk string, n int) (*Slot, time.Duration) {
	n = max(n, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	// A partition not seen yet gets its lane only when it sends: probing
	// many partitions keeps no state.
	p := l.parts[pk]
	if p == nil {
		p = &lane{}
	}
	fresh := l.parts[pk] == nil
	until := l.acctLane.gate(&l.account)
	if pg := p.gate(&l.part); pg.After(until) {
		until = pg
	}
	if l.acctLane.inflight >= l.account.window(l.ceiling) || p.inflight >= l.part.window(l.ceiling) {
		return nil, 0
	}
	probe := l.part.probe && !p.last.IsZero()
	if probe && l.part.probeSeq != 0 {
		return nil, 0 // another partition tries the rate: wait for its answer
	}
	if now.Before(until) {
		// Whichever rate's gap holds the transaction back may rise.
		l.account.held = l.account.held || l.account.rate > 0 && now.Before(l.acctLane.gate(&l.account))
		l.part.held = l.part.held || l.part.rate > 0 && now.Before(p.gate(&l.part))
		return nil, until.Sub(now)
	}
	if fresh {
		l.sweep(now)
		l.parts[pk] = p
	}
	s := &Slot{l: l, pk: pk, n: n, seq: l.seq, sent: now}
	for scope, ln := range [2]*lane{Partition: p, Account: &l.acctLane} {
		s.prev[scope] = ln.sent()
		ln.inflight++
		s.held[scope] = ln.inflight
		ln.last, ln.lastN, ln.lastSeq = now, n, s.seq
	}
	l.acctLane.count(now, n)
	if probe {
		l.part.probeSeq = s.seq + 1
		s.probe = true
	}
	l.sent++
	l.seq++
	return s, 0
}

// Changed returns a channel closed when the next answer comes in (a
// slot's OK, Throttled or Release): a place is free again and the
// controls may have changed, so a transaction TryAcquire refused may
// leave sooner than it said. Take it before calling TryAcquire, so an
// answer in between is not missed.
func (l *Limiter) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
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
	if l.part.probeSeq == s.seq+1 {
		// The probe's answer: Throttled cuts again (a new probe), OK
		// ends the probing, Release lets another partition probe.
		l.part.probeSeq = 0
	}
	p := l.lane(s.pk)
	l.acctLane.inflight--
	p.inflight--
	close(l.changed)
	l.changed = make(chan struct{})
	return p, true
}

// sweep drops, at most once per laneMemory, the partitions' lanes that
// hold nothing a new one would not: nothing in flight, no pause or gap
// pending, and their last transaction laneMemory old. A job over millions
// of partitions keeps only those it sent to within laneMemory, or is
// pausing. Called with mu held.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.swept) < laneMemory {
		return
	}
	l.swept = now
	for pk, p := range l.parts {
		if p.inflight == 0 && !now.Before(p.gate(&l.part)) && now.Sub(p.last) >= laneMemory {
			delete(l.parts, pk)
		}
	}
}

// OK reports that the service kept up with the transaction (it applied
// it, or refused it for a reason of its own, such as a conflict): the
// streaks end, windows grow by 1/size up to the ceiling, and rates that
// held a transaction back rise (see the package comment).
func (s *Slot) OK() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := s.finish(); !ok {
		return
	}
	if s.probe {
		l.part.probe = false // the rate holds: every partition may go
	}
	now := l.clock.Now()
	if rtt := now.Sub(s.sent); l.srtt == 0 {
		l.srtt = rtt
	} else {
		l.srtt += (rtt - l.srtt) / 8
	}
	for _, c := range []*control{&l.account, &l.part} {
		c.streak = 0
		was := c.rate
		switch {
		case c.rate == 0:
			c.size = min(l.ceiling, c.size+1/c.size)
		case !c.held || s.seq < c.cutSeq:
			// Nothing waited for the rate, or the transaction left
			// before the last cut (at a rate since refused): no rise.
		case c.rate < approachTo*c.peak:
			// Far below the rate last refused (after a search that cut
			// too far): close an eighth of the distance.
			c.rate += max(c.rate*rateIncrease, (approachTo*c.peak-c.rate)/8)
		case c.rate < c.peak:
			c.rate *= 1 + nearIncrease
		default:
			c.rate *= 1 + rateIncrease
		}
		c.held = false
		if a := l.acctLane.achieved; c == &l.account && a > 0 && c.rate > was {
			// The account's rate rises no further than 1.5 times what
			// the job sent over the last second: the partitions' paces
			// (or the job's own) may hold it far below the account's
			// rate, whose gap then spaces nothing but bursts, and lets
			// through bursts the service refuses.
			c.rate = max(was, min(c.rate, accountHeadroom*a))
		}
	}
}

// Release frees the slot without a verdict: the answer says nothing
// about the service's load (the request did not reach it, say).
func (s *Slot) Release() {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	s.finish()
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
	// A lane's first transaction (of the job, or since its lane was
	// dropped) went on the service's burst, not at a rate: its refusal
	// pauses the lane and cuts nothing; a refusal of the next one does.
	if s.seq >= c.cutSeq && !s.prev[scope].at.IsZero() {
		// What the lane holds: what it had in flight when s left, or
		// now with s, whichever is more (the first of a burst left
		// alone).
		l.cut(c, s, scope, max(s.held[scope], ln.inflight+1))
		c.cutSeq = l.seq
		if c == &l.part {
			c.probeSeq = 0 // one in flight tried the rate before the cut
		}
		c.streak++
	}
	if scope == Partition {
		// One partition tries again first (see control.probe).
		c.probe = true
	}
	// A refused transaction took nothing from the service: the paced gap
	// of the next runs from the transaction before it, at the cut rate
	// (unless a later one left since).
	restored := false
	for sc, sl := range [2]*lane{Partition: p, Account: &l.acctLane} {
		if pv := s.prev[sc]; sl.lastSeq == s.seq && !pv.at.IsZero() {
			sl.last, sl.lastN = pv.at, pv.n
			restored = restored || Scope(sc) == scope
		}
	}
	d := min(retryAfter, MaxRetryAfter)
	if d <= 0 && (c.rate == 0 || !restored || scope == Account) {
		d = l.backoff(c, s.n)
	}
	if until := now.Add(d); until.After(ln.pause) {
		ln.pause = until
	}
}

// cut lowers c, scope's control, after a throttling answer to s. Called
// with mu held.
func (l *Limiter) cut(c *control, s *Slot, scope Scope, held int) {
	switch {
	case c.rate == 0 && l.srtt == 0:
		// No answer got through yet, so no round trip to pace from (a
		// throttled answer comes back faster than an applied one).
		c.size = max(1, c.size*cutWindow)
	case c.rate == 0 && c.size*cutWindow >= minWindow && float64(held) > c.size*cutWindow:
		// A window, which the cut restrains: the lane had more in
		// flight than the cut window allows.
		c.size = max(1, c.size*cutWindow)
	case c.rate == 0:
		// A small window was too fast, or one the lane did not fill:
		// pace, at 0.8 of what the window sends (size transactions per
		// round trip of the answers that got through), or from what
		// the lane sent when lower.
		window := c.size * float64(s.n) / max(l.srtt, time.Millisecond).Seconds()
		if m := s.refused(scope, held, window); m < window {
			// The lane sent one transaction at a time, slower than its
			// window lets it (one partition among many), and the
			// service refused that: a bound on its target, likely far
			// above it (the lane's first transaction went on the
			// service's burst). Search from half of it, climbing back
			// toward it quickly while far below.
			c.peak = m
			c.rate = cutWindow * m
		} else {
			c.rate = cutSmall * window
		}
	case c.streak > 0:
		c.peak = c.rate
		c.rate = c.peak * cutStreak
	default:
		b := cutSmall
		if c.peak > 0 && c.rate >= approachTo*c.peak {
			// Refused where the last refusal was: the target is
			// known, and a shallow cut keeps the rate near it.
			b = cutNear
		}
		c.peak = c.rate
		c.rate *= b
	}
	if c.rate > 0 {
		// The gap of a transaction like s stays within MaxDelay.
		c.rate = max(c.rate, float64(s.n)/l.maxDelay.Seconds())
	}
}

// refused is what s's lane sent when it was refused, in entities per
// second, when it held s alone (a lane with more in flight sends its
// window, not one transaction per gap): the transaction before s over the
// gap to s. The gap counts when within laneMemory, and the rate is not
// taken below a 64th of window, the control's figure (with 8 transactions
// of 100 in flight and 50 ms round trips, 16,000 entities per second, a
// 64th is 250): a lane idle before the refusal measures little. Else
// window.
func (s *Slot) refused(scope Scope, held int, window float64) float64 {
	pv := s.prev[scope]
	gap := s.sent.Sub(pv.at)
	if held != 1 || pv.at.IsZero() || gap <= 0 || gap >= laneMemory {
		return window
	}
	return max(float64(pv.n)/gap.Seconds(), window/64)
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

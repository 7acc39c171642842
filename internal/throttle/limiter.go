// Package throttle adapts the pace of bulk writes to the service's
// throttling answers. Azure Table storage answers 503 ServerBusy (or 500
// OperationTimedOut) when a partition (~2,000 entities/s) or the account
// (~20,000 entities/s) is over its target, and Cosmos DB answers 429 with
// x-ms-retry-after-ms; the guide's advice is to back off, lower
// concurrency and raise it again slowly. A Limiter does that for the
// transactions of one job (a BulkWrite, a BulkWriter, a DeleteWhere):
// every transaction takes a slot before it is sent, saying how many
// entities it carries, and reports how the service answered.
//
// # What a client can see
//
// The service's targets behave as token buckets: a partition's and the
// account's fill at the target and hold a burst allowance that Azure does
// not publish (a fraction of a second's worth, or several seconds'). A
// client sees only its own answers (those that got through, the
// throttling ones) and their round trips. A large allowance lets a job run
// far over the target until the bucket is empty, then refuses nearly
// everything; a small one refuses any overshoot at once, and a late
// transaction makes the next one early. The Limiter paces by what it sees:
//
//   - Unpaced at first: up to the ceiling in flight, so a job the service
//     keeps up with runs exactly as without a Limiter. A partition starts
//     with one transaction in flight and adds one per answer that got
//     through, and one partition (the explorer) sends beyond its first
//     transaction before the others: a partition's allowance may hold a
//     single transaction.
//   - The first throttling answer of a scope (the account; the partitions,
//     which share one control, as the service's partition target is the
//     same for all) paces it at half of what the service let the refused
//     lane (the account, or that partition) through since its first
//     transaction: its allowance and its target over that time, a bound
//     that a large allowance puts far above the target. A transaction of
//     n entities then leaves n/rate after the previous one of its account
//     or partition.
//   - Until a paced rate is refused, each answer that gets through raises
//     the rate by 5% (the first estimate may be low as well: a cold
//     start's slow answers).
//   - A throttling answer at a paced rate (the peak) cuts it: by 0.95 near
//     the peak last refused, by 0.8 elsewhere, by 0.6 when nothing got
//     through since the last cut (the estimate is far off). Refused while
//     the service lets through less than the rate (its last 8 answers
//     that got through, within half a second, or in such a streak), the
//     rate goes down to what it lets through.
//   - An answer that gets through raises the rate while it holds a
//     transaction back: below a peak refused once (maybe a fluke: a late
//     transaction, a debt) by an eighth of the distance to it; below a
//     peak two refusals agree on (within 10%), by an eighth of the
//     distance to 0.95 of it, then by 0.02% up to it (about 250 answers:
//     about one answer in 250 is throttled, and the sawtooth averages
//     about 0.97 of the target); past the peak by 0.4%, faster the further
//     past it (the target rose, or the peak was a fluke). The account's
//     rate rises no further than 1.5 times what the job sent over the last
//     second: a rate that limits nothing would otherwise climb far above
//     what the service takes, and let bursts through that it refuses.
//
// # Partitions
//
// Partitions sent to at one rate drain their buckets alike, so a rate too
// high for one is refused by all at once. One partition, the leader, goes
// at the partitions' rate; the others at the rate the leader was let
// through twice in a row, when lower. After a partition's throttling
// answer, one partition that sent before tries again and the others wait
// for its answer. A partition's first transaction leaves at once (the
// service holds an allowance for it), and its refusal cuts nothing (a
// debt a previous job left): it pauses that partition. A paced partition
// whose gap is longer than two round trips sends its next transaction
// only once the last is answered, and the gap runs from the answer less
// the smoothed round trip: a transaction the network or the service held
// up was taken late, and a bucket that holds one transaction refuses the
// next as early as the last was late. Each partition keeps its lane (its
// schedule, pause and measures) for a second after its last transaction:
// the service may still count it.
//
// # Old news and pauses
//
// Only answers to transactions sent after the last cut say something new
// about a rate: the answers of a burst sent at a rate since refused cut
// nothing more, nor raise it. A refused transaction took nothing from the
// service: the paced gap of the next one runs from the transaction before
// it. After a throttling answer its account or partition pauses: for the
// service's retry-after, exactly, when it gave one (Cosmos DB does); else,
// a paced partition for its gap and no more, a paced account for the gap
// from the answer; when not pacing, for BaseDelay (50 ms) doubled with
// each throttling answer in a row.
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

// Defaults, bounds and the control's constants (the package comment says
// what each does; docs/BENCHMARKS.md, "One pace for every throttle shape",
// how they were measured).
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

	// firstCut is the first rate, as a share of what the service let the
	// refused lane through since its first transaction.
	firstCut = 0.5
	// searchIncrease is the rise per answer until a paced rate is
	// refused.
	searchIncrease = 0.05
	// cutSmall is the cut of a rate refused away from the peak; cutNear
	// near it (at least approachTo of it); cutStreak when nothing got
	// through since the last cut.
	cutSmall  = 0.8
	cutNear   = 0.95
	cutStreak = 0.6
	// approachTo is where a rate below a peak two refusals agree on climbs
	// back quickly to, by an eighth of the distance per answer
	// (approachStep); nearIncrease the rise per answer from there to the
	// peak: about 250 answers.
	approachTo   = 0.95
	approachStep = 8
	nearIncrease = 0.0002
	// agree is how close two refused rates are to agree on the target.
	agree = 1.1
	// rateIncrease is the rise per answer past the peak, times
	// 1 + pastFactor × (rate/peak - 1): faster the further past it.
	rateIncrease = 0.004
	pastFactor   = 20
	// okRing is how many of a lane's last answers that got through
	// measure what the service lets through it; recentSpan how recent
	// they must be to cut a rate outside a streak.
	okRing     = 8
	recentSpan = 500 * time.Millisecond
	// laneMemory is how long a partition's lane outlives its last
	// transaction. The service may still hold that transaction against
	// the partition (100 entities at a target of 300 per second take a
	// third of a second to pay for), and a partition without a lane sends
	// its next transaction at once, as a new one; dropped too early, a
	// paced partition's next transaction escapes its gap and is refused.
	laneMemory = time.Second
	// leaderIdle is how long past its gap the leading partition may stay
	// idle before another one leads.
	leaderIdle = 100 * time.Millisecond
	// accountHeadroom bounds the account's rate, when it rises, by what
	// the job sends lately (its last okRing departures): the rate is then
	// within reach of what the job sends, and its gap spaces the job's
	// bursts.
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

// control is how fast a scope may send: a window of transactions in
// flight until the service throttles it, then a rate.
type control struct {
	// size is the window of transactions in flight: the ceiling, halved
	// at the first throttling answer, then growing by 1/size per answer
	// that gets through (the rate may need more than one in flight, when
	// its gap is shorter than a round trip).
	size float64
	rate float64 // entities per second when pacing; 0: not pacing
	// peak is the paced rate last refused (0: none yet), prevPeak the
	// one before.
	peak, prevPeak float64
	cutSeq         uint64 // answers to slots taken before this sequence number are old news
	streak         int    // throttling answers (news) in a row, for the backoff and cutStreak
	// held says a transaction waited for the rate's gap since the last
	// answer that got through: the rate is what limits the job, and may
	// rise. A rate that holds nothing back (the job sends slower, held
	// by other limits) stays where it is: raised freely it would let
	// bursts through that the service refuses.
	held bool
	// probe is set by a partition's throttling answer (a cut of the
	// partitions' control, or a refused first transaction), and at the
	// start: the next transaction of a partition that sent before
	// (probeSeq, its slot) tries the rate, and the others wait for its
	// answer. Lanes due at the same moment would each be refused at a
	// rate one of them proves too fast (or, at the start of a job, by a
	// debt a previous job left on every partition).
	probe    bool
	probeSeq uint64 // the probe's slot + 1; 0 while none is in flight
	// safe is the rate every partition may go at; above it only the
	// leader's lane goes at rate (see Limiter.partRate). The partitions'
	// control only.
	safe   float64
	leader string
}

// agreed reports whether the last two rates refused agree (within 10%):
// the target is known.
func (c *control) agreed() bool {
	return c.peak > 0 && c.prevPeak > 0 && c.peak <= agree*c.prevPeak && c.prevPeak <= agree*c.peak
}

// window is the most transactions c lets be in flight.
func (c *control) window() int { return max(1, int(c.size)) }

// lane is where one account or partition is: what it has in flight, when
// it last sent, its pause, and what the service let through it.
type lane struct {
	inflight int
	last     time.Time // when its last transaction left
	lastN    int       // that transaction's entities
	lastSeq  uint64    // that transaction's slot
	pause    time.Time // no transaction leaves before this
	// late is how much later than the smoothed round trip the answer to
	// its last transaction came: the gap to the next runs from then.
	late time.Duration
	// deps are its last departures, deps[depNext] the oldest once full:
	// what it sends lately.
	deps    [okRing]departure
	depNext int
	// firstAt is the lane's first departure, sentTotal the entities it
	// sent since and okTotal those of its answers that got through; oks
	// the last okRing of those answers, oks[okNext] the oldest once full.
	firstAt            time.Time
	sentTotal, okTotal int
	oks                [okRing]departure
	okNext             int
	// okRate is the rate the lane's last answer that got through was
	// paced at; 0 after a throttling answer.
	okRate float64
}

// count adds a departure of n entities at now to what l sent.
func (l *lane) count(now time.Time, n int) {
	if l.firstAt.IsZero() {
		l.firstAt = now
	}
	l.sentTotal += n
	l.deps[l.depNext] = departure{now, n}
	l.depNext = (l.depNext + 1) % okRing
}

// sending is what l sends lately, entities per second: its last
// departures (at least 4); 0 before.
func (l *lane) sending(now time.Time) float64 {
	r, _ := rateOf(l.deps[:], now)
	return r
}

// ok records an answer of n entities that got through at now.
func (l *lane) ok(now time.Time, n int) {
	l.okTotal += n
	l.oks[l.okNext] = departure{now, n}
	l.okNext = (l.okNext + 1) % okRing
}

// okCount is how many answers got through, up to okRing.
func (l *lane) okCount() int {
	if !l.oks[l.okNext].at.IsZero() {
		return okRing
	}
	return l.okNext
}

// throughput is what the service let through the lane lately, in
// entities per second, and over what time: its last answers that got
// through (at least 4); 0 before.
func (l *lane) throughput(now time.Time) (float64, time.Duration) {
	return rateOf(l.oks[:], now)
}

// rateOf is what events (departures, answers) carried, in entities per
// second, and over what time: those after the oldest over the time from
// it to now. 0 with fewer than 4 events or within 10 ms.
func rateOf(events []departure, now time.Time) (float64, time.Duration) {
	var first time.Time
	count := 0
	for _, e := range events {
		if e.at.IsZero() {
			continue
		}
		count++
		if first.IsZero() || e.at.Before(first) {
			first = e.at
		}
	}
	span := now.Sub(first)
	if count < 4 || span < 10*time.Millisecond {
		return 0, 0
	}
	n := 0
	for _, e := range events {
		if e.at.After(first) {
			n += e.n
		}
	}
	return float64(n) / span.Seconds(), span
}

// sent is l's last departure.
func (l *lane) sent() departure { return departure{l.last, l.lastN} }

// departure is when a transaction left (or was answered), and its
// entities.
type departure struct {
	at time.Time
	n  int
}

// gate is when l may send paced at rate (0: not paced), not counting its
// window.
func (l *lane) gate(rate float64) time.Time {
	at := l.pause
	if rate > 0 && !l.last.IsZero() {
		if next := l.last.Add(l.late + seconds(float64(l.lastN)/rate)); next.After(at) {
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
	// Nothing is known of the partitions' allowance: one partition
	// explores beyond its first transaction before the others.
	l.part.probe = true
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
	// the account's (indexed by Scope).
	prev [2]departure
	// rate is the partitions' rate its lane was paced at (0: none).
	rate float64
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
// sent if no answer comes in before; 0 when only an answer lets it go
// (wait for Changed).
func (l *Limiter) TryAcquire(pk string, n int) (*Slot, time.Duration) {
	n = max(n, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	// A partition not seen yet gets its lane only when it sends: probing
	// many partitions keeps no state.
	p := l.parts[pk]
	fresh := p == nil
	if fresh {
		p = &lane{}
	}
	if l.acctLane.inflight >= l.account.window() || p.inflight >= l.part.window() {
		return nil, 0
	}
	if l.part.rate == 0 && p.inflight > 0 && p.inflight > p.okCount() {
		// Unpaced, a partition starts with one transaction in flight and
		// adds one per answer that got through.
		return nil, 0
	}
	if p.inflight > 0 && l.part.rate > 0 && seconds(float64(p.lastN)/l.part.rate) > 2*l.srtt {
		// Paced with a gap of more than two round trips: the answer to
		// the last transaction comes first, and says when it was taken.
		return nil, 0
	}
	probe := l.part.probe && !p.last.IsZero()
	if probe && l.part.probeSeq != 0 {
		return nil, 0 // another partition tries the rate: wait for its answer
	}
	prate := l.partRate(pk, now)
	agate, pgate := l.acctLane.gate(l.account.rate), p.gate(prate)
	if until := laterOf(agate, pgate); now.Before(until) {
		// Whichever rate's gap holds the transaction back may rise (the
		// partitions' only for the leader, which goes at it).
		l.account.held = l.account.held || l.account.rate > 0 && now.Before(agate)
		l.part.held = l.part.held || prate > 0 && prate == l.part.rate && now.Before(pgate)
		return nil, until.Sub(now)
	}
	if fresh {
		l.sweep(now)
		l.parts[pk] = p
	}
	s := &Slot{l: l, pk: pk, n: n, seq: l.seq, sent: now, rate: prate}
	for scope, ln := range [2]*lane{Partition: p, Account: &l.acctLane} {
		s.prev[scope] = ln.sent()
		ln.inflight++
		ln.last, ln.lastN, ln.lastSeq, ln.late = now, n, s.seq, 0
		ln.count(now, n)
	}
	if probe {
		l.part.probeSeq = s.seq + 1
		s.probe = true
	}
	l.sent++
	l.seq++
	return s, 0
}

// partRate is the rate partition pk is paced at now: the partitions' rate
// for the leader, and for the others the rate the leader was let through
// twice in a row (safe) when lower. Lanes sent to at one rate drain their
// buckets alike, and are refused together when it is too high. Another
// partition leads when the leader is gone or idle. Called with mu held.
func (l *Limiter) partRate(pk string, now time.Time) float64 {
	c := &l.part
	if c.rate == 0 || c.safe <= 0 || c.safe >= c.rate || pk == c.leader {
		return c.rate
	}
	lead := l.parts[c.leader]
	if c.leader == "" || lead == nil || lead.inflight == 0 && now.Sub(lead.gate(c.rate)) > leaderIdle {
		c.leader = pk
		return c.rate
	}
	return c.safe
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
		if p.inflight == 0 && !now.Before(p.gate(l.part.rate)) && now.Sub(p.last) >= laneMemory {
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
	p, ok := s.finish()
	if !ok {
		return
	}
	if s.probe {
		l.part.probe = false // the rate holds: every partition may go
	}
	now := l.clock.Now()
	rtt := now.Sub(s.sent)
	if p.lastSeq == s.seq && l.srtt > 0 {
		p.late = max(0, rtt-l.srtt)
	}
	if l.srtt == 0 {
		l.srtt = rtt
	} else {
		l.srtt += (rtt - l.srtt) / 8
	}
	p.ok(now, s.n)
	l.acctLane.ok(now, s.n)
	if s.rate > 0 && s.seq >= l.part.cutSeq {
		// The leader let through twice in a row at a rate: every
		// partition may go at it.
		if p.okRate > 0 {
			l.part.safe = min(l.part.rate, max(l.part.safe, min(s.rate, p.okRate)))
		}
		p.okRate = s.rate
	}
	for _, c := range []*control{&l.account, &l.part} {
		news := s.seq >= c.cutSeq
		if news {
			c.streak = 0
		}
		was := c.rate
		switch {
		}
		c.size = min(l.ceiling, c.size+1/c.size)
		switch {
		case c.rate == 0:
		case !c.held || !news:
			// Nothing waited for the rate, or the transaction left
			// before the last cut (at a rate since refused): no rise.
		case c.peak == 0:
			// No paced rate refused yet: search upward.
			c.rate *= 1 + searchIncrease
		case !c.agreed() && c.rate < c.peak:
			// Below a rate refused once, maybe a fluke (a late
			// transaction, a debt): back to it quickly.
			c.rate += max(c.rate*rateIncrease, (c.peak-c.rate)/approachStep)
		case c.rate < approachTo*c.peak:
			c.rate += max(c.rate*rateIncrease, (approachTo*c.peak-c.rate)/approachStep)
		case c.rate < c.peak:
			c.rate *= 1 + nearIncrease
		default:
			// Past the rate last refused without a refusal: the target
			// rose, or the peak was a fluke. Faster the further past it.
			c.rate *= 1 + rateIncrease*(1+pastFactor*(c.rate/c.peak-1))
		}
		c.held = false
		if a := l.acctLane.sending(now); c == &l.account && a > 0 && c.rate > was {
			// The account's rate rises no further than 1.5 times what
			// the job sends lately: the partitions' paces
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
// cut, unless the transaction left before its last cut, and the account
// or partition paused for retryAfter (at most MaxRetryAfter), else for
// the paced gap or the backoff.
func (s *Slot) Throttled(scope Scope, retryAfter time.Duration) {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := s.finish()
	if !ok {
		return
	}
	l.throttled++
	p.okRate = 0
	c, ln := &l.part, p
	if scope == Account {
		c, ln = &l.account, &l.acctLane
	}
	now := l.clock.Now()
	// A lane's first transaction (of the job, or since its lane was
	// dropped) went on the service's allowance, not at a rate: its
	// refusal pauses the lane and cuts nothing; a refusal of the next
	// one does.
	if s.seq >= c.cutSeq && !s.prev[scope].at.IsZero() {
		if c == &l.part && s.rate > 0 && s.rate < c.rate {
			c.rate = s.rate // a partition at the safe rate was refused
		}
		l.cut(c, s, ln, now)
		c.cutSeq = l.seq
		c.safe = c.rate
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

// cut lowers c after a throttling answer to s, sent after c's last cut;
// ln is the lane the answer points at. Called with mu held.
func (l *Limiter) cut(c *control, s *Slot, ln *lane, now time.Time) {
	was, peak := c.rate, c.peak
	switch {
	case c.rate == 0:
		// The first: half of what the service let the lane through since
		// its first transaction. No paced rate was refused yet.
		// When nothing got through yet, what it sent.
		got := ln.okTotal
		if got == 0 {
			got = ln.sentTotal
		}
		since := max(now.Sub(ln.firstAt), time.Millisecond)
		c.rate = firstCut * float64(max(got, s.n)) / since.Seconds()
		c.size = max(1, c.size/2)
	case c.streak > 0:
		c.peak = c.rate
		c.rate *= cutStreak
	case c.peak > 0 && c.rate >= approachTo*c.peak:
		// Refused where the last refusal was: the target is known, and a
		// shallow cut keeps the rate near it.
		c.peak = c.rate
		c.rate *= cutNear
	default:
		c.peak = c.rate
		c.rate *= cutSmall
	}
	if got, span := ln.throughput(now); was > 0 && got > 0 && got < c.rate && (c.streak > 0 || span <= recentSpan && got < cutSmall*was) {
		// The service lets through less than the cut rate: at most that.
		c.rate = max(got, cutStreak*was)
	}
	if c.peak != peak {
		c.prevPeak = peak
	}
	// The gap of a transaction like s stays within MaxDelay.
	c.rate = max(c.rate, float64(s.n)/l.maxDelay.Seconds())
}

// backoff is the pause after a throttling answer on c for a transaction
// of n entities: the paced gap, or when not pacing BaseDelay doubled for
// each answer of the streak after the first; at most MaxDelay, ±20%.
// Called with mu held.
func (l *Limiter) backoff(c *control, n int) time.Duration {
	var d float64
	if c.rate > 0 {
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
	return l.account.window()
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

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

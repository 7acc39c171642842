package throttle

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeTimer{c.now.Add(d), ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func acquire(t *testing.T, l *Limiter, pk string) *Slot {
	t.Helper()
	return acquireN(t, l, pk, 100)
}

func acquireN(t *testing.T, l *Limiter, pk string, n int) *Slot {
	t.Helper()
	s, err := l.Acquire(context.Background(), pk, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// try takes a slot for 100 entities on pk now, or fails t.
func try(t *testing.T, l *Limiter, pk string) *Slot {
	t.Helper()
	s, wait := l.TryAcquire(pk, 100)
	if s == nil {
		t.Fatalf("partition %s may not send now (wait %v)", pk, wait)
	}
	return s
}

// blocked reports whether a transaction of 100 entities on pk would wait
// now, without taking a slot or changing anything.
func blocked(l *Limiter, pk string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	p := l.parts[pk]
	if p == nil {
		p = &lane{}
	}
	if l.acctLane.inflight >= l.account.window() || p.inflight >= l.part.window() {
		return true
	}
	rate := l.part.rate
	if pk != l.part.leader && l.part.safe > 0 && l.part.safe < rate && l.part.leader != "" {
		rate = l.part.safe
	}
	return now.Before(l.acctLane.gate(l.account.rate)) || now.Before(p.gate(rate))
}

// rates returns the account's rate and the partitions' rate, peak and
// agreement, read under the lock.
func state(l *Limiter) (acct, part, peak float64, agreed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.account.rate, l.part.rate, l.part.peak, l.part.agreed()
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

// The first throttling answer of a scope halves its window and paces it
// at half of what the service let its lane through since the lane's first
// transaction; the answers to the rest of the burst, sent before it, cut
// nothing more. When nothing got through yet, half of what it sent.
func TestFirstThrottlePaces(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	var burst []*Slot
	for i := range 8 {
		burst = append(burst, try(t, l, string(rune('a'+i))))
	}
	clk.Advance(20 * time.Millisecond)
	for _, s := range burst[:5] {
		s.OK()
	}
	for _, s := range burst[5:] {
		s.Throttled(Account, 0)
	}
	// 500 entities in 20 ms: 25,000 a second; half of it.
	if got := l.Rate(); !near(got, 12500) {
		t.Fatalf("first rate = %v, want 12,500 (half of 500 entities in 20 ms)", got)
	}
	if l.Limit() != 4 || l.PartitionRate() != 0 || l.Throttled() != 3 || l.Sent() != 8 {
		t.Fatalf("window %d, partitions' rate %v, throttled %d, sent %d; want 4, 0, 3, 8", l.Limit(), l.PartitionRate(), l.Throttled(), l.Sent())
	}

	clk = newFakeClock()
	l = New(Options{Ceiling: 8, Clock: clk})
	burst = burst[:0]
	for i := range 4 {
		burst = append(burst, try(t, l, string(rune('a'+i))))
	}
	clk.Advance(10 * time.Millisecond)
	for _, s := range burst {
		s.Throttled(Account, 0)
	}
	if got := l.Rate(); !near(got, 20000) {
		t.Fatalf("first rate with nothing through = %v, want 20,000 (half of 400 entities sent in 10 ms)", got)
	}
}

// paced returns a Limiter whose partitions are paced at rate with peak
// last refused (prevPeak before it), and a clock; partition "p" has sent
// one transaction, answered.
func paced(t *testing.T, rate, peak, prevPeak float64) (*Limiter, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	s := try(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.OK()
	l.mu.Lock()
	l.part.rate, l.part.peak, l.part.prevPeak, l.part.probe = rate, peak, prevPeak, false
	l.mu.Unlock()
	return l, clk
}

// step sends one transaction of 100 on p as soon as its gap allows, the
// wait counted as holding it back, and answers it 10 ms later; ok says
// how. It returns the partitions' rate after the answer.
func step(t *testing.T, l *Limiter, clk *fakeClock, ok bool) float64 {
	t.Helper()
	s, wait := l.TryAcquire("p", 100)
	if s == nil {
		clk.Advance(wait)
		s = try(t, l, "p")
	}
	clk.Advance(10 * time.Millisecond)
	if ok {
		s.OK()
	} else {
		s.Throttled(Partition, 0)
	}
	_, r, _, _ := state(l)
	return r
}

// A refused paced rate is cut by 0.8, by 0.95 near the peak last refused,
// by 0.6 when nothing got through since the last cut; the rate refused is
// the new peak, and two peaks within 10% agree.
func TestCuts(t *testing.T) {
	l, clk := paced(t, 1000, 2000, 0)
	if got := step(t, l, clk, false); !near(got, 800) {
		t.Fatalf("cut away from the peak: %v, want 800 (x0.8)", got)
	}
	if got := step(t, l, clk, false); !near(got, 480) {
		t.Fatalf("cut in a streak: %v, want 480 (x0.6)", got)
	}
	if _, _, peak, _ := state(l); peak != 800 {
		t.Fatalf("peak %v, want 800, the rate refused", peak)
	}
	l, clk = paced(t, 960, 1000, 0)
	if got := step(t, l, clk, false); !near(got, 912) {
		t.Fatalf("cut near the peak: %v, want 912 (x0.95)", got)
	}
	if _, _, peak, agreed := state(l); peak != 960 || !agreed {
		t.Fatalf("peak %v, agreed %v; want 960, agreeing with 1,000", peak, agreed)
	}
}

// Answers that get through raise a rate that held a transaction back: by
// 5% until a paced rate is refused; below a peak refused once, by an eighth
// of the distance to it; below a peak two refusals agree on, by an eighth
// of the distance to 0.95 of it, then by 0.02% up to it; past it by 0.4%
// and faster the further past. An answer to a transaction that left
// without waiting for the gap raises nothing.
func TestClimb(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		rate, peak, prevPeak, expect float64
	}{
		{"searching", 1000, 0, 0, 1050},
		{"below a peak refused once", 800, 1000, 0, 800 + 200.0/8},
		{"far below an agreed peak", 800, 1000, 1050, 800 + 150.0/8},
		{"near an agreed peak", 960, 1000, 1050, 960 * 1.0002},
		{"at the peak", 1000, 1000, 1050, 1000 * 1.004},
		{"past the peak", 1200, 1000, 1050, 1200 * (1 + 0.004*(1+20*0.2))},
	} {
		l, clk := paced(t, tc.rate, tc.peak, tc.prevPeak)
		if got := step(t, l, clk, true); !near(got, tc.expect) {
			t.Errorf("%s: %v after an answer that got through, want %v", tc.name, got, tc.expect)
		}
	}
	l, clk := paced(t, 1000, 0, 0)
	clk.Advance(time.Second) // the gap passed: nothing waits
	if got := step(t, l, clk, true); got != 1000 {
		t.Errorf("a rate that held nothing back rose to %v", got)
	}
}

// A throttling answer to a transaction sent before the last cut is old
// news: it cuts nothing more.
func TestOldNewsCutsNothing(t *testing.T) {
	l, clk := paced(t, 1000, 2000, 0)
	clk.Advance(time.Second)
	a := try(t, l, "p")
	b := try(t, l, "q")
	clk.Advance(10 * time.Millisecond)
	a.Throttled(Partition, 0)
	b.Throttled(Partition, 0)
	if _, r, _, _ := state(l); !near(r, 800) {
		t.Fatalf("rate %v after two answers of one burst, want 800 (one cut)", r)
	}
}

// Refused while the service lets through less than the cut rate (the
// lane's last answers that got through, within half a second), the rate
// goes down to what it lets through, and no lower than 0.6 of it.
func TestCutToThroughput(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	l.mu.Lock()
	l.account.rate, l.account.peak = 20000, 40000
	l.mu.Unlock()
	// 8 answers of 100, one every 25 ms: 4,000 a second, far below.
	for i := range 8 {
		s, wait := l.TryAcquire(string(rune('a'+i)), 100)
		if s == nil {
			clk.Advance(wait)
			s = try(t, l, string(rune('a'+i)))
		}
		clk.Advance(25 * time.Millisecond)
		s.OK()
	}
	s := try(t, l, "z")
	clk.Advance(time.Millisecond)
	s.Throttled(Account, 0)
	// 700 entities after the oldest answer, over 176 ms.
	if got, want := l.Rate(), 700/0.176; !near(got, math.Max(want, 0.6*20000)) {
		t.Fatalf("rate %v, want %v (what got through, at least 0.6 of 20,000)", got, math.Max(want, 0.6*20000))
	}
}

// The account's rate rises no further than 1.5 times what the job sends
// lately, however many answers get through: a rate far above what the
// job sends spaces nothing but its bursts. Here the job sends two
// transactions of 100 every 100 ms (2,000 entities/s), the second held
// back by the account's gap each time.
func TestAccountRateRisesWithinWhatTheJobSends(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	l.mu.Lock()
	l.account.rate, l.account.peak, l.account.prevPeak = 2500, 2500, 2500
	l.mu.Unlock()
	for range 300 {
		first, _ := l.TryAcquire("p", 100)
		if first == nil {
			t.Fatal("the first of a pair waited")
		}
		first.OK()
		second, wait := l.TryAcquire("q", 100)
		if second != nil || wait <= 0 {
			t.Fatalf("the second of a pair = %v, %v; want it held by the account's gap", second, wait)
		}
		clk.Advance(wait)
		if second, _ = l.TryAcquire("q", 100); second == nil {
			t.Fatal("TryAcquire refused after its wait")
		}
		second.OK()
		clk.Advance(100*time.Millisecond - wait)
	}
	// Measured over its last 8 departures (700 entities after the
	// oldest, over 300 ms and a gap), what the job sends lately is a
	// little over 2,000 entities/s: 2,111 at a rate of 3,167.
	if got := l.Rate(); got > 1.5*2120 || got <= 2500 {
		t.Fatalf("account rate %v after 30 s at 2,000 entities/s, want a rise from 2,500 to at most 1.5 times about 2,000", got)
	}
}

// Unpaced, a partition starts with one transaction in flight and adds one
// per answer that got through; while nothing is known of the partitions'
// allowance, one partition sends a second transaction before the others
// do, and once it got through every partition may.
func TestPartitionsStartSlow(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	a := try(t, l, "a")
	if s, wait := l.TryAcquire("a", 100); s != nil || wait != 0 {
		t.Fatalf("a second transaction of a partition before an answer = %v, %v; want nil, 0", s, wait)
	}
	b := try(t, l, "b") // another partition's first leaves at once
	clk.Advance(10 * time.Millisecond)
	a.OK()
	b.OK()
	explorer := try(t, l, "a")
	if s, _ := l.TryAcquire("b", 100); s != nil {
		t.Fatal("a second partition sent beyond its first before the explorer's answer")
	}
	clk.Advance(10 * time.Millisecond)
	explorer.OK()
	try(t, l, "b")
	for range 3 { // two answers of a got through: up to 3 in flight
		try(t, l, "a")
	}
	if s, _ := l.TryAcquire("a", 100); s != nil {
		t.Fatal("a partition had a fourth transaction in flight after two answers")
	}
}

// Above the rate the leader was let through twice in a row, one
// partition, the leader, goes at the partitions' rate and the others at
// that safe rate; two answers of the leader at a rate make it safe.
func TestOnePartitionLeads(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	for _, pk := range []string{"a", "b"} {
		s := try(t, l, pk)
		clk.Advance(10 * time.Millisecond)
		s.OK()
	}
	l.mu.Lock()
	l.part.rate, l.part.safe, l.part.peak, l.part.probe = 2000, 1000, 2000, false
	l.mu.Unlock()
	clk.Advance(50 * time.Millisecond) // 100 entities at 2,000/s: a's gap passed
	a := try(t, l, "a")
	if !blocked(l, "b") {
		t.Fatal("a second partition went at the leader's rate")
	}
	clk.Advance(50 * time.Millisecond) // 100 ms: b's gap at the safe 1,000/s
	b := try(t, l, "b")
	a.OK()
	b.OK()
	if l.part.safe != 1000 {
		t.Fatalf("safe rate %v after one answer at 2,000, want 1,000", l.part.safe)
	}
	clk.Advance(50 * time.Millisecond)
	try(t, l, "a").OK()
	if l.part.safe != 2000 {
		t.Fatalf("safe rate %v after two answers of the leader at 2,000, want 2,000", l.part.safe)
	}
}

// A paced partition whose gap is longer than two round trips sends its
// next transaction only once the last is answered, and an answer later
// than the smoothed round trip moves the gap by as much: the service took
// the transaction late.
func TestLateAnswerMovesTheGap(t *testing.T) {
	l, clk := paced(t, 1000, 1000, 1000) // round trips of 10 ms
	clk.Advance(time.Second)
	s := try(t, l, "p")
	clk.Advance(150 * time.Millisecond) // the gap is 100 ms; no answer yet
	if blocked(l, "p") {
		// blocked does not see the wait for the answer: TryAcquire must.
		t.Fatal("the gap did not pass")
	}
	if got, wait := l.TryAcquire("p", 100); got != nil || wait != 0 {
		t.Fatalf("TryAcquire before the last answer = %v, %v; want nil, 0", got, wait)
	}
	s.OK() // 150 ms, 140 ms late
	if got, wait := l.TryAcquire("p", 100); got != nil || wait != 90*time.Millisecond {
		t.Fatalf("TryAcquire after a late answer = %v, %v; want nil, 90ms (100 ms from 140 ms after it left)", got, wait)
	}
}

// pausedOnly reports whether pk is held by a pause only (not by its gap).
func pausedOnly(l *Limiter, pk string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	p := l.parts[pk]
	return p != nil && now.Before(p.pause)
}

// A partition's throttling answer slows that partition only (the
// others' first transactions leave at once); lanes back at the defaults
// are forgotten a second after their last transaction (laneMemory), not
// before: the service may still count it.
func TestPartitionThrottleSlowsOnlyItsPartition(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	hot := acquire(t, l, "hot")
	clk.Advance(10 * time.Millisecond)
	hot.OK()
	explorer := acquire(t, l, "hot")
	clk.Advance(10 * time.Millisecond)
	explorer.Throttled(Partition, 0)
	// 100 entities through in 20 ms: paced at half of 5,000/s, a gap of
	// 40 ms from the transaction taken.
	if got := l.PartitionRate(); !near(got, 2500) || l.Rate() != 0 {
		t.Fatalf("partitions' rate %v, account's %v; want 2,500 and none", got, l.Rate())
	}
	if !blocked(l, "hot") || blocked(l, "cold") {
		t.Fatal("the hot partition's gap should hold it and only it")
	}
	acquire(t, l, "cold").OK()
	// A waiter on the hot partition leaves when its gap ends.
	got := make(chan *Slot)
	go func() {
		s, _ := l.Acquire(context.Background(), "hot", 100)
		got <- s
	}()
	select {
	case <-got:
		t.Fatal("Acquire returned within the partition's gap")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(20 * time.Millisecond)
	select {
	case s := <-got:
		s.OK()
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return after the gap")
	}
	lanes := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.parts)
	}
	// A new partition's first transaction sweeps the lanes: within
	// laneMemory of their last transaction they stay.
	clk.Advance(laneMemory / 2)
	acquire(t, l, "new1").OK()
	if n := lanes(); n != 3 {
		t.Errorf("%d partition lanes kept, want 3 (hot, cold and new1 sent within a second)", n)
	}
	clk.Advance(laneMemory + time.Millisecond)
	acquire(t, l, "new2").OK()
	if n := lanes(); n != 1 {
		t.Errorf("%d partition lanes kept, want 1 (new2) once the others are idle for a second", n)
	}
}

// The service's retry-after decides the pause exactly, without jitter,
// and a huge one is bounded.
func TestRetryAfterHonoured(t *testing.T) {
	for _, tc := range []struct {
		after, want time.Duration
	}{
		{300 * time.Millisecond, 300 * time.Millisecond},
		{2 * time.Second, 2 * time.Second},
		{48 * time.Hour, MaxRetryAfter},
	} {
		clk := newFakeClock()
		l := New(Options{BaseDelay: time.Millisecond, Clock: clk})
		acquire(t, l, "p").Throttled(Partition, tc.after)
		clk.Advance(tc.want - time.Millisecond)
		if !pausedOnly(l, "p") {
			t.Errorf("retry-after %v: a transaction could leave after %v", tc.after, tc.want-time.Millisecond)
		}
		clk.Advance(time.Millisecond)
		if blocked(l, "p") {
			t.Errorf("retry-after %v: still paused after %v", tc.after, tc.want)
		}
	}
}

// A released slot frees its place without changing the controls, and
// Acquire gives up when its context ends.
func TestReleaseAndCancel(t *testing.T) {
	l := New(Options{Ceiling: 1})
	s := acquire(t, l, "p")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, "q", 1); err == nil {
		t.Fatal("Acquire beyond the ceiling returned without waiting")
	}
	s.Release()
	s.Release() // a second call is a no-op
	acquire(t, l, "q").Release()
	if l.Limit() != 1 || l.Sent() != 2 || l.Throttled() != 0 || l.Rate() != 0 {
		t.Errorf("Limit %d, Sent %d, Throttled %d, Rate %v; want 1, 2, 0, 0", l.Limit(), l.Sent(), l.Throttled(), l.Rate())
	}
}

// TryAcquire never waits: it hands out a slot when the transaction may
// leave, else says how long until it may (the gap), or 0 when only a freed
// place lets it go; Changed is closed by the next answer; refused probes
// of partitions not seen yet keep no lane.
func TestTryAcquire(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 2, Clock: clk})
	a, _ := l.TryAcquire("a", 100)
	b, _ := l.TryAcquire("b", 100)
	if a == nil || b == nil {
		t.Fatal("TryAcquire refused a transaction with places free")
	}
	changed := l.Changed()
	if s, wait := l.TryAcquire("c", 100); s != nil || wait != 0 {
		t.Fatalf("TryAcquire with the window full = %v, %v; want nil, 0 (wait for a place)", s, wait)
	}
	l.mu.Lock()
	_, kept := l.parts["c"]
	l.mu.Unlock()
	if kept {
		t.Error("a refused TryAcquire kept a lane for its partition")
	}
	select {
	case <-changed:
		t.Fatal("Changed closed before any answer")
	default:
	}
	clk.Advance(10 * time.Millisecond)
	a.OK()
	select {
	case <-changed:
	default:
		t.Fatal("Changed not closed by an answer")
	}
	// Paced at 1,000 entities/s: b's partition waits 100 ms from its
	// last transaction for the next of 100 entities.
	l.mu.Lock()
	l.part.rate, l.part.probe = 1000, false
	l.mu.Unlock()
	b.OK()
	if s, wait := l.TryAcquire("b", 100); s != nil || wait != 90*time.Millisecond {
		t.Fatalf("TryAcquire within the gap = %v, %v; want nil, 90ms", s, wait)
	}
	clk.Advance(90 * time.Millisecond)
	if s, _ := l.TryAcquire("b", 100); s == nil {
		t.Fatal("TryAcquire refused once the gap passed")
	}
}

// A lane's first transaction goes on the service's allowance: its refusal
// pauses its partition and cuts nothing; the refusal of the next one cuts.
func TestFirstTransactionRefusalCutsNothing(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, BaseDelay: 100 * time.Millisecond, Clock: clk})
	acquire(t, l, "p").Throttled(Partition, 0)
	if l.PartitionRate() != 0 {
		t.Fatalf("after a first transaction's refusal: rate %v; want 0", l.PartitionRate())
	}
	if !pausedOnly(l, "p") || blocked(l, "q") {
		t.Fatal("the refusal should pause its partition, and only it")
	}
	clk.Advance(121 * time.Millisecond)
	acquire(t, l, "p").Throttled(Partition, 0)
	if l.PartitionRate() == 0 {
		t.Fatal("the second transaction's refusal did not pace the partitions")
	}
}

// After a cut of the partitions' rate, one partition that sent before
// tries the new rate and the others wait for its answer; a partition's
// first transaction does not wait. Once the probe gets through, all go.
func TestOnePartitionProbesACut(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	for _, pk := range []string{"a", "b", "c"} {
		s := acquire(t, l, pk)
		clk.Advance(10 * time.Millisecond)
		s.OK()
	}
	s := acquire(t, l, "a") // the explorer
	clk.Advance(5 * time.Millisecond)
	s.Throttled(Partition, 0) // pacing from here
	clk.Advance(10 * time.Second)
	probe, _ := l.TryAcquire("a", 100)
	if probe == nil {
		t.Fatal("no partition may try the new rate")
	}
	if s, wait := l.TryAcquire("b", 100); s != nil || wait != 0 {
		t.Fatalf("a second partition during the probe = %v, %v; want nil, 0 (wait for its answer)", s, wait)
	}
	if s, _ := l.TryAcquire("new", 100); s == nil {
		t.Fatal("a partition's first transaction waited for the probe")
	}
	probe.OK()
	for _, pk := range []string{"b", "c"} {
		if s, _ := l.TryAcquire(pk, 100); s == nil {
			t.Fatalf("partition %s still waits after the probe got through", pk)
		}
	}
}

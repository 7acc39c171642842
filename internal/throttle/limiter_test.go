package throttle

import (
	"context"
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

// blocked reports whether Acquire(pk) would wait now.
func blocked(l *Limiter, pk string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	a := &l.acctLane
	if a.inflight >= l.account.window(l.ceiling) || now.Before(a.gate(&l.account)) {
		return true
	}
	p := l.parts[pk]
	return p != nil && (p.inflight >= l.part.window(l.ceiling) || now.Before(p.gate(&l.part)))
}

// Concurrency halves once per burst of throttling answers, pauses from
// BaseDelay doubling while the answers are throttled in a row, recovers by
// one transaction per window of answers the service keeps up with, and
// ends at the ceiling again; below a window of 4 a rate takes over.
func TestWindowDropsOncePerBurstAndRecovers(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 16, BaseDelay: 100 * time.Millisecond, Clock: clk})
	var slots []*Slot
	for range 16 {
		slots = append(slots, acquire(t, l, "p"))
	}
	if !blocked(l, "p") {
		t.Fatal("a 17th transaction could leave with a ceiling of 16")
	}
	// The whole burst is throttled: one cut, not sixteen.
	for _, s := range slots {
		s.Throttled(Account, 0)
	}
	if got := l.Limit(); got != 8 {
		t.Fatalf("after a throttled burst of 16 the window is %d, want 8 (one halving)", got)
	}
	if l.Throttled() != 16 || l.Sent() != 16 {
		t.Fatalf("Throttled %d, Sent %d; want 16 and 16", l.Throttled(), l.Sent())
	}
	if !blocked(l, "p") {
		t.Fatal("a transaction could leave during the backoff pause")
	}
	clk.Advance(121 * time.Millisecond) // the pause is 100 ms ±20%
	if blocked(l, "p") {
		t.Fatal("the pause did not end")
	}
	// A throttling answer to a transaction sent after the cut cuts again,
	// and the pause doubles (nothing got through).
	acquire(t, l, "p").Throttled(Account, 0)
	if got := l.Limit(); got != 4 {
		t.Fatalf("a fresh throttling answer left the window at %d, want 4", got)
	}
	l.mu.Lock()
	pause := l.acctLane.pause.Sub(clk.Now())
	l.mu.Unlock()
	if pause < 160*time.Millisecond || pause > 240*time.Millisecond {
		t.Fatalf("second pause in a row = %v, want 200 ms ±20%% (doubled)", pause)
	}
	clk.Advance(time.Second)
	// Recovery: +1/size per answer the service keeps up with, each taking
	// 10 ms. From 4 to 16 takes 4+5+...+15 = 114 answers.
	n := 0
	for l.Limit() < 16 {
		s := acquire(t, l, "p")
		clk.Advance(10 * time.Millisecond)
		s.OK()
		if n++; n > 140 {
			t.Fatalf("window still %d after %d answers", l.Limit(), n)
		}
	}
	if n < 100 {
		t.Fatalf("the window went from 4 to 16 in %d answers: too fast for additive increase", n)
	}
	s := acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.OK()
	if l.Limit() != 16 || l.Rate() != 0 {
		t.Fatalf("window %d, rate %v; want the ceiling and no pacing", l.Limit(), l.Rate())
	}
	// 16, 8, then a window of 4 cut turns into a rate: 0.8 of 4
	// transactions of 100 entities per 10 ms round trip. Each window is
	// full when its answers come (the cut restrains it), and the last
	// transaction sent answers first: it left right after the one before
	// it, so what its lane sent is no lower than the window's figure.
	for _, k := range []int{16, 8, 4} {
		if got := l.Limit(); got != k {
			t.Fatalf("window %d, want %d", got, k)
		}
		var burst []*Slot
		for range k {
			burst = append(burst, acquire(t, l, "p"))
		}
		for i := range burst {
			burst[len(burst)-1-i].Throttled(Account, 0)
		}
		clk.Advance(10 * time.Second)
	}
	if got, want := l.Rate(), 0.8*4*100/0.010; got < want*0.999 || got > want*1.001 {
		t.Fatalf("rate after cutting a window of 4 = %v, want %v", got, want)
	}
}

// A window of one is paced: the first throttling answer once a round trip
// is known sets the rate to 0.8 of one transaction per round trip, sends
// then leave n/rate apart (by their own entities, the gap running from the
// last transaction the service took), a further answer cuts the rate by
// 0.8 (0.5 when nothing got through in between), and an answer that gets
// through raises it when it held a transaction back (by an eighth of the
// distance while far below the rate last refused).
func TestPacing(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 1, BaseDelay: time.Millisecond, Clock: clk})
	// Pacing needs a round trip of an answer that got through: 10 ms.
	s := acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.OK()
	s = acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.Throttled(Partition, 0)
	const want = 0.8 * 100 / 0.010 // entities/s: 0.8 of 100 entities per 10 ms
	if got := l.PartitionRate(); got != want {
		t.Fatalf("rate after a throttled window of one = %v, want %v", got, want)
	}
	if l.Rate() != 0 {
		t.Fatalf("a partition's answer paced the account: rate %v", l.Rate())
	}
	// The refused transaction took nothing: the gap, 100/8,000 s =
	// 12.5 ms, runs from the one before it, 20 ms ago, and a paced
	// partition pauses no longer than its gap.
	if blocked(l, "p") {
		t.Fatal("blocked after a refusal though the gap from the last transaction taken has passed")
	}
	// Nothing got through since the cut: the next one halves.
	s = acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.Throttled(Partition, 0)
	if got := l.PartitionRate(); got != want*0.5 {
		t.Fatalf("rate after a second answer in a row = %v, want %v (x0.5)", got, want*0.5)
	}
	// The gap (25 ms at 4,000/s) from the transaction taken 30 ms ago
	// has passed; the answer below rises as the rate held nothing back.
	clk.Advance(time.Second)
	acquireN(t, l, "p", 50).OK()
	if got := l.PartitionRate(); got != want*0.5 {
		t.Fatalf("rate after an answer to a transaction no gap held = %v, want %v (unchanged)", got, want*0.5)
	}
	// A transaction the gap holds back: the next answer raises the rate.
	// Far below 0.95 of the rate last refused (8,000/s), it closes an
	// eighth of the distance: 4,000 + (7,600 - 4,000)/8.
	if s, wait := l.TryAcquire("p", 50); s != nil || wait <= 0 {
		t.Fatalf("TryAcquire within the gap = %v, %v; want nil and the wait", s, wait)
	}
	clk.Advance(time.Second)
	acquireN(t, l, "p", 50).OK()
	rate := l.PartitionRate()
	if rate != 4450 {
		t.Fatalf("rate after an answer that got through = %v, want 4450", rate)
	}
	gap := time.Duration(50 / rate * float64(time.Second))
	clk.Advance(gap - time.Millisecond)
	if !blocked(l, "p") {
		t.Fatalf("a send left %v after the last, before the gap of %v", gap-time.Millisecond, gap)
	}
	if blocked(l, "q") {
		t.Fatal("a partition's first transaction waited for another's gap")
	}
	clk.Advance(time.Millisecond)
	// An answer after the streak ended cuts by 0.8.
	s = acquire(t, l, "p")
	s.Throttled(Partition, 0)
	if got := l.PartitionRate(); got != rate*0.8 {
		t.Fatalf("rate after a throttling answer following a success = %v, want %v (x0.8)", got, rate*0.8)
	}
	// Paced, more than one transaction may be in flight when the gap is
	// shorter than a round trip: the rate decides, the window is the
	// ceiling's.
	if l.PartitionLimit() != 1 {
		t.Fatalf("paced window %d, want the ceiling, 1", l.PartitionLimit())
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

// A partition's throttling answer pauses that partition only; the
// partitions' shared control paces the others from their second
// transaction on, not their first; lanes back at the defaults are
// forgotten a second after their last transaction (laneMemory), not
// before: the service may still count it.
func TestPartitionThrottleSlowsOnlyItsPartition(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, BaseDelay: time.Second, Clock: clk})
	hot := []*Slot{acquire(t, l, "hot"), acquire(t, l, "hot")}
	hot[0].Throttled(Partition, 0)
	hot[1].Throttled(Partition, 0)
	if l.PartitionLimit() != 4 || l.Limit() != 8 {
		t.Fatalf("partition window %d, account %d; want 4 and 8", l.PartitionLimit(), l.Limit())
	}
	if !blocked(l, "hot") || blocked(l, "cold") {
		t.Fatal("the hot partition's pause should hold it and only it")
	}
	for range 4 {
		acquire(t, l, "cold").OK()
	}
	// A waiter on the hot partition leaves when its pause ends.
	got := make(chan *Slot)
	go func() {
		s, _ := l.Acquire(context.Background(), "hot", 100)
		got <- s
	}()
	select {
	case <-got:
		t.Fatal("Acquire returned during the partition's pause")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(1300 * time.Millisecond)
	select {
	case s := <-got:
		s.OK()
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return after the pause")
	}
	lanes := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.parts)
	}
	// A new partition's first transaction sweeps the lanes: within
	// laneMemory of their last transaction they stay.
	acquire(t, l, "new1").OK()
	if n := lanes(); n != 2 {
		t.Errorf("%d partition lanes kept, want 2 (hot and new1 sent within a second; cold 1.3 s ago)", n)
	}
	clk.Advance(laneMemory)
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
		if !blocked(l, "p") {
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
	l.part.rate = 1000
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

// The first rate of a partition that held one transaction at a time
// comes from what it sent, not from the window: half the previous
// transaction's entities over the gap to the refused one, when that is
// below the window's figure (8 transactions of 100 per 50 ms round trip:
// 16,000/s). A window the lane never filled is not halved first.
func TestFirstRateFromWhatTheLaneSent(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	for _, pk := range []string{"a", "b"} {
		s := acquire(t, l, pk)
		clk.Advance(50 * time.Millisecond)
		s.OK()
	}
	s := acquire(t, l, "a") // a's last transaction left 100 ms ago
	clk.Advance(5 * time.Millisecond)
	s.Throttled(Partition, 0)
	if got, want := l.PartitionRate(), 0.5*100/0.100; got != want {
		t.Fatalf("first rate = %v, want %v (half of 100 entities per 100 ms)", got, want)
	}
	if l.PartitionLimit() != 8 || l.Rate() != 0 || l.Limit() != 8 {
		t.Fatalf("partition window %d, account rate %v and window %d; want 8 (paced), 0, 8", l.PartitionLimit(), l.Rate(), l.Limit())
	}
}

// A lane's first transaction goes on the service's burst: its refusal
// pauses its partition and cuts nothing; the refusal of the next one cuts.
func TestFirstTransactionRefusalCutsNothing(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, BaseDelay: 100 * time.Millisecond, Clock: clk})
	acquire(t, l, "p").Throttled(Partition, 0)
	if l.PartitionLimit() != 8 || l.PartitionRate() != 0 {
		t.Fatalf("after a first transaction's refusal: window %d, rate %v; want 8, 0", l.PartitionLimit(), l.PartitionRate())
	}
	if !blocked(l, "p") || blocked(l, "q") {
		t.Fatal("the refusal should pause its partition, and only it")
	}
	clk.Advance(121 * time.Millisecond)
	acquire(t, l, "p").Throttled(Partition, 0)
	if l.PartitionLimit() != 4 {
		t.Fatalf("after the second transaction's refusal: window %d, want 4", l.PartitionLimit())
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
	s := acquire(t, l, "a")
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

// A rate refused near where it was last refused is cut by 0.9, not 0.8:
// the target is known.
func TestCutNearTheLastRefusal(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 1, Clock: clk})
	s := acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.OK()
	s = acquire(t, l, "p")
	clk.Advance(10 * time.Millisecond)
	s.Throttled(Partition, 0) // 8,000/s
	clk.Advance(time.Second)
	acquire(t, l, "p").OK() // the streak ends
	clk.Advance(time.Second)
	acquire(t, l, "p").Throttled(Partition, 0)
	first := l.PartitionRate() // 0.8 of 8,000: no refusal before to be near
	if first != 6400 {
		t.Fatalf("rate after a cut = %v, want 6,400", first)
	}
	// Up to 0.95 of 8,000 and a little more, then refused again.
	l.mu.Lock()
	l.part.rate = 7700
	l.mu.Unlock()
	clk.Advance(time.Second)
	acquire(t, l, "p").OK()
	clk.Advance(time.Second)
	acquire(t, l, "p").Throttled(Partition, 0)
	if got := l.PartitionRate(); got != 7700*0.9 {
		t.Fatalf("rate after a refusal near the last = %v, want %v (x0.9)", got, 7700*0.9)
	}
}

// The account's rate rises no further than 1.5 times what the job sent
// over the last second, however many answers get through: a rate far
// above what the job sends spaces nothing but its bursts. Here the job
// sends two transactions of 100 every 100 ms (2,000 entities/s), the
// second held back by the account's gap each time.
func TestAccountRateRisesWithinWhatTheJobSends(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, Clock: clk})
	l.mu.Lock()
	l.account.rate, l.account.peak = 2500, 2500
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
	if got := l.Rate(); got > 1.5*2000*1.01 || got <= 2500 {
		t.Fatalf("account rate %v after 30 s at 2,000 entities/s, want a rise from 2,500 to at most 1.5 times 2,000", got)
	}
}

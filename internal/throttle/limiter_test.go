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
	s, err := l.Acquire(context.Background(), pk)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// blocked reports whether Acquire(pk) would wait now.
func blocked(l *Limiter, pk string) bool {
	l.mu.Lock()
	now := l.clock.Now()
	p := l.parts[pk]
	open := l.account.open(now) && (p == nil || p.open(now))
	l.mu.Unlock()
	return !open
}

// Concurrency halves once per burst of throttling answers, recovers by
// one transaction per window of answers the service keeps up with, and
// ends at the ceiling again.
func TestAIMDDropsOncePerBurstAndRecovers(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 8, BaseDelay: 100 * time.Millisecond, Clock: clk})
	var slots []*Slot
	for range 8 {
		slots = append(slots, acquire(t, l, "p"))
	}
	if !blocked(l, "p") {
		t.Fatal("a 9th transaction could leave with a ceiling of 8")
	}
	// The whole burst is throttled: one cut, not eight.
	for _, s := range slots {
		s.Throttled(Account, 0)
	}
	if got := l.Limit(); got != 4 {
		t.Fatalf("after a throttled burst of 8 the window is %d, want 4 (one halving)", got)
	}
	if l.Throttled() != 8 || l.Sent() != 8 {
		t.Fatalf("Throttled %d, Sent %d; want 8 and 8", l.Throttled(), l.Sent())
	}
	if !blocked(l, "p") {
		t.Fatal("a transaction could leave during the backoff pause")
	}
	clk.Advance(121 * time.Millisecond) // the pause is 100 ms ±20%
	if blocked(l, "p") {
		t.Fatal("the pause did not end")
	}
	// A throttling answer to a transaction sent after the cut cuts again.
	l.mu.Lock()
	streak := l.account.streak
	l.mu.Unlock()
	acquire(t, l, "p").Throttled(Account, 0)
	if got := l.Limit(); got != 2 {
		t.Fatalf("a fresh throttling answer left the window at %d, want 2", got)
	}
	l.mu.Lock()
	pause := l.account.pause.Sub(clk.Now())
	l.mu.Unlock()
	if streak != 1 || pause < 160*time.Millisecond || pause > 240*time.Millisecond {
		t.Fatalf("second pause in a row = %v, want 200 ms ±20%% (doubled)", pause)
	}
	clk.Advance(time.Second)
	// Recovery: +1/size per answer the service keeps up with. From 2 to 8
	// takes 2+3+...+7 = 27 answers (and a few for the fractions).
	n := 0
	for l.Limit() < 8 {
		acquire(t, l, "p").OK()
		if n++; n > 40 {
			t.Fatalf("window still %d after %d answers", l.Limit(), n)
		}
	}
	if n < 20 {
		t.Fatalf("the window went from 2 to 8 in %d answers: too fast for additive increase", n)
	}
	acquire(t, l, "p").OK()
	if l.Limit() != 8 {
		t.Fatalf("the window exceeded the ceiling: %d", l.Limit())
	}
}

// A partition's throttling answer slows that partition only.
func TestPartitionThrottleSlowsOnlyItsPartition(t *testing.T) {
	clk := newFakeClock()
	l := New(Options{Ceiling: 4, BaseDelay: time.Second, Clock: clk})
	hot := []*Slot{acquire(t, l, "hot"), acquire(t, l, "hot")}
	hot[0].Throttled(Partition, 0)
	hot[1].Throttled(Partition, 0)
	if l.PartitionLimit("hot") != 2 || l.Limit() != 4 {
		t.Fatalf("partition window %d, account %d; want 2 and 4", l.PartitionLimit("hot"), l.Limit())
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
		s, _ := l.Acquire(context.Background(), "hot")
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
	// Windows back at their defaults are forgotten.
	for l.PartitionLimit("hot") < 4 {
		acquire(t, l, "hot").OK()
	}
	acquire(t, l, "hot").OK()
	l.mu.Lock()
	n := len(l.parts)
	l.mu.Unlock()
	if n != 0 {
		t.Errorf("%d partition windows kept, want 0 once all are back at the ceiling", n)
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

// A released slot frees its place without changing the windows, and
// Acquire gives up when its context ends.
func TestReleaseAndCancel(t *testing.T) {
	l := New(Options{Ceiling: 1})
	s := acquire(t, l, "p")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, "q"); err == nil {
		t.Fatal("Acquire beyond the ceiling returned without waiting")
	}
	s.Release()
	s.Release() // a second call is a no-op
	acquire(t, l, "q").Release()
	if l.Limit() != 1 || l.Sent() != 2 || l.Throttled() != 0 {
		t.Errorf("Limit %d, Sent %d, Throttled %d; want 1, 2, 0", l.Limit(), l.Sent(), l.Throttled())
	}
}

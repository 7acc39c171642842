package load

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// load is the emulator Table service's Load interface
// (emulator/internal/tables), which this package may not
// import: Model must keep its method set.
type load interface {
	Admit(ctx context.Context, table, pk string, hasPK bool, cost int) *answer.Error
	Charge(table, pk string, hasPK bool, scanned int)
	Server(table, pk string) int
	Work(ctx context.Context, server, scanned int) error
}

var _ load = (*Model)(nil)

func TestModelDefaults(t *testing.T) {
	m := NewModel(ModelOptions{})
	if m.Servers() != 10 || m.entityTime != 500*time.Microsecond || m.pageTime != 0 || len(m.servers[0].free) != 1 {
		t.Errorf("defaults: %d servers, %v an entity, %v a page, %d at once", m.Servers(), m.entityTime, m.pageTime, len(m.servers[0].free))
	}
	if m.throttle.part.rate != 2000 || m.throttle.acct.rate != 20000 {
		t.Errorf("default targets %+v %+v, want Azure's", m.throttle.part, m.throttle.acct)
	}
	s := NewModel(ModelOptions{Scale: 0.1, PageTime: time.Millisecond, Parallel: 3})
	if s.entityTime != 5*time.Millisecond || s.pageTime != 10*time.Millisecond || s.throttle.part.rate != 200 || s.throttle.acct.rate != 2000 || len(s.servers[0].free) != 3 {
		t.Errorf("Scale 0.1: %v an entity, %v a page, targets %+v %+v", s.entityTime, s.pageTime, s.throttle.part, s.throttle.acct)
	}
	if n := NewModel(ModelOptions{EntityTime: -1}); n.entityTime != 0 {
		t.Errorf("a negative EntityTime is none, got %v", n.entityTime)
	}
}

// TestModelQueueing books pages on a clock that does not move: work on
// one server queues, on two servers it runs in parallel and ends in half
// the time, and Parallel slots on one server do the same as that many
// servers.
func TestModelQueueing(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	clock := func() time.Time { return t0 }
	page := func(m *Model, server int) time.Duration {
		_, _, end := m.reserve(server, 100, t0)
		return end.Sub(t0)
	}
	o := ModelOptions{Servers: 2, PageTime: time.Millisecond, EntityTime: 100 * time.Microsecond} // 11 ms a 100-entity page
	one := newModel(o, clock)
	var last time.Duration
	for i := 1; i <= 4; i++ {
		if last = page(one, 0); last != time.Duration(i)*11*time.Millisecond {
			t.Fatalf("page %d on one server ends after %v, want %v", i, last, time.Duration(i)*11*time.Millisecond)
		}
	}
	two := newModel(o, clock)
	var lastTwo time.Duration
	for i := 0; i < 4; i++ {
		lastTwo = max(lastTwo, page(two, i%2))
	}
	if lastTwo*2 != last {
		t.Errorf("4 pages on two servers end after %v, on one after %v: want half", lastTwo, last)
	}
	o.Servers, o.Parallel = 1, 2
	par := newModel(o, clock)
	var lastPar time.Duration
	for i := 0; i < 4; i++ {
		lastPar = max(lastPar, page(par, 0))
	}
	if lastPar != lastTwo {
		t.Errorf("4 pages on one server serving 2 at once end after %v, want %v", lastPar, lastTwo)
	}
	// Work arriving after the server went idle starts at once.
	if _, start, _ := one.reserve(1, 0, t0.Add(time.Hour)); !start.Equal(t0.Add(time.Hour)) {
		t.Errorf("work on an idle server starts at %v", start)
	}
	s := one.Stats()
	if s.Pages != 5 || s.Scanned != 400 || s.Queued != (11+22+33)*time.Millisecond {
		t.Errorf("stats %+v, want 5 pages, 400 entities, 66 ms queued", s)
	}
}

// TestModelWork runs Work for real: four 25 ms pages take at least
// 100 ms on one server, and at least 50 ms but less than the one-server
// time on two; a page whose context ends while it queues returns at once
// and gives its time back.
func TestModelWork(t *testing.T) {
	ctx := context.Background()
	o := ModelOptions{Servers: 2, PageTime: 25 * time.Millisecond, EntityTime: -1}
	run := func(m *Model, servers []int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for _, s := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := m.Work(ctx, s, 10); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// Where each page lands is the model's booking, read on a clock that
	// stands still: 4 pages of 25 ms queue to 100 ms on one server and to
	// 50 ms on two, whatever else the machine is doing. Only the lower
	// bound is read off the wall: Work sleeps its page's time.
	booked := func(servers []int) time.Duration {
		t0 := time.Unix(1000, 0)
		m := newModel(o, func() time.Time { return t0 })
		var last time.Time
		for _, s := range servers {
			if _, _, end := m.reserve(s, 0, t0); end.After(last) {
				last = end
			}
		}
		return last.Sub(t0)
	}
	if one, two := booked([]int{0, 0, 0, 0}), booked([]int{0, 1, 0, 1}); one != 100*time.Millisecond || two != 50*time.Millisecond {
		t.Errorf("4 pages of 25 ms booked to %v on one server, %v on two; want 100ms and 50ms", one, two)
	}
	if one := run(NewModel(o), []int{0, 0, 0, 0}); one < 100*time.Millisecond {
		t.Errorf("4 pages of 25 ms on one server served in %v, want >= 100 ms", one)
	}

	m := NewModel(o)
	done := make(chan error, 1)
	go func() { done <- m.Work(ctx, 0, 0) }()
	time.Sleep(5 * time.Millisecond)
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	if err := m.Work(cctx, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("queued work cancelled after 5 ms: %v, want the context's error", err)
	}
	<-done
	if free := m.servers[0].free[0]; free.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("the cancelled page's time was kept: the server is booked until %v from now", time.Until(free))
	}
	if err := m.Work(ctx, 2, 1); err == nil {
		t.Error("Work on server 2 of 2 was accepted")
	}
}

// TestModelPlacement: a partition's server is stable (across Models of
// one size), in range, the same for a table's name in any case, and
// partitions spread evenly.
func TestModelPlacement(t *testing.T) {
	a, b := NewModel(ModelOptions{}), NewModel(ModelOptions{})
	count := make([]int, a.Servers())
	for i := 0; i < 10000; i++ {
		pk := "customer" + strconv.Itoa(i)
		s := a.Server("Orders", pk)
		if s < 0 || s >= a.Servers() || s != b.Server("orders", pk) {
			t.Fatalf("partition %s: server %d, another model's %d", pk, s, b.Server("orders", pk))
		}
		count[s]++
	}
	for s, n := range count {
		if n < 850 || n > 1150 {
			t.Errorf("server %d serves %d of 10,000 partitions, want about 1,000 (%v)", s, n, count)
		}
	}
}

// TestModelThrottles: the model answers over its (scaled) targets as
// Azure does and counts it.
func TestModelThrottles(t *testing.T) {
	ctx := context.Background()
	m := NewModel(ModelOptions{Scale: 0.01}) // 20 entities/s a partition, a 2-entity burst
	if e := m.Admit(ctx, "t", "p", true, 2); e != nil {
		t.Fatalf("a burst's worth: %v", e)
	}
	e := m.Admit(ctx, "t", "p", true, 1)
	if e == nil || e.Status != http.StatusServiceUnavailable || e.Code != "ServerBusy" || e.Message != "The server is busy." {
		t.Fatalf("over the partition's target: %v", e)
	}
	m.Charge("t", "q", true, 0)
	if s := m.Stats(); s.Throttled != 1 || s.ThrottledByAccount != 0 || s.Entities != 3 {
		t.Errorf("stats %+v", s)
	}
}

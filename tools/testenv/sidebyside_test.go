package testenv

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Without a limit every subtest runs at once: each waits for all the
// others to have started, which one after the other would never happen.
func TestSideBySideRunsAllAtOnce(t *testing.T) {
	const n = 6
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	g := NewSideBySide(t, 0)
	for i := range n {
		g.Run(fmt.Sprintf("run%d", i), func(t *testing.T) {
			arrived.Done()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				t.Error("the other subtests did not start within 10 s")
			}
		})
	}
	g.Wait()
}

// With a limit, at most that many run at once, Wait returns once all have
// ended, and each runs as a subtest of the group's test.
func TestSideBySideLimit(t *testing.T) {
	var running, peak, ended atomic.Int32
	var names sync.Map
	g := NewSideBySide(t, 2)
	for i := range 6 {
		g.Run(fmt.Sprintf("run%d", i), func(t *testing.T) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			names.Store(t.Name(), true)
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			ended.Add(1)
		})
	}
	g.Wait()
	if got := ended.Load(); got != 6 {
		t.Fatalf("Wait returned with %d of 6 subtests ended", got)
	}
	if got := peak.Load(); got != 2 {
		t.Errorf("at most %d subtests ran at once, want 2 (the limit, reached)", got)
	}
	if _, ok := names.Load(t.Name() + "/run5"); !ok {
		t.Errorf("no subtest named %s/run5", t.Name())
	}
}

package testenv

import (
	"sync"
	"testing"
)

// SideBySide runs subtests at once from their parent's own place among
// the parallel tests, and returns when all have ended. It is for subtests
// that spend their time waiting in real time (azcore's retry delays, a
// throttle's pace): as parallel subtests (t.Parallel) they would queue for
// a place behind every top-level test still waiting for one, and start
// only once the tests that keep the CPU busy had ended, leaving it idle
// while they waited.
type SideBySide struct {
	t   *testing.T
	wg  sync.WaitGroup
	sem chan struct{}
}

// NewSideBySide returns a SideBySide whose subtests are t's, at most
// limit of them at once (0: no bound beyond the group's test's place).
func NewSideBySide(t *testing.T, limit int) *SideBySide {
	g := &SideBySide{t: t}
	if limit > 0 {
		g.sem = make(chan struct{}, limit)
	}
	return g
}

// Run starts f as subtest name of the group's test, once a place among
// the group's limit is free, and returns without waiting for it to end.
func (g *SideBySide) Run(name string, f func(t *testing.T)) {
	if g.sem != nil {
		g.sem <- struct{}{}
	}
	g.wg.Go(func() {
		if g.sem != nil {
			defer func() { <-g.sem }()
		}
		g.t.Run(name, f)
	})
}

// Wait returns when every subtest Run started has ended. The test must
// call it before its function returns.
func (g *SideBySide) Wait() { g.wg.Wait() }

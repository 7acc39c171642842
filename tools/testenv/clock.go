package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
)

// Clock is the time of a test's service, which the test moves forward
// where the target lets it: on tablekit's emulator, in the test process
// (emulator.Instance.Advance) or in a process of its own (`tablekit
// emulator --test-clock`). On Azurite or an account it cannot be moved:
// Advance reports false and the test waits for real time instead (Pass
// does either).
//
// What follows the clock is the emulator's: queue messages' visibility
// (an EnqueueOptions.Delay, a worker's Backoff, a visibility timeout) and
// time to live, leases, SAS and token times, and the times entities and
// blobs are written at. What runs in the test keeps real time: a
// worker's PollInterval, its visibility extensions, azcore's retry
// delays.
type Clock struct {
	t       testing.TB
	advance func(time.Duration) error // nil: the target's time cannot be moved

	mu    sync.Mutex
	moved time.Duration
}

// ClockConnectionString returns the connection string of a service whose
// clock this test may move, and the Clock that moves it.
//
// On the emulator targets it is an emulator of the test's own (early ends
// included on TargetEarlyEnd), started now and stopped when the test
// ends: moving the clock of the emulator every test shares would reveal
// messages and expire leases that tests running in parallel still count
// on. On Azurite or an account it is the shared service of
// ConnectionString, and the Clock does not move.
func ClockConnectionString(t testing.TB) (string, *Clock) {
	t.Helper()
	if Target() != TargetEmulator {
		return ConnectionString(t), &Clock{t: t}
	}
	ee, err := earlyEnd()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	s, cs, advance, err := startEmulator(context.Background(), ee, true, 0)
	if err != nil {
		t.Fatalf("testenv: cannot start the emulator: %v", err)
	}
	t.Cleanup(func() { s.Stop() })
	return cs, &Clock{t: t, advance: advance}
}

// ClockAccount is ClockConnectionString's account, with its Clock.
func ClockAccount(t testing.TB) (*tablekit.Account, *Clock) {
	t.Helper()
	cs, c := ClockConnectionString(t)
	return AccountOn(t, cs, nil), c
}

// AccountOn is AccountWith on the account of connStr (such as
// ClockConnectionString's or OtherAccount's).
func AccountOn(t testing.TB, connStr string, opts *tablekit.AccountOptions) *tablekit.Account {
	t.Helper()
	return accountOn(t, connStr, opts)
}

// Moves reports whether Advance moves the clock: false on Azurite and on
// an account, where only real time passes.
func (c *Clock) Moves() bool { return c.advance != nil }

// Advance moves the service's clock forward by d and reports true, once
// the service follows the new time; where the clock cannot be moved it
// does nothing and reports false, and the caller waits for real time
// instead. A failure to move a clock that can be moved fails the test
// and reports false: with Errorf, not Fatalf, so that Advance may be
// called from any goroutine (a policy of the test's account, a worker's
// hook), where FailNow would end that goroutine and not the test.
func (c *Clock) Advance(d time.Duration) bool {
	c.t.Helper()
	if c.advance == nil {
		return false
	}
	if d <= 0 {
		return true
	}
	if err := c.advance(d); err != nil {
		c.t.Errorf("testenv: %v", err)
		return false
	}
	c.mu.Lock()
	c.moved += d
	c.mu.Unlock()
	return true
}

// Pass lets d pass on the service's clock: Advance where it can move,
// else a real wait of d.
func (c *Clock) Pass(d time.Duration) {
	c.t.Helper()
	if !c.Advance(d) {
		time.Sleep(d)
	}
}

// Moved is how far Advance has moved the clock in all.
func (c *Clock) Moved() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.moved
}

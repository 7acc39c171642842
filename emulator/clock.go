package emulator

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// clock is the services' time: the real time, run rate times as fast
// from start when rate is above 1, plus what Advance has added. Real time
// keeps passing, so an emulator nobody advances or speeds up keeps
// Azure's time.
type clock struct {
	offset atomic.Int64 // nanoseconds
	rate   float64      // above 1: how many times as fast as real time
	start  time.Time    // with a monotonic reading, when rate began
}

// MaxClockRate is the fastest Options.ClockRate: the emulator's time
// then reaches ten years from its start after nine hours (time.Duration
// holds 292 years).
const MaxClockRate = 10_000

// newClock returns a clock running rate times as fast as real time (0
// and 1: real time).
func newClock(rate float64) (*clock, error) {
	if math.IsNaN(rate) || (rate != 0 && rate < 1) || rate > MaxClockRate {
		return nil, fmt.Errorf("emulator: ClockRate %v: want 1 to %d (0 keeps real time)", rate, MaxClockRate)
	}
	return &clock{rate: rate, start: time.Now()}, nil
}

func (c *clock) now() time.Time {
	n := time.Now()
	if c.rate > 1 {
		// Monotonic readings on both sides: the wall clock's steps do
		// not make the emulator's time go back.
		n = n.Add(time.Duration(float64(n.Sub(c.start)) * (c.rate - 1)))
	}
	return n.Add(time.Duration(c.offset.Load()))
}

// Now returns the emulator's time, the one its services' timed behaviour
// follows: the real time (run faster by Options.ClockRate) plus what
// Advance has added.
func (i *Instance) Now() time.Time { return i.clock.now() }

// Advance moves the emulator's clock forward by d, at once, as
// miniredis's FastForward does, so that a test sees what time does
// without waiting for it: queue messages become visible and expire
// (visibility timeouts, time-to-live), blob and container leases expire
// and finish breaking, a SAS's start and expiry and a bearer token's
// lifetime are checked against the new time, and entities, blobs and
// containers written from then on carry later times (Timestamp,
// Last-Modified, snapshots). Real time (at Options.ClockRate's pace)
// keeps passing on top of it.
//
// Two things keep the real time: the window of 15 minutes a Shared Key
// request's date must fall in (clients date their requests by their own
// clock, so an advanced emulator still accepts them), and what only
// simulates a network or a busy account (Options.Latency, Throttle,
// Scale) or guards a connection. A negative d is ignored: time never
// goes back, so modification times and ETags stay increasing.
//
// It is safe to call while requests are served; a request in flight
// sees the time before or after.
func (i *Instance) Advance(d time.Duration) {
	if d > 0 {
		i.clock.offset.Add(int64(d))
	}
}

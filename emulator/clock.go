package emulator

import (
	"sync/atomic"
	"time"
)

// clock is the services' time: the real time plus what Advance has
// added. Real time keeps passing, so an emulator nobody advances keeps
// Azure's time.
type clock struct {
	offset atomic.Int64 // nanoseconds
}

func (c *clock) now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Now returns the emulator's time, the one its services' timed behaviour
// follows: the real time plus what Advance has added.
func (i *Instance) Now() time.Time { return i.clock.now() }

// Advance moves the emulator's clock forward by d, at once, as
// miniredis's FastForward does, so that a test sees what time does
// without waiting for it: queue messages become visible and expire
// (visibility timeouts, time-to-live), blob and container leases expire
// and finish breaking, a SAS's start and expiry and a bearer token's
// lifetime are checked against the new time, and entities, blobs and
// containers written from then on carry later times (Timestamp,
// Last-Modified, snapshots). Real time keeps passing on top of it.
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

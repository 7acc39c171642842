package emulator

import "time"

// SetGrace makes o's servers give a body, an answer and a request's head
// grace before cutting them, and a stalled body as long, instead of 30 s
// and 2 minutes, so that a test of the cut takes a second.
func SetGrace(o *Options, grace time.Duration) {
	t := defaultTimeouts
	t.grace, t.headerTimeout, t.stall = grace, grace, grace
	o.timeouts = &t
}

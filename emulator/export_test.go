package emulator

import "time"

// SetGrace makes o's servers give a body, an answer and a request's head
// grace before cutting them, instead of Azure's 30 s, so that a test of
// the cut takes a second.
func SetGrace(o *Options, grace time.Duration) {
	t := defaultTimeouts
	t.grace, t.headerTimeout = grace, grace
	o.timeouts = &t
}

package consistency

import (
	"math/rand/v2"
	"time"
)

// Backoff is the schedule of delays before a failed transaction is tried
// again. The n-th failure (n = the message's dequeue count) waits
// Delays[n-1], the last delay once the list is exhausted (the cap), each
// multiplied by a random factor in [1-Jitter, 1+Jitter] so that messages
// that failed together do not return together. The queue service counts
// visibility in whole seconds: delays are rounded up to seconds, and a
// zero delay makes the message visible again at once.
type Backoff struct {
	Delays []time.Duration
	Jitter float64 // 0 to 1
}

// DefaultBackoff is the performance checklist's schedule: 2 s, 4 s, 10 s,
// then 30 s for every later attempt, with ±20% jitter.
var DefaultBackoff = Backoff{
	Delays: []time.Duration{2 * time.Second, 4 * time.Second, 10 * time.Second, 30 * time.Second},
	Jitter: 0.2,
}

// Delay returns the wait after the attempt-th failure (1-based).
func (b Backoff) Delay(attempt int64) time.Duration {
	if len(b.Delays) == 0 {
		return 0
	}
	i := attempt - 1
	if i < 0 {
		i = 0
	}
	if i >= int64(len(b.Delays)) {
		i = int64(len(b.Delays)) - 1
	}
	d := b.Delays[i]
	j := b.Jitter
	if j > 1 {
		j = 1
	}
	if j > 0 && d > 0 {
		d = time.Duration(float64(d) * (1 - j + 2*j*rand.Float64()))
	}
	return d
}

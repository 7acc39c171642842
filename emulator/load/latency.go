package load

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// LatencyOptions sets the delay a Latency adds to each request: Fixed,
// plus a uniform random part in [0, Jitter), plus, when Median is set, a
// log-normal part with that median and 99th percentile. The random parts
// come from one generator seeded with Seed, so the sequence of delays is
// the same in every run (the order requests draw them in is the
// scheduler's).
type LatencyOptions struct {
	// Fixed is added to every request.
	Fixed time.Duration
	// Jitter adds a uniform random delay in [0, Jitter). Zero means none.
	Jitter time.Duration
	// Median and P99 make a log-normal part: half the draws are below
	// Median, 99% below P99, and the tail above P99 is long, as a
	// service's latency is. Zero Median means none; a P99 at or below
	// Median makes the part Median exactly.
	Median, P99 time.Duration
	// Seed seeds the random parts. Zero is a seed like any other.
	Seed uint64
}

// z99 is the standard normal distribution's 99th percentile.
const z99 = 2.3263478740408408

// Latency draws delays and holds requests for them. It is safe for
// concurrent use.
type Latency struct {
	o         LatencyOptions
	mu, sigma float64

	rmu sync.Mutex
	rng *rand.Rand
}

// NewLatency returns a Latency for o. Negative durations count as zero.
func NewLatency(o LatencyOptions) *Latency {
	o.Fixed, o.Jitter, o.Median, o.P99 = max(o.Fixed, 0), max(o.Jitter, 0), max(o.Median, 0), max(o.P99, 0)
	l := &Latency{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))}
	if o.Median > 0 {
		l.mu = math.Log(float64(o.Median))
		if o.P99 > o.Median {
			l.sigma = math.Log(float64(o.P99)/float64(o.Median)) / z99
		}
	}
	return l
}

// Options returns the options l was made with, negative durations zeroed.
func (l *Latency) Options() LatencyOptions { return l.o }

// Zero reports whether l adds no delay at all.
func (l *Latency) Zero() bool { return l.o.Fixed == 0 && l.o.Jitter == 0 && l.o.Median == 0 }

// Sample draws the next delay.
func (l *Latency) Sample() time.Duration {
	d := l.o.Fixed
	if l.o.Jitter == 0 && l.o.Median == 0 {
		return d
	}
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if l.o.Jitter > 0 {
		d += time.Duration(l.rng.Int64N(int64(l.o.Jitter)))
	}
	switch {
	case l.sigma > 0:
		d += time.Duration(math.Exp(l.mu + l.sigma*l.rng.NormFloat64()))
	case l.o.Median > 0:
		d += l.o.Median
	}
	return d
}

// Wait holds the caller for the next delay. It returns ctx's error when
// ctx ends first (or has already ended), else nil.
func (l *Latency) Wait(ctx context.Context) error {
	return sleep(ctx, l.Sample())
}

// sleep blocks for d, or until ctx ends. It returns ctx's error when ctx
// ends first, or has already ended and d is not positive; else nil.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package load

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestLatencySeeded: one seed, one sequence of delays; another seed,
// another; the parts add up as documented.
func TestLatencySeeded(t *testing.T) {
	o := LatencyOptions{Fixed: time.Millisecond, Jitter: 2 * time.Millisecond, Median: 5 * time.Millisecond, P99: 50 * time.Millisecond, Seed: 7}
	draw := func(o LatencyOptions) []time.Duration {
		l := NewLatency(o)
		d := make([]time.Duration, 1000)
		for i := range d {
			d[i] = l.Sample()
		}
		return d
	}
	a, b := draw(o), draw(o)
	if !slices.Equal(a, b) {
		t.Fatal("two Latencies of one seed drew different delays")
	}
	o.Seed = 8
	if slices.Equal(a, draw(o)) {
		t.Fatal("seeds 7 and 8 drew the same delays")
	}
	for i, d := range a {
		if d < time.Millisecond {
			t.Fatalf("delay %d is %v, below Fixed", i, d)
		}
	}
	if d := draw(LatencyOptions{Fixed: 3 * time.Millisecond}); d[0] != 3*time.Millisecond || d[999] != 3*time.Millisecond {
		t.Errorf("a fixed latency drew %v", d[:3])
	}
	if d := draw(LatencyOptions{Median: 4 * time.Millisecond}); d[0] != 4*time.Millisecond {
		t.Errorf("a median without P99 drew %v, want the median", d[0])
	}
	u := draw(LatencyOptions{Jitter: time.Millisecond, Seed: 1})
	for _, d := range u {
		if d < 0 || d >= time.Millisecond {
			t.Fatalf("uniform jitter drew %v, outside [0, 1ms)", d)
		}
	}
}

// TestLatencyLogNormal: the log-normal part has the median and the 99th
// percentile asked for (within sampling error over 20,000 draws).
func TestLatencyLogNormal(t *testing.T) {
	l := NewLatency(LatencyOptions{Median: 10 * time.Millisecond, P99: 80 * time.Millisecond, Seed: 42})
	d := make([]time.Duration, 20000)
	for i := range d {
		d[i] = l.Sample()
	}
	slices.Sort(d)
	near := func(what string, got, want time.Duration, tol float64) {
		if r := float64(got) / float64(want); r < 1-tol || r > 1+tol {
			t.Errorf("%s = %v, want %v ± %.0f%%", what, got, want, tol*100)
		}
	}
	near("median", d[len(d)/2], 10*time.Millisecond, 0.05)
	near("p99", d[len(d)*99/100], 80*time.Millisecond, 0.12)
}

// TestLatencyWait: Wait holds the caller for the delay and returns
// early with the context's error.
func TestLatencyWait(t *testing.T) {
	l := NewLatency(LatencyOptions{Fixed: 30 * time.Millisecond})
	start := time.Now()
	if err := l.Wait(context.Background()); err != nil || time.Since(start) < 30*time.Millisecond {
		t.Errorf("Wait: %v after %v, want nil after 30 ms", err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := NewLatency(LatencyOptions{Fixed: time.Minute}).Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past the context's deadline: %v", err)
	}
	if !NewLatency(LatencyOptions{Fixed: -time.Second}).Zero() {
		t.Error("a negative latency is no latency")
	}
}

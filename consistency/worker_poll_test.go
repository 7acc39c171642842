package consistency

import (
	"slices"
	"testing"
	"time"
)

// The wait between empty receives starts at an eighth of PollInterval (at
// most 50 ms) and doubles up to PollInterval, which bounds every wait: a
// worker told to poll every 20 ms polls again 2.5 ms after its queue
// first runs dry, and never waits 50 ms.
func TestPollWaitNeverExceedsPollInterval(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		poll time.Duration
		want []time.Duration
	}{
		{2 * time.Second, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms}},
		{20 * ms, []time.Duration{2500 * time.Microsecond, 5 * ms, 10 * ms, 20 * ms, 20 * ms}},
		{120 * ms, []time.Duration{15 * ms, 30 * ms, 60 * ms, 120 * ms, 120 * ms}},
	} {
		p := newPollWait(c.poll)
		for round := range 2 { // reset, after messages, starts again
			var got []time.Duration
			for range c.want {
				got = append(got, p.next())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("PollInterval %v, round %d: waits %v, want %v", c.poll, round, got, c.want)
			}
			p.reset()
		}
	}
}

// Package benchutil holds what tablekit's benchmarks share: their settings
// (TABLEKIT_BENCH, read here and nowhere else), rounds that alternate the
// sides of a comparison, and the client's CPU time.
package benchutil

import (
	"syscall"
	"testing"
	"time"
)

// Rounds is how many rounds of sides a comparison runs (setting
// "rounds", default 1). make bench runs -count 1 with several rounds, so
// the sides alternate (tablekit, reference, ceiling, tablekit, ...)
// instead of go test running each side's repetitions in a row while the
// shared machine drifts; benchreport pairs the rounds.
func Rounds(tb testing.TB) int {
	tb.Helper()
	return Int(tb, KeyRounds, 1)
}

// LongRounds is Rounds, at most "long-rounds" (default 1): the rounds of
// the benchmarks whose one round takes minutes (the whole-table ones on
// the scale model, 1,000,000 entities). make bench's six rounds of those
// alone would outlast its timeout.
func LongRounds(tb testing.TB) int {
	tb.Helper()
	return min(Rounds(tb), Int(tb, KeyLongRounds, 1))
}

// RunLongSides is RunSides for a benchmark whose round takes minutes: it
// runs LongRounds rounds.
func RunLongSides(b *testing.B, sides ...Side) {
	b.Helper()
	runSides(b, LongRounds(b), sides)
}

// Side is one side of a comparison: Name becomes the sub-benchmark
// impl=Name.
type Side struct {
	Name string
	Fn   func(b *testing.B)
}

// S returns the side name measured by fn.
func S(name string, fn func(b *testing.B)) Side { return Side{Name: name, Fn: fn} }

// RunSides runs every side once per round, as sub-benchmarks impl=NAME
// (go test names the repeats impl=NAME#01, #02, ...), rotating which side
// goes first.
func RunSides(b *testing.B, sides ...Side) {
	b.Helper()
	runSides(b, Rounds(b), sides)
}

func runSides(b *testing.B, rounds int, sides []Side) {
	for r := range rounds {
		for i := range sides {
			s := sides[(r+i)%len(sides)]
			b.Run("impl="+s.Name, s.Fn)
		}
	}
}

// ProcessCPU is the CPU time (user + system, from getrusage) this process
// has used: the client's cost when the service runs in another process.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUMeter measures the client CPU spent from its start.
type CPUMeter struct{ start time.Duration }

// StartCPU starts a CPUMeter.
func StartCPU() CPUMeter { return CPUMeter{start: ProcessCPU()} }

// Report records the client CPU per unit (metric "cpu-µs/"+unit) over b.N
// operations of perOp units each.
func (m CPUMeter) Report(b *testing.B, perOp int, unit string) {
	d := ProcessCPU() - m.start
	b.ReportMetric(float64(d.Nanoseconds())/1e3/float64(b.N*perOp), "cpu-µs/"+unit)
}

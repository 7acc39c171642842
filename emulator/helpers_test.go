package emulator_test

import (
	"testing"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestMain lets testenv.DefaultParallel Parallel tests run at once, not
// GOMAXPROCS: most of them wait (on a latency, a throttle, a server's
// grace), and at two at a time on this 2-core machine they queued behind
// one another.
func TestMain(m *testing.M) { testenv.Main(m) }

// mustJSON is v as the service's JSON (every EDM type annotated).
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := entity.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

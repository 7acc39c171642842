package benchmodel

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Entities is the size of the whole-table benchmarks' table on the model:
// def (1,000,000 in each), or model-entities in TABLEKIT_BENCH for a quick
// run.
func Entities(tb testing.TB, def int) int {
	tb.Helper()
	return benchutil.Int(tb, benchutil.KeyModelEntities, def)
}

// SkewedKeys returns n keys (PartitionKey, RowKey) in the skewed layout
// of the whole-table benchmarks, in key order: testenv.SkewedKeys with
// non-ASCII keys in its last quarter:
//   - a quarter in tiny partitions of 10 rows, PartitionKeys spread over
//     8 hex digits (25,000 partitions at 1,000,000);
//   - half in one partition, "hot", whose RowKeys share a 21-character
//     prefix;
//   - a quarter in 10 partitions whose PartitionKeys share a 43-character
//     prefix with a non-ASCII letter and end in Japanese, a character
//     outside the Basic Multilingual Plane (a UTF-16 surrogate pair, which
//     the service orders before U+E000 to U+FFFF) or full-width Latin;
//     their RowKeys end in such characters too.
func SkewedKeys(n int) [][2]string {
	ks := testenv.SkewedKeys(n)
	tiny, hot := n/4, n/2
	shared := n - tiny - hot
	tails := []string{"東京", "𝄞", "ｚ", "é"}
	for i := range shared {
		j := i * 10 / shared
		pk := fmt.Sprintf("tenant-0000000000000000000000000042-schärd-%03d-%s", j, tails[j%len(tails)])
		ks[tiny+hot+i] = [2]string{pk, fmt.Sprintf("%08d-%s", i, tails[(i+1)%len(tails)])}
	}
	return ks
}

// Partitions counts keys per PartitionKey, as Job wants them.
func Partitions(keys [][2]string) map[string]int {
	m := map[string]int{}
	for _, k := range keys {
		m[k[0]]++
	}
	return m
}

// Counting is an account on m through TableURL whose requests (every
// attempt, azcore's retries included) c counts.
func (m *Model) Counting(tb testing.TB) (*tablekit.Account, *tablekit.RequestCounter) {
	tb.Helper()
	c := &tablekit.RequestCounter{}
	return m.Account(tb, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{c}}}), c
}

// Meter measures what the model did for a side of a benchmark: requests
// throttled, as a share of the requests a RequestCounter saw.
type Meter struct {
	m        *Model
	c        *tablekit.RequestCounter
	before   emulatorStats
	requests int64
}

type emulatorStats = emulator.Stats

// Meter starts a Meter over c's requests.
func (m *Model) Meter(c *tablekit.RequestCounter) *Meter {
	return &Meter{m: m, c: c, before: m.Stats(), requests: c.Count()}
}

// Report records, over b.N ops: throttled-% (requests answered 503
// ServerBusy, of all requests), requests/op, queued-s/op (the time
// requests waited for their partition servers, summed), and, with bound's time
// per op, limit-% (the share of the model's fastest that the ops
// reached, time against time).
func (mt *Meter) Report(b *testing.B, elapsed float64, bound Bound) {
	st := mt.m.Stats()
	throttled := st.Throttled - mt.before.Throttled
	b.ReportMetric((st.Queued-mt.before.Queued).Seconds()/float64(b.N), "queued-s/op")
	requests := mt.c.Count() - mt.requests
	b.ReportMetric(100*float64(throttled)/float64(max(requests, 1)), "throttled-%")
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	if bound.Time > 0 && elapsed > 0 {
		b.ReportMetric(100*bound.Time.Seconds()*float64(b.N)/elapsed, "limit-%")
		b.ReportMetric(bound.Rate(), "limit-entities/s")
	}
}

package patterns_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/tools/benchutil"
)

// The four throttle shapes of BenchmarkBulkPace: Azure's targets at a
// quarter (a partition's 2,000 entities/s and the account's 20,000), so
// that the throttle, not this machine, sets the rate. Bound by 8 hot
// partitions (8 x 500 = 4,000/s, under the account's 5,000) or by the
// account (5,000/s over partitions of 100 entities, one transaction each),
// each with a burst allowance of 100 ms of the target (a partition's
// bucket then holds half a transaction: each transaction leaves it in
// debt) or of 3 s.
var paceShapes = []paceShape{
	{name: "partition/burst=small", hot: 8, partition: 500, account: 5000, burst: 100 * time.Millisecond},
	{name: "partition/burst=large", hot: 8, partition: 500, account: 5000, burst: 3 * time.Second},
	{name: "account/burst=small", partition: 500, account: 5000, burst: 100 * time.Millisecond},
	{name: "account/burst=large", partition: 500, account: 5000, burst: 3 * time.Second},
}

// paceLatency is the round trip the emulator adds to every request (and
// up to half of it again, at random): a client sees latencies, as across
// a network, and 8 transactions in flight ask far more than any target.
const paceLatency = 10 * time.Millisecond

// BenchmarkBulkPace imports through tablekit's emulator throttling (503
// ServerBusy, Azure's answers) in each of four shapes (paceShapes): bound
// by hot partitions or by the account, with a small or a large burst
// allowance. Each op starts an emulator of its own, every bucket full, and
// inserts with BulkWriteSeq at its default concurrency (what `tablekit
// import` runs) as many entities as the fastest pace the throttle allows
// writes in pace-seconds (TABLEKIT_BENCH, default 10) past its allowance.
// The shapes alternate, round by round (TABLEKIT_BENCH rounds).
//
// Metrics: limit-% is the fastest the throttle allows (from full buckets:
// the allowance at once, then the target) over the time taken, goal at
// least 90%; throttled-% the requests answered 503 over all sent, goal at
// most 5%; entities/s and requests/op. Every op checks that each entity
// was written once (stored, charged once by the throttle).
func BenchmarkBulkPace(b *testing.B) {
	d := time.Duration(benchutil.Float(b, benchutil.KeyPaceSeconds, 10) * float64(time.Second))
	for r := range benchutil.Rounds(b) {
		for i := range paceShapes {
			s := paceShapes[(r+i)%len(paceShapes)]
			b.Run("shape="+s.name, func(b *testing.B) {
				n := s.entities(d)
				var limit, throttled, requests float64
				var elapsed time.Duration
				for b.Loop() {
					res := paceWrite(b, s, n, paceLatency)
					limit += res.limit()
					throttled += res.throttledShare()
					requests += float64(res.requests)
					elapsed += res.elapsed
				}
				b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "entities/s")
				b.ReportMetric(100*limit/float64(b.N), "limit-%")
				b.ReportMetric(100*throttled/float64(b.N), "throttled-%")
				b.ReportMetric(requests/float64(b.N), "requests/op")
			})
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/emulator/load"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

var (
	plainOnce sync.Once
	plainDir  string
	plainErr  error
)

// plainWorker builds tablekit-worker without the race detector (a
// benchmark measures it as users run it), once.
func plainWorker(b *testing.B) string {
	b.Helper()
	plainOnce.Do(func() {
		if plainDir, plainErr = os.MkdirTemp("", "tablekit-bench"); plainErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", plainDir+"/", "../../cmd/tablekit-worker").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("go build tablekit-worker: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		b.Fatal(plainErr)
	}
	return filepath.Join(plainDir, "tablekit-worker")
}

// BenchmarkDistributedCopyWorkers copies a table within one account on
// the emulator's scale model at scale S (dist-scale in TABLEKIT_BENCH,
// default 0.1: a partition's target 200 entities/s, the account's 2,000, an
// entity's service time 5 ms on its partition server; what "tablekit
// emulator --scale S" runs, here in the benchmark's process, listening
// on loopback ports that every process shares, so that its counts can be
// read) with a
// distributed copy job of 32 ranges, taken by 1, 2, 4 and 8
// tablekit-worker processes (two ranges at a time each, two key ranges
// read at once inside each). dist-entities in TABLEKIT_BENCH entities
// (default 6,000) over 60 partitions. It reports entities/s, from the first
// range's start to the last one's end as the ranges' states record them,
// limit-%: that rate against the account's bound for a copy within it,
// half its target (each entity is read once and written once);
// account-%: the entities the model charged (pages scanned, entities
// written, the job's own state) per second against the account's target;
// and the requests answered 503 ServerBusy. Every copy is compared with
// its source afterwards.
func BenchmarkDistributedCopyWorkers(b *testing.B) {
	scale := benchutil.Float(b, benchutil.KeyDistScale, 0.1)
	n := benchutil.Int(b, benchutil.KeyDistEntities, 6000)
	wk := plainWorker(b)
	ctx := context.Background()
	// The targets' buckets hold what Azure's do in entities (100 ms of
	// Azure's targets: 2,000 for the account, two pages of 1,000), not
	// 100 ms of the scaled-down targets, which a single page would
	// overdraw several times at this scale.
	burst := time.Duration(float64(load.DefaultBurst) / scale)
	em, err := emulator.Start(ctx, &emulator.Options{Scale: &emulator.ScaleOptions{Scale: scale, Throttle: emulator.ThrottleOptions{Burst: burst}}})
	if err != nil {
		b.Fatal(err)
	}
	defer em.Stop()
	conn := em.ConnectionString
	acct, err := tablekit.Connect(conn, nil)
	if err != nil {
		b.Fatal(err)
	}
	src, err := patterns.NewTable[entity.Entity](acct, "BenchSource", nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	es := make([]entity.Entity, n)
	for i := range es {
		es[i] = testenv.EveryType(fmt.Sprintf("p%03d", i%60), fmt.Sprintf("r%06d", i), i)
	}
	if _, err := src.BulkWrite(ctx, es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		b.Fatal(err)
	}
	bound := float64(20000) * scale / 2
	run := 0
	for _, workers := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				run++
				queue := fmt.Sprintf("bench-copy-%d", run)
				dst, err := patterns.NewTable[entity.Entity](acct, fmt.Sprintf("BenchTarget%d", run), nil)
				if err != nil {
					b.Fatal(err)
				}
				q, err := consistency.NewQueue(acct, queue, nil)
				if err != nil {
					b.Fatal(err)
				}
				job, err := tablecopy.StartCopyJob(ctx, src, dst, q, &tablecopy.JobOptions{Ranges: 32, Parallel: 2})
				if err != nil {
					b.Fatal(err)
				}
				before := em.Stats()
				var wg sync.WaitGroup
				errs := make([]error, workers)
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cmd := exec.Command(wk, "run", "--queue", queue, "--concurrency", "2", "--visibility", "30s", "--poll", "200ms",
							"--until-empty", "--metrics-addr", "", "--depth-interval", "0", "--log-level", "warn")
						cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
						if out, err := cmd.CombinedOutput(); err != nil {
							errs[w] = fmt.Errorf("worker %d: %v\n%s", w, err, out)
						}
					}()
				}
				wg.Wait()
				after := em.Stats()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				s, err := tablecopy.ReadJob(ctx, job.Ref, acct, nil)
				if err != nil {
					b.Fatal(err)
				}
				if !s.Complete {
					b.Fatalf("job %s: %d of %d ranges done", job.Ref, s.RangesDone, len(s.Ranges))
				}
				var first, last time.Time
				for _, r := range s.Ranges {
					if first.IsZero() || r.Start.Before(first) {
						first = r.Start
					}
					if r.End.After(last) {
						last = r.End
					}
				}
				// One range at a time: the scan answers the model's 503s
				// with azcore's retries only.
				chk, err := tablecopy.Compare(ctx, src, dst, &tablecopy.VerifyOptions{Parallel: 1})
				if err != nil || !chk.OK() || chk.Got.Count != int64(n) {
					b.Fatalf("the copy differs: %v %v", chk, err)
				}
				secs := last.Sub(first).Seconds()
				rate := float64(n) / secs
				b.ReportMetric(rate, "entities/s")
				b.ReportMetric(100*rate/bound, "limit-%")
				b.ReportMetric(100*float64(after.Entities-before.Entities)/secs/(2*bound), "account-%")
				b.ReportMetric(float64(after.Throttled-before.Throttled), "throttled")
				_ = dst.Drop(ctx, nil)
				b.StartTimer()
			}
		})
	}
}

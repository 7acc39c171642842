package patterns_test

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/benchmodel"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Whole-table benchmarks (issue 26, docs/BENCHMARKS.md "Whole tables").
// Each starts an Azurite of its own behind the load proxy of
// integration/azurite, loads its data through DirectTableURL (no latency,
// no throttling) and measures through the proxy.

// exportLatency is what the proxy adds to every request of the export
// benchmark: a page of a scan across a region, or a busy partition server.
const exportLatency = 50 * time.Millisecond

// exportParallel is the Parallel of the export's tablekit side: the
// fastest of 8, 16, 32 and 64 in the runs docs/BENCHMARKS.md reports
// (more ranges at once meant more split probes, each a full pass of
// Azurite over the table).
const exportParallel = 8

// directAccount is an account on inst's Azurite that bypasses the load
// proxy.
func directAccount(b testing.TB, inst *azurite.Instance) *tablekit.Account {
	b.Helper()
	acct, err := tablekit.NewAccountWithSharedKey(azurite.AccountName, azurite.AccountKey, tablekit.Endpoints{Table: inst.DirectTableURL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return acct
}

// BenchmarkExportSkewed exports a table of 200,000 entities in a skewed
// key layout (testenv.SkewedKeys) as `tablekit export` does: a Scan of
// entity.Entity with every property, each page written as JSON lines
// under a lock. Every request through the proxy takes 50 ms more. Sides:
//   - tablekit: Scan with Parallel exportParallel;
//   - parallel-16, -32, -64 (with export-sweep=1 in TABLEKIT_BENCH): the other Parallel
//     values tried;
//   - sequential: Parallel 1 (one range, page after page), with the
//     latency;
//   - sequential-nolatency: Parallel 1 on Azurite's own endpoint, the
//     same table with no latency: what the latency would cost if nothing
//     hid it.
//
// Goals (issue 26): tablekit at least 5x sequential; at least 80% of
// sequential-nolatency's throughput.
func BenchmarkExportSkewed(b *testing.B) {
	ctx := context.Background()
	n := benchutil.Int(b, benchutil.KeyExportEntities, 200_000)
	latency := time.Duration(benchutil.Int(b, benchutil.KeyExportLatencyMS, int(exportLatency/time.Millisecond))) * time.Millisecond
	testenv.Tier(b, testenv.TierAzurite)
	inst := azurite.StartTB(b, &azurite.Options{Latency: latency})
	name := "export" + strconv.FormatInt(benchSeq.Add(1), 10)
	loadKeys(ctx, b, directAccount(b, inst), name, testenv.SkewedKeys(n))

	acct, err := tablekit.Connect(inst.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	slow, err := patterns.NewTable[entity.Entity](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	fast, err := patterns.NewTable[entity.Entity](directAccount(b, inst), name, nil)
	if err != nil {
		b.Fatal(err)
	}

	export := func(b *testing.B, tbl *patterns.Table[entity.Entity], parallel int) patterns.ScanResult {
		return exportLines(ctx, b, tbl, parallel, n)
	}
	side := func(tbl *patterns.Table[entity.Entity], parallel int) func(b *testing.B) {
		return func(b *testing.B) {
			var res patterns.ScanResult
			cpu := benchutil.StartCPU()
			for b.Loop() {
				r := export(b, tbl, parallel)
				res.Rows += r.Rows
				res.Pages += r.Pages
				res.Ranges += r.Ranges
				res.Requests += r.Requests
			}
			ops := float64(b.N)
			b.ReportMetric(float64(res.Rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(res.Requests)/ops, "requests/op")
			b.ReportMetric(float64(res.Requests-res.Pages)/ops, "probes/op")
			b.ReportMetric(float64(res.Ranges)/ops, "ranges/op")
			cpu.Report(b, n, "entity")
		}
	}
	// Warm the emulator up on the table: a sequential pass without
	// latency reads every page once.
	export(b, fast, 1)
	sides := []benchutil.Side{
		benchutil.S("tablekit", side(slow, exportParallel)),
		benchutil.S("sequential", side(slow, 1)),
		benchutil.S("sequential-nolatency", side(fast, 1)),
	}
	for _, p := range []int{8, 16, 32, 64} {
		if p != exportParallel && benchutil.Bool(b, benchutil.KeyExportSweep) {
			sides = append(sides, benchutil.S("parallel-"+strconv.Itoa(p), side(slow, p)))
		}
	}
	benchutil.RunSides(b, sides...)
}

// exportLines is the CLI's export of tbl: a Scan with Parallel parallel
// (0: the default) of every property, each page written as JSON lines
// under a lock. It fails b unless it read n rows.
func exportLines(ctx context.Context, b *testing.B, tbl *patterns.Table[entity.Entity], parallel, n int) patterns.ScanResult {
	out := bufio.NewWriterSize(io.Discard, 256<<10)
	var mu sync.Mutex
	res, err := tbl.Scan(ctx, keys.Filter{}, func(_ context.Context, page []entity.Entity) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range page {
			line, err := e.MarshalJSON()
			if err != nil {
				return err
			}
			if _, err := out.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		return nil
	}, &patterns.ScanOptions{QueryOptions: patterns.QueryOptions{SelectAll: true}, Parallel: parallel})
	if err != nil {
		b.Fatal(err)
	}
	if res.Rows != int64(n) {
		b.Fatalf("export read %d rows, want %d", res.Rows, n)
	}
	if err := out.Flush(); err != nil {
		b.Fatal(err)
	}
	return res
}

// loadKeys creates table name on acct (a direct endpoint: no latency, no
// model) and writes a benchRow for each key.
func loadKeys(ctx context.Context, b *testing.B, acct *tablekit.Account, name string, ks [][2]string) {
	b.Helper()
	load, err := patterns.NewTable[benchEmployee](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := load.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	rows := make([]benchEmployee, 0, len(ks))
	for i, k := range ks {
		e := benchRow(k[0], i)
		e.RowKey = k[1]
		rows = append(rows, e)
	}
	start := time.Now()
	if _, err := load.BulkWrite(ctx, rows, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d entities in %v", len(ks), time.Since(start).Round(time.Millisecond))
}

// BenchmarkExportModel exports a table of 1,000,000 entities in the skewed
// layout with non-ASCII keys (benchmodel.SkewedKeys) from tablekit's
// emulator on its scale model (Azure's targets and partition servers at
// benchmodel.Scale, docs/EMULATOR.md), every request 50 ms later, as
// `tablekit export` does (exportLines). The data is loaded through
// DirectTableURL, without the model. Sides:
//   - tablekit: Scan with the default Parallel (DefaultScanParallel);
//   - sequential: Parallel 1, page after page.
//
// Metrics besides rows/s: limit-% (the model's fastest export of this
// table, benchmodel.Bound, as a share: time against time; the bound is
// logged with what sets it), limit-entities/s (that fastest), and
// throttled-% (requests answered 503, of all).
//
// Goals (issue 35): tablekit at least 8x sequential, and at least 80% of
// the model's fastest.
func BenchmarkExportModel(b *testing.B) {
	ctx := context.Background()
	n := benchmodel.Entities(b, 1_000_000)
	latency := time.Duration(benchutil.Int(b, benchutil.KeyExportLatencyMS, int(exportLatency/time.Millisecond))) * time.Millisecond
	m := benchmodel.Start(b, latency)
	name := "export" + strconv.FormatInt(benchSeq.Add(1), 10)
	ks := benchmodel.SkewedKeys(n)
	loadKeys(ctx, b, m.Direct(b), name, ks)
	bound := m.Bound(benchmodel.Job{Read: map[string]map[string]int{name: benchmodel.Partitions(ks)}})
	b.Logf("scale %g, latency %v: the fastest export the model allows is %v (%.0f rows/s), set by the %s",
		m.Options.Scale, latency, bound.Time.Round(time.Millisecond), bound.Rate(), bound.By)
	ks = nil
	acct, counter := m.Counting(b)
	tbl, err := patterns.NewTable[entity.Entity](acct, name, nil)
	if err != nil {
		b.Fatal(err)
	}
	side := func(parallel int) func(b *testing.B) {
		return func(b *testing.B) {
			var res patterns.ScanResult
			meter := m.Meter(counter)
			cpu := benchutil.StartCPU()
			for b.Loop() {
				r := exportLines(ctx, b, tbl, parallel, n)
				res.Rows += r.Rows
				res.Ranges += r.Ranges
				res.Requests += r.Requests
				res.Pages += r.Pages
			}
			ops := float64(b.N)
			b.ReportMetric(float64(res.Rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(res.Requests-res.Pages)/ops, "probes/op")
			b.ReportMetric(float64(res.Ranges)/ops, "ranges/op")
			meter.Report(b, b.Elapsed().Seconds(), bound)
			cpu.Report(b, n, "entity")
		}
	}
	sides := []benchutil.Side{benchutil.S("tablekit", side(0)), benchutil.S("sequential", side(1))}
	if benchutil.Bool(b, benchutil.KeyExportSweep) {
		for _, p := range []int{2, 4, 16} {
			sides = append(sides, benchutil.S("parallel-"+strconv.Itoa(p), side(p)))
		}
	}
	benchutil.RunLongSides(b, sides...)
}

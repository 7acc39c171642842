package tablecopy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/benchmodel"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The copy and backup benchmarks' table: 20,000 entities (copy-entities
// in TABLEKIT_BENCH) of every EDM type, about 1 KB each, in 20 partitions.
const copyEntities = 20_000

// BenchmarkCopy copies one table into a new one, then verifies the copy
// as `tablekit copy --verify` does (tablecopy.Compare, outside the
// timer; a mismatch fails the benchmark). Sides:
//   - tablekit: tablecopy.Copy with its defaults (ranges read in
//     parallel, BulkWrite into the target);
//   - raw: what one writes by hand over aztables: the source's pages one
//     after the other (with full metadata, so that every type survives),
//     each entity stripped of the service's metadata, each page's
//     entities grouped by partition and sent as SubmitTransaction upserts
//     of up to 100, one at a time. Only its count is verified: it is not
//     exact (a whole Double becomes an Int32, see side).
func BenchmarkCopy(b *testing.B) {
	ctx := context.Background()
	acct := testenv.Account(b)
	n := benchutil.Int(b, benchutil.KeyCopyEntities, copyEntities)
	src := benchRows(b, n)
	var targets []*rows
	b.Cleanup(func() {
		for _, t := range targets {
			_ = t.Drop(context.Background(), nil)
		}
	})
	target := func(b *testing.B) *rows {
		t, err := patterns.NewTable[entity.Entity](acct, testenv.TableName(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := t.CreateIfNotExists(ctx, nil); err != nil {
			b.Fatal(err)
		}
		targets = append(targets, t)
		return t
	}
	// exact: the copy must verify (the raw side cannot: a whole Double,
	// 3.0, comes back from the service as the JSON number 3 even with
	// full metadata on Azurite, and is written back as an Int32; its
	// count is checked).
	side := func(exact bool, copyFn func(dst *rows) error) func(b *testing.B) {
		return func(b *testing.B) {
			var copying time.Duration
			cpu := benchutil.StartCPU()
			for b.Loop() {
				b.StopTimer()
				dst := target(b)
				b.StartTimer()
				start := time.Now()
				if err := copyFn(dst); err != nil {
					b.Fatal(err)
				}
				copying += time.Since(start)
				b.StopTimer()
				check, err := tablecopy.Compare(ctx, src, dst, nil)
				if err != nil || check.Got.Count != int64(n) || exact && !check.OK() {
					b.Fatalf("verify: %+v, %v", check, err)
				}
				_ = dst.Drop(ctx, nil)
				b.StartTimer()
			}
			cpu.Report(b, n, "entity")
			b.ReportMetric(float64(n*b.N)/copying.Seconds(), "entities/s")
		}
	}
	raw, err := acct.Table(src.Name())
	if err != nil {
		b.Fatal(err)
	}
	benchutil.RunSides(b,
		benchutil.S("tablekit", side(true, func(dst *rows) error {
			res, err := tablecopy.Copy(ctx, src, dst, nil)
			if err == nil && res.Written != int64(n) {
				err = fmt.Errorf("copied %d entities, want %d", res.Written, n)
			}
			return err
		})),
		benchutil.S("raw", side(false, func(dst *rows) error {
			out, err := acct.Table(dst.Name())
			if err != nil {
				return err
			}
			// Full metadata: with the default (minimal) a whole Double
			// comes back as a bare JSON number and would be written back
			// as an Int32.
			pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: to.Ptr(int32(1000)), Format: to.Ptr(aztables.MetadataFormatFull)})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					return err
				}
				byPK := map[string][]aztables.TransactionAction{}
				var order []string
				for _, body := range page.Entities {
					// The service's metadata and Timestamp are not the
					// entity's: dropped before writing it back.
					var props map[string]json.RawMessage
					if err := json.Unmarshal(body, &props); err != nil {
						return err
					}
					for k := range props {
						if strings.HasPrefix(k, "odata.") || k == "Timestamp" || k == "Timestamp@odata.type" {
							delete(props, k)
						}
					}
					var pk string
					if err := json.Unmarshal(props["PartitionKey"], &pk); err != nil {
						return err
					}
					e, err := json.Marshal(props)
					if err != nil {
						return err
					}
					if _, ok := byPK[pk]; !ok {
						order = append(order, pk)
					}
					byPK[pk] = append(byPK[pk], aztables.TransactionAction{ActionType: aztables.TransactionTypeInsertReplace, Entity: e})
				}
				for _, pk := range order {
					acts := byPK[pk]
					for len(acts) > 0 {
						k := min(len(acts), 100)
						if _, err := out.SubmitTransaction(ctx, acts[:k], nil); err != nil {
							return err
						}
						acts = acts[k:]
					}
				}
			}
			return nil
		})))
}

// BenchmarkBackupRestore backs a table up into a local directory, then
// restores it into a new table, as `tablekit backup --verify` and
// `tablekit restore --verify` do: both verified (tablecopy.VerifyBackup
// against the source after the backup, against the restored table after
// the restore), the verification outside the timers. It reports each
// phase's entities/s.
func BenchmarkBackupRestore(b *testing.B) {
	ctx := context.Background()
	acct := testenv.Account(b)
	n := benchutil.Int(b, benchutil.KeyCopyEntities, copyEntities)
	src := benchRows(b, n)
	for range benchutil.Rounds(b) {
		b.Run("impl=tablekit", func(b *testing.B) {
			var backingUp, restoring time.Duration
			cpu := benchutil.StartCPU()
			for b.Loop() {
				b.StopTimer()
				dir := tablecopy.Dir(b.TempDir())
				restored := testenv.TableName(b)
				b.StartTimer()
				start := time.Now()
				bres, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, dir, nil)
				if err != nil || bres.Entities != int64(n) {
					b.Fatalf("backup: %d entities, %v", bres.Entities, err)
				}
				backingUp += time.Since(start)
				b.StopTimer()
				checks, err := tablecopy.VerifyBackup(ctx, dir, &tablecopy.VerifyOptions{Account: acct})
				if err != nil || len(checks) != 1 || !checks[0].OK() {
					b.Fatalf("verify the backup: %+v, %v", checks, err)
				}
				b.StartTimer()
				start = time.Now()
				rres, err := tablecopy.Restore(ctx, dir, acct, &tablecopy.RestoreOptions{ToTable: restored})
				if err != nil || rres.Written != int64(n) {
					b.Fatalf("restore: %d entities, %v", rres.Written, err)
				}
				restoring += time.Since(start)
				b.StopTimer()
				checks, err = tablecopy.VerifyBackup(ctx, dir, &tablecopy.VerifyOptions{Account: acct, ToTable: restored})
				if err != nil || len(checks) != 1 || !checks[0].OK() {
					b.Fatalf("verify the restore: %+v, %v", checks, err)
				}
				if t, err := patterns.NewTable[entity.Entity](acct, restored, nil); err == nil {
					_ = t.Drop(ctx, nil)
				}
				b.StartTimer()
			}
			cpu.Report(b, n, "entity")
			b.ReportMetric(float64(n*b.N)/backingUp.Seconds(), "backup-entities/s")
			b.ReportMetric(float64(n*b.N)/restoring.Seconds(), "restore-entities/s")
		})
	}
}

// benchRows is a new table holding n entities of every EDM type in 20
// partitions.
func benchRows(b *testing.B, n int) *rows {
	b.Helper()
	acct := testenv.Account(b)
	src, err := patterns.NewTable[entity.Entity](acct, testenv.TableName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.CreateIfNotExists(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	es := make([]entity.Entity, n)
	for i := range es {
		es[i] = testenv.EveryType(fmt.Sprintf("p%03d", i%20), fmt.Sprintf("r%06d", i), i)
	}
	if _, err := src.BulkWrite(context.Background(), es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		b.Fatal(err)
	}
	if got, err := src.Count(context.Background(), keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true}); err != nil || got != n {
		b.Fatalf("the source holds %d entities, %v; want %d", got, err, n)
	}
	return src
}

// BenchmarkWholeTable's table on Azurite: 60,000 entities
// (whole-azurite-entities in TABLEKIT_BENCH), the size the first
// measurements used: Azurite filters a whole table per query page, so
// 1,000,000 would take hours there.
const wholeAzuriteEntities = 60_000

// BenchmarkWholeTable writes one table's entities into a new table four
// ways, side by side: importing them (BulkWrite, what `tablekit import`
// does with an export's lines, the reference), copying the table
// (tablecopy.Copy, defaults), and backing it up to a directory then
// restoring it (tablecopy.Backup, then Restore, defaults). The table has
// the skewed layout with non-ASCII keys (benchmodel.SkewedKeys: half in
// one partition, a quarter in partitions of 10 rows, a quarter in 10
// partitions with long shared prefixes), entities of six properties.
//
//   - backend=model: 1,000,000 entities (model-entities in TABLEKIT_BENCH) on
//     tablekit's emulator on its scale model (benchmodel.Scale), loaded
//     through DirectTableURL. limit-% is the model's fastest for the job
//     (benchmodel.Bound: the account's target over what is read and
//     written, each partition's target, each server's service time; the
//     hot partition binds in this layout), time against time; throttled-%
//     the requests answered 503, of all the job sent.
//   - backend=azurite: 60,000 entities (wholeAzuriteEntities) on an
//     Azurite of its own, nothing throttled.
//
// Every copy and restore is checked against the source (tablecopy.Compare
// through the direct endpoint), outside the timers; a difference fails
// the benchmark. Goals (issue 35, on the model): copy, backup and restore
// each at least 90% of the limit with at most 5% of requests throttled.
func BenchmarkWholeTable(b *testing.B) {
	b.Run("backend=model", func(b *testing.B) {
		m := benchmodel.Start(b, 0)
		acct, counter := m.Counting(b)
		wholeTable(b, wholeBackend{acct: acct, direct: m.Direct(b), counter: counter, model: m}, benchmodel.Entities(b, 1_000_000))
	})
	b.Run("backend=azurite", func(b *testing.B) {
		testenv.Tier(b, testenv.TierAzurite)
		inst := azurite.StartTB(b, nil)
		counter := &tablekit.RequestCounter{}
		acct, err := tablekit.Connect(inst.ConnectionString, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{counter}}})
		if err != nil {
			b.Fatal(err)
		}
		direct, err := tablekit.Connect(inst.ConnectionString, nil)
		if err != nil {
			b.Fatal(err)
		}
		wholeTable(b, wholeBackend{acct: acct, direct: direct, counter: counter}, benchutil.Int(b, benchutil.KeyWholeAzuriteEnt, wholeAzuriteEntities))
	})
}

// wholeBackend is where BenchmarkWholeTable runs: acct measured (its
// requests counted), direct for loading and checking, the model if any.
type wholeBackend struct {
	acct, direct *tablekit.Account
	counter      *tablekit.RequestCounter
	model        *benchmodel.Model
}

// phase sums what the model and the counter saw over a job's runs.
type phase struct {
	elapsed              time.Duration
	throttled, requests  int64
	be                   wholeBackend
	startStats           emulator.Stats
	startReq             int64
	start                time.Time
	bound                benchmodel.Bound
	name                 string
	entities, iterations int
}

func (p *phase) begin() {
	if p.be.model != nil {
		p.startStats = p.be.model.Stats()
	}
	p.startReq = p.be.counter.Count()
	p.start = time.Now()
}

func (p *phase) end() {
	p.elapsed += time.Since(p.start)
	if p.be.model != nil {
		p.throttled += p.be.model.Stats().Throttled - p.startStats.Throttled
	}
	p.requests += p.be.counter.Count() - p.startReq
	p.iterations++
}

// report records prefix+"entities/s", and on the model limit-% and
// throttled-%; requests/op on both.
func (p *phase) report(b *testing.B, prefix string) {
	b.ReportMetric(float64(p.entities*p.iterations)/p.elapsed.Seconds(), prefix+"entities/s")
	b.ReportMetric(float64(p.requests)/float64(p.iterations), prefix+"requests/op")
	if p.be.model != nil {
		b.ReportMetric(100*p.bound.Time.Seconds()*float64(p.iterations)/p.elapsed.Seconds(), prefix+"limit-%")
		b.ReportMetric(100*float64(p.throttled)/float64(max(p.requests, 1)), prefix+"throttled-%")
	}
}

// wholeRow is entity i of BenchmarkWholeTable's table, key k: about 200
// bytes in six properties of five types.
func wholeRow(k [2]string, i int) entity.Entity {
	return entity.Entity{PartitionKey: k[0], RowKey: k[1], Properties: map[string]entity.Value{
		"Name":  entity.String(fmt.Sprintf("customer %d, ünïcödé 🙂", i)),
		"Email": entity.String(fmt.Sprintf("customer%d@contoso.com", i)),
		"Seq":   entity.Int64(1<<53 + 1 + int64(i)),
		"Score": entity.Double(0.5 + float64(i)),
		"Seen":  entity.DateTime(time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC).Add(time.Duration(i) * time.Second)),
		"Open":  entity.Bool(i%2 == 0),
	}}
}

// wholeSeq numbers BenchmarkWholeTable's tables.
var wholeSeq atomic.Int64

// wholeName is a new table name for BenchmarkWholeTable, which runs on
// accounts of its own (testenv.TableName's cleanup would look for it on
// the tests' account).
func wholeName() string { return "whole" + strconv.FormatInt(wholeSeq.Add(1), 10) }

func wholeTable(b *testing.B, be wholeBackend, n int) {
	ctx := context.Background()
	ks := benchmodel.SkewedKeys(n)
	rowsOf := func(yield func(entity.Entity) bool) {
		for i, k := range ks {
			if !yield(wholeRow(k, i)) {
				return
			}
		}
	}
	open := func(acct *tablekit.Account, name string) *rows {
		t, err := patterns.NewTable[entity.Entity](acct, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	srcName := wholeName()
	load := open(be.direct, srcName)
	if err := load.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := load.BulkWriteSeq(ctx, rowsOf, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d entities in %v", n, time.Since(start).Round(time.Millisecond))
	src := open(be.acct, srcName)
	parts := benchmodel.Partitions(ks)
	var readB, writeB, copyB benchmodel.Bound
	if m := be.model; m != nil {
		readB = m.Bound(benchmodel.Job{Read: map[string]map[string]int{srcName: parts}})
		writeB = m.Bound(benchmodel.Job{Write: map[string]map[string]int{"target": parts}})
		copyB = m.Bound(benchmodel.Job{Read: map[string]map[string]int{srcName: parts}, Write: map[string]map[string]int{"target": parts}})
		b.Logf("scale %g: fastest read %v (%s), write %v (%s), copy %v (%s)", m.Options.Scale,
			readB.Time.Round(time.Millisecond), readB.By, writeB.Time.Round(time.Millisecond), writeB.By, copyB.Time.Round(time.Millisecond), copyB.By)
	}
	// check compares the table named name with the source, through the
	// direct endpoint, and drops it.
	check := func(b *testing.B, name string) {
		dst := open(be.direct, name)
		res, err := tablecopy.Compare(ctx, open(be.direct, srcName), dst, nil)
		if err != nil || !res.OK() || res.Got.Count != int64(n) {
			b.Fatalf("%s against the source: %+v, %v", name, res, err)
		}
		_ = dst.Drop(ctx, nil)
	}
	newPhase := func(bound benchmodel.Bound) *phase { return &phase{be: be, bound: bound, entities: n} }
	benchutil.RunLongSides(b,
		benchutil.S("import", func(b *testing.B) {
			p := newPhase(writeB)
			for b.Loop() {
				b.StopTimer()
				name := wholeName()
				dst := open(be.acct, name)
				if err := dst.CreateIfNotExists(ctx, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p.begin()
				res, err := dst.BulkWriteSeq(ctx, rowsOf, nil)
				p.end()
				if err != nil || res.Written != n {
					b.Fatalf("import: %d of %d written: %v", res.Written, n, err)
				}
				b.StopTimer()
				check(b, name)
				b.StartTimer()
			}
			p.report(b, "")
		}),
		benchutil.S("copy", func(b *testing.B) {
			p := newPhase(copyB)
			for b.Loop() {
				b.StopTimer()
				name := wholeName()
				b.StartTimer()
				p.begin()
				res, err := tablecopy.Copy(ctx, src, open(be.acct, name), nil)
				p.end()
				if err != nil || res.Written != int64(n) {
					b.Fatalf("copy: %d of %d written: %v", res.Written, n, err)
				}
				b.StopTimer()
				check(b, name)
				b.StartTimer()
			}
			p.report(b, "")
		}),
		benchutil.S("backup-restore", func(b *testing.B) {
			bp, rp := newPhase(readB), newPhase(writeB)
			for b.Loop() {
				b.StopTimer()
				dir := tablecopy.Dir(b.TempDir())
				name := wholeName()
				b.StartTimer()
				bp.begin()
				bres, err := tablecopy.Backup(ctx, be.acct, []string{srcName}, dir, nil)
				bp.end()
				if err != nil || bres.Entities != int64(n) {
					b.Fatalf("backup: %d of %d entities: %v", bres.Entities, n, err)
				}
				rp.begin()
				rres, err := tablecopy.Restore(ctx, dir, be.acct, &tablecopy.RestoreOptions{ToTable: name})
				rp.end()
				if err != nil || rres.Written != int64(n) {
					b.Fatalf("restore: %d of %d written: %v", rres.Written, n, err)
				}
				b.StopTimer()
				check(b, name)
				b.StartTimer()
			}
			bp.report(b, "backup-")
			rp.report(b, "restore-")
		}))
}

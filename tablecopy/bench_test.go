package tablecopy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/benchutil"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
)

// EnvCopyEntities sets the size of the copy and backup benchmarks' table
// (default 20,000 entities of every EDM type, about 1 KB each, in 20
// partitions).
const EnvCopyEntities = "TABLEKIT_BENCH_COPY_ENTITIES"

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
	n := benchutil.EnvInt(EnvCopyEntities, 20_000)
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
	n := benchutil.EnvInt(EnvCopyEntities, 20_000)
	src := benchRows(b, n)
	for range benchutil.Rounds() {
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

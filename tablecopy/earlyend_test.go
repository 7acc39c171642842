package tablecopy_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Azure may end a query page early (at a partition server's boundary,
// after five seconds) and may answer a page with no rows and a
// continuation. On an emulator that does both (seeded: a failure
// repeats), over every skewed layout, Copy, Backup, Restore,
// VerifyBackup and Compare are exact: each interrupted once and resumed
// from its checkpoint, the target holds every entity of the source once,
// with every property, and the counts and checksums agree.
func TestCopyBackupRestoreExactWhenPagesEndEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for i, l := range testenv.Layouts {
		t.Run(l.Name, func(t *testing.T) {
			t.Parallel()
			em := emulator.StartTB(t, &emulator.Options{
				EarlyEnd: &emulator.EarlyEnd{Seed: int64(i + 1), Probability: 0.5},
				// Partition servers, so pages end at their boundaries
				// too; the model's work takes no time, its targets off.
				Scale: &emulator.ScaleOptions{EntityTime: -1, Throttle: emulator.ThrottleOptions{PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: -1}},
			})
			acct, err := tablekit.Connect(em.ConnectionString, nil)
			if err != nil {
				t.Fatal(err)
			}
			src := newRows(t, acct, true)
			var want []entity.Entity
			for n, k := range l.Keys() {
				want = append(want, testenv.EveryType(k[0], k[1], n))
			}
			if _, err := src.BulkWrite(ctx, want, &patterns.BulkOptions{Concurrency: 16}); err != nil {
				t.Fatal(err)
			}
			n := int64(len(want))

			// Copy, interrupted after a few pages, then resumed.
			dst := newRows(t, acct, false)
			copyOpts := &tablecopy.CopyOptions{Parallel: 8, CheckpointTable: "ck" + dst.Name()}
			interrupted(t, "copy", func(ctx context.Context, progress func(tablecopy.Progress)) error {
				o := *copyOpts
				o.Progress = progress
				_, err := tablecopy.Copy(ctx, src, dst, &o)
				return err
			})
			res, err := tablecopy.Copy(ctx, src, dst, copyOpts)
			if err != nil || !res.Resumed {
				t.Fatalf("the resumed copy: %+v, %v; want it resumed", res, err)
			}
			sameEntities(t, want, all(t, dst))
			chk, err := tablecopy.Compare(ctx, src, dst, &tablecopy.VerifyOptions{Parallel: 8})
			if err != nil || !chk.OK() || chk.Want.Count != n || chk.Want != chk.Got {
				t.Fatalf("Compare of the copy: %+v, %v; want %d entities each side, the same sums", chk, err, n)
			}

			// Backup, interrupted, then resumed.
			to := tablecopy.Dir(t.TempDir())
			backupOpts := &tablecopy.BackupOptions{Parallel: 8, SegmentBytes: 16 << 10}
			interrupted(t, "backup", func(ctx context.Context, progress func(tablecopy.Progress)) error {
				o := *backupOpts
				o.Progress = progress
				_, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, to, &o)
				return err
			})
			bres, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, to, backupOpts)
			if err != nil || !bres.Resumed {
				t.Fatalf("the resumed backup: %+v, %v; want it resumed", bres, err)
			}
			tb := bres.Manifest.Tables[0]
			if tb.Entities != n || tb.Keys.Count != n {
				t.Fatalf("the backup holds %d entities and %d keys, want %d", tb.Entities, tb.Keys.Count, n)
			}
			checks, err := tablecopy.VerifyBackup(ctx, to, &tablecopy.VerifyOptions{Account: acct, Parallel: 8})
			if err != nil || len(checks) != 1 || !checks[0].OK() || checks[0].Want.Count != n || checks[0].Want != checks[0].Got {
				t.Fatalf("VerifyBackup against the source: %+v, %v", checks, err)
			}

			// Restore, interrupted, then resumed.
			restored := newRows(t, acct, false)
			interrupted(t, "restore", func(ctx context.Context, progress func(tablecopy.Progress)) error {
				_, err := tablecopy.Restore(ctx, to, acct, &tablecopy.RestoreOptions{ToTable: restored.Name(), Parallel: 4, Progress: progress})
				return err
			})
			rres, err := tablecopy.Restore(ctx, to, acct, &tablecopy.RestoreOptions{ToTable: restored.Name(), Parallel: 4})
			if err != nil || !rres.Resumed {
				t.Fatalf("the resumed restore: %+v, %v; want it resumed", rres, err)
			}
			sameEntities(t, want, all(t, restored))
			checks, err = tablecopy.VerifyBackup(ctx, to, &tablecopy.VerifyOptions{Account: acct, ToTable: restored.Name(), Parallel: 8})
			if err != nil || !checks[0].OK() || checks[0].Want.Count != n || checks[0].Want != checks[0].Got {
				t.Fatalf("VerifyBackup against the restored table: %+v, %v", checks, err)
			}
			chk, err = tablecopy.Compare(ctx, src, restored, &tablecopy.VerifyOptions{Parallel: 8})
			if err != nil || !chk.OK() || chk.Want != chk.Got || chk.Want.Count != n {
				t.Fatalf("Compare of the restored table: %+v, %v", chk, err)
			}

			// Compare still finds a difference: one entity changed, one
			// gone.
			e := want[len(want)/2]
			e.Properties["Int32"] = entity.Int32(7)
			if err := restored.Upsert(ctx, &e, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := restored.DeleteIfExists(ctx, want[0].PartitionKey, want[0].RowKey, nil); err != nil {
				t.Fatal(err)
			}
			chk, err = tablecopy.Compare(ctx, src, restored, &tablecopy.VerifyOptions{Parallel: 8})
			if err != nil || chk.OK() || chk.Want.Count != n || chk.Got.Count != n-1 {
				t.Fatalf("Compare after a change and a delete: %+v, %v; want mismatches, %d and %d entities", chk, err, n, n-1)
			}

			ee := em.EarlyEnds()
			if ee.Pages == 0 || ee.Empty == 0 {
				t.Errorf("the emulator ended %d pages early (%d empty): want both above 0", ee.Pages, ee.Empty)
			}
			t.Logf("%d entities; %d pages ended early, %d of them empty", n, ee.Pages, ee.Empty)
		})
	}
}

// interrupted runs op with a context cancelled at its second Progress call,
// as a crash would stop it, and fails the test unless op stopped there.
func interrupted(t *testing.T, what string, op func(ctx context.Context, progress func(tablecopy.Progress)) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	err := op(ctx, func(tablecopy.Progress) {
		if calls.Add(1) == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s interrupted at its second progress call: %v after %d calls, want it cancelled", what, err, calls.Load())
	}
}

package main

import (
	"context"
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

var killEntities = flag.Int("kill-entities", 5000,
	"the size of the table TestKilledResumeWhenPagesEndEarly copies, backs up and restores (the issue's figure is 1000000)")

// Killed (SIGKILL) at random points while its pages end early (the
// emulator, in this process, ends half of them early, a quarter of those
// empty, and at its partition servers' boundaries), copy, backup and
// restore run again continue from their checkpoints: nothing lost,
// nothing written twice (copy and restore run with --insert, which fails
// on an entity written twice; the backup's entity and key counts match),
// and the copy, the backup and the restored table compare equal to the
// source, entity for entity (counts and checksums). The table has the
// skewed layout of the scan's benchmarks: half in one partition, a
// quarter in tiny partitions, a quarter under long shared prefixes.
func TestKilledResumeWhenPagesEndEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := *killEntities
	if n < 100 {
		t.Fatalf("-kill-entities %d: want a number of entities, at least 100", n)
	}
	em := emulator.StartTB(t, &emulator.Options{
		EarlyEnd: &emulator.EarlyEnd{Seed: 35, Probability: 0.5},
		Scale:    &emulator.ScaleOptions{EntityTime: -1, Throttle: emulator.ThrottleOptions{PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: -1}},
	})
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + em.ConnectionString}
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	table := func(name string, create bool) *rows {
		tbl, err := patterns.NewTable[entity.Entity](acct, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if create {
			if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		return tbl
	}
	src := table("killsrc", true)
	began := time.Now()
	ks := testenv.SkewedKeys(n)
	if _, err := src.BulkWriteSeq(ctx, func(yield func(entity.Entity) bool) {
		for i, k := range ks {
			if !yield(withTk(k[0], k[1], i)) {
				return
			}
		}
	}, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d entities written in %v", n, time.Since(began).Round(time.Millisecond))
	// The kills fall at random in the first part of a run, a window that
	// grows with the table, and shrinks for a build without the race
	// detector, which does the same work four to five times as fast
	// (5,000 entities copied in 0.53 s, where the window of a race build,
	// 0.2 to 1 s, let the copy end before its kill).
	lo := 200 * time.Millisecond
	hi := max(time.Second, time.Duration(n/50)*time.Millisecond)
	if !testenv.Race || n > 100_000 {
		lo, hi = lo/4, hi/4
	}

	// same fails unless tbl holds src's entities, each once, every
	// property equal (Compare: counts, checksums, range by range).
	same := func(what string, tbl *rows) {
		t.Helper()
		chk, err := tablecopy.Compare(ctx, src, tbl, &tablecopy.VerifyOptions{Parallel: 8})
		if err != nil || !chk.OK() || chk.Want != chk.Got || chk.Want.Count != int64(n) {
			t.Fatalf("%s: Compare %+v, %v; want %d entities, the same sums", what, chk, err, n)
		}
	}
	// runs reports an operation's kills and time, and fails the test
	// unless it was killed at least once: a test of resuming that did not
	// resume proves nothing.
	runs := func(what string, kills int, began time.Time, r result) {
		t.Helper()
		t.Logf("%s: %d entities, %d kills, %v in all; last run: %.300s", what, n, kills, time.Since(began).Round(time.Millisecond), strings.TrimSpace(r.stdout))
		if kills == 0 {
			t.Errorf("%s was never killed: it ended within %v", what, lo)
		}
	}

	dst := table("killdst", false)
	began = time.Now()
	bin := killBinary(t, n)
	r, kills := killed(t, bin, env, 3, lo, hi, "copy", src.Name(), dst.Name(), "--insert", "--parallel", "8", "--checkpoint-table", "killck", "--json")
	runs("copy", kills, began, r)
	same("the copy", dst)

	dir := filepath.Join(t.TempDir(), "b")
	began = time.Now()
	r, kills = killed(t, bin, env, 3, lo, hi, "backup", src.Name(), "--to", dir, "--segment-size", "256KiB", "--parallel", "8", "--json")
	runs("backup", kills, began, r)
	m, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if tb := m.Tables[0]; tb.Entities != int64(n) || tb.Keys.Count != int64(n) {
		t.Fatalf("the backup holds %d entities and %d keys, want %d", tb.Entities, tb.Keys.Count, n)
	}
	checks, err := tablecopy.VerifyBackup(ctx, tablecopy.Dir(dir), &tablecopy.VerifyOptions{Account: acct, Parallel: 8})
	if err != nil || len(checks) != 1 || !checks[0].OK() || checks[0].Want != checks[0].Got || checks[0].Want.Count != int64(n) {
		t.Fatalf("VerifyBackup against the source: %+v, %v", checks, err)
	}

	restored := table("killrestored", false)
	began = time.Now()
	r, kills = killed(t, bin, env, 3, lo, hi, "restore", "--from", dir, "--to-table", restored.Name(), "--insert", "--parallel", "4", "--json")
	runs("restore", kills, began, r)
	same("the restored table", restored)

	e := em.EarlyEnds()
	if e.Pages == 0 || e.Empty == 0 {
		t.Errorf("the emulator ended %d pages early (%d empty): want both above 0", e.Pages, e.Empty)
	}
	t.Logf("%d pages ended early, %d of them empty", e.Pages, e.Empty)
}

// killBinary is the tablekit binary the test kills: the race detector's
// build (binary) at the default size, a plain build above 100,000
// entities, where the race detector's five to ten times would make the
// run take an hour.
func killBinary(t *testing.T, n int) string {
	t.Helper()
	if n <= 100_000 {
		return binary(t)
	}
	path := filepath.Join(t.TempDir(), "tablekit")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

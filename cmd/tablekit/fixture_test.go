package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// fixtureDir holds a backup chain (a full backup and an incremental one
// on it) written by an earlier build of tablekit. Never regenerate it to
// make a test pass: a restore of it failing means backups users hold
// today would no longer restore. To add a fixture of a new format, add a
// directory next to it (go test -run TestRestoreBackupOfAnEarlierBuild -write-backup-fixture DIR
// writes one).
const fixtureDir = "testdata/backup-v1"

// fixtureWant is what the fixture's chain restores: 30 entities of every
// EDM type and Tk* properties, of which the incremental backup deleted 3,
// changed 2 and added 1.
func fixtureWant() (full, final []entity.Entity) {
	for i := range 30 {
		full = append(full, withTk("fx", fmt.Sprintf("r%02d", i), i))
	}
	for i, e := range full {
		switch {
		case i < 3:
		case i < 5:
			final = append(final, withTk(e.PartitionKey, e.RowKey, i+100))
		default:
			final = append(final, e)
		}
	}
	final = append(final, withTk("fy", "n0", 200))
	return full, final
}

// writeFixture writes the fixture chain to dir, from table Fixture.
func writeFixture(t *testing.T, dir string) {
	ctx := context.Background()
	acct := testenv.Account(t)
	tbl := rowsNamed(t, acct, "Fixture")
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	full, final := fixtureWant()
	if _, err := tbl.BulkWrite(ctx, full, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tablecopy.Backup(ctx, acct, []string{"Fixture"}, tablecopy.Dir(filepath.Join(dir, "full")), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	for _, e := range full[:3] {
		if _, err := tbl.DeleteIfExists(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.BulkWrite(ctx, append(final[:2:2], final[len(final)-1]), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tablecopy.Backup(ctx, acct, []string{"Fixture"}, tablecopy.Dir(filepath.Join(dir, "inc")),
		&tablecopy.BackupOptions{Base: tablecopy.Dir(filepath.Join(dir, "full")), SkewMargin: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}

var writeBackupFixture = flag.String("write-backup-fixture", "", "write a backup chain to this directory instead of testing the fixture")

// A backup chain written by an earlier build restores, and verifies, with
// this one.
func TestRestoreBackupOfAnEarlierBuild(t *testing.T) {
	t.Parallel()
	if dir := *writeBackupFixture; dir != "" {
		// Not a test run: the fixture writer's mode (see writeFixture).
		writeFixture(t, dir)
		t.Logf("wrote a fixture to %s; commit it under testdata as a new directory", dir)
		return
	}
	if _, err := os.Stat(filepath.Join(fixtureDir, "inc", "manifest.json")); err != nil {
		t.Fatalf("the fixture is missing (%v); restore it from git, do not regenerate it", err)
	}
	// Restore writes its checkpoint next to the backup: work on a copy.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixtureDir)); err != nil {
		t.Fatal(err)
	}
	m, err := tablecopy.ReadManifest(context.Background(), tablecopy.Dir(filepath.Join(dir, "inc")))
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != tablecopy.KindIncremental || m.Base != "../full" || m.Tables[0].Deleted.Count != 3 {
		t.Fatalf("fixture manifest: %+v", m)
	}
	acct := testenv.Account(t)
	dst := rowsNamed(t, acct, testenv.TableName(t))
	r := mustRun(t, "", "restore", "--from", filepath.Join(dir, "inc"), "--to-table", dst.Name(), "--verify")
	t.Log(r.stdout)
	_, final := fixtureWant()
	sameAs(t, dst, final)
	// The same restore again has nothing to do.
	r = mustRun(t, "", "restore", "--from", filepath.Join(dir, "inc"), "--to-table", dst.Name())
	if !strings.Contains(r.stdout, "complete already") {
		t.Errorf("the same restore again: %s", r.stdout)
	}
}

package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// withTk is everyType with properties tablekit itself stores, which a
// copy or restore must carry like any other.
func withTk(pk, rk string, i int) entity.Entity {
	e := testenv.EveryType(pk, rk, i)
	e.Properties["TkUpdates"] = entity.String(fmt.Sprintf("w%d x%d", i, i+1))
	e.Properties["TkChunks"] = entity.Int32(int32(i % 4))
	return e
}

// fillRows writes n withTk entities over the given number of partitions.
func fillRows(t *testing.T, tbl *rows, n, partitions int) []entity.Entity {
	t.Helper()
	es := make([]entity.Entity, n)
	for i := range es {
		es[i] = withTk(fmt.Sprintf("p%02d", i%partitions), fmt.Sprintf("r%05d", i), i)
	}
	if _, err := tbl.BulkWrite(context.Background(), es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		t.Fatal(err)
	}
	return es
}

// rowsNamed is the table name in the test account, dropped at the end.
func rowsNamed(t *testing.T, acct *tablekit.Account, name string) *rows {
	t.Helper()
	tbl, err := patterns.NewTable[entity.Entity](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tbl.Drop(context.Background(), nil) })
	return tbl
}

// sameAs fails unless tbl holds exactly want's entities: keys, and every
// property with its EDM type.
func sameAs(t *testing.T, tbl *rows, want []entity.Entity) {
	t.Helper()
	got := all(t, tbl)
	idx := map[string]entity.Entity{}
	for _, e := range got {
		idx[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	if len(got) != len(want) {
		t.Errorf("%s holds %d entities, want %d", tbl.Name(), len(got), len(want))
	}
	bad := 0
	for _, w := range want {
		g, ok := idx[w.PartitionKey+"\x00"+w.RowKey]
		if !ok || len(g.Properties) != len(w.Properties) {
			if bad++; bad <= 5 {
				t.Errorf("%s: (%q, %q) missing or with %d properties, want %d", tbl.Name(), w.PartitionKey, w.RowKey, len(g.Properties), len(w.Properties))
			}
			continue
		}
		for name, wv := range w.Properties {
			if gv := g.Properties[name]; !wv.Equal(gv) {
				if bad++; bad <= 5 {
					t.Errorf("%s: (%q, %q) %s = %v %#v, want %v %#v", tbl.Name(), w.PartitionKey, w.RowKey, name, gv.Type, gv.V, wv.Type, wv.V)
				}
			}
		}
	}
}

// jsonSummary parses a --json summary.
func jsonSummary(t *testing.T, r result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &m); err != nil {
		t.Fatalf("--json printed %q: %v", r.stdout, err)
	}
	return m
}

func TestCopyBackupRestoreVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t)
	es := fillRows(t, src, 600, 6)

	// copy: every type and Tk* property, verified, nothing on stderr.
	dst := rowsNamed(t, acct, src.Name()+"c")
	r := mustRun(t, "", "copy", src.Name(), dst.Name(), "--verify", "--json", "--checkpoint-table", src.Name()+"ck")
	rowsNamed(t, acct, src.Name()+"ck")
	if s := jsonSummary(t, r); s["ok"] != true || s["written"] != float64(len(es)) || r.stderr != "" {
		t.Fatalf("copy --json: %s\nstderr: %s", r.stdout, r.stderr)
	}
	sameAs(t, dst, es)

	// backup to a directory and to Blob storage, restore each, verify.
	dir := t.TempDir()
	container := testenv.ContainerName(t)
	for i, to := range []string{filepath.Join(dir, "full"), "blob://" + container + "/nightly/full"} {
		r = mustRun(t, "", "backup", src.Name(), "--to", to, "--verify", "--segment-size", "4KiB")
		if !strings.Contains(r.stdout, fmt.Sprintf("backed up %d entities of 1 table to", len(es))) || !strings.Contains(r.stdout, "verified "+src.Name()) || r.stderr != "" {
			t.Fatalf("backup --to %s:\n%s\n%s", to, r.stdout, r.stderr)
		}
		restored := rowsNamed(t, acct, fmt.Sprintf("%sr%d", src.Name(), i))
		r = mustRun(t, "", "restore", "--from", to, src.Name(), "--to-table", restored.Name(), "--verify", "--json")
		if s := jsonSummary(t, r); s["ok"] != true || s["written"] != float64(len(es)) {
			t.Fatalf("restore --from %s: %s\n%s", to, r.stdout, r.stderr)
		}
		sameAs(t, restored, es)
	}
	m, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(filepath.Join(dir, "full")))
	if err != nil {
		t.Fatal(err)
	}
	if tb := m.Tables[0]; m.Kind != tablecopy.KindFull || tb.Entities != int64(len(es)) || tb.Keys.Count != int64(len(es)) || len(tb.Segments) == 0 || m.Tablekit == "" || m.End.Before(m.Start) {
		t.Fatalf("manifest: %+v", m)
	}

	// Incremental: 5 deleted, 3 changed, 2 new; restore the chain.
	want := map[string]entity.Entity{}
	for _, e := range es[5:] {
		want[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	for _, e := range es[:5] {
		if _, err := src.DeleteIfExists(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 5; i < 10; i++ {
		e := withTk(fmt.Sprintf("p%02d", i%6), fmt.Sprintf("r%05d", i), i+1000)
		if i >= 8 {
			e.PartitionKey = "new"
		}
		if err := src.Upsert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
		want[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	var wantList []entity.Entity
	for _, e := range want {
		wantList = append(wantList, e)
	}
	r = mustRun(t, "", "backup", src.Name(), "--to", filepath.Join(dir, "inc"), "--base", filepath.Join(dir, "full", "manifest.json"), "--json")
	s := jsonSummary(t, r)
	mf := s["manifest"].(map[string]any)
	tb := mf["tables"].([]any)[0].(map[string]any)
	if mf["kind"] != "incremental" || tb["deleted"].(map[string]any)["count"] != float64(5) || tb["keys"].(map[string]any)["count"] != float64(len(want)) {
		t.Fatalf("incremental backup: %s", r.stdout)
	}
	restored := rowsNamed(t, acct, src.Name()+"i")
	mustRun(t, "", "restore", "--from", filepath.Join(dir, "inc"), "--to-table", restored.Name(), "--verify")
	sameAs(t, restored, wantList)
	mustRun(t, "", "verify", "--from", filepath.Join(dir, "inc"), src.Name())

	// A difference is named by its range and key, and exits 1.
	e := want[es[100].PartitionKey+"\x00"+es[100].RowKey]
	e.Properties["Int32"] = entity.Int32(-1)
	if err := restored.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "verify", "--from", filepath.Join(dir, "inc"), src.Name(), "--to-table", restored.Name())
	if r.code != 1 || !strings.Contains(r.stderr, "mismatch: table "+src.Name()+", range (") || !strings.Contains(r.stderr, fmt.Sprintf("changed (%q, %q)", e.PartitionKey, e.RowKey)) {
		t.Fatalf("verify of a changed table: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// --insert refuses an existing entity and names it.
	ins := rowsNamed(t, acct, src.Name()+"n")
	if err := ins.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	old := entity.Entity{PartitionKey: es[50].PartitionKey, RowKey: es[50].RowKey, Properties: map[string]entity.Value{"Old": entity.Bool(true)}}
	if err := ins.Upsert(ctx, &old, nil); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "restore", "--from", filepath.Join(dir, "inc"), "--to-table", ins.Name(), "--insert")
	if r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("(PartitionKey %q, RowKey %q): it exists in the target", old.PartitionKey, old.RowKey)) {
		t.Fatalf("restore --insert onto an existing entity: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// So is a damaged segment, by its file.
	seg := filepath.Join(dir, "full", filepath.FromSlash(m.Tables[0].Segments[0].File))
	if err := os.WriteFile(seg, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, "", "verify", "--from", filepath.Join(dir, "full"), "--backup-only")
	if r.code != 1 || !strings.Contains(r.stderr, "segment "+m.Tables[0].Segments[0].File) {
		t.Fatalf("verify of a damaged segment: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// killed runs the tablekit binary bin with args up to rounds times, each
// killed (SIGKILL) after a random delay in [lo, hi), then once more to the
// end; it returns the run that ended and how many runs were killed.
func killed(t *testing.T, bin string, env []string, rounds int, lo, hi time.Duration, args ...string) (result, int) {
	t.Helper()
	kills := 0
	for range rounds {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t)), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-time.After(lo + rand.N(hi-lo)):
			_ = cmd.Process.Kill()
			<-done
			kills++
		case err := <-done:
			if err != nil {
				t.Fatalf("tablekit %s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
			}
			return result{stdout: out.String(), stderr: errOut.String()}, kills
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t)), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("tablekit %s after %d kills: %v\n%s\n%s", strings.Join(args, " "), kills, err, out.String(), errOut.String())
	}
	return result{stdout: out.String(), stderr: errOut.String()}, kills
}

// Killed (SIGKILL) at random points, copy, backup and restore run again
// continue from their checkpoints: nothing lost, nothing duplicated
// (backup's key list and entity count match; copy and restore with
// --insert would fail on an entity they wrote twice), and verify passes.
func TestKilledCopyBackupRestoreResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t)
	es := fillRows(t, src, 2000, 20)

	dst := rowsNamed(t, acct, src.Name()+"c")
	ck := src.Name() + "ck"
	rowsNamed(t, acct, ck)
	r, kills := killed(t, binary(t), nil, 2, 200*time.Millisecond, 1000*time.Millisecond, "copy", src.Name(), dst.Name(), "--insert", "--parallel", "4", "--checkpoint-table", ck, "--json")
	t.Logf("copy: %d kills; last run: %s", kills, strings.TrimSpace(r.stdout))
	sameAs(t, dst, es)
	mustRun(t, "", "copy", src.Name(), dst.Name(), "--verify", "--checkpoint-table", ck)

	dir := filepath.Join(t.TempDir(), "b")
	r, kills = killed(t, binary(t), nil, 2, 150*time.Millisecond, 600*time.Millisecond, "backup", src.Name(), "--to", dir, "--segment-size", "16KiB", "--parallel", "4", "--json")
	t.Logf("backup: %d kills; last run: %.300s", kills, strings.TrimSpace(r.stdout))
	m, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if tb := m.Tables[0]; tb.Entities != int64(len(es)) || tb.Keys.Count != int64(len(es)) {
		t.Fatalf("after %d kills the backup holds %d entities and %d keys, want %d", kills, tb.Entities, tb.Keys.Count, len(es))
	}
	mustRun(t, "", "verify", "--from", dir, src.Name())

	restored := rowsNamed(t, acct, src.Name()+"r")
	r, kills = killed(t, binary(t), nil, 2, 200*time.Millisecond, 900*time.Millisecond, "restore", "--from", dir, "--to-table", restored.Name(), "--insert", "--parallel", "3", "--json")
	t.Logf("restore: %d kills; last run: %s", kills, strings.TrimSpace(r.stdout))
	sameAs(t, restored, es)
	mustRun(t, "", "verify", "--from", dir, src.Name(), "--to-table", restored.Name())
}

// A copy to a table in another account (a second emulator or Azurite),
// named by the --dest-connection-string flag.
func TestCopyAcrossAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newRows(t)
	es := fillRows(t, src, 300, 3)
	other := testenv.OtherAccount(t)
	oacct, err := tablekit.Connect(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "copy", src.Name(), src.Name(), "--dest-connection-string", other, "--verify")
	if !strings.Contains(r.stdout, "verified "+src.Name()+" against devstoreaccount1/"+src.Name()) {
		t.Errorf("copy across accounts: %s", r.stdout)
	}
	dst, err := patterns.NewTable[entity.Entity](oacct, src.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sameAs(t, dst, es)
	// The account key never shows.
	if strings.Contains(r.stdout+r.stderr, "Eby8vdM02x") {
		t.Errorf("output shows the account key:\n%s%s", r.stdout, r.stderr)
	}
	_ = ctx
}

// The terminal's progress line: entities, rate, ranges, and an ETA when
// the total is known.
func TestProgressLine(t *testing.T) {
	var b bytes.Buffer
	writeProgress(&b, "restoring", tablecopy.Progress{Table: "Orders", Entities: 5000, Skipped: 10, Total: 20000, Ranges: 8, RangesDone: 2}, 2*time.Second)
	want := "\r\033[Krestoring Orders: 5000 entities (2500/s), 10 skipped, ranges 2/8, 25%, ETA 6s"
	if b.String() != want {
		t.Errorf("progress line %q, want %q", b.String(), want)
	}
	b.Reset()
	writeProgress(&b, "copying", tablecopy.Progress{Table: "Orders", Entities: 100}, time.Second)
	if strings.Contains(b.String(), "ETA") {
		t.Errorf("an ETA without a known total: %q", b.String())
	}
}

// A restore of a damaged backup fails, and says so first: no line claims
// the entities it wrote before finding the damage, its line says it
// failed, and stderr names the segment. verify finds the same damage.
// The damage is valid gzip of valid entities (one missing, one changed)
// under the manifest's byte count, or bytes that are not gzip.
func TestRestoreOfDamagedBackupPrintsNoSuccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t)
	fillRows(t, src, 50, 1)
	dir := filepath.Join(t.TempDir(), "full")
	mustRun(t, "", "backup", src.Name(), "--to", dir)
	m, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	file := m.Tables[0].Segments[0].File
	path := filepath.Join(dir, filepath.FromSlash(file))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// rewrite is the segment's lines through edit, as one gzip member of
	// at most the original's size.
	rewrite := func(edit func(lines []string) []string) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(orig))
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		lines := edit(strings.Split(strings.TrimSpace(string(text)), "\n"))
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if buf.Len() > len(orig) {
			t.Fatalf("the rewritten segment is %d bytes, more than its %d", buf.Len(), len(orig))
		}
		return buf.Bytes()
	}
	for i, tc := range []struct {
		name string
		file []byte
	}{
		{"one entity missing", rewrite(func(ls []string) []string { return ls[1:] })},
		{"one entity changed", rewrite(func(ls []string) []string {
			ls[3] = strings.Replace(ls[3], `"RowKey":"r00003"`, `"RowKey":"r00003x"`, 1)
			return ls
		})},
		{"not gzip", []byte("not gzip")},
	} {
		if err := os.WriteFile(path, tc.file, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := rowsNamed(t, acct, fmt.Sprintf("%sd%d", src.Name(), i))
		r := run(t, "", "restore", "--from", dir, "--to-table", dst.Name())
		if r.code != 1 || strings.Contains(r.stdout, "restored ") || !strings.HasPrefix(r.stdout, "restore FAILED") ||
			!strings.Contains(r.stderr, "segment "+file) {
			t.Errorf("%s: restore: exit %d\nstdout: %s\nstderr: %s", tc.name, r.code, r.stdout, r.stderr)
		}
		r = run(t, "", "restore", "--from", dir, "--to-table", dst.Name(), "--json")
		if s := jsonSummary(t, r); r.code != 1 || s["ok"] != false || !strings.Contains(s["error"].(string), "segment "+file) {
			t.Errorf("%s: restore --json: exit %d\nstdout: %s\nstderr: %s", tc.name, r.code, r.stdout, r.stderr)
		}
		r = run(t, "", "verify", "--from", dir, "--backup-only")
		if r.code != 1 || !strings.Contains(r.stderr, "mismatch: table "+src.Name()+", segment "+file) {
			t.Errorf("%s: verify: exit %d\nstdout: %s\nstderr: %s", tc.name, r.code, r.stdout, r.stderr)
		}
	}
}

package tablecopy_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type rows = patterns.Table[entity.Entity]

func newRows(t *testing.T, acct *tablekit.Account, create bool) *rows {
	t.Helper()
	tbl, err := patterns.NewTable[entity.Entity](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if create {
		if err := tbl.CreateIfNotExists(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

func fill(t *testing.T, tbl *rows, n, partitions int) []entity.Entity {
	t.Helper()
	var es []entity.Entity
	for i := 0; i < n; i++ {
		es = append(es, testenv.EveryType(fmt.Sprintf("p%03d", i%partitions), fmt.Sprintf("r%05d", i), i))
	}
	if _, err := tbl.BulkWrite(context.Background(), es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		t.Fatal(err)
	}
	return es
}

// sameEntities fails unless got holds exactly want's entities (keys and
// properties, every EDM type), in any order.
func sameEntities(t *testing.T, want, got []entity.Entity) {
	t.Helper()
	idx := map[string]entity.Entity{}
	for _, e := range got {
		idx[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	if len(got) != len(want) {
		t.Errorf("%d entities, want %d", len(got), len(want))
	}
	bad := 0
	for _, w := range want {
		g, ok := idx[w.PartitionKey+"\x00"+w.RowKey]
		if !ok {
			if bad++; bad < 5 {
				t.Errorf("(%q, %q) missing", w.PartitionKey, w.RowKey)
			}
			continue
		}
		if len(g.Properties) != len(w.Properties) {
			t.Errorf("(%q, %q): %d properties, want %d", w.PartitionKey, w.RowKey, len(g.Properties), len(w.Properties))
		}
		for name, wv := range w.Properties {
			if gv := g.Properties[name]; !wv.Equal(gv) {
				if bad++; bad < 5 {
					t.Errorf("(%q, %q) %s: %v %#v, want %v %#v", w.PartitionKey, w.RowKey, name, gv.Type, gv.V, wv.Type, wv.V)
				}
			}
		}
	}
}

func all(t *testing.T, tbl *rows) []entity.Entity {
	t.Helper()
	es, err := patterns.Collect(tbl.Query(context.Background(), keys.Filter{}, &patterns.QueryOptions{SelectAll: true, AllowTableScan: true}))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestCopyKeepsEveryTypeAndTkProperties(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t, acct, true)
	want := fill(t, src, 1500, 7)
	dst := newRows(t, acct, false)
	ckName := "ck" + dst.Name()
	res, err := tablecopy.Copy(ctx, src, dst, &tablecopy.CopyOptions{Parallel: 4, CheckpointTable: ckName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = acct.Tables().DeleteTable(ctx, ckName, nil) })
	if res.Written != int64(len(want)) || res.Resumed {
		t.Errorf("copy: %+v", res)
	}
	sameEntities(t, want, all(t, dst))
	chk, err := tablecopy.Compare(ctx, src, dst, nil)
	if err != nil || !chk.OK() || chk.Want.Count != int64(len(want)) || chk.Want != chk.Got {
		t.Fatalf("compare: %+v %v", chk, err)
	}
	// Once complete, the same copy does nothing; Restart copies again.
	again, err := tablecopy.Copy(ctx, src, dst, &tablecopy.CopyOptions{Parallel: 4, CheckpointTable: ckName})
	if err != nil || !again.AlreadyComplete || again.Written != 0 {
		t.Fatalf("the same copy again: %+v %v", again, err)
	}
	again, err = tablecopy.Copy(ctx, src, dst, &tablecopy.CopyOptions{Parallel: 4, CheckpointTable: ckName, Restart: true})
	if err != nil || again.AlreadyComplete || again.Written != int64(len(want)) {
		t.Fatalf("the same copy with Restart: %+v %v", again, err)
	}

	// Insert refuses an existing entity, naming it, and leaves it as it was.
	dst2 := newRows(t, acct, true)
	old := want[42]
	old.Properties = map[string]entity.Value{"Old": entity.Bool(true)}
	if err := dst2.Upsert(ctx, &old, nil); err != nil {
		t.Fatal(err)
	}
	_, err = tablecopy.Copy(ctx, src, dst2, &tablecopy.CopyOptions{Insert: true, Parallel: 1, CheckpointTable: ckName})
	var we *tablecopy.WriteError
	if !errors.As(err, &we) || !errors.Is(err, tablekit.ErrAlreadyExists) || len(we.Failed) != 1 || we.Failed[0].RowKey != old.RowKey {
		t.Fatalf("copy with Insert onto an existing entity: %v", err)
	}
	if got, err := dst2.Get(ctx, old.PartitionKey, old.RowKey, nil); err != nil || len(got.Properties) != 1 {
		t.Fatalf("the existing entity was overwritten: %+v %v", got, err)
	}

	// A changed entity is a mismatch naming its range and key.
	e := want[10]
	e.Properties["Int32"] = entity.Int32(7)
	if err := dst.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	chk, err = tablecopy.Compare(ctx, src, dst, nil)
	if err != nil || chk.OK() || len(chk.Mismatches) != 1 || len(chk.Mismatches[0].Changed) != 1 || chk.Mismatches[0].Changed[0].RowKey != e.RowKey {
		t.Fatalf("compare after a change: %+v %v", chk, err)
	}
	t.Log(chk.Mismatches[0])
}

func TestBackupIncrementalChainRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t, acct, true)
	es := fill(t, src, 1200, 5)
	dir := t.TempDir()
	full := tablecopy.Dir(dir + "/full")
	res, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, full, &tablecopy.BackupOptions{Parallel: 4, SegmentBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	tb := res.Manifest.Tables[0]
	if tb.Entities != int64(len(es)) || len(tb.Segments) < 2 || tb.Keys.Count != int64(len(es)) {
		t.Fatalf("full backup: %d entities in %d segments, %d keys", tb.Entities, len(tb.Segments), tb.Keys.Count)
	}
	if m, err := tablecopy.ReadManifest(ctx, full); err != nil {
		t.Fatal(err)
	} else if m.Tablekit != buildinfo.Version() {
		t.Fatalf("manifest's build = %q; want %q, as tablekit version prints it", m.Tablekit, buildinfo.Version())
	}
	checks, err := tablecopy.VerifyBackup(ctx, full, &tablecopy.VerifyOptions{Account: acct})
	if err != nil || len(checks) != 1 || !checks[0].OK() {
		t.Fatalf("verify full: %+v %v", checks, err)
	}

	// Changes: 10 deleted, 5 changed, 5 new.
	for _, e := range es[:10] {
		if _, err := src.DeleteIfExists(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]entity.Entity{}
	for _, e := range es[10:] {
		want[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	for i := 10; i < 15; i++ {
		e := es[i]
		e.Properties = map[string]entity.Value{"Changed": entity.Int64(int64(i))}
		if err := src.Upsert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
		want[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	for i := 0; i < 5; i++ {
		e := testenv.EveryType("new", fmt.Sprintf("n%d", i), i)
		if err := src.Upsert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
		want[e.PartitionKey+"\x00"+e.RowKey] = e
	}
	inc := tablecopy.Dir(dir + "/inc1")
	ires, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, inc, &tablecopy.BackupOptions{Base: full, SkewMargin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	it := ires.Manifest.Tables[0]
	if it.Deleted == nil || it.Deleted.Count != 10 || it.Keys.Count != int64(len(want)) || it.Entities != 10 {
		t.Fatalf("incremental: deleted %+v, keys %d, entities %d", it.Deleted, it.Keys.Count, it.Entities)
	}
	checks, err = tablecopy.VerifyBackup(ctx, inc, &tablecopy.VerifyOptions{Account: acct})
	if err != nil || !checks[0].OK() {
		t.Fatalf("verify incremental: %+v %v", checks, err)
	}

	// Restore the chain into a table that holds a stale copy of a deleted
	// key: the restore deletes it.
	dst := newRows(t, acct, true)
	stale := es[0]
	if err := dst.Upsert(ctx, &stale, nil); err != nil {
		t.Fatal(err)
	}
	rres, err := tablecopy.Restore(ctx, inc, acct, &tablecopy.RestoreOptions{ToTable: dst.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if rres.Backups != 2 || rres.Deleted != 10 {
		t.Errorf("restore: %+v", rres)
	}
	var wantList []entity.Entity
	for _, e := range want {
		wantList = append(wantList, e)
	}
	sameEntities(t, wantList, all(t, dst))
	checks, err = tablecopy.VerifyBackup(ctx, inc, &tablecopy.VerifyOptions{Account: acct, ToTable: dst.Name()})
	if err != nil || !checks[0].OK() {
		t.Fatalf("verify restored: %+v %v", checks, err)
	}
	// The same backup run again has nothing to do; another one into the
	// same location is refused.
	if again, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, full, &tablecopy.BackupOptions{Parallel: 4, SegmentBytes: 4 << 10}); err != nil || !again.AlreadyComplete || again.Entities != 0 {
		t.Fatalf("the same backup again: %+v %v", again, err)
	}
	if _, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, full, &tablecopy.BackupOptions{Since: time.Now()}); !errors.Is(err, tablecopy.ErrBackupExists) {
		t.Fatalf("another backup into a finished backup: %v", err)
	}
}

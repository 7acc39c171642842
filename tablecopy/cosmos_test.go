package tablecopy_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/cosmostest"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The Cosmos DB profile, through answers Cosmos DB really gave (no
// emulator runs in the suite): a Cosmos table is read as one sequential
// range (its results are not sorted), copied to Azure Table storage
// (Azurite) and backed up, every entity once, and the backup restores
// there and verifies. Writing to Cosmos DB is not replayed: its batch
// answers were recorded for other entities.
func TestCosmosSourceCopyAndBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)

	r := cosmostest.New(t, "pages.json")
	src, err := patterns.NewTable[entity.Entity](r.Account(t), cosmostest.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := newRows(t, acct, false)
	ck := "ck" + dst.Name()
	t.Cleanup(func() { _, _ = acct.Tables().DeleteTable(ctx, ck, nil) })
	res, err := tablecopy.Copy(ctx, src, dst, &tablecopy.CopyOptions{CheckpointTable: ck})
	if err != nil {
		t.Fatal(err)
	}
	got := all(t, dst)
	if res.Written != 10 || len(got) != 10 {
		t.Fatalf("copy from Cosmos DB wrote %d entities, the target holds %d; want the recording's 10", res.Written, len(got))
	}
	for _, e := range got {
		if _, ok := e.Properties["Value"]; !ok {
			t.Errorf("(%q, %q) lost its Value: %+v", e.PartitionKey, e.RowKey, e.Properties)
		}
	}

	r = cosmostest.New(t, "pages.json")
	dir := tablecopy.Dir(t.TempDir())
	b, err := tablecopy.Backup(ctx, r.Account(t), []string{cosmostest.Table}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tb := b.Manifest.Tables[0]; tb.Entities != 10 || tb.Keys.Count != 10 {
		t.Fatalf("backup of Cosmos DB: %d entities, %d keys; want 10", tb.Entities, tb.Keys.Count)
	}
	restored := newRows(t, acct, false)
	if _, err := tablecopy.Restore(ctx, dir, acct, &tablecopy.RestoreOptions{ToTable: restored.Name()}); err != nil {
		t.Fatal(err)
	}
	checks, err := tablecopy.VerifyBackup(ctx, dir, &tablecopy.VerifyOptions{Account: acct, ToTable: restored.Name()})
	if err != nil || !checks[0].OK() {
		t.Fatalf("verify: %+v %v", checks, err)
	}
	chk, err := tablecopy.Compare(ctx, dst, restored, nil)
	if err != nil || !chk.OK() || chk.Want.Count != 10 {
		t.Fatalf("the copy and the restored backup differ: %+v %v", chk, err)
	}
}

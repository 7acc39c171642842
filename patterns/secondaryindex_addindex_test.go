package patterns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// An index added to a table whose entities were written without it: the
// entities have no copy for it yet, and updating or deleting them must
// still work (the missing copy is already in the state a deletion wants).
func TestIndexedTableIndexAddedLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	name := testenv.TableName(t)
	email := patterns.Index[Employee]{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }}
	last := patterns.Index[Employee]{Name: "last", Key: func(e *Employee) string { return e.LastName }}
	before, err := patterns.NewIndexedTable(acct, name, []patterns.Index[Employee]{email}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		t.Fatal(err)
	}
	if err := before.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "empid_000001", LastName: "Jones", Email: "a@contoso.com"},
		{PartitionKey: "Sales", RowKey: "empid_000002", LastName: "Smith", Email: "b@contoso.com"},
	} {
		if err := before.Insert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	after, err := patterns.NewIndexedTable(acct, name, []patterns.Index[Employee]{email, last}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := after.Update(ctx, "Sales", "empid_000001", func(e *Employee) error { e.LastName = "Hall"; return nil }, nil)
	if err != nil {
		t.Fatalf("update after adding an index: %v", err)
	}
	if got.LastName != "Hall" {
		t.Fatalf("update returned %+v", got)
	}
	found, err := patterns.Collect(after.Find(ctx, "last", "Sales", "Hall", nil))
	if err != nil || len(found) != 1 || found[0].RowKey != "empid_000001" {
		t.Errorf("Find by the new index = %+v, %v", found, err)
	}
	if err := after.Delete(ctx, &Employee{PartitionKey: "Sales", RowKey: "empid_000002"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatalf("delete after adding an index: %v", err)
	}
	if _, err := after.Lookup(ctx, "email", "Sales", "b@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the deleted entity's email copy is still there: %v", err)
	}
}

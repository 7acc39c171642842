package patterns_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestArchivingAnIndexedEntityLeavesNoCopy archives entities of an
// EventualIndexedTable as the README's worker section and examples/archive
// show (a consistency.MoveEntity step through the stock worker): the
// copies go with them, Verify finds nothing and Find no longer returns
// them, and the archived entity carries none of the bookkeeping that named
// its copies.
func TestArchivingAnIndexedEntityLeavesNoCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newInterFixture(t)
	archive := testenv.TableName(t)
	plain, err := patterns.NewTable[entity.Entity](f.worker, archive, nil)
	must(t, err)
	must(t, plain.CreateIfNotExists(ctx, nil))
	t.Cleanup(func() { _ = plain.Drop(context.Background(), nil) })
	f.startWorker(t)

	emps := []ixEmployee{
		ixEmp("Sales", "000100", "Ann", "Abbot", "abbota@contoso.com", 41),
		ixEmp("Sales", "000199", "Bea", "Brown", "brownb@contoso.com", 50),
		ixEmp("Sales", "000200", "Aaron", "Adams", "adamsa@contoso.com", 23),
	}
	for i := range emps {
		must(t, f.x.Insert(ctx, &emps[i], nil))
	}
	f.wait(t, "the worker to write the copies", func() bool { return f.queueEmpty(t) && len(ixIDs(t, f.x.Prefix(ctx, "empid", "Sales", "", nil))) == 3 })

	src := f.x.Table().Name()
	for _, e := range emps[:2] {
		tx := consistency.NewTransaction(consistency.MoveEntity(
			consistency.EntityRef{Table: src, PartitionKey: e.PartitionKey, RowKey: e.RowKey},
			consistency.EntityRef{Table: archive}))
		must(t, f.q.Enqueue(ctx, tx, nil))
	}
	f.wait(t, "the worker to archive two employees", func() bool {
		n := 0
		for _, err := range plain.Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{SelectAll: true}) {
			if err == nil {
				n++
			}
		}
		return n == 2 && f.queueEmpty(t)
	})

	rep, err := f.x.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify after the archive: %+v", rep)
	}
	if got := ixIDs(t, f.x.Prefix(ctx, "empid", "Sales", "", nil)); strings.Join(got, ",") != "000200" {
		t.Errorf("employee ids after the archive = %v, want [000200]", got)
	}
	if _, err := f.x.Lookup(ctx, "email", "Sales", "abbota@contoso.com", nil); !tablekit.IsNotFound(err) {
		t.Errorf("Lookup of an archived employee's email: %v, want not found", err)
	}
	for a, err := range plain.Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{SelectAll: true}) {
		must(t, err)
		for name := range a.Properties {
			if strings.HasPrefix(name, patterns.ReservedPrefix) && name != patterns.UpdateLogProperty {
				t.Errorf("archived %s/%s carries %s", a.PartitionKey, a.RowKey, name)
			}
		}
		if _, ok := a.Properties["Email"]; !ok {
			t.Errorf("archived %s/%s lost its Email: %v", a.PartitionKey, a.RowKey, a.Properties)
		}
	}
}

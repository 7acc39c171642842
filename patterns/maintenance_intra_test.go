package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
)

// mtStaff writes the guide's employees through the plain table, without
// any index: six in Sales, two in HR.
func mtStaff(t *testing.T, tbl *patterns.Table[ixEmployee]) {
	t.Helper()
	ctx := context.Background()
	for i := range 8 {
		dept := "Sales"
		if i >= 6 {
			dept = "HR"
		}
		e := ixEmp(dept, fmt.Sprintf("%06d", i), "F", []string{"Jones", "Smith"}[i%2], fmt.Sprintf("e%d@contoso.com", i), 30)
		must(t, tbl.Insert(ctx, &e, nil))
	}
}

func TestIndexedTableVerifyRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newIndexedTable(t)
	mtStaff(t, x.Table())
	c.Reset()

	// Written without the index: every copy is missing.
	var want []string
	for i := range 8 {
		dept := map[bool]string{true: "HR", false: "Sales"}[i >= 6]
		want = append(want,
			fmt.Sprintf("missing email e%d@contoso.com %s/empid_%06d", i, dept, i),
			fmt.Sprintf("missing lastname %s %s/empid_%06d", []string{"Jones", "Smith"}[i%2], dept, i))
	}
	mtWant(t, "Verify of unindexed rows", mtVerify(t, x, c, 1, 8), want...)
	// One scan, then one transaction per partition (Sales: 6 primaries x
	// 3 operations; HR: 2 x 3).
	mtRepair(t, x, c, 1+2, 8)
	if e, err := x.Lookup(ctx, "email", "Sales", "e4@contoso.com", nil); err != nil || e.RowKey != "empid_000004" {
		t.Errorf("Lookup after Repair = %+v, %v", e, err)
	}

	// Damage behind the index's back, through the plain table: a changed
	// email (the old copy is stale, the new one missing), a changed first
	// name (both copies stale) and a deleted primary (its copies orphaned).
	tbl := x.Table()
	_, err := tbl.Update(ctx, "Sales", "empid_000001", func(e *ixEmployee) error { e.Email = "new1@contoso.com"; return nil }, nil)
	must(t, err)
	_, err = tbl.Update(ctx, "Sales", "empid_000002", func(e *ixEmployee) error { e.FirstName = "Renamed"; return nil }, nil)
	must(t, err)
	gone, err := tbl.Get(ctx, "Sales", "empid_000003", nil)
	must(t, err)
	must(t, tbl.Delete(ctx, &gone, nil))
	c.Reset()
	mtWant(t, "Verify after damage", mtVerify(t, x, c, 1, 7),
		"missing email new1@contoso.com Sales/empid_000001",
		"stale email e1@contoso.com Sales/empid_000001",
		"stale email e2@contoso.com Sales/empid_000002",
		"stale lastname Jones Sales/empid_000002",
		"stale lastname Smith Sales/empid_000001", // the copy carries the email too
		"orphan email e3@contoso.com Sales/empid_000003",
		"orphan lastname Smith Sales/empid_000003")
	// The scan, a read of the orphans' primary, and one transaction.
	mtRepair(t, x, c, 1+1+1, 7)
	if e, err := x.Lookup(ctx, "email", "Sales", "e2@contoso.com", nil); err != nil || e.FirstName != "Renamed" {
		t.Errorf("the stale copy was not rewritten: %+v, %v", e, err)
	}
	for _, email := range []string{"e1@contoso.com", "e3@contoso.com"} {
		if _, err := x.Lookup(ctx, "email", "Sales", email, nil); !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("Lookup(%s) after Repair = %v, want ErrNotFound", email, err)
		}
	}
	if e, err := x.Lookup(ctx, "email", "Sales", "new1@contoso.com", nil); err != nil || e.RowKey != "empid_000001" {
		t.Errorf("the missing copy was not written: %+v, %v", e, err)
	}
}

// An index added to existing data: Rebuild writes the new index's copies,
// reporting progress per primary; a second Rebuild writes nothing.
func TestIndexedTableRebuildAddsAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before, c := ixFixture(t, func(acct *tablekit.Account, table string) (*patterns.IndexedTable[ixEmployee], error) {
		return patterns.NewIndexedTable(acct, table, []patterns.Index[ixEmployee]{ixEmailIndex()}, &patterns.IndexedTableOptions{Primary: "empid"})
	})
	for i := range 30 {
		must(t, before.Insert(ctx, ixPtr(ixEmp("Sales", fmt.Sprintf("%06d", i), "F", fmt.Sprintf("L%d", i%3), fmt.Sprintf("e%d@contoso.com", i), 30)), nil))
	}
	after, err := patterns.NewIndexedTable(before.Table().Account(), before.Table().Name(), []patterns.Index[ixEmployee]{ixEmailIndex(), ixLastNameIndex()}, &patterns.IndexedTableOptions{Primary: "empid"})
	must(t, err)
	c.Reset()
	var mu sync.Mutex
	last := 0
	err = after.Rebuild(ctx, &patterns.MaintenanceOptions{ScanParallel: 1, Progress: func(done int) {
		mu.Lock()
		defer mu.Unlock()
		if done != last+1 {
			t.Errorf("progress went from %d to %d", last, done)
		}
		last = done
	}})
	must(t, err)
	// One scan, and one transaction: 30 merges and 30 copies.
	requests(t, c, 2, "Rebuild of one partition")
	if last != 30 {
		t.Errorf("progress ended at %d, want 30", last)
	}
	got, err := patterns.Collect(after.Find(ctx, "lastname", "Sales", "L1", nil))
	if err != nil || len(got) != 10 {
		t.Errorf("Find by the added index = %d entities, %v; want 10", len(got), err)
	}
	c.Reset()
	must(t, after.Rebuild(ctx, &patterns.MaintenanceOptions{ScanParallel: 1}))
	requests(t, c, 1, "Rebuild with nothing to do")
	if got := mtVerify(t, after, c, 1, 30); got != "" {
		t.Errorf("Verify after Rebuild found:\n%s", got)
	}
}

// Repair racing a writer: an Update through the repository lands between
// Repair's scan and its transactions (from the Progress callback). The
// repair of that entity is conditional on the primary as scanned, so it
// loses, applies nothing and is reported skipped; the writer's own
// transaction wrote the copies. A repair that wrote the scanned values
// would leave a copy of the old email behind.
func TestIndexedTableRepairRacingAWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newIndexedTable(t)
	mtStaff(t, x.Table())
	rep := mtRepairRacing(t, x, func() {
		_, err := x.Update(ctx, "Sales", "empid_000000", func(e *ixEmployee) error { e.Email = "moved@contoso.com"; return nil }, nil)
		must(t, err)
	})
	mtWant(t, "Repair's skipped entries", mtEntries(rep.Skipped),
		"missing email e0@contoso.com Sales/empid_000000",
		"missing lastname Jones Sales/empid_000000")
	for _, s := range rep.Skipped {
		if s.Reason == "" {
			t.Errorf("skipped %+v without a reason", s)
		}
	}
	if got := mtVerify(t, x, c, -1, 8); got != "" {
		t.Errorf("Verify after the race found:\n%s", got)
	}
	if e, err := x.Lookup(ctx, "email", "Sales", "moved@contoso.com", nil); err != nil || e.RowKey != "empid_000000" {
		t.Errorf("the writer's copy = %+v, %v", e, err)
	}
}

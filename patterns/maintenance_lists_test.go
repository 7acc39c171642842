package patterns_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
)

// mtStaffWant is what Verify finds for mtStaff's employees when no list
// has them: every one missing from its last name's list.
var mtStaffWant = []string{
	"missing lastname Jones Sales/empid_000000", "missing lastname Smith Sales/empid_000001",
	"missing lastname Jones Sales/empid_000002", "missing lastname Smith Sales/empid_000003",
	"missing lastname Jones Sales/empid_000004", "missing lastname Smith Sales/empid_000005",
	"missing lastname Jones HR/empid_000006", "missing lastname Smith HR/empid_000007",
}

// mtUnlisted writes mtStaff's employees behind x's back and checks that
// Verify, in reqs requests, finds every one missing from its list.
func mtUnlisted(t *testing.T, x maintainable, c *tablekit.RequestCounter, reqs int64) {
	t.Helper()
	mtStaff(t, x.Table())
	c.Reset()
	mtWant(t, "Verify of unlisted entities", mtVerify(t, x, c, reqs, 8), mtStaffWant...)
}

// mtDamage changes, behind the index's back (through the plain table),
// the last name of Sales/000000 from Jones to Smith and deletes
// Sales/000001, and returns what Verify then finds in a list index.
func mtDamage(t *testing.T, tbl *patterns.Table[ixEmployee]) []string {
	t.Helper()
	ctx := context.Background()
	_, err := tbl.Update(ctx, "Sales", "empid_000000", func(e *ixEmployee) error { e.LastName = "Smith"; return nil }, nil)
	must(t, err)
	gone, err := tbl.Get(ctx, "Sales", "empid_000001", nil)
	must(t, err)
	must(t, tbl.Delete(ctx, &gone, nil))
	return []string{
		"missing lastname Smith Sales/empid_000000",
		"stale lastname Jones Sales/empid_000000",
		"orphan lastname Smith Sales/empid_000001",
	}
}

func TestListIndexOption2VerifyRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newListIndexedTable(t)
	mtUnlisted(t, x, c, 1)
	// The scan; per index entity (Sales/Jones, Sales/Smith, HR/Jones,
	// HR/Smith) a read and a transaction; a read per member (8).
	mtRepair(t, x, c, 1+4*2+8, 8)
	got, err := patterns.Collect(x.Find(ctx, "Sales", "Jones", nil))
	ixLookup(t, c, 1+3, "Lookup(Sales, Jones) after Repair", got, err, "Sales/000000 Sales/000002 Sales/000004")

	want := mtDamage(t, x.Table())
	c.Reset()
	mtWant(t, "Verify after damage", mtVerify(t, x, c, 1, 7), want...)
	// The scan; Jones: read, read its member, transaction; Smith: read,
	// read two members, transaction.
	mtRepair(t, x, c, 1+3+4, 7)
	if m, err := x.Members(ctx, "Sales", "Smith", nil); err != nil || len(m) != 3 || m[0].RowKey != "empid_000000" {
		t.Errorf("Sales Smiths after Repair = %v, %v", m, err)
	}
}

// A write through the repository lands after Repair's scan: the repair
// reads each entity it lists, in the transaction's read-modify-write, so
// it lists it under its value as of now, not as scanned.
func TestListIndexOption2RepairRacingAWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newListIndexedTable(t)
	mtStaff(t, x.Table())
	rep := mtRepairRacing(t, x, func() { ixRename(t, x, "Sales", "empid_000000", "Hall") })
	if len(rep.Skipped) > 0 {
		t.Errorf("Repair skipped %s", mtEntries(rep.Skipped))
	}
	if got := mtVerify(t, x, c, -1, 8); got != "" {
		t.Errorf("Verify after the race found:\n%s", got)
	}
	got, err := patterns.Collect(x.Find(ctx, "Sales", "Hall", nil))
	ixLookup(t, c, 1+1, "Lookup(Sales, Hall)", got, err, "Sales/000000")
}

func TestListIndexOption1VerifyRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newBlobIndexedTable(t)
	// The scan and the listing of the index's blobs (none yet).
	mtUnlisted(t, x, c, 2)
	// Verify's two; per blob (Jones, Smith: lists span departments) a read
	// and a write.
	mtRepair(t, x, c, 2+2*2, 8)
	got, err := patterns.Collect(x.Find(ctx, "Jones", nil))
	ixLookup(t, c, 1+4, "Lookup(Jones) after Repair", got, err, "HR/000006 Sales/000000 Sales/000002 Sales/000004")

	want := mtDamage(t, x.Table())
	c.Reset()
	// The scan, the listing and a read per blob.
	mtWant(t, "Verify after damage", mtVerify(t, x, c, 1+1+2, 7), want...)
	// Verify's four; per blob a read of the member to remove, the blob's
	// read and write, and the read after.
	mtRepair(t, x, c, 4+2*4, 7)
	got, err = patterns.Collect(x.Find(ctx, "Smith", nil))
	ixLookup(t, c, 1+4, "Lookup(Smith) after Repair", got, err, "HR/000007 Sales/000000 Sales/000003 Sales/000005")
}

// Option 3 with the worker running: Repair applies the worker's own
// index-list step in process, so it returns with the index fixed, and
// what it does converges with what the worker does for writes made
// through the repository meanwhile.
func TestListIndexOption3VerifyRepairWithTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, f := newEventualListIndexedTable(t)
	c := f.counter
	mtStaff(t, x.Table())
	f.startWorker(t)
	c.Reset()
	// Written without the repository: no entity records its value (the
	// property the worker's step reads) and none is listed.
	want := append([]string{}, mtStaffWant...)
	for _, rk := range []string{"Sales/empid_000000", "Sales/empid_000001", "Sales/empid_000002", "Sales/empid_000003", "Sales/empid_000004", "Sales/empid_000005", "HR/empid_000006", "HR/empid_000007"} {
		want = append(want, "stale lastname  "+rk)
	}
	// The entities' scan and the index partition's.
	mtWant(t, "Verify of unlisted entities", mtVerify(t, x, c, 2, 8), want...)
	// Verify's two; a merge per entity to record its value; per member the
	// step's four (read the entity, read and write the index entity, read
	// the entity again).
	mtRepair(t, x, c, 2+8+8*4, 8)
	got, err := patterns.Collect(x.Find(ctx, "Jones", nil))
	ixLookup(t, c, 1+4, "Lookup(Jones) after Repair", got, err, "HR/000006 Sales/000000 Sales/000002 Sales/000004")

	// Damage behind the index's back while the repository writes too.
	ixInsertAll(t, x.Insert, ixEmp("IT", "000900", "New", "Jones", "", 20))
	want = append(mtDamage(t, x.Table()), "stale lastname  Sales/empid_000000")
	f.wait(t, "the worker to list the new employee", func() bool { return f.queueEmpty(t) })
	mtWant(t, "Verify after damage", mtVerify(t, x, c, -1, 8), want...)
	// Repair while a rename through the repository is in flight.
	rep := mtRepairRacing(t, x, func() { ixRename(t, x, "IT", "empid_000900", "Smith") })
	if len(rep.Entries) != 4 {
		t.Errorf("Repair found:\n%s", mtEntries(rep.Entries))
	}
	f.wait(t, "the worker to drain", func() bool { return f.queueEmpty(t) })
	if got := mtVerify(t, x, c, -1, 8); got != "" {
		t.Errorf("Verify after Repair and the worker found:\n%s", got)
	}
	got, err = patterns.Collect(x.Find(ctx, "Smith", nil))
	ixLookup(t, c, 1+5, "Lookup(Smith)", got, err, "HR/000007 IT/000900 Sales/000000 Sales/000003 Sales/000005")
}

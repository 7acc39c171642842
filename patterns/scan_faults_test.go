package patterns_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
)

// Under 10% injected faults (half of them after the service answered: a
// page, a probe or a delete whose answer is lost), with azcore's default
// retry options and fast ones, a parallel scan hands fn every row exactly
// once, and a parallel Count and DeleteWhere count and delete every row:
// the whole-table operations are exact whatever fails on the way.
func TestParallelScanUnderFaults(t *testing.T) {
	t.Parallel()
	inRetryModes(t, parallelScanUnderFaults, 3000, 1200)
}

func parallelScanUnderFaults(t *testing.T, mode faults.RetryMode, n int) {
	ctx := context.Background()
	tbl, fp := faultyTable[Employee](t, mode, 0.10, faultSeed(t, 11))
	fp.SetEnabled(false)
	rows := make([]Employee, 0, n)
	for i := range n {
		pk := "hot" // half the rows in one partition, the rest in tiny ones
		if i%2 == 1 {
			pk = fmt.Sprintf("p%04d", i%(n/10))
		}
		rows = append(rows, Employee{PartitionKey: pk, RowKey: fmt.Sprintf("%06d", i), FirstName: "F"})
	}
	if _, err := tbl.BulkWrite(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	want := keysOf(t, tbl)
	if len(want) != n {
		t.Fatalf("loaded %d rows, want %d", len(want), n)
	}

	fp.SetEnabled(true)
	res, err := scanKeys(ctx, tbl, want, nil)
	if err != nil {
		t.Fatalf("scan under faults: %v", err)
	}
	if res.Rows != int64(n) {
		t.Errorf("ScanResult.Rows = %d, want %d", res.Rows, n)
	}
	scanFaults := fp.Injected()

	wo := &patterns.WhereOptions{AllowTableScan: true, Parallel: 8}
	if c, err := tbl.Count(ctx, keys.Filter{}, wo); err != nil || c != n {
		t.Fatalf("parallel Count under faults = %d, %v; want %d", c, err, n)
	}
	dr, err := tbl.DeleteWhere(ctx, keys.Filter{}, wo)
	if err != nil || dr.Matched != n || dr.Deleted != n {
		t.Fatalf("parallel DeleteWhere under faults = %+v, %v; want %d matched and deleted", dr, err, n)
	}
	fp.SetEnabled(false)
	if left := keysOf(t, tbl); len(left) != 0 {
		t.Fatalf("%d rows left after DeleteWhere under faults", len(left))
	}
	t.Logf("%d rows in %d ranges, %d requests; %d faults injected (%d during the scan)", res.Rows, res.Ranges, res.Requests, fp.Injected(), scanFaults)
	if fp.Injected() < 3 {
		t.Errorf("only %d faults injected: the test proves nothing", fp.Injected())
	}
}

package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// fill writes n employees to partition pk, aged 0 to n-1.
func fill(t *testing.T, tbl *patterns.Table[Employee], pk string, n int) {
	t.Helper()
	rows := make([]Employee, n)
	for i := range rows {
		rows[i] = Employee{PartitionKey: pk, RowKey: fmt.Sprintf("%05d", i), Age: i, FirstName: "F", LastName: "L"}
	}
	if _, err := tbl.BulkWrite(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCountRequestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, counter := newTable[Employee](t)
	fill(t, tbl, "big", 1200)
	fill(t, tbl, "small", 150)
	counter.Reset()

	cases := []struct {
		name     string
		filter   keys.Filter
		scan     bool
		want     int
		requests int64
	}{
		{"partition over two pages", keys.PK().Eq("big"), false, 1200, 2},
		{"partition scan with a property condition", keys.And(keys.PK().Eq("small"), keys.Prop("Age").Lt(50)), false, 50, 1},
		{"range", keys.And(keys.PK().Eq("big"), keys.RK().Prefix("000")), false, 100, 1},
		{"point", keys.And(keys.PK().Eq("big"), keys.RK().Eq("00007")), false, 1, 1},
		{"nothing matches", keys.PK().Eq("none"), false, 0, 1},
		{"whole table", keys.Filter{}, true, 1350, 2},
	}
	for _, c := range cases {
		// Parallel 1: one sequential range, the budget Count states (a
		// table scan's default reads ranges in parallel, with probes).
		n, err := tbl.Count(ctx, c.filter, &patterns.WhereOptions{AllowTableScan: c.scan, Parallel: 1})
		if err != nil || n != c.want {
			t.Errorf("%s: Count = %d, %v; want %d", c.name, n, err, c.want)
		}
		if got := counter.Take(); got != c.requests {
			t.Errorf("%s: %d requests, want %d", c.name, got, c.requests)
		}
	}
}

func TestWhereRefusesBadInputBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, counter := newTable[Employee](t)
	if _, err := tbl.Count(ctx, keys.Filter{}, nil); !errors.Is(err, tablekit.ErrTableScan) {
		t.Errorf("Count of the whole table without AllowTableScan: %v, want ErrTableScan", err)
	}
	if _, err := tbl.DeleteWhere(ctx, keys.Prop("Age").Gt(3), nil); !errors.Is(err, tablekit.ErrTableScan) {
		t.Errorf("DeleteWhere of a table scan without AllowTableScan: %v, want ErrTableScan", err)
	}
	if _, err := tbl.DeleteWhere(ctx, keys.And(keys.PK().Eq("a"), keys.Prop("bad name").Eq(1)), nil); !errors.Is(err, keys.ErrInvalidFilter) {
		t.Errorf("DeleteWhere of an invalid filter: %v, want ErrInvalidFilter", err)
	}
	if n := counter.Take(); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}

func TestDeleteWhereRequestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, counter := newTable[Employee](t)
	fill(t, tbl, "big", 1200)
	fill(t, tbl, "small", 150)
	counter.Reset()

	// Part of a partition: one page, one transaction.
	res, err := tbl.DeleteWhere(ctx, keys.And(keys.PK().Eq("small"), keys.Prop("Age").Ge(100)), nil)
	if err != nil || res.Deleted != 50 || res.Matched != 50 || res.Pages != 1 || res.Transactions != 1 {
		t.Fatalf("DeleteWhere(small, Age >= 100) = %+v, %v; want 50 deleted, 1 page, 1 transaction", res, err)
	}
	if n := counter.Take(); n != 2 {
		t.Errorf("delete 50 of one partition: %d requests, want 2", n)
	}

	// 1,200 entities of one partition: 2 pages + 12 transactions.
	var progress []patterns.WhereResult
	res, err = tbl.DeleteWhere(ctx, keys.PK().Eq("big"), &patterns.WhereOptions{Progress: func(r patterns.WhereResult) { progress = append(progress, r) }})
	if err != nil || res.Deleted != 1200 || res.Pages != 2 || res.Transactions != 12 || res.Gone != 0 {
		t.Fatalf("DeleteWhere(big) = %+v, %v; want 1200 deleted in 2 pages and 12 transactions", res, err)
	}
	if n := counter.Take(); n != 14 {
		t.Errorf("delete 1,200 of one partition: %d requests, want 14", n)
	}
	if len(progress) != 12 || progress[len(progress)-1].Transactions != 12 {
		t.Errorf("Progress called %d times (last %+v), want once per transaction (12)", len(progress), progress[len(progress)-1])
	}
	for _, pk := range []string{"big", "small"} {
		n, err := tbl.Count(ctx, keys.PK().Eq(pk), nil)
		want := map[string]int{"big": 0, "small": 100}[pk]
		if err != nil || n != want {
			t.Errorf("after the deletes, partition %s holds %d (%v), want %d", pk, n, err, want)
		}
	}
	counter.Reset()

	// A partition that continues on the next page fills its transaction
	// across the page boundary: a 950 + b 100 + small 100 is 2 pages and
	// 10 + 1 + 1 transactions, not 10 + 2 + 1 (b's first 50 entities end
	// page 1).
	fill(t, tbl, "a", 950)
	fill(t, tbl, "b", 100)
	counter.Reset()
	res, err = tbl.DeleteWhere(ctx, keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true, Concurrency: 3, Parallel: 1})
	if err != nil || res.Deleted != 1150 || res.Pages != 2 || res.Transactions != 12 {
		t.Fatalf("DeleteWhere(whole table) = %+v, %v; want 1150 deleted in 2 pages and 12 transactions", res, err)
	}
	if n := counter.Take(); n != 14 {
		t.Errorf("delete the whole table: %d requests, want 15", n)
	}
	if n, err := tbl.Count(ctx, keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true}); err != nil || n != 0 {
		t.Errorf("after deleting everything the table holds %d (%v)", n, err)
	}
}

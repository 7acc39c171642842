package patterns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// TestFilterOnAPropertyTDoesNotHave: a filter on Table[T] naming a
// property T lacks (a typo, which the service would answer with no rows)
// is refused with ErrInvalidFilter naming the property, before any
// request, by every query verb. AllowUnknownProperties sends it anyway,
// for heterogeneous tables; dynamic types are never checked.
func TestFilterOnAPropertyTDoesNotHave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	must(t, tbl.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123", Age: 34}, nil))
	depts, err := patterns.NewTable[Department](tbl.Account(), tbl.Name(), nil)
	must(t, err)
	must(t, depts.Insert(ctx, &Department{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales"}, nil))
	c.Reset()

	typo := keys.And(keys.PK().Eq("Sales"), keys.Prop("Agee").Gt(30))
	parsed, err := keys.ParseFilter("PartitionKey eq 'Sales' and Agee gt 30")
	must(t, err)
	for _, tc := range []struct {
		name string
		call func(keys.Filter) error
	}{
		{"Query", func(f keys.Filter) error { _, err := patterns.Collect(tbl.Query(ctx, f, nil)); return err }},
		{"Page", func(f keys.Filter) error { _, err := tbl.Page(ctx, f, "", nil); return err }},
		{"Count", func(f keys.Filter) error { _, err := tbl.Count(ctx, f, nil); return err }},
		{"DeleteWhere", func(f keys.Filter) error { _, err := tbl.DeleteWhere(ctx, f, nil); return err }},
	} {
		for _, f := range []keys.Filter{typo, parsed} {
			err := tc.call(f)
			var fe *keys.FilterError
			if !errors.Is(err, tablekit.ErrInvalidFilter) || !errors.As(err, &fe) || fe.Property != "Agee" {
				t.Errorf("%s(%v) = %v, want ErrInvalidFilter naming Agee", tc.name, f, err)
			}
		}
	}
	requests(t, c, 0, "refused filters")

	// Known properties, keys and Timestamp pass.
	got, err := patterns.Collect(tbl.Query(ctx, keys.And(keys.PK().Eq("Sales"), keys.Prop("Age").Gt(30)), nil))
	if err != nil || len(got) != 1 {
		t.Errorf("a filter on Age: %d rows, %v; want 1", len(got), err)
	}

	// A heterogeneous table: the department's property, read through
	// Table[Employee] on purpose.
	got, err = patterns.Collect(tbl.Query(ctx, keys.And(keys.PK().Eq("Sales"), keys.Prop("DepartmentName").Eq("Sales")), &patterns.QueryOptions{AllowUnknownProperties: true}))
	if err != nil || len(got) != 1 || got[0].RowKey != "Department" {
		t.Errorf("AllowUnknownProperties: %v, %v; want the department's row", got, err)
	}
	if n, err := tbl.Count(ctx, keys.And(keys.PK().Eq("Sales"), keys.Prop("DepartmentName").Eq("Sales")), &patterns.WhereOptions{AllowUnknownProperties: true}); err != nil || n != 1 {
		t.Errorf("Count with AllowUnknownProperties = %d, %v; want 1", n, err)
	}

	// Dynamic entities name any property.
	dyn, err := patterns.NewTable[entity.Entity](tbl.Account(), tbl.Name(), nil)
	must(t, err)
	rows, err := patterns.Collect(dyn.Query(ctx, keys.And(keys.PK().Eq("Sales"), keys.Prop("DepartmentName").Eq("Sales")), &patterns.QueryOptions{SelectAll: true}))
	if err != nil || len(rows) != 1 {
		t.Errorf("Table[entity.Entity]: %d rows, %v; want 1", len(rows), err)
	}
}

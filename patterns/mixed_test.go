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

// The guide's heterogeneous partition: a department entity and its
// employees share the PartitionKey.
type Department struct {
	PartitionKey    string
	RowKey          string
	DepartmentName  string
	EmployeeCount   int
	ManagerFullName string
}

func TestMixedPartitionResolvesEachRowToItsType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := entity.NewRegistry(nil)
	if err := reg.Register(entity.Kind{Name: "Department", Version: 1}, Department{}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(entity.Kind{Name: "Employee", Version: 2}, Employee{}); err != nil {
		t.Fatal(err)
	}
	tbl, c := newTable[Employee](t)
	m, err := patterns.NewMixedTable(tbl.Account(), tbl.Name(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []any{
		&Department{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", EmployeeCount: 2, ManagerFullName: "Mary Smith"},
		&Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31},
		&Employee{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Hall", Age: 42},
	}
	for _, r := range rows {
		if err := m.Insert(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Reset()
	var depts, emps int
	for v, err := range m.Query(ctx, keys.PK().Eq("Sales"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case *Department:
			depts++
			if v.ManagerFullName != "Mary Smith" || v.EmployeeCount != 2 {
				t.Errorf("department decoded as %+v", v)
			}
		case *Employee:
			emps++
			if v.LastName == "" || v.Age == 0 {
				t.Errorf("employee decoded as %+v", v)
			}
		default:
			t.Errorf("row decoded as %T", v)
		}
	}
	if depts != 1 || emps != 2 {
		t.Errorf("resolved %d departments and %d employees, want 1 and 2", depts, emps)
	}
	requests(t, c, 1, "a mixed partition query")
	got, err := m.Get(ctx, "Sales", "Department", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := got.(*Department); !ok || d.DepartmentName != "Sales" {
		t.Errorf("Get = %#v", got)
	}
	// The typed Table of one kind still reads its rows (the discriminator
	// is an extra property it ignores).
	e, err := tbl.Get(ctx, "Sales", "000123", nil)
	if err != nil || e.FirstName != "Jun" {
		t.Errorf("typed Get of a mixed row = %+v, %v", e, err)
	}
	if _, err := m.Get(ctx, "Sales", "nobody", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get of a missing row = %v, want ErrNotFound", err)
	}
	type Unregistered struct{ PartitionKey, RowKey string }
	if err := m.Insert(ctx, &Unregistered{"Sales", "x"}, nil); !errors.Is(err, entity.ErrUnknownKind) {
		t.Errorf("Insert of an unregistered type = %v, want ErrUnknownKind", err)
	}
}

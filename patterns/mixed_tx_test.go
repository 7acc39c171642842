package patterns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
)

// mixedDept is the guide's department entity with an ETag, so that a
// transaction can be conditional on it.
type mixedDept struct {
	PartitionKey  string
	RowKey        string
	ETag          string
	EmployeeCount int
}

// TestMixedTransactionKeepsTheCountWithTheEmployees: the guide keeps a
// department and its employees in one partition so that "you can use an
// EGT to maintain consistency ... if you maintain a departmental employee
// count". A MixedTransaction inserts an employee and bumps the count in
// one request, conditional on the department's ETag; a stale count
// applies nothing.
func TestMixedTransactionKeepsTheCountWithTheEmployees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := entity.NewRegistry(nil)
	must(t, reg.Register(entity.Kind{Name: "Department", Version: 1}, mixedDept{}))
	must(t, reg.Register(entity.Kind{Name: "Employee", Version: 1}, Employee{}))
	tbl, c := newTable[Employee](t)
	m, err := patterns.NewMixedTable(tbl.Account(), tbl.Name(), reg, nil)
	must(t, err)
	must(t, m.Insert(ctx, &mixedDept{PartitionKey: "Sales", RowKey: "Department"}, nil))
	got, err := m.Get(ctx, "Sales", "Department", nil)
	must(t, err)
	dept := got.(*mixedDept)
	stale := *dept
	c.Reset()

	jun := &Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun"}
	dept.EmployeeCount++
	if _, err := m.Transaction().Insert(jun).Replace(dept, nil).Submit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "a mixed transaction")
	if jun.ETag == "" || dept.ETag == "" || dept.ETag == stale.ETag {
		t.Errorf("Submit left ETags employee %q, department %q (was %q)", jun.ETag, dept.ETag, stale.ETag)
	}
	// The new ETag is the stored one: a second change conditional on it lands.
	dept.EmployeeCount++
	if _, err := m.Transaction().Insert(&Employee{PartitionKey: "Sales", RowKey: "000152"}).Merge(dept, nil).Submit(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// A stale department: nothing is applied, and the error names it.
	stale.EmployeeCount = 99
	_, err = m.Transaction().Insert(&Employee{PartitionKey: "Sales", RowKey: "000200"}).Replace(&stale, nil).Submit(ctx, nil)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || !tablekit.IsPreconditionFailed(err) {
		t.Fatalf("stale department: %v, want a precondition failure at operation 1", err)
	}
	if _, err := m.Get(ctx, "Sales", "000200", nil); !tablekit.IsNotFound(err) {
		t.Errorf("the employee of the failed transaction: %v, want not found", err)
	}
	got, err = m.Get(ctx, "Sales", "Department", nil)
	must(t, err)
	if n := got.(*mixedDept).EmployeeCount; n != 2 {
		t.Errorf("EmployeeCount = %d, want 2", n)
	}

	// Refused before any request, naming the operation.
	c.Reset()
	for _, tc := range []struct {
		name string
		tx   *patterns.MixedTransaction
		want error
	}{
		{"an unregistered type", m.Transaction().Insert(jun).Insert(&Department{PartitionKey: "Sales", RowKey: "x"}), entity.ErrUnknownKind},
		{"no ETag", m.Transaction().Delete(&mixedDept{PartitionKey: "Sales", RowKey: "Department"}, nil), patterns.ErrNoETag},
		{"two partitions", m.Transaction().Insert(&Employee{PartitionKey: "Sales", RowKey: "1"}).Insert(&Employee{PartitionKey: "HR", RowKey: "1"}), tablekit.ErrInvalidTransaction},
	} {
		if _, err := tc.tx.Submit(ctx, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	requests(t, c, 0, "refused mixed transactions")
}

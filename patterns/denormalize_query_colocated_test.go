package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The guide's one-to-many example ("Handle one-to-many relationships"),
// denormalized: employee entities carry their department's manager's name
// and phone, so one point query returns an employee with everything, and
// a change of the manager's details must reach every employee of the
// department. Departments and employees share the company's partition, so
// one transaction keeps them consistent.
type dqDepartment struct {
	PartitionKey string
	RowKey       string // "dept_" + Name
	ETag         string
	Name         string
	ManagerName  string
	ManagerPhone string
}

type dqEmployee struct {
	PartitionKey string
	RowKey       string // "emp_" + id
	ETag         string
	FirstName    string
	Department   string // the department's Name: the link
	ManagerName  string // copied from the department
	ManagerPhone string // copied from the department
}

// dqEveryEmployee is the guide's target set: every employee of the
// department.
func dqEveryEmployee(d *dqDepartment) keys.Filter { return keys.Prop("Department").Eq(d.Name) }

// dqEveryone matches every employee of the partition, whatever their
// department: the department's name on each employee must decide.
func dqEveryone(*dqDepartment) keys.Filter { return keys.RK().Prefix("emp_") }

func dqDeptOf(e *dqEmployee) string {
	if e.Department == "" {
		return ""
	}
	return "dept_" + e.Department
}

func dqCopy(d *dqDepartment, e *dqEmployee) {
	e.ManagerName, e.ManagerPhone = d.ManagerName, d.ManagerPhone
}

// newDenormQuery builds the co-located denormalization whose targets are
// found by where, with the departments Sales (Mary) and Marketing (Ken),
// and returns it with its request counter reset.
func newDenormQuery(t *testing.T, where func(*dqDepartment) keys.Filter) (*patterns.Denormalization[dqDepartment, dqEmployee], *tablekit.RequestCounter) {
	t.Helper()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	x, err := patterns.NewDenormalization(acct, testenv.TableName(t), nil, dqDeptOf, dqCopy,
		&patterns.DenormalizationOptions[dqDepartment]{TargetsWhere: where})
	must(t, err)
	must(t, x.CreateIfNotExists(ctx, nil))
	for _, d := range []dqDepartment{
		{PartitionKey: "Contoso", RowKey: "dept_Sales", Name: "Sales", ManagerName: "Mary", ManagerPhone: "555-0100"},
		{PartitionKey: "Contoso", RowKey: "dept_Marketing", Name: "Marketing", ManagerName: "Ken", ManagerPhone: "555-0200"},
	} {
		must(t, x.Sources().Insert(ctx, &d, nil))
	}
	c.Reset()
	return x, c
}

// dqHire inserts an employee of dept and gives it its manager's details
// through UpdateTarget, as a user would.
func dqHire(t *testing.T, x *patterns.Denormalization[dqDepartment, dqEmployee], id, dept string) {
	t.Helper()
	ctx := context.Background()
	must(t, x.Targets().Insert(ctx, &dqEmployee{PartitionKey: "Contoso", RowKey: "emp_" + id, FirstName: id, Department: dept}, nil))
	_, err := x.UpdateTarget(ctx, "Contoso", "emp_"+id, nil, nil)
	must(t, err)
}

// dqCheck fails the test unless every employee shows its own
// department's manager.
func dqCheck(t *testing.T, x *patterns.Denormalization[dqDepartment, dqEmployee], step string) {
	t.Helper()
	ctx := context.Background()
	depts := map[string]dqDepartment{}
	for d, err := range x.Sources().Query(ctx, keys.And(keys.PK().Eq("Contoso"), keys.RK().Prefix("dept_")), nil) {
		must(t, err)
		depts[d.Name] = d
	}
	n := 0
	for e, err := range x.Targets().Query(ctx, keys.And(keys.PK().Eq("Contoso"), keys.RK().Prefix("emp_")), nil) {
		must(t, err)
		n++
		d := depts[e.Department]
		if e.ManagerName != d.ManagerName || e.ManagerPhone != d.ManagerPhone {
			t.Errorf("after %s: %s of %s shows %s, %s; its manager is %s, %s", step, e.RowKey, e.Department, e.ManagerName, e.ManagerPhone, d.ManagerName, d.ManagerPhone)
		}
	}
	if n == 0 {
		t.Fatalf("after %s: no employee found: the check proves nothing", step)
	}
}

// TestDenormalizationQueryEveryEmployee plays the guide's example as
// written: every employee of a department gets the manager's new phone,
// and an employee moved to another department stops receiving it. With
// the exact filter the query finds the department's employees; with the
// broad one it finds everyone, and the department each employee names
// must keep the others' copies apart.
func TestDenormalizationQueryEveryEmployee(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		where func(*dqDepartment) keys.Filter
	}{
		{"employees of the department", dqEveryEmployee},
		{"every employee", dqEveryone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			x, c := newDenormQuery(t, tc.where)
			for i, dept := range []string{"Sales", "Sales", "Sales", "Marketing", "Marketing"} {
				dqHire(t, x, fmt.Sprintf("00010%d", i), dept)
			}
			c.Reset()
			dqHire(t, x, "000223", "Sales")
			requests(t, c, 4, "hiring into Sales (insert; read the employee, read Sales, transaction)")
			dqCheck(t, x, "hiring")

			c.Reset()
			if _, err := x.UpdateSource(ctx, "Contoso", "dept_Sales", func(d *dqDepartment) error { d.ManagerPhone = "555-0111"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			requests(t, c, 3, "the manager's new phone (read Sales, query its employees, one transaction)")
			dqCheck(t, x, "Mary's new phone")
			e, err := x.Targets().Get(ctx, "Contoso", "emp_000223", nil)
			must(t, err)
			if e.ManagerPhone != "555-0111" {
				t.Errorf("an employee of Sales shows %q, want Mary's new 555-0111", e.ManagerPhone)
			}

			// John moves to Marketing: he shows Ken from now on, and
			// Mary's next phone does not reach him.
			c.Reset()
			if _, err := x.UpdateTarget(ctx, "Contoso", "emp_000223", func(e *dqEmployee) error { e.Department = "Marketing"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			requests(t, c, 3, "moving John to Marketing (read John, read Marketing, transaction)")
			if _, err := x.UpdateSource(ctx, "Contoso", "dept_Sales", func(d *dqDepartment) error { d.ManagerPhone = "555-0122"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			requests(t, c, 3, "Mary's next phone")
			dqCheck(t, x, "John's move and Mary's next phone")
			if e, _ := x.Targets().Get(ctx, "Contoso", "emp_000223", nil); e.ManagerName != "Ken" || e.ManagerPhone != "555-0200" {
				t.Errorf("John, moved to Marketing, shows %s, %s; want Ken, 555-0200", e.ManagerName, e.ManagerPhone)
			}
			if _, err := x.UpdateSource(ctx, "Contoso", "dept_Marketing", func(d *dqDepartment) error { d.ManagerPhone = "555-0201"; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			dqCheck(t, x, "Ken's new phone")
			if e, _ := x.Targets().Get(ctx, "Contoso", "emp_000223", nil); e.ManagerPhone != "555-0201" {
				t.Errorf("John, in Marketing, shows %s; want Ken's new 555-0201", e.ManagerPhone)
			}
		})
	}
}

// TestDenormalizationQueryUnderConcurrency changes the managers' phones
// while employees move between the departments: the query and the
// transaction's ETag conditions must leave every employee with its own
// department's manager.
func TestDenormalizationQueryUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, _ := newDenormQuery(t, dqEveryEmployee)
	for i := range 4 {
		dqHire(t, x, fmt.Sprintf("00030%d", i), []string{"Sales", "Marketing"}[i%2])
	}
	concurrently(t, 6, func(i int) error {
		for j := range 4 {
			var err error
			if i < 2 {
				dept := []string{"dept_Sales", "dept_Marketing"}[i]
				_, err = x.UpdateSource(ctx, "Contoso", dept, func(d *dqDepartment) error { d.ManagerPhone = fmt.Sprintf("555-%d%d", i, j); return nil }, nil)
			} else {
				_, err = x.UpdateTarget(ctx, "Contoso", fmt.Sprintf("emp_00030%d", i-2), func(e *dqEmployee) error {
					e.Department = map[string]string{"Sales": "Marketing", "Marketing": "Sales"}[e.Department]
					return nil
				}, nil)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	dqCheck(t, x, "concurrent phone changes and moves")
}

// TestDenormalizationQueryTooManyTargets: one transaction holds the
// department and 99 employees. With 100 employees in the partition the
// update fails before any write with a typed error; with 99 it writes all
// of them in one transaction.
func TestDenormalizationQueryTooManyTargets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newDenormQuery(t, dqEveryEmployee)
	staff := make([]dqEmployee, 100)
	for i := range staff {
		staff[i] = dqEmployee{PartitionKey: "Contoso", RowKey: fmt.Sprintf("emp_%06d", i), Department: "Sales", ManagerName: "Mary", ManagerPhone: "555-0100"}
	}
	_, err := x.Targets().BulkWrite(ctx, staff, nil)
	must(t, err)
	// Marketing's employee is not Sales's: it does not count.
	dqHire(t, x, "900000", "Marketing")
	c.Reset()

	_, err = x.UpdateSource(ctx, "Contoso", "dept_Sales", func(d *dqDepartment) error { d.ManagerPhone = "555-0111"; return nil }, nil)
	var tm *patterns.TooManyTargetsError
	if !errors.As(err, &tm) || !errors.Is(err, tablekit.ErrInvalidArgument) || !errors.Is(err, tablekit.ErrInvalidTransaction) {
		t.Fatalf("UpdateSource with 100 employees = %v, want a *TooManyTargetsError wrapping ErrInvalidTransaction and ErrInvalidArgument", err)
	}
	if tm.Targets != 100 || tm.Max != 99 || tm.RowKey != "dept_Sales" || tm.PartitionKey != "Contoso" || tm.Table != x.Sources().Name() {
		t.Errorf("TooManyTargetsError = %+v", *tm)
	}
	requests(t, c, 2, "refusing 100 targets (read Sales, query its employees; no write)")
	if d, _ := x.Sources().Get(ctx, "Contoso", "dept_Sales", nil); d.ManagerPhone != "555-0100" {
		t.Errorf("the refused update changed the department: %+v", d)
	}
	dqCheck(t, x, "the refused update")

	must(t, x.Targets().Delete(ctx, &dqEmployee{PartitionKey: "Contoso", RowKey: "emp_000042"}, &patterns.WriteOptions{Unconditional: true}))
	c.Reset()
	if _, err := x.UpdateSource(ctx, "Contoso", "dept_Sales", func(d *dqDepartment) error { d.ManagerPhone = "555-0111"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "99 targets (read Sales, query its employees, one transaction of 100)")
	dqCheck(t, x, "the update of 99 employees")
	if e, _ := x.Targets().Get(ctx, "Contoso", "emp_000099", nil); e.ManagerPhone != "555-0111" {
		t.Errorf("the last employee shows %q", e.ManagerPhone)
	}
}

// TestDenormalizationQueryRefusals: exactly one of targets and
// TargetsWhere, no Link or Unlink with a query, and a filter naming a
// property the employee does not have; each refused with
// tablekit.ErrInvalidArgument before any write.
func TestDenormalizationQueryRefusals(t *testing.T) {
	t.Parallel()
	acct, c := testenv.CountingAccount(t)
	list := func(*dqDepartment) []string { return nil }
	for _, tc := range []struct {
		name    string
		targets func(*dqDepartment) []string
		opts    *patterns.DenormalizationOptions[dqDepartment]
	}{
		{"neither", nil, nil},
		{"both", list, &patterns.DenormalizationOptions[dqDepartment]{TargetsWhere: dqEveryEmployee}},
		{"query and Link", nil, &patterns.DenormalizationOptions[dqDepartment]{TargetsWhere: dqEveryEmployee, Link: func(*dqDepartment, string) {}}},
		{"query and Unlink", nil, &patterns.DenormalizationOptions[dqDepartment]{TargetsWhere: dqEveryEmployee, Unlink: func(*dqDepartment, string) {}}},
	} {
		if _, err := patterns.NewDenormalization(acct, "dqrefused", tc.targets, dqDeptOf, dqCopy, tc.opts); !errors.Is(err, tablekit.ErrInvalidArgument) {
			t.Errorf("%s: NewDenormalization = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	requests(t, c, 0, "refused constructors")

	ctx := context.Background()
	x, c := newDenormQuery(t, func(d *dqDepartment) keys.Filter { return keys.Prop("Departmnet").Eq(d.Name) })
	dqHire(t, x, "000100", "Sales")
	c.Reset()
	_, err := x.UpdateSource(ctx, "Contoso", "dept_Sales", func(d *dqDepartment) error { d.ManagerPhone = "555-0111"; return nil }, nil)
	if !errors.Is(err, tablekit.ErrInvalidFilter) || !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("a filter with a typo = %v, want ErrInvalidFilter", err)
	}
	requests(t, c, 1, "refusing the filter (read Sales; no query, no write)")
}

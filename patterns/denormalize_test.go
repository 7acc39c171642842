package patterns_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
)

// denormDepartment is the guide's department entity with the manager's
// details copied in.
type denormDepartment struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	Name         string
	ManagerID    string // the manager's RowKey
	ManagerName  string
	ManagerEmail string
}

func newDenormalization(t *testing.T) (*patterns.Denormalization[ixEmployee, denormDepartment], func(int64, string)) {
	t.Helper()
	acct, c := testenv.CountingAccount(t)
	x, err := patterns.NewDenormalization(acct, testenv.TableName(t),
		func(e *ixEmployee) []string { return []string{"DEPT"} },
		func(d *denormDepartment) string { return d.ManagerID },
		func(e *ixEmployee, d *denormDepartment) {
			if d.ManagerID == e.RowKey {
				d.ManagerName, d.ManagerEmail = e.FirstName+" "+e.LastName, e.Email
			}
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := x.Sources().CreateIfNotExists(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range []ixEmployee{
		ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34),
		ixEmp("Sales", "000100", "Ann", "Abbot", "abbota@contoso.com", 41),
	} {
		if err := x.Sources().Insert(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Targets().Insert(ctx, &denormDepartment{PartitionKey: "Sales", RowKey: "DEPT", Name: "Sales"}); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	return x, func(want int64, what string) { t.Helper(); requests(t, c, want, what) }
}

func TestDenormalizedManagerDetails(t *testing.T) {
	ctx := context.Background()
	x, requests := newDenormalization(t)

	if _, err := x.UpdateTarget(ctx, "Sales", "DEPT", func(d *denormDepartment) error { d.ManagerID = "empid_000223"; return nil }); err != nil {
		t.Fatal(err)
	}
	requests(3, "appointing a manager (read department, read manager, EGT)")
	d, err := x.Targets().Get(ctx, "Sales", "DEPT")
	if err != nil {
		t.Fatal(err)
	}
	requests(1, "reading the department with its manager's details")
	if d.ManagerName != "John Jones" || d.ManagerEmail != "jonesj@contoso.com" {
		t.Errorf("department = %+v", d)
	}

	if _, err := x.UpdateSource(ctx, "Sales", "empid_000223", func(e *ixEmployee) error { e.Email = "john.jones@contoso.com"; return nil }); err != nil {
		t.Fatal(err)
	}
	requests(3, "changing the manager's email (read manager, read department, EGT)")
	if d, _ := x.Targets().Get(ctx, "Sales", "DEPT"); d.ManagerEmail != "john.jones@contoso.com" {
		t.Errorf("the department still has %q", d.ManagerEmail)
	}
	// A change to another employee leaves the department's copy alone.
	if _, err := x.UpdateSource(ctx, "Sales", "empid_000100", func(e *ixEmployee) error { e.Email = "ann@contoso.com"; return nil }); err != nil {
		t.Fatal(err)
	}
	if d, _ := x.Targets().Get(ctx, "Sales", "DEPT"); d.ManagerEmail != "john.jones@contoso.com" {
		t.Errorf("another employee's change reached the department: %q", d.ManagerEmail)
	}
}

func TestDenormalizedCopyStaysConsistentUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	x, _ := newDenormalization(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for _, rk := range []string{"empid_000223", "empid_000100"} {
				if _, err := x.UpdateSource(ctx, "Sales", rk, func(e *ixEmployee) error { e.Email = fmt.Sprintf("v%d@contoso.com", i); return nil }); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			m := []string{"empid_000223", "empid_000100"}[i%2]
			if _, err := x.UpdateTarget(ctx, "Sales", "DEPT", func(d *denormDepartment) error { d.ManagerID = m; return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d, err := x.Targets().Get(ctx, "Sales", "DEPT")
	if err != nil {
		t.Fatal(err)
	}
	m, err := x.Sources().Get(ctx, "Sales", d.ManagerID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ManagerEmail != m.Email || d.ManagerName != m.FirstName+" "+m.LastName {
		t.Errorf("department copy %q/%q, manager %s has %q", d.ManagerName, d.ManagerEmail, m.RowKey, m.Email)
	}
}

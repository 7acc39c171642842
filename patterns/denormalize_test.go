package patterns_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
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
	if err := x.Sources().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, e := range []ixEmployee{
		ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34),
		ixEmp("Sales", "000100", "Ann", "Abbot", "abbota@contoso.com", 41),
	} {
		if err := x.Sources().Insert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Targets().Insert(ctx, &denormDepartment{PartitionKey: "Sales", RowKey: "DEPT", Name: "Sales"}, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	return x, func(want int64, what string) { t.Helper(); requests(t, c, want, what) }
}

func TestDenormalizedManagerDetails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, requests := newDenormalization(t)

	if _, err := x.UpdateTarget(ctx, "Sales", "DEPT", func(d *denormDepartment) error { d.ManagerID = "empid_000223"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(3, "appointing a manager (read department, read manager, EGT)")
	d, err := x.Targets().Get(ctx, "Sales", "DEPT", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(1, "reading the department with its manager's details")
	if d.ManagerName != "John Jones" || d.ManagerEmail != "jonesj@contoso.com" {
		t.Errorf("department = %+v", d)
	}

	if _, err := x.UpdateSource(ctx, "Sales", "empid_000223", func(e *ixEmployee) error { e.Email = "john.jones@contoso.com"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(3, "changing the manager's email (read manager, read department, EGT)")
	if d, _ := x.Targets().Get(ctx, "Sales", "DEPT", nil); d.ManagerEmail != "john.jones@contoso.com" {
		t.Errorf("the department still has %q", d.ManagerEmail)
	}
	// A change to another employee leaves the department's copy alone.
	if _, err := x.UpdateSource(ctx, "Sales", "empid_000100", func(e *ixEmployee) error { e.Email = "ann@contoso.com"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := x.Targets().Get(ctx, "Sales", "DEPT", nil); d.ManagerEmail != "john.jones@contoso.com" {
		t.Errorf("another employee's change reached the department: %q", d.ManagerEmail)
	}
}

func TestDenormalizedCopyStaysConsistentUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, _ := newDenormalization(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for _, rk := range []string{"empid_000223", "empid_000100"} {
				if _, err := x.UpdateSource(ctx, "Sales", rk, func(e *ixEmployee) error { e.Email = fmt.Sprintf("v%d@contoso.com", i); return nil }, nil); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			m := []string{"empid_000223", "empid_000100"}[i%2]
			if _, err := x.UpdateTarget(ctx, "Sales", "DEPT", func(d *denormDepartment) error { d.ManagerID = m; return nil }, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d, err := x.Targets().Get(ctx, "Sales", "DEPT", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := x.Sources().Get(ctx, "Sales", d.ManagerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.ManagerEmail != m.Email || d.ManagerName != m.FirstName+" "+m.LastName {
		t.Errorf("department copy %q/%q, manager %s has %q", d.ManagerName, d.ManagerEmail, m.RowKey, m.Email)
	}
}

// denormManager is a manager with the list of departments it manages
// (RowKeys joined with commas), the list Denormalization reads.
type denormManager struct {
	PartitionKey string
	RowKey       string
	Name         string
	Phone        string
	Departments  string
}

func (m *denormManager) departments() []string {
	if m.Departments == "" {
		return nil
	}
	return strings.Split(m.Departments, ",")
}

// TestDenormalizationThroughReassignments plays the guide's department and
// manager example through a sequence of reassignments and phone changes:
// after every step, each department shows its current manager's name and
// phone. The copy function has no guard of its own: UpdateSource must
// copy only into departments that still name the manager. With Link and
// Unlink, each manager's list also names exactly the departments it
// manages.
func TestDenormalizationThroughReassignments(t *testing.T) {
	t.Parallel()
	managers := []string{"mgr_mary", "mgr_bob", "mgr_sue"}
	depts := []string{"dept_Sales", "dept_Support", "dept_HR"}
	for _, linked := range []bool{false, true} {
		t.Run(map[bool]string{false: "fixed lists", true: "linked lists"}[linked], func(t *testing.T) {
			ctx := context.Background()
			// Without Link and Unlink every manager lists every
			// department: the lists say nothing, the departments decide.
			targets := func(*denormManager) []string { return depts }
			var opts *patterns.DenormalizationOptions[denormManager]
			if linked {
				targets = (*denormManager).departments
				opts = &patterns.DenormalizationOptions[denormManager]{
					Link: func(m *denormManager, rk string) {
						m.Departments = strings.Join(append(m.departments(), rk), ",")
					},
					Unlink: func(m *denormManager, rk string) {
						m.Departments = strings.Join(slices.DeleteFunc(m.departments(), func(d string) bool { return d == rk }), ",")
					},
				}
			}
			acct, c := testenv.CountingAccount(t)
			x, err := patterns.NewDenormalization(acct, testenv.TableName(t), targets,
				func(d *denormDepartment) string { return d.ManagerID },
				func(m *denormManager, d *denormDepartment) { d.ManagerName, d.ManagerEmail = m.Name, m.Phone },
				opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := x.Sources().CreateIfNotExists(ctx, nil); err != nil {
				t.Fatal(err)
			}
			for _, m := range managers {
				if err := x.Sources().Insert(ctx, &denormManager{PartitionKey: "Contoso", RowKey: m, Name: m[4:], Phone: "0"}, nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range depts {
				if err := x.Targets().Insert(ctx, &denormDepartment{PartitionKey: "Contoso", RowKey: d, Name: d[5:]}, nil); err != nil {
					t.Fatal(err)
				}
			}
			assign := func(dept, mgr string) {
				t.Helper()
				if _, err := x.UpdateTarget(ctx, "Contoso", dept, func(d *denormDepartment) error { d.ManagerID = mgr; return nil }, nil); err != nil {
					t.Fatalf("assign %s to %q: %v", dept, mgr, err)
				}
			}
			phone := func(mgr, p string) {
				t.Helper()
				if _, err := x.UpdateSource(ctx, "Contoso", mgr, func(m *denormManager) error { m.Phone = p; return nil }, nil); err != nil {
					t.Fatalf("phone of %s: %v", mgr, err)
				}
			}
			check := func(step string) {
				t.Helper()
				ms := map[string]denormManager{}
				lists := map[string][]string{}
				for _, m := range managers {
					v, err := x.Sources().Get(ctx, "Contoso", m, nil)
					if err != nil {
						t.Fatal(err)
					}
					ms[m] = v
				}
				for _, rk := range depts {
					d, err := x.Targets().Get(ctx, "Contoso", rk, nil)
					if err != nil {
						t.Fatal(err)
					}
					if d.ManagerID == "" {
						continue
					}
					lists[d.ManagerID] = append(lists[d.ManagerID], rk)
					if m := ms[d.ManagerID]; d.ManagerName != m.Name || d.ManagerEmail != m.Phone {
						t.Fatalf("after %s: %s shows %s/%s, its manager %s has %s/%s", step, rk, d.ManagerName, d.ManagerEmail, d.ManagerID, m.Name, m.Phone)
					}
				}
				if !linked {
					return
				}
				for _, m := range managers {
					v := ms[m]
					got := v.departments()
					slices.Sort(got)
					slices.Sort(lists[m])
					if !slices.Equal(got, lists[m]) {
						t.Fatalf("after %s: %s lists %q, but manages %q", step, m, got, lists[m])
					}
				}
			}

			// The scenario: Mary manages Sales, which moves to Bob;
			// Mary's later phone change must not reach Sales.
			c.Reset()
			assign("dept_Sales", "mgr_mary")
			requests(t, c, 3, "appointing Mary (read Sales, read Mary, EGT)")
			check("Mary manages Sales")
			c.Reset()
			assign("dept_Sales", "mgr_bob")
			if linked {
				requests(t, c, 4, "moving Sales to Bob (read Sales, Bob and Mary, EGT)")
			} else {
				requests(t, c, 3, "moving Sales to Bob (read Sales and Bob, EGT)")
			}
			check("Sales moves to Bob")
			phone("mgr_mary", "mary-2")
			check("Mary changes her phone")

			// Then any sequence: a fixed seed, so a failure replays.
			r := rand.New(rand.NewPCG(15, 1))
			for i := range 30 {
				var step string
				if r.IntN(2) == 0 {
					dept, mgr := depts[r.IntN(len(depts))], ""
					if n := r.IntN(len(managers) + 1); n < len(managers) {
						mgr = managers[n]
					}
					assign(dept, mgr)
					step = fmt.Sprintf("step %d: %s to %q", i, dept, mgr)
				} else {
					mgr := managers[r.IntN(len(managers))]
					phone(mgr, fmt.Sprint("p", i))
					step = fmt.Sprintf("step %d: phone of %s", i, mgr)
				}
				check(step)
			}
		})
	}
}

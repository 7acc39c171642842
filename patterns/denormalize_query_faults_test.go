package patterns_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The query-derived denormalizations in the conformance suite's modes
// (conformance_test.go: both transports, with and without injected
// faults): managers' phones change while employees move between
// departments, and in the end every counter is exact and every employee
// shows its own department's manager.

// cfqDepartment is a department whose Version counts its manager's phone
// changes; the phone follows it.
type cfqDepartment struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Name         string
	ManagerName  string
	ManagerPhone string
	Version      int
}

// cfqEmployee is an employee whose Moves counts its moves between Sales
// and Marketing, so its department follows from it.
type cfqEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Department   string // co-located: the department's Name
	DepartmentID string // eventual: keys.Join of the department's keys
	ManagerName  string
	ManagerPhone string
	Moves        int
}

var cfqDepts = []string{"Sales", "Marketing"}

const cfqStaff = 4

func cfqOther(dept string) string { return cfqDepts[(slices.Index(cfqDepts, dept)+1)%2] }

// cfqStart is employee i's first department.
func cfqStart(i int) string { return cfqDepts[i%2] }

// cfqDeptOfID is the department's name in an employee's DepartmentID.
func cfqDeptOfID(id string) string {
	if parts, err := keys.Split(id); err == nil && len(parts) == 2 {
		return parts[1]
	}
	return ""
}

func cfqIncPhone(d *cfqDepartment) error {
	d.Version++
	d.ManagerPhone = cfPhone(d.Version)
	return nil
}

// cfqModes are the conformance suite's modes these scenarios run in:
// each transport, each retry profile under faults, and one mode without
// faults, where the request budgets are checked; three of the six keep
// the test's time down.
var cfqModes = []string{"rest", "sdk-faults-fastretry", "rest-faults-defaultretry"}

// TestDenormalizationQueryConformance runs both scenarios in the modes of
// cfqModes, concurrently as TestConformance does.
func TestDenormalizationQueryConformance(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, 0)
	modes := slices.DeleteFunc(slices.Clone(cfModes), func(m cfMode) bool { return !slices.Contains(cfqModes, m.name) })
	if len(modes) != len(cfqModes) {
		t.Fatalf("cfqModes names %q; the suite's modes are %+v", cfqModes, cfModes)
	}
	slices.SortStableFunc(modes, func(a, b cfMode) int { return cmp.Compare(b.cost(), a.cost()) })
	for _, m := range modes {
		for _, r := range []struct {
			name   string
			run    func(e *cfEnv)
			worker bool
		}{{"Denormalization/TargetsWhere", cfqColocated, false}, {"EventualDenormalization/Where", cfqEventual, true}} {
			g.Run(m.name+"/"+r.name, func(t *testing.T) {
				e := newCfEnv(t, m, r.name, r.worker)
				r.run(e)
				e.finish()
			})
		}
	}
	g.Wait()
}

// cfqHammer changes each department's phone and moves each employee from
// two goroutines at once, and returns the tally of every key.
func cfqHammer(e *cfEnv, phone func(dept string) error, move func(rk string) error) map[string]*cfCounter {
	all := slices.Clone(cfqDepts)
	for i := range cfqStaff {
		all = append(all, fmt.Sprintf("emp_%03d", i))
	}
	return e.hammer(all, 2, e.n(3, 2), "denormalization query", func(k string) error {
		if slices.Contains(cfqDepts, k) {
			return phone(k)
		}
		return move(k)
	})
}

// cfqCheck checks the departments' and employees' counters against the
// tally and every employee's copy against its department, read through
// dept and emp once the faults are off.
func cfqCheck(e *cfEnv, tally map[string]*cfCounter, dept func(name string) (cfqDepartment, error), emp func(rk string) (cfqEmployee, error), deptOf func(*cfqEmployee) string) {
	e.t.Helper()
	for _, name := range cfqDepts {
		d, err := dept(name)
		e.must(err, "final department")
		tally[name].check(e, name+" Version", 0, d.Version)
		if d.ManagerPhone != cfPhone(d.Version) {
			e.t.Errorf("%s: phone %s does not follow Version %d", name, d.ManagerPhone, d.Version)
		}
	}
	for i := range cfqStaff {
		rk := fmt.Sprintf("emp_%03d", i)
		v, err := emp(rk)
		e.must(err, "final employee")
		tally[rk].check(e, rk+" Moves", 0, v.Moves)
		want := cfqStart(i)
		if v.Moves%2 == 1 {
			want = cfqOther(want)
		}
		if got := deptOf(&v); got != want {
			e.t.Errorf("%s moved %d times, is in %s, want %s", rk, v.Moves, got, want)
			continue
		}
		d, err := dept(want)
		e.must(err, "final department")
		if v.ManagerName != d.ManagerName || v.ManagerPhone != d.ManagerPhone {
			e.t.Errorf("%s of %s shows %s, %s; its manager is %s, %s", rk, want, v.ManagerName, v.ManagerPhone, d.ManagerName, d.ManagerPhone)
		}
	}
}

// cfqColocated: departments and employees in one partition, every change
// one transaction; the targets are the department's employees.
func cfqColocated(e *cfEnv) {
	ctx := e.ctx
	x, err := patterns.NewDenormalization(e.acct, testenv.TableName(e.t), nil,
		func(v *cfqEmployee) string { return "dept_" + v.Department },
		func(d *cfqDepartment, v *cfqEmployee) { v.ManagerName, v.ManagerPhone = d.ManagerName, d.ManagerPhone },
		&patterns.DenormalizationOptions[cfqDepartment]{Table: e.tableOpts(),
			TargetsWhere: func(d *cfqDepartment) keys.Filter { return keys.Prop("Department").Eq(d.Name) }})
	e.must(err, "NewDenormalization")
	e.setup(x.CreateIfNotExists)
	for i, name := range cfqDepts {
		d := cfqDepartment{PartitionKey: "Contoso", RowKey: "dept_" + name, Name: name, ManagerName: []string{"Mary", "Ken"}[i], ManagerPhone: cfPhone(0)}
		e.do(1, "insert a department", func() error { return x.Sources().Insert(ctx, &d, nil) }, cfExists(e, x.Sources().Get, d.PartitionKey, d.RowKey))
	}
	for i := range cfqStaff {
		dept := cfqStart(i)
		v := cfqEmployee{PartitionKey: "Contoso", RowKey: fmt.Sprintf("emp_%03d", i), Department: dept, ManagerName: map[string]string{"Sales": "Mary", "Marketing": "Ken"}[dept], ManagerPhone: cfPhone(0)}
		e.do(1, "insert an employee", func() error { return x.Targets().Insert(ctx, &v, nil) }, cfExists(e, x.Targets().Get, v.PartitionKey, v.RowKey))
	}
	phone := func(dept string) error {
		_, err := x.UpdateSource(ctx, "Contoso", "dept_"+dept, cfqIncPhone, nil)
		return err
	}
	move := func(rk string) error {
		_, err := x.UpdateTarget(ctx, "Contoso", rk, func(v *cfqEmployee) error { v.Moves++; v.Department = cfqOther(v.Department); return nil }, nil)
		return err
	}
	// Each verb alone within its budget first, then all at once.
	first := map[string]*cfCounter{"Sales": {}, "emp_000": {}}
	first["Sales"].add(e.outcome(e.cost(3, "UpdateSource (read, query, transaction)", func() error { return phone("Sales") }), "UpdateSource"))
	first["emp_000"].add(e.outcome(e.cost(3, "UpdateTarget (read, read the department, transaction)", func() error { return move("emp_000") }), "UpdateTarget"))
	tally := cfqHammer(e, phone, move)
	for k, c := range first {
		cfMerge(tally[k], c)
	}
	e.settle()
	cfqCheck(e, tally,
		func(name string) (cfqDepartment, error) { return x.Sources().Get(ctx, "Contoso", "dept_"+name, nil) },
		func(rk string) (cfqEmployee, error) { return x.Targets().Get(ctx, "Contoso", rk, nil) },
		func(v *cfqEmployee) string { return v.Department })
}

// cfqEventual: departments in one table, employees in another, the
// copies kept by the worker, which finds a department's employees with
// the query when it applies the intent. A move is followed, as a user
// would, by a Refresh of both departments once the moves are done; one
// phone change lands late, after its intent became visible.
func cfqEventual(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	emps, err := patterns.NewTable[cfqEmployee](e.acct, testenv.TableName(e.t), e.tableOpts())
	e.must(err, "NewTable")
	x, err := patterns.NewEventualDenormalizationWhere(e.acct, testenv.TableName(e.t), q, emps.Name(),
		func(d *cfqDepartment) keys.Filter { return keys.PK().Eq(d.PartitionKey) },
		map[string]string{"ManagerName": "ManagerName", "ManagerPhone": "ManagerPhone"},
		&patterns.EventualDenormalizationOptions{Link: "DepartmentID", Table: e.tableOpts()})
	e.must(err, "NewEventualDenormalizationWhere")
	e.setup(cfQueue(q), emps.CreateIfNotExists, x.Sources().CreateIfNotExists)
	w := e.startWorker(q)
	for i, name := range cfqDepts {
		d := cfqDepartment{PartitionKey: "Contoso", RowKey: name, Name: name, ManagerName: []string{"Mary", "Ken"}[i], ManagerPhone: cfPhone(0)}
		e.do(1, "insert a department", func() error { return x.Sources().Insert(ctx, &d, nil) }, cfExists(e, x.Sources().Get, d.PartitionKey, d.RowKey))
	}
	for i := range cfqStaff {
		v := cfqEmployee{PartitionKey: "Contoso", RowKey: fmt.Sprintf("emp_%03d", i), DepartmentID: keys.Join("Contoso", cfqStart(i))}
		e.do(1, "insert an employee", func() error { return emps.Insert(ctx, &v, nil) }, cfExists(e, emps.Get, v.PartitionKey, v.RowKey))
	}
	phone := func(dept string) error {
		_, err := x.UpdateSource(ctx, "Contoso", dept, cfqIncPhone, nil)
		return err
	}
	sales := &cfCounter{}
	e.lateWrite(x.Sources().Name())
	sales.add(e.outcome(e.cost(3, "UpdateSource (read, enqueue, write)", func() error { return phone("Sales") }), "UpdateSource"))
	tally := cfqHammer(e, phone,
		func(rk string) error {
			_, err := emps.Update(ctx, "Contoso", rk, func(v *cfqEmployee) error {
				v.Moves++
				v.DepartmentID = keys.Join("Contoso", cfqOther(cfqDeptOfID(v.DepartmentID)))
				return nil
			}, nil)
			return err
		})
	cfMerge(tally["Sales"], sales)
	for _, name := range cfqDepts {
		e.do(2, "Refresh (read, enqueue)", func() error { return x.Refresh(ctx, "Contoso", name, nil) }, nil)
	}
	e.settle()
	e.drain(w)
	cfqCheck(e, tally,
		func(name string) (cfqDepartment, error) { return x.Sources().Get(ctx, "Contoso", name, nil) },
		func(rk string) (cfqEmployee, error) { return emps.Get(ctx, "Contoso", rk, nil) },
		func(v *cfqEmployee) string { return cfqDeptOfID(v.DepartmentID) })
}

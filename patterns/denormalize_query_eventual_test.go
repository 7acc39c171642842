package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The guide's one-to-many example with departments and employees in
// different tables ("Separate entity types, different partitions, or
// tables"), employees denormalized with their department's manager's
// details, kept by the worker. An employee names its department in
// DepartmentID (keys.Join of the department's keys): the link.
type eqDepartment struct {
	PartitionKey string // the company
	RowKey       string // the department's name
	ManagerName  string
	ManagerPhone string
}

type eqEmployee struct {
	PartitionKey string // the company
	RowKey       string // "emp_" + id
	ETag         string
	DepartmentID string
	ManagerName  string
	ManagerPhone string
}

var eqProps = map[string]string{"ManagerName": "ManagerName", "ManagerPhone": "ManagerPhone"}

// eqCompany finds the department's employees in the company's partition
// of the employees table; the link picks the department's.
func eqCompany(d *eqDepartment) keys.Filter { return keys.PK().Eq(d.PartitionKey) }

// eqFixture is the departments and employees tables, a queue, and the
// denormalization over them, on a request-counting account of a service
// whose clock the test moves (testenv.ClockConnectionString).
type eqFixture struct {
	x         *patterns.EventualDenormalization[eqDepartment]
	emps      *patterns.Table[eqEmployee]
	c         *tablekit.RequestCounter
	qname     string
	container string
	cs        string            // the service's connection string
	acct      *tablekit.Account // on it, counting nothing
	clock     *testenv.Clock
}

func newEqFixture(t *testing.T) *eqFixture {
	t.Helper()
	ctx := context.Background()
	cs, clock := testenv.ClockConnectionString(t)
	acct, c := testenv.CountingAccountOn(t, cs)
	q, container := testQueue(t, acct)
	emps, err := patterns.NewTable[eqEmployee](acct, testenv.TableName(t), nil)
	must(t, err)
	x, err := patterns.NewEventualDenormalizationWhere(acct, testenv.TableName(t), q, emps.Name(), eqCompany, eqProps,
		&patterns.EventualDenormalizationOptions{Link: "DepartmentID", Delay: 100 * time.Millisecond})
	must(t, err)
	must(t, emps.CreateIfNotExists(ctx, nil))
	must(t, x.CreateIfNotExists(ctx, nil))
	for _, d := range []eqDepartment{
		{PartitionKey: "Contoso", RowKey: "Sales", ManagerName: "Mary", ManagerPhone: "555-0100"},
		{PartitionKey: "Contoso", RowKey: "Marketing", ManagerName: "Ken", ManagerPhone: "555-0200"},
	} {
		must(t, x.Sources().Insert(ctx, &d, nil))
	}
	c.Reset()
	return &eqFixture{x: x, emps: emps, c: c, qname: q.Name(), container: container, cs: cs, acct: testenv.AccountOn(t, cs, nil), clock: clock}
}

func (f *eqFixture) hire(t *testing.T, id, dept string) {
	t.Helper()
	must(t, f.emps.Insert(context.Background(), &eqEmployee{PartitionKey: "Contoso", RowKey: "emp_" + id, DepartmentID: keys.Join("Contoso", dept)}, nil))
}

func (f *eqFixture) move(t *testing.T, id, dept string) {
	t.Helper()
	_, err := f.emps.Update(context.Background(), "Contoso", "emp_"+id, func(e *eqEmployee) error { e.DepartmentID = keys.Join("Contoso", dept); return nil }, nil)
	must(t, err)
}

func (f *eqFixture) phone(t *testing.T, dept, p string) {
	t.Helper()
	_, err := f.x.UpdateSource(context.Background(), "Contoso", dept, func(d *eqDepartment) error { d.ManagerPhone = p; return nil }, nil)
	must(t, err)
}

// worker runs a worker on the fixture's queue until the test ends.
func (f *eqFixture) worker(t *testing.T) *consistency.Worker {
	t.Helper()
	w, err := consistency.NewWorker(f.acct, &consistency.WorkerOptions{
		Queues: []string{f.qname}, PollInterval: 50 * time.Millisecond, BlobContainer: f.container,
		Backoff: &consistency.Backoff{Delays: []time.Duration{0, 200 * time.Millisecond}}, Logger: slog.New(slog.DiscardHandler),
	})
	must(t, err)
	runWorker(t, w)
	return w
}

// mismatches lists the employees that do not show their own department's
// manager.
func (f *eqFixture) mismatches(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	depts := map[string]eqDepartment{}
	for d, err := range f.x.Sources().Query(ctx, keys.PK().Eq("Contoso"), nil) {
		must(t, err)
		depts[keys.Join(d.PartitionKey, d.RowKey)] = d
	}
	var bad []string
	n := 0
	for e, err := range f.emps.Query(ctx, keys.PK().Eq("Contoso"), nil) {
		must(t, err)
		n++
		if d := depts[e.DepartmentID]; e.ManagerName != d.ManagerName || e.ManagerPhone != d.ManagerPhone {
			bad = append(bad, fmt.Sprintf("%s of %s shows %q, %q; its manager is %s, %s", e.RowKey, e.DepartmentID, e.ManagerName, e.ManagerPhone, d.ManagerName, d.ManagerPhone))
		}
	}
	if n == 0 {
		t.Fatal("no employee found: the check proves nothing")
	}
	return bad
}

// converge waits for every employee to show its department's manager,
// once the intents' Delay (1 s) and a worker's backoff of at most 1 s
// have passed on the fixture's clock, where it moves; where it does not,
// it waits for them in real time.
func (f *eqFixture) converge(t *testing.T, what string) {
	t.Helper()
	f.clock.Advance(time.Second)
	var bad []string
	deadline := time.Now().Add(20 * time.Second)
	for bad = f.mismatches(t); len(bad) > 0 && time.Now().Before(deadline); bad = f.mismatches(t) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(bad) > 0 {
		t.Fatalf("%s: not converged in 20 s:\n%s", what, strings.Join(bad, "\n"))
	}
}

// TestEventualDenormalizationQueryEveryEmployee plays the guide's example
// with the worker: every employee of a department gets the manager's new
// phone, an employee moved to another department stops receiving it. The
// query runs in the worker's step, so an employee hired after the intent
// was enqueued gets the copy, and one moved away before the worker ran
// does not; a redelivered message writes nothing.
func TestEventualDenormalizationQueryEveryEmployee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEqFixture(t)
	for i, dept := range []string{"Sales", "Sales", "Sales", "Marketing", "Marketing"} {
		f.hire(t, fmt.Sprintf("00010%d", i), dept)
	}
	f.c.Reset()
	f.phone(t, "Sales", "555-0111")
	requests(t, f.c, 3, "UpdateSource (read, enqueue, write), whatever the number of employees")
	must(t, f.x.Refresh(ctx, "Contoso", "Marketing", nil))
	requests(t, f.c, 2, "Refresh (read, enqueue)")
	// Between enqueue and apply: John joins Sales, Ann leaves it.
	f.hire(t, "000223", "Sales")
	f.move(t, "000100", "Marketing")

	w := f.worker(t)
	f.converge(t, "the first phone change")
	testenv.WaitFor(t, 10*time.Second, "both intents applied", func() bool { return w.Metrics().Processed() >= 2 })
	for id, want := range map[string]string{"000223": "555-0111", "000100": "555-0200", "000101": "555-0111"} {
		if e, err := f.emps.Get(ctx, "Contoso", "emp_"+id, nil); err != nil || e.ManagerPhone != want {
			t.Errorf("emp_%s = %+v, %v; want phone %s", id, e, err, want)
		}
	}

	// John moves to Marketing; Mary's next phone reaches Sales only.
	f.move(t, "000223", "Marketing")
	must(t, f.x.Refresh(ctx, "Contoso", "Marketing", nil))
	f.phone(t, "Sales", "555-0122")
	f.converge(t, "John's move and Mary's next phone")
	testenv.WaitFor(t, 10*time.Second, "the intents applied", func() bool { return w.Metrics().Processed() >= 4 })
	if e, _ := f.emps.Get(ctx, "Contoso", "emp_000223", nil); e.ManagerName != "Ken" || e.ManagerPhone != "555-0200" {
		t.Errorf("John, moved to Marketing, shows %s, %s; want Ken, 555-0200", e.ManagerName, e.ManagerPhone)
	}
	if e, _ := f.emps.Get(ctx, "Contoso", "emp_000101", nil); e.ManagerPhone != "555-0122" {
		t.Errorf("an employee of Sales shows %s, want Mary's 555-0122", e.ManagerPhone)
	}

	// A redelivered (or late) message queries again and writes nothing:
	// every copy is already the source's.
	acct, c := testenv.CountingAccountOn(t, f.cs)
	tx := consistency.NewTransaction(consistency.CopyPropsWhere(consistency.CopyPropsWhereArgs{
		Source: consistency.EntityRef{Table: f.x.Sources().Name(), PartitionKey: "Contoso", RowKey: "Sales"},
		Table:  f.emps.Name(), Filter: "PartitionKey eq 'Contoso'", Props: eqProps,
		Link: "DepartmentID", LinkValue: keys.Join("Contoso", "Sales"),
	}))
	must(t, consistency.Apply(ctx, acct, tx, nil, nil))
	// The query, then per Sales employee (000101, 000102) a read of the
	// employee and one of the department.
	if got := c.Count(); got != 5 || strings.Contains(c.Requests(), "PUT") || strings.Contains(c.Requests(), "MERGE") || strings.Contains(c.Requests(), "POST") {
		t.Errorf("a redelivery took %d requests, want 5 reads and no write:\n%s", got, c.Requests())
	}
	if bad := f.mismatches(t); len(bad) > 0 {
		t.Errorf("after a redelivery:\n%s", strings.Join(bad, "\n"))
	}
}

// TestEventualDenormalizationQueryRefusals: the query variant needs its
// link, a query and a valid target table, and refuses a table scan
// without opt-in before it enqueues or writes anything.
func TestEventualDenormalizationQueryRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	q, err := consistency.NewQueue(acct, "eqrefused", nil)
	must(t, err)
	for name, build := range map[string]func() error{
		"no link": func() error {
			_, err := patterns.NewEventualDenormalizationWhere(acct, "eqsource", q, "eqtargets", eqCompany, eqProps, nil)
			return err
		},
		"no query": func() error {
			_, err := patterns.NewEventualDenormalizationWhere[eqDepartment](acct, "eqsource", q, "eqtargets", nil, eqProps, &patterns.EventualDenormalizationOptions{Link: "DepartmentID"})
			return err
		},
		"bad target table": func() error {
			_, err := patterns.NewEventualDenormalizationWhere(acct, "eqsource", q, "eq-targets", eqCompany, eqProps, &patterns.EventualDenormalizationOptions{Link: "DepartmentID"})
			return err
		},
		"reserved target property": func() error {
			_, err := patterns.NewEventualDenormalizationWhere(acct, "eqsource", q, "eqtargets", eqCompany, map[string]string{"ManagerName": "RowKey"}, &patterns.EventualDenormalizationOptions{Link: "DepartmentID"})
			return err
		},
	} {
		if err := build(); !errors.Is(err, tablekit.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	requests(t, c, 0, "refused constructors")

	f := newEqFixture(t)
	scan, err := patterns.NewEventualDenormalizationWhere(f.acct, f.x.Sources().Name(), mustQueue(t, f.acct, f.qname), f.emps.Name(),
		func(d *eqDepartment) keys.Filter {
			return keys.Prop("DepartmentID").Eq(keys.Join(d.PartitionKey, d.RowKey))
		}, eqProps,
		&patterns.EventualDenormalizationOptions{Link: "DepartmentID"})
	must(t, err)
	if _, err := scan.UpdateSource(ctx, "Contoso", "Sales", func(d *eqDepartment) error { d.ManagerPhone = "555-0111"; return nil }, nil); !errors.Is(err, tablekit.ErrTableScan) {
		t.Errorf("a table scan without AllowTableScan: %v, want ErrTableScan", err)
	}
	if d, _ := f.x.Sources().Get(ctx, "Contoso", "Sales", nil); d.ManagerPhone != "555-0100" {
		t.Errorf("the refused update wrote the source: %+v", d)
	}
	qd, err := mustQueue(t, f.acct, f.qname).Depth(ctx, nil)
	must(t, err)
	if qd.Messages != 0 {
		t.Errorf("the refused update enqueued %d messages", qd.Messages)
	}
}

func mustQueue(t *testing.T, acct *tablekit.Account, name string) *consistency.Queue {
	t.Helper()
	q, err := consistency.NewQueue(acct, name, nil)
	must(t, err)
	return q
}

package patterns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// lastNameList is the guide's index of employees by last name, with the
// guide's property name and the bare last name as RowKey ("Sales"/"Jones").
func lastNameList() patterns.ListIndex[ixEmployee] {
	return patterns.ListIndex[ixEmployee]{Name: "lastname", Property: "EmployeeIDs", Key: func(e *ixEmployee) string { return e.LastName }}
}

func newListIndexedTable(t *testing.T) (*patterns.ListIndexedTable[ixEmployee], *tablekit.RequestCounter) {
	t.Helper()
	return ixFixture(t, func(acct *tablekit.Account, table string) (*patterns.ListIndexedTable[ixEmployee], error) {
		return patterns.NewListIndexedTable(acct, table, lastNameList(), nil)
	})
}

// listIDs returns the sorted employee ids of es.
func listIDs(es []ixEmployee) string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.PartitionKey + "/" + e.EmployeeID
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}

// ixLookup fails the test when a list index lookup failed, took other
// than reqs requests, or did not return the employees want (listIDs).
func ixLookup(t *testing.T, c *tablekit.RequestCounter, reqs int64, what string, got []ixEmployee, err error, want string) {
	t.Helper()
	must(t, err)
	requests(t, c, reqs, what)
	if listIDs(got) != want {
		t.Errorf("%s = %s, want %s", what, listIDs(got), want)
	}
}

// ixUpdater is the update verb of the index repositories.
type ixUpdater interface {
	Update(ctx context.Context, pk, rk string, fn func(*ixEmployee) error, opts *patterns.UpdateOptions) (ixEmployee, error)
}

// ixRename changes an employee's last name through x, failing the test
// on error.
func ixRename(t *testing.T, x ixUpdater, pk, rk, last string) {
	t.Helper()
	_, err := x.Update(context.Background(), pk, rk, func(e *ixEmployee) error { e.LastName = last; return nil }, nil)
	must(t, err)
}

// ixInsertAll inserts es through insert, failing the test on error.
func ixInsertAll(t *testing.T, insert func(context.Context, *ixEmployee, *patterns.InsertOptions) error, es ...ixEmployee) {
	t.Helper()
	for _, e := range es {
		must(t, insert(context.Background(), &e, nil))
	}
}

// ixPlantList returns the body of an index entity whose list property
// prop holds 2,184 members of 12 characters: 15*2184+1 = 32,761 UTF-16
// units, just under the 32K limit of a string property.
func ixPlantList(pk, rk, prop string) []byte {
	members := make([]string, 2184)
	for i := range members {
		members[i] = fmt.Sprintf("member%06d", i)
	}
	list, _ := json.Marshal(members)
	body, _ := json.Marshal(map[string]string{"PartitionKey": pk, "RowKey": rk, prop: string(list)})
	return body
}

// rawIndexEntity reads an index entity's list property straight from the
// table.
func rawIndexEntity(t *testing.T, tbl *patterns.Table[ixEmployee], pk, rk, prop string) ([]string, bool) {
	t.Helper()
	resp, err := tbl.Client().GetEntity(context.Background(), pk, rk, nil)
	if err != nil {
		if tablekit.IsNotFound(tablekit.MapError(err, "get", rk)) {
			return nil, false
		}
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		t.Fatal(err)
	}
	var list []string
	if err := json.Unmarshal([]byte(m[prop].(string)), &list); err != nil {
		t.Fatal(err)
	}
	return list, true
}

func TestListIndexOption2GuideFlows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newListIndexedTable(t)
	ixInsertAll(t, x.Insert,
		ixEmp("Sales", "000100", "Ann", "Jones", "a@contoso.com", 41),
		ixEmp("Sales", "000120", "Bob", "Smith", "b@contoso.com", 30),
		ixEmp("HR", "000130", "Cid", "Jones", "c@contoso.com", 30))
	c.Reset()

	// The guide: add employee 000152, last name Jones, in Sales: read the
	// index entity, then one EGT inserting the employee and updating it.
	e := ixEmp("Sales", "000152", "Dan", "Jones", "d@contoso.com", 28)
	e.RowKey = "000152"
	must(t, x.Insert(ctx, &e, nil))
	requests(t, c, 2, "Insert (read index entity + EGT)")
	if list, _ := rawIndexEntity(t, x.Table(), "Sales", "Jones", "EmployeeIDs"); fmt.Sprint(list) != "[000152 empid_000100]" {
		t.Errorf(`index entity "Sales"/"Jones" EmployeeIDs = %v`, list)
	}
	c.Reset()

	// The guide's lookup: the index entity, then each employee.
	got, err := patterns.Collect(x.Find(ctx, "Sales", "Jones", nil))
	ixLookup(t, c, 1+2, "Lookup(Sales, Jones) of 2 Joneses", got, err, "Sales/000100 Sales/000152")
	if got, _ := patterns.Collect(x.Find(ctx, "Sales", "Nobody", nil)); len(got) != 0 {
		t.Errorf("Lookup of an unknown name = %v", got)
	}
	c.Reset()

	// The guide's last-name change: one EGT over the employee and the old
	// and new index entities, after reading all three.
	ixRename(t, x, "Sales", "empid_000100", "Smith")
	requests(t, c, 4, "last-name change (3 reads + EGT)")
	if list, _ := rawIndexEntity(t, x.Table(), "Sales", "Jones", "EmployeeIDs"); fmt.Sprint(list) != "[000152]" {
		t.Errorf("Jones after the change = %v", list)
	}
	if list, _ := rawIndexEntity(t, x.Table(), "Sales", "Smith", "EmployeeIDs"); fmt.Sprint(list) != "[empid_000100 empid_000120]" {
		t.Errorf("Smith after the change = %v", list)
	}
	c.Reset()
	if _, err := x.Update(ctx, "Sales", "empid_000100", func(e *ixEmployee) error { e.Age++; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "update that keeps the last name")

	// Delete removes the member; the last member takes the entity with it.
	if err := x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "000152"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "Delete")
	if _, found := rawIndexEntity(t, x.Table(), "Sales", "Jones", "EmployeeIDs"); found {
		t.Error("the empty Jones index entity is still there")
	}
	// Option 2 is per partition: HR's Jones is not Sales's.
	if got, _ := patterns.Collect(x.Find(ctx, "HR", "Jones", nil)); listIDs(got) != "HR/000130" {
		t.Errorf("Lookup(HR, Jones) = %s", listIDs(got))
	}
}

// ixRacingJoneses inserts n employees named Jones at once through insert,
// employee i in partition part(i), and returns what members then reads.
func ixRacingJoneses[M any](t *testing.T, n int, part func(i int) string, insert func(context.Context, *ixEmployee, *patterns.InsertOptions) error, members func(context.Context) ([]M, error)) []M {
	t.Helper()
	ctx := context.Background()
	concurrently(t, n, func(i int) error {
		return insert(ctx, ixPtr(ixEmp(part(i), fmt.Sprintf("%06d", i), "F", "Jones", "", 30)), nil)
	})
	m, err := members(ctx)
	must(t, err)
	return m
}

func TestListIndexOption2RacingWritersBothLand(t *testing.T) {
	t.Parallel()
	x, _ := newListIndexedTable(t)
	const n = 8
	m := ixRacingJoneses(t, n, func(int) string { return "Sales" }, x.Insert,
		func(ctx context.Context) ([]patterns.Member, error) { return x.Members(ctx, "Sales", "Jones", nil) })
	if len(m) != n {
		t.Errorf("after %d racing inserts the index lists %d: %v", n, len(m), m)
	}
}

func TestListIndexOption2LastNameChangesUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, _ := newListIndexedTable(t)
	const n = 6
	for i := range n {
		must(t, x.Insert(ctx, ixPtr(ixEmp("Sales", fmt.Sprintf("%06d", i), "F", "Jones", "", 30)), nil))
	}
	// Each employee changes name twice while the others do too, and one
	// employee is renamed by two writers at once.
	names := []string{"Smith", "Brown"}
	concurrently(t, n*len(names), func(j int) error {
		i, name := j/len(names), names[j%len(names)]
		_, err := x.Update(ctx, "Sales", fmt.Sprintf("empid_%06d", i), func(e *ixEmployee) error { e.LastName = name; return nil }, nil)
		return err
	})
	want := map[string][]string{}
	for i := range n {
		e, err := x.Get(ctx, "Sales", fmt.Sprintf("empid_%06d", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		want[e.LastName] = append(want[e.LastName], e.RowKey)
	}
	for _, name := range []string{"Jones", "Smith", "Brown"} {
		members, err := x.Members(ctx, "Sales", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m []string
		for _, mb := range members {
			m = append(m, mb.RowKey)
		}
		if fmt.Sprint(m) != fmt.Sprint(want[name]) && !(len(m) == 0 && len(want[name]) == 0) {
			t.Errorf("index %s lists %v; the employees say %v", name, m, want[name])
		}
	}
}

func TestListIndexOption2RefusesAListPastTheEntityLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newListIndexedTable(t)
	// Plant a Jones list just under the 32K UTF-16 limit.
	if _, err := x.Table().Client().AddEntity(ctx, ixPlantList("Sales", "Jones", "EmployeeIDs"), nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	e := ixEmp("Sales", "000152", "Dan", "Jones", "", 28)
	err := x.Insert(ctx, &e, nil)
	var tooLarge *patterns.ListTooLargeError
	if !errors.Is(err, patterns.ErrListTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Members != 2185 || !strings.Contains(err.Error(), "NewBlobIndexedTable") {
		t.Fatalf("Insert past the limit = %v, want a *ListTooLargeError pointing to the blob index", err)
	}
	requests(t, c, 1, "refused Insert (index read only)")
	if _, err := x.Get(ctx, "Sales", "empid_000152", nil); !tablekit.IsNotFound(err) {
		t.Errorf("the refused employee was written: %v", err)
	}
}

func newBlobIndexedTable(t *testing.T) (*patterns.BlobIndexedTable[ixEmployee], *tablekit.RequestCounter) {
	t.Helper()
	return ixFixture(t, func(acct *tablekit.Account, table string) (*patterns.BlobIndexedTable[ixEmployee], error) {
		return patterns.NewBlobIndexedTable(acct, table, testenv.ContainerName(t), lastNameList(), nil)
	})
}

func TestListIndexOption1BlobFlows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, c := newBlobIndexedTable(t)
	ixInsertAll(t, x.Insert, ixEmp("Sales", "000152", "Dan", "Jones", "", 28))
	requests(t, c, 3, "first Insert (read blob, create blob, insert)")
	ixInsertAll(t, x.Insert, ixEmp("HR", "000130", "Cid", "Jones", "", 30), ixEmp("Sales", "000120", "Bob", "Smith", "", 30))
	c.Reset()

	// Option 1 answers across departments.
	got, err := patterns.Collect(x.Find(ctx, "Jones", nil))
	ixLookup(t, c, 1+2, "Lookup(Jones) of 2 Joneses", got, err, "HR/000130 Sales/000152")

	// A last-name change moves the member between blobs.
	ixRename(t, x, "HR", "empid_000130", "Smith")
	requests(t, c, 6, "last-name change")
	if got, _ := patterns.Collect(x.Find(ctx, "Smith", nil)); listIDs(got) != "HR/000130 Sales/000120" {
		t.Errorf("Lookup(Smith) = %s", listIDs(got))
	}
	if m, _ := x.Members(ctx, "Jones", nil); len(m) != 1 {
		t.Errorf("Jones members after the change = %v", m)
	}
	c.Reset()
	if err := x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "empid_000152"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 4, "Delete")
	if m, _ := x.Members(ctx, "Jones", nil); len(m) != 0 {
		t.Errorf("Jones members after delete = %v", m)
	}

	// A write that crashed after listing leaves a stale member; Lookup
	// re-checks each entity's value and skips it.
	ghost := ixEmp("Sales", "000999", "Gus", "Brown", "", 30)
	if err := x.Table().Insert(ctx, &ghost, nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Insert(ctx, ixPtr(ixEmp("Sales", "000500", "Eve", "Smith", "", 30)), nil); err != nil {
		t.Fatal(err)
	}
	// list the Brown employee under Smith, as a crashed rename would.
	ixRename(t, x, "Sales", "empid_000999", "Smith")
	if err := x.Table().Replace(ctx, &ghost, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if m, _ := x.Members(ctx, "Smith", nil); len(m) != 4 {
		t.Fatalf("Smith members = %v, want the stale one listed", m)
	}
	if got, _ := patterns.Collect(x.Find(ctx, "Smith", nil)); listIDs(got) != "HR/000130 Sales/000120 Sales/000500" {
		t.Errorf("Lookup(Smith) with a stale member = %s", listIDs(got))
	}
}

func TestListIndexOption1RacingWritersBothLand(t *testing.T) {
	t.Parallel()
	x, _ := newBlobIndexedTable(t)
	const n = 8
	m := ixRacingJoneses(t, n, func(i int) string { return fmt.Sprintf("D%d", i%3) }, x.Insert,
		func(ctx context.Context) ([]patterns.Member, error) { return x.Members(ctx, "Jones", nil) })
	if len(m) != n || !slices.IsSortedFunc(m, func(a, b patterns.Member) int {
		return strings.Compare(a.PartitionKey+"/"+a.RowKey, b.PartitionKey+"/"+b.RowKey)
	}) {
		t.Errorf("after %d racing inserts the blob lists %v", n, m)
	}
}

func ixPtr[V any](v V) *V { return &v }

func newEventualListIndexedTable(t *testing.T) (*patterns.EventualListIndexedTable[ixEmployee], *interFixture) {
	t.Helper()
	cs, clock := testenv.ClockConnectionString(t)
	acct, counter := testenv.CountingAccountOn(t, cs)
	f := &interFixture{counter: counter, worker: testenv.AccountOn(t, cs, nil), clock: clock}
	f.q, f.container = testQueue(t, acct)
	ix := lastNameList()
	ix.Table = testenv.TableName(t)
	f.idTable = ix.Table
	x, err := patterns.NewEventualListIndexedTable(acct, testenv.TableName(t), f.q, ix, nil)
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	counter.Reset()
	return x, f
}

func TestListIndexOption3KeptByTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, f := newEventualListIndexedTable(t)
	c := f.counter
	if err := x.Insert(ctx, ixPtr(ixEmp("Sales", "000152", "Dan", "Jones", "", 28)), nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "Insert (read index entity, enqueue, insert)")
	ixInsertAll(t, x.Insert, ixEmp("HR", "000130", "Cid", "Jones", "", 30), ixEmp("Sales", "000120", "Bob", "Smith", "", 30))
	// Two writers at once on the same index entity.
	concurrently(t, 2, func(i int) error {
		return x.Insert(ctx, ixPtr(ixEmp("IT", fmt.Sprintf("%06d", 500+i), "R", "Jones", "", 30)), nil)
	})
	f.startWorker(t)
	f.wait(t, "the worker to list the Joneses", func() bool {
		m, err := x.Members(ctx, "Jones", nil)
		return err == nil && len(m) == 4
	})
	c.Reset()
	got, err := patterns.Collect(x.Find(ctx, "Jones", nil))
	ixLookup(t, c, 1+4, "Lookup(Jones) of 4 Joneses", got, err, "HR/000130 IT/000500 IT/000501 Sales/000152")

	// A last-name change: Lookup stops returning the entity at once, the
	// lists follow when the worker runs.
	ixRename(t, x, "HR", "empid_000130", "Smith")
	requests(t, c, 4, "last-name change (read, read new index entity, enqueue, write)")
	if got, _ := patterns.Collect(x.Find(ctx, "Jones", nil)); len(got) != 3 {
		t.Errorf("Lookup(Jones) right after the change = %s", listIDs(got))
	}
	f.wait(t, "the lists to follow the change", func() bool {
		j, _ := x.Members(ctx, "Jones", nil)
		s, _ := x.Members(ctx, "Smith", nil)
		return len(j) == 3 && len(s) == 2
	})
	// Late, duplicated deliveries of the first intent (list HR/000130 under
	// Jones) change nothing: the step re-reads the entity.
	late := consistency.IndexList(consistency.IndexListArgs{
		Index:    consistency.EntityRef{Table: f.idTable, PartitionKey: "lastname", RowKey: "Jones"},
		Property: "EmployeeIDs", Member: keys.Join("HR", "empid_000130"),
		Source: consistency.EntityRef{Table: x.Table().Name(), PartitionKey: "HR", RowKey: "empid_000130"},
		Where:  "TkListlastname", Equals: json.RawMessage(`"Jones"`),
	})
	for range 2 {
		if err := consistency.Apply(ctx, f.worker, consistency.NewTransaction(late), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if j, _ := x.Members(ctx, "Jones", nil); len(j) != 3 {
		t.Errorf("a late delivery relisted the renamed employee: %v", j)
	}
	if err := x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "empid_000152"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the delete to unlist", func() bool {
		j, _ := x.Members(ctx, "Jones", nil)
		return len(j) == 2 && f.queueEmpty(t)
	})
}

func TestListIndexOption3RefusesAListPastTheEntityLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	x, f := newEventualListIndexedTable(t)
	it, err := f.worker.Table(f.idTable)
	must(t, err)
	if _, err := it.AddEntity(ctx, ixPlantList("lastname", "Jones", "EmployeeIDs"), nil); err != nil {
		t.Fatal(err)
	}
	err = x.Insert(ctx, ixPtr(ixEmp("Sales", "000152", "Dan", "Jones", "", 28)), nil)
	if !errors.Is(err, patterns.ErrListTooLarge) || !strings.Contains(err.Error(), "NewBlobIndexedTable") {
		t.Fatalf("Insert past the limit = %v, want ErrListTooLarge pointing to the blob index", err)
	}
	if _, err := x.Table().Get(ctx, "Sales", "empid_000152", nil); !tablekit.IsNotFound(err) {
		t.Errorf("the refused employee was written: %v", err)
	}
}

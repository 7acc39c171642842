package patterns_test

// The conformance suite's scenarios, one per repository (see
// conformance_test.go for the harness and the modes). Each uses the
// guide's own example where the repository's tests have one.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// cfEmployee is the guide's employee (ixEmployee); Age is the counter the
// scenarios increment through each repository's update verb.
type cfEmployee = ixEmployee

func cfEmp(dept string, i int, last string) cfEmployee {
	id := fmt.Sprintf("%06d", 100+i)
	return cfEmployee{PartitionKey: dept, RowKey: "empid_" + id, EmployeeID: id, FirstName: fmt.Sprint("First", i), LastName: last, Email: fmt.Sprintf("e%d@contoso.com", i)}
}

func cfKey(pk, rk string) string { return pk + "/" + rk }

// cfModel is the state a scenario expects: employees by cfKey, and the
// counters whose Age may lie in a range.
type cfModel struct {
	rows     map[string]cfEmployee
	counters map[string]*cfCounter
}

func newCfModel() *cfModel {
	return &cfModel{rows: map[string]cfEmployee{}, counters: map[string]*cfCounter{}}
}

func (m *cfModel) put(v cfEmployee) {
	v.ETag, v.Timestamp = "", time.Time{}
	m.rows[cfKey(v.PartitionKey, v.RowKey)] = v
}

func (m *cfModel) del(pk, rk string) { delete(m.rows, cfKey(pk, rk)) }

// counter makes the Age of (pk, rk) a counter and returns its tally.
func (m *cfModel) counter(pk, rk string) *cfCounter {
	k := cfKey(pk, rk)
	if m.counters[k] == nil {
		m.counters[k] = &cfCounter{}
	}
	return m.counters[k]
}

// keys returns the model's keys in order.
func (m *cfModel) keys() []string {
	out := make([]string, 0, len(m.rows))
	for k := range m.rows {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// with returns the keys of the employees matching f, sorted.
func (m *cfModel) with(f func(v cfEmployee) bool) []string {
	var out []string
	for _, k := range m.keys() {
		if f(m.rows[k]) {
			out = append(out, k)
		}
	}
	return out
}

// check compares the stored employees with the model: none missing, none
// extra, every field as written, and counters within their tallies.
func (m *cfModel) check(e *cfEnv, what string, got []cfEmployee) {
	e.t.Helper()
	seen := map[string]bool{}
	for _, g := range got {
		k := cfKey(g.PartitionKey, g.RowKey)
		if seen[k] {
			e.t.Errorf("%s: %s returned twice", what, k)
		}
		seen[k] = true
		w, ok := m.rows[k]
		if !ok {
			e.t.Errorf("%s: %s is stored but was deleted or never written: %+v", what, k, g)
			continue
		}
		m.checkOne(e, what, w, g)
	}
	for _, k := range m.keys() {
		if !seen[k] {
			e.t.Errorf("%s: %s was written and is lost", what, k)
		}
	}
}

// checkOne compares one stored employee (or a copy of it, with props
// projected) with the model.
func (m *cfModel) checkOne(e *cfEnv, what string, w, g cfEmployee) {
	e.t.Helper()
	k := cfKey(w.PartitionKey, w.RowKey)
	if g.EmployeeID != w.EmployeeID || g.FirstName != w.FirstName || g.LastName != w.LastName || g.Email != w.Email {
		e.t.Errorf("%s: %s = %+v, want %+v", what, k, g, w)
	}
	if c := m.counters[k]; c != nil {
		c.check(e, what+": "+k+" Age", w.Age, g.Age)
	} else if g.Age != w.Age {
		e.t.Errorf("%s: %s Age = %d, want %d", what, k, g.Age, w.Age)
	}
}

// cfRows reads a partition's stored rows as dynamic entities through the
// plain account, so that nothing the repository hides is missed.
func cfRows(e *cfEnv, table, pk string) []entity.Entity {
	e.t.Helper()
	raw, err := patterns.NewTable[entity.Entity](e.plain, table, nil)
	e.must(err, "raw table")
	rows, err := patterns.Collect(raw.Query(e.ctx, keys.PK().Eq(pk), &patterns.QueryOptions{SelectAll: true}))
	e.must(err, "raw rows of "+table+"/"+pk)
	return rows
}

func cfRowKeys(rows []entity.Entity) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.RowKey
	}
	return out
}

func cfEmployeeKeys(es []cfEmployee) []string {
	out := make([]string, len(es))
	for i, v := range es {
		out[i] = cfKey(v.PartitionKey, v.RowKey)
	}
	sort.Strings(out)
	return out
}

func cfMemberKeys(ms []patterns.Member) []string {
	out := make([]string, len(ms))
	for i, v := range ms {
		out[i] = cfKey(v.PartitionKey, v.RowKey)
	}
	sort.Strings(out)
	return out
}

func cfSame(a, b []string) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 }

// cfExists and cfGone are the reads a caller makes after an unknown
// outcome.
func cfExists[T any](e *cfEnv, get func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (T, error), pk, rk string) func() bool {
	return func() bool { return cfRead(get, e.ctx, pk, rk) == nil }
}

func cfGone[T any](e *cfEnv, get func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (T, error), pk, rk string) func() bool {
	return func() bool { return errors.Is(cfRead(get, e.ctx, pk, rk), tablekit.ErrNotFound) }
}

// cfRead reads (pk, rk) as a caller settling an unknown outcome does:
// again after a transient failure.
func cfRead[T any](get func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (T, error), ctx context.Context, pk, rk string) error {
	var err error
	for range 5 {
		if _, err = get(ctx, pk, rk, nil); !tablekit.IsTransient(err) {
			return err
		}
	}
	return err
}

// cfIncAge is the update every scenario's counters go through.
func cfIncAge(v *cfEmployee) error { v.Age++; return nil }

// Table[T]: the typed repository, every verb.
func cfTable(e *cfEnv) {
	ctx := e.ctx
	tbl, err := patterns.NewTable[cfEmployee](e.acct, testenv.TableName(e.t), e.tableOpts())
	e.must(err, "NewTable")
	e.setup(tbl.CreateIfNotExists)
	m := newCfModel()
	n := e.n(8, 8)
	for i := range n {
		v := cfEmp("Sales", i, "Jones")
		if e.do(1, "Insert "+v.RowKey, func() error { return tbl.Insert(ctx, &v, nil) }, cfExists(e, tbl.Get, v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	for _, k := range m.keys() {
		w := m.rows[k]
		e.read(1, "Get "+k, func() error {
			g, err := tbl.Get(ctx, w.PartitionKey, w.RowKey, nil)
			if err == nil && g.FirstName != w.FirstName {
				e.t.Errorf("Get %s = %+v", k, g)
			}
			return err
		})
	}
	e.read(1, "Query of one partition", func() error {
		got, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("Sales"), nil))
		if err == nil && len(got) != len(m.rows) {
			e.t.Errorf("Query: %d rows, want %d", len(got), len(m.rows))
		}
		return err
	})
	var token string
	e.read(1, "first Page", func() error {
		p, err := tbl.Page(ctx, keys.PK().Eq("Sales"), "", &patterns.QueryOptions{Top: 2})
		token = p.Token
		return err
	})
	e.read(1, "next Page", func() error {
		_, err := tbl.Page(ctx, keys.PK().Eq("Sales"), token, &patterns.QueryOptions{Top: 2})
		return err
	})

	// Conditional replace and merge of entities read first.
	for i, mode := range []string{"Replace", "Merge"} {
		v := cfEmp("Sales", i, "Jones")
		var cur cfEmployee
		e.read(1, "Get before "+mode, func() error { cur, err = tbl.Get(ctx, v.PartitionKey, v.RowKey, nil); return err })
		cur.FirstName = mode + "d"
		write := tbl.Replace
		if mode == "Merge" {
			write = tbl.Merge
		}
		if e.do(1, mode, func() error { return write(ctx, &cur, nil) }, func() bool {
			g, err := tbl.Get(ctx, v.PartitionKey, v.RowKey, nil)
			return err == nil && g.FirstName == cur.FirstName
		}) {
			m.put(cur)
		}
	}
	// Upserts: a new entity, then a merge into it.
	up := cfEmp("Sales", n, "Upserted")
	if e.do(1, "Upsert (insert)", func() error { return tbl.Upsert(ctx, &up, nil) }, nil) {
		m.put(up)
	}
	up.Email = "upserted@contoso.com"
	if e.do(1, "Upsert (merge)", func() error { return tbl.Upsert(ctx, &up, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}) }, nil) {
		m.put(up)
	}
	// A strict transaction in another partition.
	tx := tbl.Transaction()
	var txRows []cfEmployee
	for i := range 3 {
		v := cfEmp("Tx", i, "Batch")
		txRows = append(txRows, v)
		tx.Insert(&v)
	}
	if e.do(1, "Transaction of 3 inserts", func() error { _, err := tx.Submit(ctx, nil); return err }, cfExists(e, tbl.Get, "Tx", txRows[0].RowKey)) {
		for _, v := range txRows {
			m.put(v)
		}
	}

	// Counters: one update within budget, then concurrent ones.
	counters := []string{cfEmp("Sales", 2, "").RowKey, cfEmp("Sales", 3, "").RowKey}
	for _, rk := range counters {
		m.counter("Sales", rk)
	}
	m.counter("Sales", counters[0]).add(e.outcome(e.cost(2, "Update", func() error {
		_, err := tbl.Update(ctx, "Sales", counters[0], cfIncAge, nil)
		return err
	}), "Update"))
	tally := e.hammer(counters, 6, e.n(10, 8), "Table.Update", func(rk string) error {
		_, err := tbl.Update(ctx, "Sales", rk, cfIncAge, nil)
		return err
	})
	for rk, c := range tally {
		cfMerge(m.counter("Sales", rk), c)
	}

	// Deletes: conditional, then whatever the version.
	del := cfEmp("Sales", n-1, "")
	var cur cfEmployee
	e.read(1, "Get before Delete", func() error { cur, err = tbl.Get(ctx, del.PartitionKey, del.RowKey, nil); return err })
	if e.do(1, "Delete", func() error { return tbl.Delete(ctx, &cur, nil) }, cfGone(e, tbl.Get, del.PartitionKey, del.RowKey)) {
		m.del(del.PartitionKey, del.RowKey)
	}
	if e.do(1, "DeleteIfExists", func() error { _, err := tbl.DeleteIfExists(ctx, "Tx", txRows[1].RowKey, nil); return err }, nil) {
		m.del("Tx", txRows[1].RowKey)
	}

	e.settle()
	var got []cfEmployee
	for _, pk := range []string{"Sales", "Tx"} {
		rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq(pk), nil))
		e.must(err, "final query")
		got = append(got, rows...)
	}
	m.check(e, "Table", got)
}

// cfMerge adds the tally b to a.
func cfMerge(a, b *cfCounter) {
	if a == b {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied += b.applied
	a.maybe += b.maybe
}

// cfDepartment is the guide's department: the heterogeneous partition's
// other kind, and the target of the denormalization patterns.
type cfDepartment struct {
	PartitionKey     string
	RowKey           string
	ETag             string
	DepartmentName   string
	EmployeeCount    int
	ManagerID        string
	ManagerFirstName string
	ManagerPhone     string
	Headcount        int // the counter of the denormalization scenarios
}

// MixedTable: departments and employees in one partition (the guide's
// heterogeneous entity types). It has Insert, Upsert, Get and Query; no
// update or delete verb.
func cfMixedTable(e *cfEnv) {
	ctx := e.ctx
	reg := entity.NewRegistry(nil)
	e.must(reg.Register(entity.Kind{Name: "Department", Version: 1}, cfDepartment{}), "register")
	e.must(reg.Register(entity.Kind{Name: "Employee", Version: 2}, cfEmployee{}), "register")
	mt, err := patterns.NewMixedTable(e.acct, testenv.TableName(e.t), reg, &patterns.MixedTableOptions{Table: e.tableOpts()})
	e.must(err, "NewMixedTable")
	e.setup(mt.CreateIfNotExists)
	exists := func(pk, rk string) func() bool {
		return func() bool { _, err := mt.Get(ctx, pk, rk, nil); return err == nil }
	}
	dept := cfDepartment{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", ManagerFirstName: "Mary"}
	deptOK := e.do(1, "Insert department", func() error { return mt.Insert(ctx, &dept, nil) }, exists("Sales", "Department"))
	m := newCfModel()
	n := e.n(8, 8)
	for i := range n {
		v := cfEmp("Sales", i, "Cao")
		if e.do(1, "Insert employee", func() error { return mt.Insert(ctx, &v, nil) }, exists(v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	for _, k := range m.keys() {
		w := m.rows[k]
		e.read(1, "Get "+k, func() error {
			v, err := mt.Get(ctx, w.PartitionKey, w.RowKey, nil)
			if g, ok := v.(*cfEmployee); err == nil && (!ok || g.FirstName != w.FirstName) {
				e.t.Errorf("Get %s = %#v", k, v)
			}
			return err
		})
	}
	dept.EmployeeCount = len(m.rows)
	if e.do(1, "Upsert department", func() error { return mt.Upsert(ctx, &dept, nil) }, nil) {
		deptOK = true
	}
	for _, k := range m.keys() {
		ch := m.rows[k]
		ch.LastName = "Hall"
		if e.do(1, "Upsert employee", func() error { return mt.Upsert(ctx, &ch, nil) }, nil) {
			m.put(ch)
		}
	}
	e.read(1, "Query of the partition", func() error {
		_, err := patterns.Collect(mt.Query(ctx, keys.PK().Eq("Sales"), nil))
		return err
	})

	e.settle()
	rows, err := patterns.Collect(mt.Query(ctx, keys.PK().Eq("Sales"), nil))
	e.must(err, "final query")
	var emps []cfEmployee
	depts := 0
	for _, r := range rows {
		switch v := r.(type) {
		case *cfEmployee:
			emps = append(emps, *v)
		case *cfDepartment:
			depts++
			v.ETag = ""
			if *v != (cfDepartment{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", ManagerFirstName: "Mary", EmployeeCount: dept.EmployeeCount}) {
				e.t.Errorf("MixedTable: department = %+v", v)
			}
		default:
			e.t.Errorf("MixedTable: a row decoded as %T", r)
		}
	}
	if deptOK && depts != 1 {
		e.t.Errorf("MixedTable: %d departments stored, want 1", depts)
	}
	m.check(e, "MixedTable", emps)
}

// cfEmailIndex is the guide's unique email index, its copies without Age.
func cfEmailIndex() patterns.Index[cfEmployee] {
	return patterns.Index[cfEmployee]{Name: "email", Unique: true, Key: func(v *cfEmployee) string { return v.Email },
		Props: []string{"EmployeeID", "FirstName", "LastName", "Email"}}
}

func cfLastNameIndex() patterns.Index[cfEmployee] {
	return patterns.Index[cfEmployee]{Name: "lastname", Key: func(v *cfEmployee) string { return v.LastName }}
}

// IndexedTable: the intra-partition secondary index, primary and copies in
// one transaction.
func cfIndexedTable(e *cfEnv) {
	ctx := e.ctx
	name := testenv.TableName(e.t)
	x, err := patterns.NewIndexedTable(e.acct, name, []patterns.Index[cfEmployee]{cfEmailIndex(), cfLastNameIndex()},
		&patterns.IndexedTableOptions{Primary: "empid", Table: e.tableOpts()})
	e.must(err, "NewIndexedTable")
	e.setup(x.CreateIfNotExists)
	m := newCfModel()
	n := e.n(8, 8)
	for i := range n {
		v := cfEmp("Sales", i, []string{"Jones", "Smith"}[i%2])
		if e.do(1, "Insert "+v.RowKey, func() error { return x.Insert(ctx, &v, nil) }, cfExists(e, x.Get, v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	e.read(1, "Lookup by email", func() error { _, err := x.Lookup(ctx, "email", "Sales", "e0@contoso.com", nil); return err })
	e.read(1, "Lookup by id", func() error { _, err := x.Lookup(ctx, "empid", "Sales", "000100", nil); return err })
	e.read(1, "Find by last name", func() error {
		_, err := patterns.Collect(x.Find(ctx, "lastname", "Sales", "Jones", nil))
		return err
	})

	// Value changes: an email, a last name.
	for i, change := range []func(v *cfEmployee){
		func(v *cfEmployee) { v.Email = "moved0@contoso.com" },
		func(v *cfEmployee) { v.LastName = "Brown" },
	} {
		k := cfKey("Sales", cfEmp("Sales", i, "").RowKey)
		want := m.rows[k]
		change(&want)
		if e.do(2, "Update that changes an indexed value", func() error {
			_, err := x.Update(ctx, want.PartitionKey, want.RowKey, func(v *cfEmployee) error { change(v); return nil }, nil)
			return err
		}, func() bool {
			g, err := x.Get(ctx, want.PartitionKey, want.RowKey, nil)
			return err == nil && g.Email == want.Email && g.LastName == want.LastName
		}) {
			m.put(want)
		}
	}
	counters := []string{cfEmp("Sales", 2, "").RowKey, cfEmp("Sales", 3, "").RowKey}
	m.counter("Sales", counters[0]).add(e.outcome(e.cost(2, "Update", func() error {
		_, err := x.Update(ctx, "Sales", counters[0], cfIncAge, nil)
		return err
	}), "Update"))
	for rk, c := range e.hammer(counters, 6, e.n(8, 6), "IndexedTable.Update", func(rk string) error {
		_, err := x.Update(ctx, "Sales", rk, cfIncAge, nil)
		return err
	}) {
		cfMerge(m.counter("Sales", rk), c)
	}
	del := cfEmp("Sales", n-1, "")
	if e.do(2, "Delete", func() error {
		return x.Delete(ctx, &cfEmployee{PartitionKey: del.PartitionKey, RowKey: del.RowKey}, &patterns.WriteOptions{Unconditional: true})
	}, cfGone(e, x.Get, del.PartitionKey, del.RowKey)) {
		m.del(del.PartitionKey, del.RowKey)
	}

	e.settle()
	prim, err := patterns.Collect(x.Prefix(ctx, "empid", "Sales", "", nil))
	e.must(err, "final primaries")
	m.check(e, "IndexedTable primaries", prim)
	for _, k := range m.keys() {
		w := m.rows[k]
		g, err := x.Lookup(ctx, "email", w.PartitionKey, w.Email, nil)
		if err != nil || g.RowKey != w.RowKey || g.FirstName != w.FirstName || g.LastName != w.LastName {
			e.t.Errorf("IndexedTable: Lookup by email %s = %+v, %v; want %s", w.Email, g, err, k)
		}
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "e0@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t := e.t
		t.Errorf("IndexedTable: the old email's copy is still found: %v", err)
	}
	for _, last := range []string{"Jones", "Smith", "Brown"} {
		copies, err := patterns.Collect(x.Find(ctx, "lastname", "Sales", last, nil))
		e.must(err, "Find")
		want := m.with(func(v cfEmployee) bool { return v.LastName == last })
		if got := cfEmployeeKeys(copies); !cfSame(got, want) {
			e.t.Errorf("IndexedTable: Find lastname %s = %v, want %v", last, got, want)
		}
		for _, c := range copies {
			if w, ok := m.rows[cfKey(c.PartitionKey, c.RowKey)]; ok {
				m.checkOne(e, "IndexedTable lastname copy", w, c)
			}
		}
	}
	if rows := cfRows(e, name, "Sales"); len(rows) != 3*len(m.rows) {
		e.t.Errorf("IndexedTable: %d rows in the partition for %d primaries with 2 copies each: %v", len(rows), len(m.rows), cfRowKeys(rows))
	}
}

// EventualIndexedTable: copies in other partitions and tables, kept by the
// worker.
func cfEventualIndexedTable(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	idTable := testenv.TableName(e.t)
	email := cfEmailIndex()
	x, err := patterns.NewEventualIndexedTable(e.acct, testenv.TableName(e.t), q, []patterns.Index[cfEmployee]{
		email,
		{Name: "empid", Unique: true, Key: func(v *cfEmployee) string { return v.EmployeeID }, Table: idTable},
	}, &patterns.EventualIndexedTableOptions{Table: e.tableOpts()})
	e.must(err, "NewEventualIndexedTable")
	e.setup(cfQueue(q), x.CreateIfNotExists)
	w := e.startWorker(q)
	m := newCfModel()
	n := e.n(8, 8)
	for i := range n {
		v := cfEmp([]string{"Sales", "HR"}[i%2], i, "Jones")
		if i == n-1 {
			e.lateWrite(x.Table().Name())
		}
		if e.do(2, "Insert "+v.RowKey, func() error { return x.Insert(ctx, &v, nil) }, cfExists(e, x.Get, v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	e.read(1, "Get", func() error { _, err := x.Get(ctx, "Sales", "empid_000100", nil); return err })
	e.read(1, "Lookup", func() error {
		_, err := x.Lookup(ctx, "email", "Sales", "e0@contoso.com", nil)
		if errors.Is(err, tablekit.ErrNotFound) {
			err = nil // the worker may not have run yet
		}
		return err
	})
	moved := m.rows[cfKey("Sales", "empid_000100")]
	moved.Email = "moved0@contoso.com"
	if e.do(3, "Update that changes the email", func() error {
		_, err := x.Update(ctx, moved.PartitionKey, moved.RowKey, func(v *cfEmployee) error { v.Email = moved.Email; return nil }, nil)
		return err
	}, func() bool {
		g, err := x.Get(ctx, moved.PartitionKey, moved.RowKey, nil)
		return err == nil && g.Email == moved.Email
	}) {
		m.put(moved)
	}
	counters := []string{cfKey("Sales", cfEmp("", 2, "").RowKey), cfKey("HR", cfEmp("", 3, "").RowKey)}
	split := func(k string) (string, string) { pk, rk, _ := strings.Cut(k, "/"); return pk, rk }
	pk0, rk0 := split(counters[0])
	m.counter(pk0, rk0).add(e.outcome(e.cost(3, "Update", func() error { _, err := x.Update(ctx, pk0, rk0, cfIncAge, nil); return err }), "Update"))
	for k, c := range e.hammer(counters, 4, e.n(6, 5), "EventualIndexedTable.Update", func(k string) error {
		pk, rk := split(k)
		_, err := x.Update(ctx, pk, rk, cfIncAge, nil)
		return err
	}) {
		pk, rk := split(k)
		cfMerge(m.counter(pk, rk), c)
	}
	del := m.rows[cfKey("HR", cfEmp("", 1, "").RowKey)]
	if e.do(3, "Delete", func() error {
		return x.Delete(ctx, &cfEmployee{PartitionKey: del.PartitionKey, RowKey: del.RowKey}, &patterns.WriteOptions{Unconditional: true})
	}, cfGone(e, x.Get, del.PartitionKey, del.RowKey)) {
		m.del(del.PartitionKey, del.RowKey)
	}

	e.settle()
	e.drain(w)
	var prim []cfEmployee
	for _, pk := range []string{"Sales", "HR"} {
		rows, err := patterns.Collect(x.Table().Query(ctx, keys.PK().Eq(pk), nil))
		e.must(err, "final primaries")
		prim = append(prim, rows...)
	}
	m.check(e, "EventualIndexedTable primaries", prim)
	for _, k := range m.keys() {
		v := m.rows[k]
		g, err := x.Lookup(ctx, "email", v.PartitionKey, v.Email, nil)
		if err != nil || g.RowKey != v.RowKey || g.FirstName != v.FirstName {
			e.t.Errorf("EventualIndexedTable: after the worker drained, Lookup by email %s = %+v, %v; want %s", v.Email, g, err, k)
		}
		c, err := x.Lookup(ctx, "empid", v.PartitionKey, v.EmployeeID, nil)
		if err != nil {
			e.t.Errorf("EventualIndexedTable: after the worker drained, Lookup by id %s: %v", v.EmployeeID, err)
			continue
		}
		stored, err := x.Get(ctx, v.PartitionKey, v.RowKey, nil)
		e.must(err, "final get")
		if c.Age != stored.Age || c.Email != stored.Email {
			e.t.Errorf("EventualIndexedTable: the id copy of %s has Age %d, email %s; the primary has %d, %s", k, c.Age, c.Email, stored.Age, stored.Email)
		}
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "e0@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		e.t.Errorf("EventualIndexedTable: the old email's copy is still found after the worker drained: %v", err)
	}
	rep, err := x.Verify(ctx, nil)
	e.must(err, "Verify")
	if !rep.OK() || rep.Primaries != len(m.rows) {
		e.t.Errorf("EventualIndexedTable: Verify after the worker drained: %d primaries (want %d), missing %v, orphans %v", rep.Primaries, len(m.rows), rep.Missing, rep.Orphans)
	}
}

// cfLastNameList is the guide's index entities by last name, its
// EmployeeIDs property holding the list.
func cfLastNameList() patterns.ListIndex[cfEmployee] {
	return patterns.ListIndex[cfEmployee]{Name: "lastname", Property: "EmployeeIDs", Key: func(v *cfEmployee) string { return v.LastName }}
}

// cfListScenario is the shared write sequence of the three index-entity
// repositories: inserts over two departments and two last names, a
// last-name change, counters, a delete. Budgets are each repository's.
type cfListRepo struct {
	insert func(v *cfEmployee) error
	update func(pk, rk string, fn func(*cfEmployee) error) error
	delete func(pk, rk string) error
	get    func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (cfEmployee, error)
	// late, when set, makes the next write land late (cfEnv.lateWrite).
	late func()
	// budgets: insert, update keeping the value, update changing it, delete
	budget [4]int64
}

// cfWriter is the write verbs of the index-entity repositories.
type cfWriter interface {
	Insert(ctx context.Context, v *cfEmployee, opts *patterns.InsertOptions) error
	Update(ctx context.Context, pk, rk string, fn func(*cfEmployee) error, opts *patterns.UpdateOptions) (cfEmployee, error)
	Delete(ctx context.Context, v *cfEmployee, opts *patterns.WriteOptions) error
}

// cfListRepoOf is the cfListRepo of x's write verbs, reading through get.
func cfListRepoOf(ctx context.Context, x cfWriter, get func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (cfEmployee, error), budget [4]int64) cfListRepo {
	return cfListRepo{
		insert: func(v *cfEmployee) error { return x.Insert(ctx, v, nil) },
		update: func(pk, rk string, fn func(*cfEmployee) error) error {
			_, err := x.Update(ctx, pk, rk, fn, nil)
			return err
		},
		delete: func(pk, rk string) error {
			return x.Delete(ctx, &cfEmployee{PartitionKey: pk, RowKey: rk}, &patterns.WriteOptions{Unconditional: true})
		},
		get:    get,
		budget: budget,
	}
}

// cfLists is what the index-entity repositories whose lists span
// partitions answer.
type cfLists interface {
	Find(ctx context.Context, value string, opts *patterns.QueryOptions) iter.Seq2[cfEmployee, error]
	Members(ctx context.Context, value string, opts *patterns.GetOptions) ([]patterns.Member, error)
}

// cfCheckLists checks, for each last name, that Lookup returns the
// model's employees and that the list names them. With stale, a write
// whose outcome is unknown may have left a stale member, which Lookup
// skips; without one the list is exact.
func cfCheckLists(e *cfEnv, what string, m *cfModel, x cfLists, stale bool) {
	e.t.Helper()
	for _, last := range []string{"Jones", "Smith", "Brown"} {
		want := m.with(func(v cfEmployee) bool { return v.LastName == last })
		got, err := patterns.Collect(x.Find(e.ctx, last, nil))
		e.must(err, "Find")
		if g := cfEmployeeKeys(got); !cfSame(g, want) {
			e.t.Errorf("%s: Lookup(%s) = %v, want %v", what, last, g, want)
		}
		members, err := x.Members(e.ctx, last, nil)
		e.must(err, "Members")
		if g := cfMemberKeys(members); !cfSame(g, want) && (!stale || e.maybes == 0 || !cfSubset(want, g)) {
			e.t.Errorf("%s: the %s list holds %v, want %v", what, last, g, want)
		}
	}
}

func cfListScenario(e *cfEnv, what string, r cfListRepo) *cfModel {
	m := newCfModel()
	n := e.n(8, 8)
	for i := range n {
		v := cfEmp([]string{"Sales", "HR"}[i%2], i, []string{"Jones", "Jones", "Smith"}[i%3])
		if i == n-1 && r.late != nil {
			r.late()
		}
		if e.do(r.budget[0], what+" Insert "+v.RowKey, func() error { return r.insert(&v) }, cfExists(e, r.get, v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	ren := m.rows[cfKey("Sales", cfEmp("", 0, "").RowKey)]
	ren.LastName = "Brown"
	if e.do(r.budget[2], what+" Update that changes the last name", func() error {
		return r.update(ren.PartitionKey, ren.RowKey, func(v *cfEmployee) error { v.LastName = "Brown"; return nil })
	}, func() bool {
		g, err := r.get(e.ctx, ren.PartitionKey, ren.RowKey, nil)
		return err == nil && g.LastName == "Brown"
	}) {
		m.put(ren)
	}
	counters := []string{cfEmp("", 2, "").RowKey, cfEmp("", 4, "").RowKey}
	if n <= 4 {
		counters[1] = cfEmp("", 0, "").RowKey
	}
	m.counter("Sales", counters[0]).add(e.outcome(e.cost(r.budget[1], what+" Update", func() error {
		return r.update("Sales", counters[0], cfIncAge)
	}), what+" Update"))
	for rk, c := range e.hammer(counters, 4, e.n(6, 5), what+".Update", func(rk string) error {
		return r.update("Sales", rk, cfIncAge)
	}) {
		cfMerge(m.counter("Sales", rk), c)
	}
	del := m.rows[cfKey("HR", cfEmp("", 1, "").RowKey)]
	if e.do(r.budget[3], what+" Delete", func() error { return r.delete(del.PartitionKey, del.RowKey) }, cfGone(e, r.get, del.PartitionKey, del.RowKey)) {
		m.del(del.PartitionKey, del.RowKey)
	}
	return m
}

// cfPrimaries reads the employees of both departments through t.
func cfPrimaries(e *cfEnv, t *patterns.Table[cfEmployee]) []cfEmployee {
	e.t.Helper()
	var out []cfEmployee
	for _, pk := range []string{"Sales", "HR"} {
		rows, err := patterns.Collect(t.Query(e.ctx, keys.And(keys.PK().Eq(pk), keys.RK().Prefix("empid_")), nil))
		e.must(err, "final primaries")
		out = append(out, rows...)
	}
	return out
}

// BlobIndexedTable: index entities option 1, a blob per value.
func cfBlobIndexedTable(e *cfEnv) {
	ctx := e.ctx
	x, err := patterns.NewBlobIndexedTable(e.acct, testenv.TableName(e.t), testenv.ContainerName(e.t), cfLastNameList(), &patterns.BlobIndexedTableOptions{Table: e.tableOpts()})
	e.must(err, "NewBlobIndexedTable")
	e.setup(x.CreateIfNotExists)
	m := cfListScenario(e, "BlobIndexedTable", cfListRepoOf(ctx, x, x.Table().Get, [4]int64{3, 2, 6, 4}))
	e.read(1+2, "Lookup of Smith", func() error {
		_, err := patterns.Collect(x.Find(ctx, "Smith", nil))
		return err
	})

	e.settle()
	m.check(e, "BlobIndexedTable", cfPrimaries(e, x.Table()))
	cfCheckLists(e, "BlobIndexedTable", m, x, true)
}

// cfSubset reports whether every element of a is in b.
func cfSubset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// ListIndexedTable: index entities option 2, in the entity's partition and
// its transaction.
func cfListIndexedTable(e *cfEnv) {
	ctx := e.ctx
	name := testenv.TableName(e.t)
	x, err := patterns.NewListIndexedTable(e.acct, name, cfLastNameList(), &patterns.ListIndexedTableOptions{Table: e.tableOpts()})
	e.must(err, "NewListIndexedTable")
	e.setup(x.CreateIfNotExists)
	m := cfListScenario(e, "ListIndexedTable", cfListRepoOf(ctx, x, x.Get, [4]int64{2, 2, 4, 3}))
	e.read(1+1, "Lookup of Sales Smith", func() error { _, err := patterns.Collect(x.Find(ctx, "Sales", "Smith", nil)); return err })

	e.settle()
	m.check(e, "ListIndexedTable", cfPrimaries(e, x.Table()))
	for _, pk := range []string{"Sales", "HR"} {
		lists := 0
		for _, last := range []string{"Jones", "Smith", "Brown"} {
			want := m.with(func(v cfEmployee) bool { return v.PartitionKey == pk && v.LastName == last })
			got, err := patterns.Collect(x.Find(ctx, pk, last, nil))
			e.must(err, "Lookup")
			if g := cfEmployeeKeys(got); !cfSame(g, want) {
				e.t.Errorf("ListIndexedTable: Lookup(%s, %s) = %v, want %v", pk, last, g, want)
			}
			members, err := x.Members(ctx, pk, last, nil)
			e.must(err, "Members")
			var keysOf []string
			for _, rk := range members {
				keysOf = append(keysOf, cfKey(rk.PartitionKey, rk.RowKey))
			}
			if !cfSame(keysOf, want) {
				e.t.Errorf("ListIndexedTable: index entity %s/%s lists %v, want %v", pk, last, keysOf, want)
			}
			if len(want) > 0 {
				lists++
			}
		}
		prim := len(m.with(func(v cfEmployee) bool { return v.PartitionKey == pk }))
		if rows := cfRows(e, name, pk); len(rows) != prim+lists {
			e.t.Errorf("ListIndexedTable: partition %s holds %v; want %d employees and %d index entities", pk, cfRowKeys(rows), prim, lists)
		}
	}
}

// EventualListIndexedTable: index entities option 3, in another table,
// kept by the worker.
func cfEventualListIndexedTable(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	ix := cfLastNameList()
	ix.Table = testenv.TableName(e.t)
	x, err := patterns.NewEventualListIndexedTable(e.acct, testenv.TableName(e.t), q, ix, &patterns.EventualIndexedTableOptions{Table: e.tableOpts()})
	e.must(err, "NewEventualListIndexedTable")
	e.setup(cfQueue(q), x.CreateIfNotExists)
	w := e.startWorker(q)
	// Update keeping the value: read and write, 2 (the type's godoc says
	// 3; no intent is enqueued when the value stays).
	r := cfListRepoOf(ctx, x, x.Table().Get, [4]int64{3, 2, 4, 3})
	r.late = func() { e.lateWrite(x.Table().Name()) }
	m := cfListScenario(e, "EventualListIndexedTable", r)

	e.settle()
	e.drain(w)
	m.check(e, "EventualListIndexedTable", cfPrimaries(e, x.Table()))
	cfCheckLists(e, "EventualListIndexedTable (the worker drained)", m, x, false)
}

// cfManager is the source of the denormalization patterns: the manager
// whose name and phone the departments copy. Phone follows Age, so the
// final copy is known from the final counter.
type cfManager struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Phone        string
	Age          int
}

func cfPhone(age int) string { return fmt.Sprintf("555-%04d", age) }

func cfIncManager(s *cfManager) error { s.Age++; s.Phone = cfPhone(s.Age); return nil }

func cfIncHeadcount(d *cfDepartment) error { d.Headcount++; return nil }

// Denormalization: the manager and the departments in one partition, kept
// in one transaction. It has no insert or delete verb of its own: those go
// through Sources() and Targets().
func cfDenormalization(e *cfEnv) {
	ctx := e.ctx
	depts := []string{"dept_Sales", "dept_Support"}
	x, err := patterns.NewDenormalization(e.acct, testenv.TableName(e.t),
		func(*cfManager) []string { return depts },
		func(d *cfDepartment) string { return d.ManagerID },
		func(s *cfManager, d *cfDepartment) { d.ManagerFirstName, d.ManagerPhone = s.FirstName, s.Phone },
		&patterns.DenormalizationOptions[cfManager]{Table: e.tableOpts()})
	e.must(err, "NewDenormalization")
	e.setup(x.Sources().CreateIfNotExists)
	mgr := cfManager{PartitionKey: "Contoso", RowKey: "mgr_000100", FirstName: "Mary", Phone: cfPhone(0)}
	e.do(1, "insert the source", func() error { return x.Sources().Insert(ctx, &mgr, nil) }, cfExists(e, x.Sources().Get, mgr.PartitionKey, mgr.RowKey))
	for _, rk := range depts {
		d := cfDepartment{PartitionKey: "Contoso", RowKey: rk, DepartmentName: rk, ManagerID: mgr.RowKey, ManagerFirstName: "Mary", ManagerPhone: cfPhone(0)}
		e.do(1, "insert a target", func() error { return x.Targets().Insert(ctx, &d, nil) }, cfExists(e, x.Targets().Get, d.PartitionKey, d.RowKey))
	}
	e.read(1, "Get a target", func() error { _, err := x.Targets().Get(ctx, "Contoso", depts[0], nil); return err })
	src := &cfCounter{}
	src.add(e.outcome(e.cost(2+int64(len(depts)), "UpdateSource", func() error {
		_, err := x.UpdateSource(ctx, mgr.PartitionKey, mgr.RowKey, cfIncManager, nil)
		return err
	}), "UpdateSource"))
	heads := map[string]*cfCounter{depts[0]: {}, depts[1]: {}}
	heads[depts[0]].add(e.outcome(e.cost(3, "UpdateTarget", func() error {
		_, err := x.UpdateTarget(ctx, "Contoso", depts[0], cfIncHeadcount, nil)
		return err
	}), "UpdateTarget"))
	all := append([]string{mgr.RowKey}, depts...)
	for k, c := range e.hammer(all, 4, e.n(6, 5), "Denormalization", func(rk string) error {
		if rk == mgr.RowKey {
			_, err := x.UpdateSource(ctx, "Contoso", rk, cfIncManager, nil)
			return err
		}
		_, err := x.UpdateTarget(ctx, "Contoso", rk, cfIncHeadcount, nil)
		return err
	}) {
		if k == mgr.RowKey {
			cfMerge(src, c)
		} else {
			cfMerge(heads[k], c)
		}
	}

	e.settle()
	s, err := x.Sources().Get(ctx, mgr.PartitionKey, mgr.RowKey, nil)
	e.must(err, "final source")
	src.check(e, "Denormalization: the manager's Age", 0, s.Age)
	if s.Phone != cfPhone(s.Age) {
		e.t.Errorf("Denormalization: the manager's phone %s does not follow Age %d", s.Phone, s.Age)
	}
	for _, rk := range depts {
		d, err := x.Targets().Get(ctx, "Contoso", rk, nil)
		e.must(err, "final target")
		heads[rk].check(e, "Denormalization: "+rk+" Headcount", 0, d.Headcount)
		if d.ManagerFirstName != s.FirstName || d.ManagerPhone != s.Phone {
			e.t.Errorf("Denormalization: %s copies %s, %s; the manager has %s, %s", rk, d.ManagerFirstName, d.ManagerPhone, s.FirstName, s.Phone)
		}
	}
}

// EventualDenormalization: the guide's manager and departments in
// different tables, the copies kept by the worker; a department linked to
// another manager is left alone.
func cfEventualDenormalization(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	deptTable := testenv.TableName(e.t)
	depts, err := patterns.NewTable[cfDepartment](e.acct, deptTable, e.tableOpts())
	e.must(err, "NewTable")
	x, err := patterns.NewEventualDenormalization(e.acct, testenv.TableName(e.t), q,
		func(*cfManager) []consistency.EntityRef {
			return []consistency.EntityRef{{Table: deptTable, PartitionKey: "Sales", RowKey: "Department"}, {Table: deptTable, PartitionKey: "Marketing", RowKey: "Department"}}
		},
		map[string]string{"FirstName": "ManagerFirstName", "Phone": "ManagerPhone"},
		&patterns.EventualDenormalizationOptions{Link: "ManagerID", Table: e.tableOpts()})
	e.must(err, "NewEventualDenormalization")
	e.setup(cfQueue(q), depts.CreateIfNotExists, x.Sources().CreateIfNotExists)
	w := e.startWorker(q)
	mgr := cfManager{PartitionKey: "Managers", RowKey: "000100", FirstName: "Mary", Phone: cfPhone(0)}
	e.do(1, "insert the source", func() error { return x.Sources().Insert(ctx, &mgr, nil) }, cfExists(e, x.Sources().Get, mgr.PartitionKey, mgr.RowKey))
	link := keys.Join(mgr.PartitionKey, mgr.RowKey)
	marketing := cfDepartment{PartitionKey: "Marketing", RowKey: "Department", DepartmentName: "Marketing", ManagerID: keys.Join("Managers", "000200"), ManagerFirstName: "Ken", ManagerPhone: "555-0200"}
	for _, d := range []cfDepartment{
		{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", ManagerID: link, ManagerFirstName: "Mary", ManagerPhone: cfPhone(0)},
		marketing,
	} {
		e.do(1, "insert a department", func() error { return depts.Insert(ctx, &d, nil) }, cfExists(e, depts.Get, d.PartitionKey, d.RowKey))
	}
	src := &cfCounter{}
	e.lateWrite(x.Sources().Name())
	src.add(e.outcome(e.cost(3, "UpdateSource", func() error {
		_, err := x.UpdateSource(ctx, mgr.PartitionKey, mgr.RowKey, cfIncManager, nil)
		return err
	}), "UpdateSource"))
	e.do(2, "Refresh", func() error { return x.Refresh(ctx, mgr.PartitionKey, mgr.RowKey, nil) }, nil)
	// The manager changes while departments are edited.
	heads := &cfCounter{}
	for k, c := range e.hammer([]string{"manager", "Sales"}, 4, e.n(6, 5), "EventualDenormalization", func(k string) error {
		if k == "manager" {
			_, err := x.UpdateSource(ctx, mgr.PartitionKey, mgr.RowKey, cfIncManager, nil)
			return err
		}
		_, err := depts.Update(ctx, "Sales", "Department", cfIncHeadcount, nil)
		return err
	}) {
		if k == "manager" {
			cfMerge(src, c)
		} else {
			cfMerge(heads, c)
		}
	}

	e.settle()
	e.drain(w)
	s, err := x.Sources().Get(ctx, mgr.PartitionKey, mgr.RowKey, nil)
	e.must(err, "final source")
	src.check(e, "EventualDenormalization: the manager's Age", 0, s.Age)
	sales, err := depts.Get(ctx, "Sales", "Department", nil)
	e.must(err, "final department")
	heads.check(e, "EventualDenormalization: Sales Headcount", 0, sales.Headcount)
	if sales.ManagerFirstName != s.FirstName || sales.ManagerPhone != s.Phone || sales.ManagerID != link {
		e.t.Errorf("EventualDenormalization: after the worker drained, Sales copies %s, %s (link %s); the manager has %s, %s", sales.ManagerFirstName, sales.ManagerPhone, sales.ManagerID, s.FirstName, s.Phone)
	}
	mk, err := depts.Get(ctx, "Marketing", "Department", nil)
	e.must(err, "final department")
	mk.ETag = ""
	if mk != marketing {
		e.t.Errorf("EventualDenormalization: Marketing, linked to another manager, changed: %+v", mk)
	}
}

// cfClaim is the guide's log tail example, an expense claim.
type cfClaim struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Amount       float64
	Note         string
}

// LogTail: appends under inverted ticks, the newest first. It has no
// update or delete verb.
func cfLogTail(e *cfEnv) {
	ctx := e.ctx
	lt, err := patterns.NewLogTail[cfClaim](e.acct, testenv.TableName(e.t), &patterns.LogTailOptions{Table: e.tableOpts()})
	e.must(err, "NewLogTail")
	e.setup(lt.Table().CreateIfNotExists)
	base := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	type claim struct{ rk, note string }
	var want []claim
	n := e.n(30, 20)
	for i := range n {
		c := cfClaim{PartitionKey: "empid", Amount: float64(i), Note: fmt.Sprint("claim ", i)}
		if e.do(1, "Append", func() error { _, err := lt.Append(ctx, &c, base.Add(time.Duration(i)*time.Minute), nil); return err },
			cfExists(e, lt.Table().Get, "empid", c.RowKey)) {
			want = append(want, claim{c.RowKey, c.Note})
		}
	}
	e.read(1, "Latest 3", func() error {
		got, err := lt.Latest(ctx, "empid", 3, nil)
		if err == nil && (len(got) != 3 || got[0].Note != want[len(want)-1].note) {
			e.t.Errorf("Latest(3) = %+v", got)
		}
		return err
	})
	e.read(1, "Range", func() error {
		_, err := patterns.Collect(lt.Range(ctx, "empid", base, base.Add(3*time.Minute), nil))
		return err
	})

	e.settle()
	got, err := lt.Latest(ctx, "empid", 1000, nil)
	e.must(err, "final Latest")
	slices.Reverse(want) // newest first
	if len(got) != len(want) {
		e.t.Errorf("LogTail: %d claims stored, %d appended", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i].RowKey != want[i].rk || got[i].Note != want[i].note {
			e.t.Errorf("LogTail: claim %d is %s %q, want %s %q", i, got[i].RowKey, got[i].Note, want[i].rk, want[i].note)
		}
	}
}

// DataSeries: the guide's hourly message counts, one property per hour.
func cfDataSeries(e *cfEnv) {
	ctx := e.ctx
	ds, err := patterns.NewDataSeries[int64](e.acct, testenv.TableName(e.t), 24, &patterns.DataSeriesOptions{Prefix: "H", Table: e.tableOpts()})
	e.must(err, "NewDataSeries")
	e.setup(ds.Table().CreateIfNotExists)
	want := make([]int64, 24)
	for h := range 10 {
		if e.do(1, "Upsert", func() error {
			return ds.Upsert(ctx, "Sales", "000123", map[int]int64{h: int64(10*h + 1)}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
		}, nil) {
			want[h] = int64(10*h + 1)
		}
	}
	if e.do(1, "Upsert", func() error {
		return ds.Upsert(ctx, "Sales", "000123", map[int]int64{20: 200, 21: 210}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
	}, nil) {
		want[20], want[21] = 200, 210
	}
	e.read(1, "Get", func() error { _, err := ds.Get(ctx, "Sales", "000123", nil); return err })
	slots := map[string]int{"H12": 12, "H13": 13}
	adds := map[string]*cfCounter{"H12": {}, "H13": {}}
	adds["H12"].add(e.outcome(e.cost(2, "Add", func() error { _, err := ds.Add(ctx, "Sales", "000123", 12, 1, nil); return err }), "Add"))
	for k, c := range e.hammer([]string{"H12", "H13"}, 6, e.n(10, 8), "DataSeries.Add", func(k string) error {
		_, err := ds.Add(ctx, "Sales", "000123", slots[k], 1, nil)
		return err
	}) {
		cfMerge(adds[k], c)
	}
	e.do(1, "Set of another series", func() error {
		return ds.Upsert(ctx, "Sales", "000124", map[int]int64{0: 1}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
	}, nil)
	e.do(1, "Delete", func() error {
		return ds.Delete(ctx, &patterns.Series[int64]{PartitionKey: "Sales", RowKey: "000124"}, &patterns.WriteOptions{Unconditional: true})
	}, nil)

	e.settle()
	s, err := ds.Get(ctx, "Sales", "000123", nil)
	e.must(err, "final Get")
	for h, v := range s.Values {
		if c := adds[ds.Property(h)]; c != nil {
			c.check(e, "DataSeries slot "+ds.Property(h), 0, int(v))
		} else if v != want[h] {
			e.t.Errorf("DataSeries: slot %s = %d, want %d", ds.Property(h), v, want[h])
		}
	}
	if _, err := ds.Get(ctx, "Sales", "000124", nil); !errors.Is(err, tablekit.ErrNotFound) {
		e.t.Errorf("DataSeries: the deleted series: %v", err)
	}
}

// cfWide is the guide's wide entity: n daily counts, plus a counter.
func cfWide(pk, rk string, n int) *patterns.WideEntity {
	w := &patterns.WideEntity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{"Counter": entity.Int64(0)}}
	for d := 1; d <= n; d++ {
		w.Properties[fmt.Sprintf("D%04d", d)] = entity.Int32(int32(d))
	}
	return w
}

// WideEntities: logical entities over several physical ones. It has no
// read-modify-write verb; the counter goes through the caller's loop the
// godoc describes (Get, change, conditional Put, again on
// ErrPreconditionFailed).
func cfWideEntities(e *cfEnv) {
	ctx := e.ctx
	w, err := patterns.NewWideEntities(e.acct, testenv.TableName(e.t), &patterns.WideEntitiesOptions{Table: e.tableOpts()})
	e.must(err, "NewWideEntities")
	e.setup(w.Table().CreateIfNotExists)
	for _, rk := range []string{"000123", "000124", "000125"} {
		v := cfWide("Sales", rk, 300)
		e.do(1, "Put of 300 properties", func() error { return widePut(w, ctx, v) }, func() bool { _, err := w.Get(ctx, "Sales", rk, nil); return err == nil })
	}
	var got *patterns.WideEntity
	e.read(1, "Get", func() error { got, err = w.Get(ctx, "Sales", "000124", nil); return err })
	// Shrink 000124 to 100 days: its second physical entity goes.
	if got != nil {
		for d := 101; d <= 300; d++ {
			delete(got.Properties, fmt.Sprintf("D%04d", d))
		}
		e.do(1, "Put that shrinks", func() error { return widePut(w, ctx, got) }, func() bool {
			g, err := w.Get(ctx, "Sales", "000124", nil)
			return err == nil && len(g.Properties) == 101
		})
	}
	var gone *patterns.WideEntity
	e.read(1, "Get before Delete", func() error { gone, err = w.Get(ctx, "Sales", "000125", nil); return err })
	if gone != nil {
		e.do(1, "Delete", func() error { return w.Delete(ctx, gone, nil) }, func() bool {
			_, err := w.Get(ctx, "Sales", "000125", nil)
			return errors.Is(err, tablekit.ErrNotFound)
		})
	}
	inc := func(string) error {
		for {
			v, err := w.Get(ctx, "Sales", "000123", nil)
			if err != nil {
				return err
			}
			v.Properties["Counter"] = entity.Int64(v.Properties["Counter"].V.(int64) + 1)
			err = widePut(w, ctx, v)
			if !errors.Is(err, tablekit.ErrPreconditionFailed) {
				return err
			}
		}
	}
	c := e.hammer([]string{"Counter"}, 4, e.n(8, 6), "WideEntities Get+Put", inc)["Counter"]

	e.settle()
	v, err := w.Get(ctx, "Sales", "000123", nil)
	e.must(err, "final Get")
	c.check(e, "WideEntities: Counter", 0, int(v.Properties["Counter"].V.(int64)))
	want := cfWide("Sales", "000123", 300)
	for name, p := range want.Properties {
		if name != "Counter" && !v.Properties[name].Equal(p) {
			e.t.Errorf("WideEntities: %s = %v, want %v", name, v.Properties[name], p)
		}
	}
	if len(v.Properties) != len(want.Properties) {
		e.t.Errorf("WideEntities: %d properties, want %d", len(v.Properties), len(want.Properties))
	}
	s, err := w.Get(ctx, "Sales", "000124", nil)
	e.must(err, "final Get")
	if len(s.Properties) != 101 {
		e.t.Errorf("WideEntities: the shrunk entity has %d properties, want 101", len(s.Properties))
	}
	if _, err := w.Get(ctx, "Sales", "000125", nil); !errors.Is(err, tablekit.ErrNotFound) {
		e.t.Errorf("WideEntities: the deleted entity: %v", err)
	}
	var physical []string
	for _, r := range cfRows(e, w.Table().Name(), "Sales") {
		physical = append(physical, r.RowKey)
	}
	wantRows := []string{patterns.WideChunkRowKey("000123", 0), patterns.WideChunkRowKey("000123", 1), patterns.WideChunkRowKey("000124", 0)}
	if !slices.Equal(physical, wantRows) {
		e.t.Errorf("WideEntities: physical entities %v, want %v", physical, wantRows)
	}
}

// cfPhotoEmployee is the guide's large entity: the photo lives in a blob.
type cfPhotoEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Photo        []byte `table:"Photo,blob"`
}

func cfPhoto(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, 16<<10)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// LargeEntities: photos in Blob storage, the replaced and deleted ones
// removed by the worker.
func cfLargeEntities(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	container := testenv.ContainerName(e.t)
	l, err := patterns.NewLargeEntities[cfPhotoEmployee](e.acct, testenv.TableName(e.t), container, &patterns.LargeEntitiesOptions{Table: e.tableOpts(), Queue: q})
	e.must(err, "NewLargeEntities")
	e.setup(cfQueue(q), l.CreateIfNotExists)
	wk := e.startWorker(q)
	want := map[string]cfPhotoEmployee{}
	exists := func(rk string) func() bool {
		return func() bool { _, _, err := l.GetLazy(ctx, "Sales", rk, nil); return err == nil }
	}
	n := e.n(8, 6)
	for i := range n {
		v := cfPhotoEmployee{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i), FirstName: fmt.Sprint("First", i), Photo: cfPhoto(uint64(i))}
		if e.do(2, "Insert", func() error { return l.Insert(ctx, &v, nil) }, exists(v.RowKey)) {
			want[v.RowKey] = v
		}
	}
	e.read(2, "Get", func() error { _, err := l.Get(ctx, "Sales", "000000", nil); return err })
	e.read(1, "GetLazy", func() error { _, _, err := l.GetLazy(ctx, "Sales", "000000", nil); return err })
	// A new photo for an existing entity, and a Put of a new one.
	for i, rk := range []string{"000000", "000100"} {
		v := cfPhotoEmployee{PartitionKey: "Sales", RowKey: rk, FirstName: "Put", Photo: cfPhoto(uint64(1000 + i))}
		budget := int64(4)
		if i == 1 {
			budget = 3
		}
		if e.do(budget, "Put", func() error { return l.Upsert(ctx, &v, nil) }, nil) {
			want[rk] = v
		}
	}
	if e.do(3, "Delete", func() error {
		return l.Delete(ctx, &cfPhotoEmployee{PartitionKey: "Sales", RowKey: "000001"}, &patterns.WriteOptions{Unconditional: true})
	}, func() bool {
		_, _, err := l.GetLazy(ctx, "Sales", "000001", nil)
		return errors.Is(err, tablekit.ErrNotFound)
	}) {
		delete(want, "000001")
	}

	e.settle()
	e.drain(wk)
	referenced := map[string]bool{}
	for rk, w := range want {
		g, err := l.Get(ctx, "Sales", rk, nil)
		if err != nil {
			e.t.Errorf("LargeEntities: Get %s after the worker drained: %v", rk, err)
			continue
		}
		if g.FirstName != w.FirstName || !bytes.Equal(g.Photo, w.Photo) {
			e.t.Errorf("LargeEntities: %s = %s with a %d-byte photo (equal %v), want %s", rk, g.FirstName, len(g.Photo), bytes.Equal(g.Photo, w.Photo), w.FirstName)
		}
		_, refs, err := l.GetLazy(ctx, "Sales", rk, nil)
		e.must(err, "GetLazy")
		for _, r := range refs {
			referenced[r.Name] = true
		}
	}
	if _, err := l.Get(ctx, "Sales", "000001", nil); !errors.Is(err, tablekit.ErrNotFound) {
		e.t.Errorf("LargeEntities: the deleted entity: %v", err)
	}
	rows := cfRows(e, l.Name(), "Sales")
	if len(rows) != len(want) {
		e.t.Errorf("LargeEntities: %d entities stored, want %d: %v", len(rows), len(want), cfRowKeys(rows))
	}
	var unreferenced []string
	pager := e.plain.Blobs().NewListBlobsFlatPager(container, (*azblob.ListBlobsFlatOptions)(nil))
	for pager.More() {
		page, err := pager.NextPage(ctx)
		e.must(err, "list blobs")
		for _, b := range page.Segment.BlobItems {
			if !referenced[*b.Name] {
				unreferenced = append(unreferenced, *b.Name)
			}
		}
	}
	// An insert whose outcome is unknown keeps its blob (the entity may
	// reference it); otherwise every blob left is referenced.
	if len(unreferenced) > 0 && e.maybes == 0 {
		e.t.Errorf("LargeEntities: after the worker drained, %d blobs are referenced by no entity: %v", len(unreferenced), unreferenced)
	}
}

// cfEvent is the guide's prepend/append example (AccessEvent): access
// events keyed by time and event id.
type cfEvent = AccessEvent

// Bucketed: one stream over five partitions. It has no update or delete
// verb; Upsert replaces.
func cfBucketed(e *cfEnv) {
	ctx := e.ctx
	b, err := patterns.NewBucketed[cfEvent](e.acct, testenv.TableName(e.t), 5, &patterns.BucketedOptions{Table: e.tableOpts()})
	e.must(err, "NewBucketed")
	e.setup(b.Table().CreateIfNotExists)
	base := time.Date(2014, 8, 22, 18, 0, 0, 0, time.UTC)
	want := map[string]string{}
	n := e.n(40, 30)
	for i := range n {
		v := cfEvent{RowKey: keys.Join(keys.TimeKey(base.Add(time.Duration(i)*time.Second)), keys.PadUint(uint64(i), 4)), Resource: fmt.Sprint("r", i)}
		if e.do(1, "Insert", func() error { return b.Insert(ctx, "Sales", &v, nil) }, func() bool { _, err := b.Get(ctx, "Sales", v.RowKey, nil); return err == nil }) {
			want[v.RowKey] = v.Resource
		}
	}
	rks := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	e.read(1, "Get", func() error { _, err := b.Get(ctx, "Sales", rks[0], nil); return err })
	for _, rk := range rks[:2] {
		v := cfEvent{RowKey: rk, Resource: "upserted"}
		if e.do(1, "Upsert", func() error { return b.Upsert(ctx, "Sales", &v, nil) }, nil) {
			want[rk] = "upserted"
		}
	}
	e.read(5, "Query of the stream (5 buckets)", func() error { _, err := patterns.Collect(b.Query(ctx, "Sales", keys.Filter{}, nil)); return err })

	e.settle()
	got, err := patterns.Collect(b.Query(ctx, "Sales", keys.Filter{}, nil))
	e.must(err, "final Query")
	if len(got) != len(want) {
		e.t.Errorf("Bucketed: %d events stored, want %d", len(got), len(want))
	}
	for i, g := range got {
		if i < len(rks) && g.RowKey != rks[i] || want[g.RowKey] != g.Resource || g.PartitionKey != b.PartitionKey("Sales", g.RowKey) {
			e.t.Errorf("Bucketed: event %d is %+v", i, g)
		}
	}
}

// cfSignIn is the guide's high volume delete example: sign-in attempts, a
// table per day.
type cfSignIn struct {
	PartitionKey string
	RowKey       string
	Success      bool
}

// PeriodTables: a table per day, old days dropped whole. Rows have no
// update or delete verb; Upsert replaces.
func cfPeriodTables(e *cfEnv) {
	ctx := e.ctx
	name := testenv.TableName(e.t)
	prefix := "p" + name[len(name)-8:] // unique: the name's random suffix
	p, err := patterns.NewPeriodTables[cfSignIn](e.acct, prefix, &patterns.PeriodTablesOptions{Table: e.tableOpts()})
	e.must(err, "NewPeriodTables")
	e.t.Cleanup(func() { _, _ = p.DropBefore(context.Background(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), nil) })
	e.setup()
	day := func(d int) time.Time { return time.Date(2014, 7, 29+d, 0, 0, 0, 0, time.UTC) }
	want := map[string]cfSignIn{} // by day/PK/RK
	put := func(d int, v cfSignIn) { want[fmt.Sprint(d, "/", v.PartitionKey, "/", v.RowKey)] = v }
	for d := range 3 {
		for i := range 2 {
			at := day(d).Add(time.Duration(i) * time.Hour)
			v := cfSignIn{PartitionKey: fmt.Sprint("user", i), RowKey: keys.TimeKey(at), Success: i == 0}
			budget := int64(1)
			if i == 0 {
				budget = 3 // the period's first write creates its table
			}
			if e.do(budget, "Insert", func() error { return p.Insert(ctx, at, &v, nil) }, func() bool {
				t, _ := p.Table(at)
				_, err := t.Get(ctx, v.PartitionKey, v.RowKey, nil)
				return err == nil
			}) {
				put(d, v)
			}
		}
	}
	at := day(2).Add(time.Hour)
	up := cfSignIn{PartitionKey: "user1", RowKey: keys.TimeKey(at), Success: true}
	if e.do(1, "Upsert", func() error { return p.Upsert(ctx, at, &up, nil) }, nil) {
		put(2, up)
	}
	var bulk []cfSignIn
	for i := range 5 {
		bulk = append(bulk, cfSignIn{PartitionKey: "bulk", RowKey: keys.TimeKey(day(1).Add(time.Duration(i) * time.Minute))})
	}
	// docs/RULES.md: a batch costs 1 request per 100 operations; the period's
	// table exists (written above), so none is needed to create it.
	if e.do(1, "PeriodTables.BulkWrite of 5 rows into an existing period (1 request per 100 operations)", func() error {
		res, err := p.BulkWrite(ctx, day(1), bulk, nil)
		if err == nil && res.Written != len(bulk) {
			err = fmt.Errorf("%d of %d written", res.Written, len(bulk))
		}
		return err
	}, nil) {
		for _, v := range bulk {
			put(1, v)
		}
	}
	e.read(3, "Query over 3 days", func() error {
		_, err := patterns.Collect(p.Query(ctx, day(0), day(3), keys.PK().Eq("user0"), nil))
		return err
	})
	if e.do(2, "DropBefore (list + 1 delete)", func() error {
		names, err := p.DropBefore(ctx, day(1), nil)
		if err == nil && !slices.Equal(names, []string{prefix + "20140729"}) {
			e.t.Errorf("PeriodTables: DropBefore dropped %v", names)
		}
		return err
	}, nil) {
		for k := range want {
			if strings.HasPrefix(k, "0/") {
				delete(want, k)
			}
		}
	}
	late := cfSignIn{PartitionKey: "late", RowKey: "1"}
	if err := e.cost(0, "Insert into a dropped day", func() error { return p.Insert(ctx, day(0), &late, nil) }); !errors.Is(err, patterns.ErrPeriodDropped) {
		e.t.Errorf("PeriodTables: Insert into a dropped day = %v, want ErrPeriodDropped", err)
	}
	// A period of its own, dropped whole: one request.
	extra := cfSignIn{PartitionKey: "user0", RowKey: keys.TimeKey(day(5))}
	e.do(3, "Insert into a new period", func() error { return p.Insert(ctx, day(5), &extra, nil) }, nil)
	e.do(1, "Drop of one period", func() error { return p.Drop(ctx, day(5), nil) }, nil)

	e.settle()
	names, err := p.List(ctx, nil)
	e.must(err, "List")
	if !slices.Equal(names, []string{prefix + "20140730", prefix + "20140731"}) {
		e.t.Errorf("PeriodTables: tables %v", names)
	}
	got := map[string]cfSignIn{}
	for d := range 3 {
		rows, err := patterns.Collect(p.Query(ctx, day(d), day(d+1), keys.Filter{}, &patterns.QueryOptions{AllowTableScan: true}))
		e.must(err, "final Query")
		for _, v := range rows {
			got[fmt.Sprint(d, "/", v.PartitionKey, "/", v.RowKey)] = v
		}
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			e.t.Errorf("PeriodTables: %s = %+v (found %v), want %+v", k, g, ok, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			e.t.Errorf("PeriodTables: %s is stored but was never written or was dropped", k)
		}
	}
}

// cfReview is the guide's compound key example: an employee and its
// yearly reviews in one partition.
type cfReview struct {
	PartitionKey  string
	RowKey        string
	ETag          string
	FirstName     string
	ManagerRating int // the counter
	Comments      string
}

type cfReviewKey struct {
	ID   int
	Year int
}

// CompoundKeys: reviews under "empid_{ID:6}_{Year}". Writes go through its
// Table; the repository adds the keys and the related-rows query.
func cfCompoundKeys(e *cfEnv) {
	ctx := e.ctx
	ck, err := patterns.NewCompoundKeys[cfReviewKey, cfReview](e.acct, testenv.TableName(e.t), "empid_{ID:6}_{Year}", &patterns.CompoundKeysOptions{Table: e.tableOpts()})
	e.must(err, "NewCompoundKeys")
	tbl := ck.Table()
	e.setup(tbl.CreateIfNotExists)
	rk := func(id, year int) string { r, _ := ck.RowKey(cfReviewKey{id, year}); return r }
	want := map[string]cfReview{}
	tx := tbl.Transaction().Insert(&cfReview{PartitionKey: "Sales", RowKey: "empid_000123", FirstName: "Jun"})
	rows := []cfReview{{PartitionKey: "Sales", RowKey: "empid_000123", FirstName: "Jun"}}
	for y := 2010; y <= 2013; y++ {
		v := cfReview{PartitionKey: "Sales", RowKey: rk(123, y), Comments: fmt.Sprint("review ", y)}
		rows = append(rows, v)
		tx.Insert(&v)
	}
	for y := 2010; y <= 2011; y++ {
		v := cfReview{PartitionKey: "Sales", RowKey: rk(124, y), Comments: "someone else"}
		rows = append(rows, v)
		tx.Insert(&v)
	}
	if e.do(1, "Transaction of the employee and its reviews", func() error { _, err := tx.Submit(ctx, nil); return err },
		cfExists(e, tbl.Get, "Sales", "empid_000123")) {
		for _, v := range rows {
			want[v.RowKey] = v
		}
	}
	e.read(1, "Get by compound key", func() error { _, err := ck.Get(ctx, "Sales", cfReviewKey{123, 2012}, nil); return err })
	e.read(1, "Related", func() error {
		got, err := patterns.Collect(ck.Related(ctx, "Sales", cfReviewKey{ID: 123}, 2, &patterns.RelatedOptions{IncludeParent: true}))
		if err == nil && len(got) != 5 {
			e.t.Errorf("CompoundKeys: Related = %d rows, want 5", len(got))
		}
		return err
	})
	ratings := e.hammer([]string{rk(123, 2012), rk(123, 2013)}, 4, e.n(8, 6), "CompoundKeys Table.Update", func(r string) error {
		_, err := tbl.Update(ctx, "Sales", r, func(v *cfReview) error { v.ManagerRating++; return nil }, nil)
		return err
	})
	if e.do(1, "DeleteIfExists", func() error { _, err := tbl.DeleteIfExists(ctx, "Sales", rk(123, 2010), nil); return err }, nil) {
		delete(want, rk(123, 2010))
	}

	e.settle()
	for _, id := range []int{123, 124} {
		got, err := patterns.Collect(ck.Related(ctx, "Sales", cfReviewKey{ID: id}, 2, &patterns.RelatedOptions{IncludeParent: true}))
		e.must(err, "final Related")
		var wantKeys, gotKeys []string
		for k := range want {
			if strings.HasPrefix(k, rk(id, 0)[:len("empid_000123")]) {
				wantKeys = append(wantKeys, k)
			}
		}
		sort.Strings(wantKeys)
		for _, g := range got {
			gotKeys = append(gotKeys, g.RowKey)
			w := want[g.RowKey]
			if c := ratings[g.RowKey]; c != nil {
				c.check(e, "CompoundKeys: "+g.RowKey+" ManagerRating", 0, g.ManagerRating)
			} else if g.ManagerRating != w.ManagerRating {
				e.t.Errorf("CompoundKeys: %s ManagerRating %d, want %d", g.RowKey, g.ManagerRating, w.ManagerRating)
			}
			if g.Comments != w.Comments || g.FirstName != w.FirstName {
				e.t.Errorf("CompoundKeys: %s = %+v, want %+v", g.RowKey, g, w)
			}
		}
		if !slices.Equal(gotKeys, wantKeys) {
			e.t.Errorf("CompoundKeys: Related(%d) = %v, want %v", id, gotKeys, wantKeys)
		}
	}
}

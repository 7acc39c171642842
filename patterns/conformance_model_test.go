package patterns_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// cfComposedViews is the guide's employee with every view a Model keeps:
// by email in its department (an index in its partition, in its
// transaction), by last name across the company and by id (indexes in
// other tables, kept by the worker), listed by last name (index entities,
// kept by the worker), and a tail of its department by age.
func cfComposedViews(lastTable, idTable string) patterns.Views[cfEmployee] {
	return patterns.Views[cfEmployee]{
		Indexes: []patterns.Index[cfEmployee]{cfEmailIndex()},
		EventualIndexes: []patterns.Index[cfEmployee]{
			{Name: "lastname", Key: func(v *cfEmployee) string { return v.LastName }, Table: lastTable,
				Partition: func(*cfEmployee) string { return "all" }, Props: []string{"EmployeeID", "FirstName", "LastName", "Email"}},
			{Name: "empid", Unique: true, Key: func(v *cfEmployee) string { return v.EmployeeID }, Table: idTable},
		},
		Tails: []patterns.Tail[cfEmployee]{{Name: "byage", Time: cfAgeTime, Props: []string{"EmployeeID", "Age"}}},
		Lists: []patterns.ListIndex[cfEmployee]{{Name: "bylast", Key: func(v *cfEmployee) string { return v.LastName }, Table: lastTable}},
	}
}

func cfAgeTime(v *cfEmployee) time.Time {
	return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(v.Age) * time.Hour)
}

// cfComposed: a Model over one type with five views, driven by a random
// mix of inserts, updates of indexed values, deletes and archives through
// the worker, then concurrent increments; after the worker drains, every
// surviving and archived employee is exactly as last written, every view
// of the survivors answers for them, and Verify finds nothing.
func cfComposed(e *cfEnv) {
	ctx := e.ctx
	q := e.queue()
	lastTable, idTable, archive := testenv.TableName(e.t), testenv.TableName(e.t), testenv.TableName(e.t)
	x, err := patterns.NewModel(e.acct, testenv.TableName(e.t), cfComposedViews(lastTable, idTable),
		&patterns.ModelOptions{Table: e.tableOpts(), Queue: q})
	e.must(err, "NewModel")
	arch, err := patterns.NewTable[cfEmployee](e.plain, archive, nil)
	e.must(err, "archive table")
	e.setup(cfQueue(q), x.CreateIfNotExists, arch.CreateIfNotExists)
	w := e.startWorker(q)
	m := newCfModel()
	archived := newCfModel()
	h := e.seed
	if h == 0 {
		h = uint64(len(e.mode.name))
	}
	rng := rand.New(rand.NewPCG(h, 50))
	depts := []string{"Sales", "HR"}
	next := 0
	insert := func() {
		v := cfEmp(depts[next%2], next, []string{"Jones", "Smith", "Lee"}[next%3])
		next++
		if e.do(2, "Insert "+v.RowKey, func() error { return x.Insert(ctx, &v, nil) }, cfExists(e, x.Get, v.PartitionKey, v.RowKey)) {
			m.put(v)
		}
	}
	for i := range 6 {
		if i == 5 {
			e.lateWrite(x.Table().Name()) // its entity and its views in one transaction, landing late
		}
		insert()
	}
	ops := e.n(24, 12)
	for i := range ops {
		keys := m.keys()
		if len(keys) < 3 {
			insert()
			continue
		}
		k := keys[rng.IntN(len(keys))]
		v := m.rows[k]
		switch r := rng.IntN(10); {
		case r < 2:
			insert()
		case r < 4: // a value of the index in its partition (and of the eventual ones' projections)
			v.Email = fmt.Sprintf("m%d-%s", i, v.Email)
			if e.do(3, "Update email of "+k, func() error {
				_, err := x.Update(ctx, v.PartitionKey, v.RowKey, func(s *cfEmployee) error { s.Email = v.Email; return nil }, nil)
				return err
			}, func() bool {
				g, err := x.Get(ctx, v.PartitionKey, v.RowKey, nil)
				return err == nil && g.Email == v.Email
			}) {
				m.put(v)
			}
		case r < 6: // a value of an eventual index
			names := []string{"Jones", "Smith", "Lee", "Khan"}
			for old := v.LastName; v.LastName == old; {
				v.LastName = names[rng.IntN(len(names))]
			}
			if e.do(4, "Replace last name of "+k, func() error {
				g, err := x.Get(ctx, v.PartitionKey, v.RowKey, nil)
				if err != nil {
					return err
				}
				g.LastName = v.LastName
				return x.Replace(ctx, &g, nil)
			}, func() bool {
				g, err := x.Get(ctx, v.PartitionKey, v.RowKey, nil)
				return err == nil && g.LastName == v.LastName
			}) {
				m.put(v)
			}
		case r < 8:
			if e.do(3, "Delete "+k, func() error {
				return x.Delete(ctx, &cfEmployee{PartitionKey: v.PartitionKey, RowKey: v.RowKey}, &patterns.WriteOptions{Unconditional: true})
			}, cfGone(e, x.Get, v.PartitionKey, v.RowKey)) {
				m.del(v.PartitionKey, v.RowKey)
			}
		default:
			if e.do(1, "Archive "+k, func() error { return x.Archive(ctx, v.PartitionKey, v.RowKey, archive, nil) }, nil) {
				m.del(v.PartitionKey, v.RowKey)
				archived.put(v)
			}
		}
	}
	if len(m.keys()) < 2 {
		insert()
		insert()
	}
	counters := m.keys()[:2]
	split := func(k string) (string, string) { pk, rk, _ := strings.Cut(k, "/"); return pk, rk }
	for k, c := range e.hammer(counters, 4, e.n(4, 3), "Model.Update", func(k string) error {
		pk, rk := split(k)
		_, err := x.Update(ctx, pk, rk, cfIncAge, nil)
		return err
	}) {
		pk, rk := split(k)
		cfMerge(m.counter(pk, rk), c)
	}

	e.settle()
	e.drain(w)
	var prim, old []cfEmployee
	for _, pk := range depts {
		rows, err := patterns.Collect(x.Table().Query(ctx, keys.PK().Eq(pk), nil))
		e.must(err, "final primaries")
		for _, r := range rows {
			if !strings.HasPrefix(r.RowKey, "email_") && !strings.HasPrefix(r.RowKey, "byage_") {
				prim = append(prim, r)
			}
		}
		rows, err = patterns.Collect(arch.Query(ctx, keys.PK().Eq(pk), nil))
		e.must(err, "archived")
		old = append(old, rows...)
	}
	m.check(e, "Model primaries", prim)
	archived.check(e, "Model archive", old)
	for _, k := range m.keys() {
		v := m.rows[k]
		stored, err := x.Get(ctx, v.PartitionKey, v.RowKey, nil)
		e.must(err, "final get")
		if g, err := x.Lookup(ctx, "email", v.PartitionKey, stored.Email, nil); err != nil || g.RowKey != v.RowKey {
			e.t.Errorf("Model: Lookup by email %s = %+v, %v; want %s", stored.Email, g, err, k)
		}
		if g, err := x.Lookup(ctx, "empid", v.PartitionKey, v.EmployeeID, nil); err != nil || g.Age != stored.Age || g.Email != stored.Email {
			e.t.Errorf("Model: Lookup by id %s = %+v, %v; the entity is %+v", v.EmployeeID, g, err, stored)
		}
		found := false
		for g, err := range x.Find(ctx, "lastname", "all", stored.LastName, nil) {
			e.must(err, "Find by last name")
			found = found || g.PartitionKey == v.PartitionKey && g.RowKey == v.RowKey
		}
		if !found {
			e.t.Errorf("Model: Find by last name %s does not return %s", stored.LastName, k)
		}
		found = false
		for g, err := range x.Listed(ctx, "bylast", stored.LastName, nil) {
			e.must(err, "Listed by last name")
			found = found || g.PartitionKey == v.PartitionKey && g.RowKey == v.RowKey
		}
		if !found {
			e.t.Errorf("Model: the %s list does not name %s", stored.LastName, k)
		}
	}
	for _, k := range archived.keys() {
		v := archived.rows[k]
		if _, err := x.Lookup(ctx, "empid", v.PartitionKey, v.EmployeeID, nil); !errors.Is(err, tablekit.ErrNotFound) {
			e.t.Errorf("Model: archived %s is still found by id: %v", k, err)
		}
	}
	for _, pk := range depts {
		latest, err := x.Latest(ctx, "byage", pk, 1000, nil)
		e.must(err, "Latest")
		if want := len(m.with(func(v cfEmployee) bool { return v.PartitionKey == pk })); len(latest) != want {
			e.t.Errorf("Model: the %s tail has %d rows, want %d", pk, len(latest), want)
		}
	}
	rep, err := x.Verify(ctx, nil)
	e.must(err, "Verify")
	if !rep.OK() || rep.Primaries != len(m.rows) {
		e.t.Errorf("Model: Verify after the worker drained: %d primaries (want %d), missing %v, stale %v, orphans %v", rep.Primaries, len(m.rows), rep.Missing, rep.Stale, rep.Orphans)
	}
}

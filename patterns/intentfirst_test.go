package patterns_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Every eventually consistent write enqueues its intent before it writes
// the primary, so that the worker learns of every write that landed: when
// the enqueue fails (here the queue is gone), the write returns an error
// and the primary is as it was, read back through an account of its own.
// Writing first and enqueueing after would leave a primary whose copies
// no intent will ever sync. LargeEntities is the one writer that enqueues
// after, by design (the cleanup of blobs the write left unreferenced): its
// case pins that the entity is written and the error says the cleanup was
// not enqueued.
func TestIntentEnqueuedBeforeThePrimary(t *testing.T) {
	t.Parallel()
	// A case sets up its repository (the queue created), seeds the
	// primary when it has one to change, and returns its write, the
	// primary's table and keys.
	type setup struct {
		write  func() error
		table  string
		pk, rk string
	}
	emp := func() *cfEmployee { e := cfEmp("Sales", 1, "Smith"); return &e }
	eventual := func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) *patterns.EventualIndexedTable[cfEmployee] {
		x, err := patterns.NewEventualIndexedTable(acct, testenv.TableName(t), q, []patterns.Index[cfEmployee]{cfEmailIndex(), cfLastNameIndex()}, nil)
		must(t, err)
		must(t, x.CreateIfNotExists(context.Background(), nil))
		return x
	}
	list := func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) *patterns.EventualListIndexedTable[cfEmployee] {
		ix := cfLastNameList()
		ix.Table = testenv.TableName(t) + "ix"
		x, err := patterns.NewEventualListIndexedTable(acct, testenv.TableName(t), q, ix, nil)
		must(t, err)
		must(t, x.CreateIfNotExists(context.Background(), nil))
		return x
	}
	ctx := context.Background()
	rename := func(e *cfEmployee) error { e.LastName, e.Email = "Jones", "jones@contoso.com"; return nil }
	cases := []struct {
		name string
		set  func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup
		// seeded: the primary exists before the write.
		seeded bool
	}{
		{"EventualIndexedTable.Insert", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := eventual(t, acct, q)
			return setup{func() error { return x.Insert(ctx, emp(), nil) }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, false},
		{"EventualIndexedTable.Update", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := eventual(t, acct, q)
			must(t, x.Insert(ctx, emp(), nil))
			return setup{func() error { _, err := x.Update(ctx, emp().PartitionKey, emp().RowKey, rename, nil); return err }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, true},
		{"EventualIndexedTable.Delete", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := eventual(t, acct, q)
			must(t, x.Insert(ctx, emp(), nil))
			return setup{func() error { return x.Delete(ctx, emp(), &patterns.WriteOptions{Unconditional: true}) }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, true},
		{"EventualListIndexedTable.Insert", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := list(t, acct, q)
			return setup{func() error { return x.Insert(ctx, emp(), nil) }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, false},
		{"EventualListIndexedTable.Update", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := list(t, acct, q)
			must(t, x.Insert(ctx, emp(), nil))
			return setup{func() error { _, err := x.Update(ctx, emp().PartitionKey, emp().RowKey, rename, nil); return err }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, true},
		{"EventualListIndexedTable.Delete", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			x := list(t, acct, q)
			must(t, x.Insert(ctx, emp(), nil))
			return setup{func() error { return x.Delete(ctx, emp(), &patterns.WriteOptions{Unconditional: true}) }, x.Table().Name(), emp().PartitionKey, emp().RowKey}
		}, true},
		{"EventualDenormalization.UpdateSource", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) setup {
			depts := testenv.TableName(t) + "d"
			x, err := patterns.NewEventualDenormalization(acct, testenv.TableName(t), q,
				func(*cfManager) []consistency.EntityRef {
					return []consistency.EntityRef{{Table: depts, PartitionKey: "Sales", RowKey: "Department"}}
				},
				map[string]string{"Phone": "ManagerPhone"}, nil)
			must(t, err)
			must(t, x.CreateIfNotExists(ctx, nil))
			must(t, x.Sources().Insert(ctx, &cfManager{PartitionKey: "Managers", RowKey: "000100", FirstName: "Mary", Phone: cfPhone(0)}, nil))
			return setup{func() error { _, err := x.UpdateSource(ctx, "Managers", "000100", cfIncManager, nil); return err }, x.Sources().Name(), "Managers", "000100"}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			acct := testenv.Account(t)
			q, _ := testQueue(t, acct)
			s := c.set(t, acct, q)
			plain, err := patterns.NewTable[entity.Entity](testenv.Account(t), s.table, nil)
			must(t, err)
			before, berr := plain.Get(ctx, s.pk, s.rk, nil)
			if c.seeded != (berr == nil) {
				t.Fatalf("the primary before the write: %v", berr)
			}
			must(t, q.Delete(ctx, nil))

			err = s.write()
			if err == nil || !errors.Is(err, tablekit.ErrNotFound) {
				t.Fatalf("the write with its queue gone: %v; want the enqueue's error (the queue not found)", err)
			}
			after, aerr := plain.Get(ctx, s.pk, s.rk, nil)
			switch {
			case !c.seeded && !errors.Is(aerr, tablekit.ErrNotFound):
				t.Fatalf("the write failed and yet the primary exists: %+v, %v", after, aerr)
			case c.seeded && (aerr != nil || after.ETag != before.ETag):
				t.Fatalf("the write failed and yet the primary changed: ETag %s, was %s (%v)", after.ETag, before.ETag, aerr)
			}
		})
	}

	t.Run("LargeEntities.Upsert cleans up after", func(t *testing.T) {
		t.Parallel()
		acct := testenv.Account(t)
		q, container := testQueue(t, acct)
		l, err := patterns.NewLargeEntities[LargeEmployee](acct, testenv.TableName(t), container, &patterns.LargeEntitiesOptions{Queue: q})
		must(t, err)
		must(t, l.CreateIfNotExists(ctx, nil))
		must(t, l.Upsert(ctx, &LargeEmployee{PartitionKey: "p", RowKey: "r", FirstName: "Old", Photo: []byte("old photo")}, nil))
		must(t, q.Delete(ctx, nil))
		err = l.Upsert(ctx, &LargeEmployee{PartitionKey: "p", RowKey: "r", FirstName: "New", Photo: []byte("new photo")}, nil)
		if !errors.Is(err, tablekit.ErrNotFound) || !strings.Contains(err.Error(), "the entity was written") {
			t.Fatalf("upsert with its cleanup queue gone: %v", err)
		}
		got, err := l.Get(ctx, "p", "r", nil)
		if err != nil || got.FirstName != "New" || string(got.Photo) != "new photo" {
			t.Fatalf("after the upsert: %+v, %v; want the new version", got, err)
		}
	})
}

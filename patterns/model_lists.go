package patterns

import (
	"context"
	"iter"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// A Model's lists (Views.Lists) are the guide's index entities, option 3:
// one entity per value, listing the keys of the entities with that value
// in every partition, kept by the worker's index-list step from the same
// one message per write as the Model's other views kept by the worker.

// listProp is the property that holds an entity's value of list ix, which
// the index-list step reads.
func listProp[T any](ix *ListIndex[T]) string { return "TkList" + ix.Name }

// listTable is the table of list ix's index entities.
func (m *Model[T]) listTable(ix *ListIndex[T]) *Table[T] {
	if ix.Table != "" {
		return m.tables[ix.Table]
	}
	return m.t
}

// listRef is the index entity of list ix for value.
func (m *Model[T]) listRef(ix *ListIndex[T], value string) consistency.EntityRef {
	return consistency.EntityRef{Table: m.listTable(ix).name, PartitionKey: ix.Partition, RowKey: ix.Prefix + value}
}

// listValue is a value of one of a Model's lists.
type listValue struct {
	list  int
	value string
}

// listChanges returns the list values whose membership a write from
// before to after changes (both the old and the new value of a list),
// leaving out those in done, which it adds them to.
func listChanges(before, after *modelState, n int, done map[listValue]bool) []listValue {
	var out []listValue
	for i := range n {
		var ov, nv string
		if i < len(before.lists) {
			ov = before.lists[i]
		}
		if i < len(after.lists) {
			nv = after.lists[i]
		}
		if ov == nv {
			continue
		}
		for _, v := range []string{nv, ov} {
			lv := listValue{i, v}
			if v != "" && !done[lv] {
				done[lv] = true
				out = append(out, lv)
			}
		}
	}
	return out
}

// list returns the list called name.
func (m *Model[T]) list(name string) (*ListIndex[T], error) {
	at, ok := m.byName[name]
	if !ok || !at.list {
		return nil, tkerr.Errorf("tablekit: %s: %w: no list named %q", m.t.name, tablekit.ErrInvalidArgument, name)
	}
	return &m.lists[at.i], nil
}

// ListMembers returns the keys of the entities list lists under value, in
// every partition: one request (none listed is an empty list, not an
// error). The list lags the entities until the worker has run.
func (m *Model[T]) ListMembers(ctx context.Context, list, value string, opts *GetOptions) ([]Member, error) {
	ix, err := m.list(list)
	if err != nil {
		return nil, err
	}
	return readMembers(ctx, m.listTable(ix).w, m.listRef(ix, value), ix.property())
}

// Listed returns the entities whose value in list is value, in every
// partition ("every employee named Jones"): one request for the index
// entity, then one read per member, in parallel up to
// ListIndex.Parallelism; a member whose entity is gone or has another
// value now (the worker has not caught up) is skipped. Blob fields are
// not read (Get reads them).
func (m *Model[T]) Listed(ctx context.Context, list, value string, opts *QueryOptions) iter.Seq2[T, error] {
	ix, err := m.list(list)
	if err != nil {
		return errSeq[T](err)
	}
	return lookupMembers(ctx, m.t, *ix, value, func(ctx context.Context, value string, o *GetOptions) ([]Member, error) {
		return m.ListMembers(ctx, list, value, o)
	}, opts)
}

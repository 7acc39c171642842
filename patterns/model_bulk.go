package patterns

import (
	"context"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// BulkWrite writes items with their views: each through the Model's own
// write path (Insert with opts.Insert, else Upsert with opts.Mode),
// opts.Concurrency at once (default 8). An entity's transaction holds its
// partition's views, so entities are not packed together as Table's
// BulkWrite packs them: each costs what its Insert or Upsert costs (see
// Model). Written counts the entities written and Requests their writes;
// the entities that failed are in Failed, in input order, and the error is
// a *BulkError.
func (m *Model[T]) BulkWrite(ctx context.Context, items []T, opts *BulkOptions) (BulkResult, error) {
	o := optsOf(opts)
	n := o.Concurrency
	if n <= 0 {
		n = 8
	}
	var mu sync.Mutex
	var res BulkResult
	failed := make([]*BulkFailure, len(items))
	err := each(ctx, indexList(len(items)), n, func(ctx context.Context, i int) error {
		v := &items[i]
		var err error
		if o.Insert {
			err = m.Insert(ctx, v, nil)
		} else {
			err = m.Upsert(ctx, v, &UpsertOptions{Mode: o.Mode})
		}
		mu.Lock()
		defer mu.Unlock()
		res.Requests++
		if err != nil {
			pk, rk := m.t.codec.Keys(v)
			failed[i] = &BulkFailure{Index: i, PartitionKey: pk, RowKey: rk, Err: err}
			return nil
		}
		res.Written++
		return nil
	})
	for _, f := range failed {
		if f != nil {
			res.Failed = append(res.Failed, *f)
		}
	}
	if err != nil {
		return res, err
	}
	if len(res.Failed) > 0 {
		return res, &BulkError{Failed: res.Failed}
	}
	return res, nil
}

func indexList(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// DeleteWhere deletes, with their views, the entities f matches: it scans
// the table (the rows of views in it are skipped) and deletes each entity
// found through the Model's own Delete, without condition, opts.Concurrency
// at once (default 8). A table scan is refused unless opts.AllowTableScan.
// Matched counts the entities found, Deleted those deleted, Gone those
// another writer deleted first. Requests: the scan's pages, then each
// entity's Delete (see Model).
func (m *Model[T]) DeleteWhere(ctx context.Context, f keys.Filter, opts *WhereOptions) (WhereResult, error) {
	var res WhereResult
	f, _, o, err := m.t.ops().prepareWhere(f, opts)
	if err != nil {
		return res, err
	}
	var found [][2]string
	for p, err := range scanRows(ctx, m.t.w, f, o.Parallel) {
		if err != nil {
			return res, err
		}
		if _, _, isView := m.viewOf(m.t.name, p); isView || m.listEntity(m.t.name, p) != nil {
			continue
		}
		pk, rk := rowKeys(p)
		found = append(found, [2]string{pk, rk})
	}
	res.Matched = len(found)
	var mu sync.Mutex
	err = each(ctx, found, o.Concurrency, func(ctx context.Context, k [2]string) error {
		_, err := m.write(ctx, k[0], k[1], nil, writeMode{primary: OpDelete}, wire.ModifyOptions{Verb: "delete"})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			res.Deleted++
		case tablekit.IsNotFound(err):
			res.Gone++
		default:
			return err
		}
		res.Transactions++
		if o.Progress != nil {
			o.Progress(res)
		}
		return nil
	})
	return res, err
}

package patterns

import (
	"context"
	"iter"
	"slices"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// Sort order on the Azure Cosmos DB Table API. Azure Table storage returns
// query results in PartitionKey, RowKey order; Cosmos DB's Table API does
// not ("Frequently asked questions about Azure Cosmos DB for Table", see
// docs/COSMOS.md). A repository method whose answer depends on that order
// either refuses on Cosmos DB before any request, with an error wrapping
// tablekit.ErrUnsortedResults (requireSorted), or reads the whole,
// bounded, result and sorts it itself (inKeyOrder).

// requireSorted returns nil when t's service sorts query results, and
// otherwise an error wrapping tablekit.ErrUnsortedResults that names the
// table and what needs the order ("LogTail.Latest").
func (t *tableCore) requireSorted(what string) error {
	if err := t.w.Profile().RequireSortedResults(what); err != nil {
		return tkerr.Errorf("tablekit: %s: %w", t.name, err)
	}
	return nil
}

// inKeyOrder runs t.Query(ctx, f, opts) so that the rows come in
// PartitionKey, RowKey order whatever the service. Where the service sorts
// them, it is t.Query. Where it does not, every row the filter selects is
// read first (Limit does not cut the reading short, since the first n rows
// by key can come last), then sorted as the service would sort them (by
// UTF-16 code units), and at most opts.Limit are yielded. Use it only for
// results the pattern bounds (the related rows of one key). what names the
// caller in errors: a projection that leaves out PartitionKey or RowKey
// cannot be sorted and is refused before any request.
func inKeyOrder[T any](ctx context.Context, t *Table[T], f keys.Filter, opts *QueryOptions, what string) iter.Seq2[T, error] {
	if t.w.Profile().SortedResults() {
		return t.Query(ctx, f, opts)
	}
	o := optsOf(opts)
	return func(yield func(T, error) bool) {
		var zero T
		if !o.SelectAll && len(o.Select) > 0 && (!slices.Contains(o.Select, "PartitionKey") || !slices.Contains(o.Select, "RowKey")) {
			yield(zero, tkerr.Errorf("tablekit: %s: %w: %s sorts the rows itself on %s and needs PartitionKey and RowKey in Select",
				t.name, tablekit.ErrUnsortedResults, what, t.w.Profile()))
			return
		}
		limit := o.Limit
		o.Limit = 0
		type row struct {
			v      T
			pk, rk string
		}
		var rows []row
		for v, err := range t.Query(ctx, f, &o) {
			if err != nil {
				yield(zero, err)
				return
			}
			pk, rk := t.codec.Keys(&v)
			rows = append(rows, row{v, pk, rk})
		}
		slices.SortStableFunc(rows, func(a, b row) int {
			if c := utf16Compare(a.pk, b.pk); c != 0 {
				return c
			}
			return utf16Compare(a.rk, b.rk)
		})
		for i, r := range rows {
			if limit > 0 && i >= limit {
				return
			}
			if !yield(r.v, nil) {
				return
			}
		}
	}
}

// utf16Compare orders strings as the Table service orders keys, by UTF-16
// code units.
func utf16Compare(a, b string) int {
	switch {
	case a == b:
		return 0
	case bucketUTF16Less(a, b):
		return -1
	default:
		return 1
	}
}

package wire

import (
	"context"
	"iter"

	"github.com/tablekit/tablekit/entity"
)

// Entities runs a query like Rows, but yields a reader positioned on each
// row instead of the row's bytes: r.Decode(codec, &v) decodes the row in
// one pass straight from the page's body (no split of the page first, no
// second scan), r.Raw returns its JSON. The reader, and what Raw returns,
// are valid only until the loop continues: the page's buffer is sized by
// its Content-Length, comes from a pool and goes back to it. A row the
// loop neither decodes nor reads is skipped. It stops after q.Limit rows,
// at the first error, or when ctx is cancelled; one request per page.
func (t *Table) Entities(ctx context.Context, q Query) iter.Seq2[*entity.PageReader, error] {
	return func(yield func(*entity.PageReader, error) bool) {
		if q.Top <= 0 || q.Top > 1000 {
			q.Top = 1000
		}
		rp, isREST := t.tr.(*restPath)
		buf := getPageBuf()
		defer putPageBuf(buf)
		var (
			r   entity.PageReader
			pos *Continuation
			n   int
		)
		// emit yields the rows of r; false means stop.
		emit := func() bool {
			for r.Next() {
				if !yield(&r, nil) {
					return false
				}
				n++
				if q.Limit > 0 && n >= q.Limit {
					return false
				}
			}
			if err := r.Err(); err != nil {
				yield(nil, err)
				return false
			}
			return true
		}
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			sctx, end := t.span(ctx, "Pager[ListEntitiesResponse].NextPage")
			var (
				next *Continuation
				err  error
				rows [][]byte
				body []byte
			)
			if isREST {
				body, next, err = rp.pageBody(sctx, q, pos, buf)
			} else {
				rows, next, err = t.tr.page(sctx, q, pos)
			}
			end(err)
			if err != nil {
				yield(nil, err)
				return
			}
			if isREST {
				r.Reset(body)
				if !emit() {
					return
				}
			} else {
				for _, row := range rows {
					r.ResetRow(row)
					if !emit() {
						return
					}
				}
			}
			if next == nil {
				return
			}
			pos = next
		}
	}
}

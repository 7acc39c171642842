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
// are valid only until the loop continues: page buffers are sized by
// Content-Length, come from a pool and go back to it. A row the loop
// neither decodes nor reads is skipped. It stops after q.Limit rows, at
// the first error, or when ctx is cancelled; one request per page.
//
// Without a Limit, the next page is requested while the loop works through
// the current one, so the service prepares a page while the client
// decodes the last (a partition scan's wall time is then the larger of the
// two, not their sum). That request starts once the loop has taken the
// page's first row and continues: a loop that stops at the first row of a
// page causes no further request, one that stops later may have caused
// one more, which is cancelled. With a Limit, pages are fetched one after
// the other.
func (t *Table) Entities(ctx context.Context, q Query) iter.Seq2[*entity.PageReader, error] {
	return func(yield func(*entity.PageReader, error) bool) {
		if q.Top <= 0 || q.Top > 1000 {
			q.Top = 1000
		}
		ahead := q.Limit == 0
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			r       entity.PageReader
			n       int
			next    *Continuation // the position after the current page
			pending bool          // a page is being fetched ahead, into done
			spare   *[]byte       // the last page's buffer, for the next one
			// One goroutine fetches every page ahead, started with the
			// first: a goroutine per page grew its stack through azcore's
			// pipeline again for every page (5% of a scan's CPU).
			asks chan fetchAsk
			done chan fetched
		)
		// A scan keeps its two buffers (the page being read, the page
		// being fetched) from page to page: handed back to the pool in
		// between, a garbage collection could take them, and a new one
		// would grow to the page's size again.
		buffer := func() *[]byte {
			if b := spare; b != nil {
				spare = nil
				return b
			}
			return pages.Get()
		}
		defer func() {
			if pending {
				cancel()
				pages.Put((<-done).buf)
			}
			if asks != nil {
				close(asks)
			}
			if spare != nil {
				pages.Put(spare)
			}
		}()
		// fetchAhead requests the next page while the loop works on the
		// current one.
		fetchAhead := func() {
			if ahead && next != nil && !pending {
				if asks == nil {
					asks, done = make(chan fetchAsk, 1), make(chan fetched, 1)
					go func(asks <-chan fetchAsk, done chan<- fetched) {
						GrowStack()
						for a := range asks {
							done <- t.fetchPage(fctx, q, a.pos, a.buf)
						}
					}(asks, done)
				}
				pending = true
				asks <- fetchAsk{next, buffer()}
			}
		}
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
				fetchAhead()
			}
			if err := r.Err(); err != nil {
				yield(nil, err)
				return false
			}
			return true
		}
		cur := t.fetchPage(fctx, q, nil, buffer())
		for {
			if cur.err == nil {
				cur.err = ctx.Err()
			}
			if cur.err != nil {
				pages.Put(cur.buf)
				yield(nil, cur.err)
				return
			}
			next = cur.next
			ok := true
			if cur.rows == nil {
				r.Reset(cur.body)
				ok = emit()
			} else {
				for _, row := range cur.rows {
					r.ResetRow(row)
					if ok = emit(); !ok {
						break
					}
				}
			}
			// The last page fetched nothing ahead, so the previous page's
			// buffer is still the spare: back to the pool with it, or it
			// would be lost and the next scan would allocate (and grow) a
			// buffer again.
			if spare != nil {
				pages.Put(spare)
			}
			spare = cur.buf
			if !ok || cur.next == nil {
				return
			}
			if pending {
				cur = <-done
				pending = false
			} else {
				cur = t.fetchPage(fctx, q, cur.next, buffer())
			}
		}
	}
}

// fetchAsk asks Entities' fetching goroutine for the page at pos, read
// into buf.
type fetchAsk struct {
	pos *Continuation
	buf *[]byte
}

// fetched is one page: its body in buf (REST) or its rows (SDK).
type fetched struct {
	buf  *[]byte
	body []byte
	rows [][]byte
	next *Continuation
	err  error
}

// fetchPage fetches the page at pos, reading a REST page's body into buf.
func (t *Table) fetchPage(ctx context.Context, q Query, pos *Continuation, buf *[]byte) fetched {
	f := fetched{buf: buf}
	ctx, end := t.span(ctx, "Pager[ListEntitiesResponse].NextPage")
	if rp, ok := t.tr.(*restPath); ok {
		f.body, f.next, f.err = rp.pageBody(ctx, q, pos, f.buf)
	} else {
		f.rows, f.next, f.err = t.tr.page(ctx, q, pos)
		if f.err == nil && f.rows == nil {
			f.rows = [][]byte{}
		}
	}
	end(f.err)
	return f
}

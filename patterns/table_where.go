package patterns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/throttle"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// WhereOptions configures Count and DeleteWhere. A nil *WhereOptions means
// the defaults: table scans refused, 8 transactions in flight.
type WhereOptions struct {
	// AllowTableScan lets a filter that does not pin one partition run,
	// as QueryOptions.AllowTableScan does. Without it such a filter fails
	// with tablekit.ErrTableScan before any request.
	AllowTableScan bool
	// AllowUnknownProperties lets the filter name properties T does not
	// have, as QueryOptions.AllowUnknownProperties does.
	AllowUnknownProperties bool
	// Concurrency is the most transactions DeleteWhere keeps in flight,
	// the ceiling of the concurrency it adapts to the service's
	// throttling as BulkWrite does. Default 8.
	Concurrency int
	// Parallel is the number of key ranges read at once (see Table.Scan).
	// 0 means DefaultScanParallel for a table scan, and 1 otherwise: one
	// sequential range, whose requests are those stated below.
	Parallel int
	// Progress, when set, is called (from one goroutine at a time) after
	// each page Count reads and after each transaction DeleteWhere sends,
	// with the totals so far.
	Progress func(WhereResult)
}

// WhereResult is what Count or DeleteWhere did.
type WhereResult struct {
	// Matched is the number of entities the filter matched (Count's
	// answer; the entities DeleteWhere set out to delete).
	Matched int
	// Deleted is the number of entities DeleteWhere deleted.
	Deleted int
	// Gone is the number of matched entities that another writer deleted
	// before DeleteWhere's transaction reached them; they are not failures.
	Gone int
	// Pages is the number of query pages read (one request each).
	Pages int
	// Transactions is the number of entity group transactions sent (one
	// request each), resends after a failed entity or a throttling
	// answer included.
	Transactions int
	// Throttled is the throttling answers DeleteWhere's transactions got
	// (see BulkResult.Throttled); each was sent again after a pause.
	Throttled int
}

// keysOnly is the projection Count and DeleteWhere read: the service
// returns the keys (and its metadata) and nothing else.
var keysOnly = []string{"PartitionKey", "RowKey"}

func (t *tableOps) prepareWhere(f keys.Filter, opts *WhereOptions) (keys.Filter, query, WhereOptions, error) {
	o := optsOf(opts)
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	f, err := t.typedFilter(f, o.AllowUnknownProperties)
	if err != nil {
		return f, query{}, o, err
	}
	q, err := prepareQuery(t.name, f, &QueryOptions{Select: keysOnly, AllowTableScan: o.AllowTableScan}, nil)
	return f, q, o, err
}

// Count returns the number of entities matching f, reading a table scan's
// key ranges in parallel (WhereOptions.Parallel, Table.Scan). It reads their keys
// only (a $select of PartitionKey and RowKey), so what travels is small
// whatever the entities hold, but the service still reads every entity the
// filter scans (see keys.Classify). A table scan is refused unless
// opts.AllowTableScan is set.
//
// Requests, with one sequential range (Parallel 1; the default but for
// table scans, which add the scan's probes): one per page of up to 1,000
// entities, at least one:
// ceil(N/1000) for N matching entities when the service fills its pages,
// as Azurite does; Azure may return shorter pages (at a partition boundary
// or after five seconds), each one more request.
func (t *Table[T]) Count(ctx context.Context, f keys.Filter, opts *WhereOptions) (int, error) {
	res, err := t.ops().countWhere(ctx, f, opts)
	return res.Matched, err
}

// CountWhere is Count reporting the pages it read too (Matched is the
// count). Its requests are Count's.
func (t *Table[T]) CountWhere(ctx context.Context, f keys.Filter, opts *WhereOptions) (WhereResult, error) {
	return t.ops().countWhere(ctx, f, opts)
}

func (t *tableOps) countWhere(ctx context.Context, f keys.Filter, opts *WhereOptions) (WhereResult, error) {
	var res WhereResult
	f, q, o, err := t.prepareWhere(f, opts)
	if err != nil {
		return res, err
	}
	var mu sync.Mutex
	_, err = scanPages(ctx, t.w, f, q, o.scanOptions(q), func(_ context.Context, p scanPage) error {
		mu.Lock()
		defer mu.Unlock()
		res.Pages++
		res.Matched += len(p.rows)
		if o.Progress != nil {
			o.Progress(res)
		}
		return nil
	})
	return res, err
}

// scanOptions are the options of the scan under Count and DeleteWhere.
func (o *WhereOptions) scanOptions(q query) *ScanOptions {
	p := o.Parallel
	if p <= 0 {
		p = 1
		if q.class == keys.TableScan {
			p = DefaultScanParallel
		}
	}
	return &ScanOptions{Parallel: p}
}

// DeleteWhere deletes every entity matching f, whatever its ETag, in
// entity group transactions: it reads the matching keys a page at a time
// (keys only; a table scan reads key ranges in parallel, see
// WhereOptions.Parallel and Table.Scan) and deletes each page's entities
// in transactions of up to 100 entities of one partition, up to
// opts.Concurrency at a time, while it reads the next page. A table scan is refused unless opts.AllowTableScan
// is set; pass keys.PK().Eq(pk) to empty one partition.
//
// Requests, with one sequential range (Parallel 1; the default but for
// table scans): one per page of up to 1,000 matching entities (as Count), plus
// one transaction per 100 entities of a partition: ceil(N/1000) +
// Σ ceil(Np/100) for Np matching entities in partition p, when pages are
// full (Azurite). Deleting 1,200 entities of one partition takes 2 + 12.
//
// Its transactions adapt to the service's throttling as BulkWrite's do:
// fewer in flight and a pause after a throttling answer, resent until
// applied; WhereResult.Throttled counts those answers.
//
// DeleteWhere is not atomic: each transaction is. An entity that another
// writer deletes first is counted in WhereResult.Gone, not as a failure.
// When other entities cannot be deleted, DeleteWhere deletes the rest and
// returns a *BulkError listing them, Index being the entity's position in
// the order DeleteWhere read them (the query's order with one range); a transaction whose response was lost and whose
// outcome reading back cannot settle fails with an error wrapping
// tablekit.ErrOutcomeUnknown. Entities written after a page was read are
// not deleted.
func (t *Table[T]) DeleteWhere(ctx context.Context, f keys.Filter, opts *WhereOptions) (WhereResult, error) {
	return t.ops().deleteWhere(ctx, f, opts)
}

func (t *tableOps) deleteWhere(ctx context.Context, f keys.Filter, opts *WhereOptions) (WhereResult, error) {
	var res WhereResult
	f, q, o, err := t.prepareWhere(f, opts)
	if err != nil {
		return res, err
	}
	var progressMu sync.Mutex
	b := newBulk(ctx, t, o.Concurrency, defaultMaxBatchBytes)
	send := b.submit
	b.submit = func(ctx context.Context, ops []Op, slot *throttle.Slot) ([]OpResult, error) {
		r, err := send(ctx, ops, slot)
		if o.Progress != nil {
			progressMu.Lock()
			b.mu.Lock()
			cur := res
			cur.Transactions, cur.Throttled, cur.Deleted = b.lim.Sent(), b.lim.Throttled(), b.written
			if err == nil {
				cur.Deleted += len(ops)
			}
			b.mu.Unlock()
			o.Progress(cur)
			progressMu.Unlock()
		}
		return r, err
	}
	finish := b.start(o.Concurrency)

	// A range's rows come in key order: consecutive rows of one
	// partition go in one transaction (of up to 100). Only the last
	// partition of a page can continue on the range's next page: its
	// partial transaction waits for that page; every other one is sent
	// at once.
	var index int
	open := map[*scanRange]*group{} // under b.mu
	_, qerr := scanPages(ctx, t.w, f, q, o.scanOptions(q), func(ctx context.Context, p scanPage) error {
		b.mu.Lock()
		res.Pages++
		res.Matched += len(p.rows)
		first := index
		index += len(p.rows)
		g := open[p.rng]
		delete(open, p.rng)
		b.mu.Unlock()
		for i, raw := range p.rows {
			k, err := rowPosition(raw)
			if err != nil {
				return tkerr.Errorf("tablekit: delete from %s: %w", t.name, err)
			}
			if g != nil && (k.PK != g.ops[0].PartitionKey || len(g.ops) == MaxTransactionOps) {
				b.dispatch(g)
				g = nil
			}
			if g == nil {
				g = &group{}
			}
			g.ops = append(g.ops, Op{Type: OpDelete, PartitionKey: k.PK, RowKey: k.RK})
			g.index = append(g.index, first+i)
		}
		if g != nil && p.last {
			b.dispatch(g)
		} else if g != nil {
			b.mu.Lock()
			open[p.rng] = g
			b.mu.Unlock()
		}
		return nil
	})
	// A scan that stopped leaves partial transactions: not sent.
	for _, g := range open {
		for i, op := range g.ops {
			b.fail(g.call, g.index[i], op.PartitionKey, op.RowKey, fmt.Errorf("not deleted: the query stopped: %w", qerr))
		}
	}
	finish()

	res.Deleted, res.Transactions, res.Throttled = b.written, b.lim.Sent(), b.lim.Throttled()
	var failed []BulkFailure
	for _, fl := range b.failed {
		if errors.Is(fl.Err, tablekit.ErrNotFound) {
			res.Gone++
			continue
		}
		failed = append(failed, fl)
	}
	slices.SortFunc(failed, func(x, y BulkFailure) int { return x.Index - y.Index })
	switch {
	case qerr != nil:
		return res, qerr
	case ctx.Err() != nil:
		return res, ctx.Err()
	case len(failed) > 0:
		return res, &BulkError{Failed: failed}
	}
	return res, nil
}

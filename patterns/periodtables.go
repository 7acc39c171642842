package patterns

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// ErrPeriodDropped is returned by a write into a period whose table was
// dropped: a table name is never reused (the guide: "Expect a delay if you
// want to reuse the same table name after deleting it. It's better to
// always use unique table names.").
var ErrPeriodDropped = errors.New("tablekit: the period's table was dropped; its name is not reused")

// PeriodTablesOptions configures a PeriodTables. A nil *PeriodTablesOptions
// means the defaults.
type PeriodTablesOptions struct {
	// Period is the span one table holds: keys.Hour, keys.Day (the
	// default, the guide's "a separate table for each day of sign-in
	// attempts") or keys.Month.
	Period keys.Period
	// Table passes options to each period's Table.
	Table *TableOptions
}

// PeriodTables is the guide's high volume delete pattern ("Enable the
// deletion of a high volume of entities by storing all the entities for
// simultaneous deletion in their own separate table. You delete the
// entities by deleting the table."): a series of tables named by
// keys.PeriodTable, prefix followed by the period's UTC start
// ("signins20140822"). Writes go to the table of their time, created on
// first use; reads over a time span fan out over the tables of its
// periods; DropBefore deletes whole tables, one request per period
// whatever its size.
//
// Every name denotes one period, so names are unique by construction, and
// once this PeriodTables dropped a period it refuses writes into it
// (ErrPeriodDropped) rather than create a table of the same name again.
// Another process that still writes into an old period would meet the
// service's TableBeingDeleted conflict (tablekit.ErrConflict) and, later,
// a fresh table: run retention from one place and write only current
// periods. Expect some throttling on a new table while the service learns
// its load, as the guide warns. A PeriodTables is safe for concurrent use.
type PeriodTables[T any] struct {
	acct   *tablekit.Account
	prefix string
	period keys.Period
	opts   *TableOptions

	mu      sync.Mutex
	tables  map[string]*Table[T]
	exists  map[string]bool // tables this PeriodTables created or wrote into
	dropped time.Time       // periods that end at or before this are dropped
}

// NewPeriodTables returns the period table series named by prefix (a
// letter, then letters and digits; see keys.PeriodTable). It checks T's
// codec and the names now and makes no request.
func NewPeriodTables[T any](acct *tablekit.Account, prefix string, opts *PeriodTablesOptions) (*PeriodTables[T], error) {
	o := optsOf(opts)
	if o.Period == 0 {
		o.Period = keys.Day
	}
	name, err := keys.PeriodTable(prefix, o.Period, time.Now())
	if err != nil {
		return nil, err
	}
	if _, err := NewTable[T](acct, name, o.Table); err != nil {
		return nil, err
	}
	return &PeriodTables[T]{acct: acct, prefix: prefix, period: o.Period, opts: o.Table, tables: map[string]*Table[T]{}, exists: map[string]bool{}}, nil
}

// Period is the span one table holds.
func (p *PeriodTables[T]) Period() keys.Period { return p.period }

// Table returns the table of the period that contains at (no request).
func (p *PeriodTables[T]) Table(at time.Time) (*Table[T], error) {
	name, err := keys.PeriodTable(p.prefix, p.period, at)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.tables[name]; ok {
		return t, nil
	}
	t, err := NewTable[T](p.acct, name, p.opts)
	if err != nil {
		return nil, err
	}
	p.tables[name] = t
	return t, nil
}

func (p *PeriodTables[T]) writable(at time.Time) (*Table[T], error) {
	p.mu.Lock()
	dropped := !p.dropped.IsZero() && !p.period.Next(at).After(p.dropped)
	p.mu.Unlock()
	if dropped {
		name, _ := keys.PeriodTable(p.prefix, p.period, at)
		return nil, tkerr.Errorf("tablekit: write at %s into %s: %w", at.UTC().Format(time.RFC3339), name, ErrPeriodDropped)
	}
	return p.Table(at)
}

// Insert inserts v into the table of the period containing at. One
// request; the first write into a period that has no table yet also
// creates it (two more).
func (p *PeriodTables[T]) Insert(ctx context.Context, at time.Time, v *T, opts *InsertOptions) error {
	t, err := p.writable(at)
	if err != nil {
		return err
	}
	return p.createOnMissing(ctx, t, func() error { return t.Insert(ctx, v, opts) })
}

// Upsert inserts or replaces (or merges) v in the table of the period
// containing at, as Insert does.
func (p *PeriodTables[T]) Upsert(ctx context.Context, at time.Time, v *T, opts *UpsertOptions) error {
	t, err := p.writable(at)
	if err != nil {
		return err
	}
	return p.createOnMissing(ctx, t, func() error { return t.Upsert(ctx, v, opts) })
}

// BulkWrite writes items into the table of the period containing at, in
// as few transactions as BulkWrite allows: one request per 100 entities.
// The first write of this PeriodTables into a period creates its table
// first (one more request) unless an earlier write or create showed it
// exists.
func (p *PeriodTables[T]) BulkWrite(ctx context.Context, at time.Time, items []T, opts *BulkOptions) (BulkResult, error) {
	t, err := p.writable(at)
	if err != nil {
		return BulkResult{}, err
	}
	if !p.known(t) {
		if err := t.CreateIfNotExists(ctx, nil); err != nil {
			return BulkResult{}, err
		}
		p.markExists(t, true)
	}
	res, err := t.BulkWrite(ctx, items, opts)
	if err != nil && res.Written == 0 && periodTableMissing(err) {
		// Dropped elsewhere since: nothing was written, so create it again
		// and write everything once more.
		if err := t.CreateIfNotExists(ctx, nil); err != nil {
			return res, err
		}
		again, err := t.BulkWrite(ctx, items, opts)
		again.Requests += res.Requests + 1
		again.Throttled += res.Throttled
		return again, err
	}
	return res, err
}

// createOnMissing runs write, and when the period's table does not exist,
// creates it and runs write once more.
func (p *PeriodTables[T]) createOnMissing(ctx context.Context, t *Table[T], write func() error) error {
	err := write()
	if !periodTableMissing(err) {
		if err == nil {
			p.markExists(t, true)
		}
		return err
	}
	if err := t.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	p.markExists(t, true)
	return write()
}

func (p *PeriodTables[T]) known(t *Table[T]) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exists[t.Name()]
}

func (p *PeriodTables[T]) markExists(t *Table[T], exists bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if exists {
		p.exists[t.Name()] = true
	} else {
		delete(p.exists, t.Name())
	}
}

func periodTableMissing(err error) bool {
	var se *tablekit.ServiceError
	return errors.As(err, &se) && se.Code == "TableNotFound"
}

// Query returns the entities matching f in the tables of every period that
// overlaps [from, to), oldest period first, each table in PartitionKey,
// RowKey order. Periods without a table are skipped. f selects rows within
// each table (the tables are chosen by time only; add a time condition to
// f for a finer cut). Each table costs one request per page.
//
//go:noinline
func (p *PeriodTables[T]) Query(ctx context.Context, from, to time.Time, f keys.Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if !to.After(from) {
			return
		}
		names, err := keys.PeriodTables(p.prefix, p.period, from, to.Add(-1))
		if err != nil {
			yield(zero, err)
			return
		}
		var o QueryOptions
		if opts != nil {
			o = *opts
		}
		n := 0
		for _, name := range names {
			at, _ := keys.ParsePeriodTable(p.prefix, p.period, name)
			t, err := p.Table(at)
			if err != nil {
				yield(zero, err)
				return
			}
			if o.Limit > 0 {
				o.Limit = opts.Limit - n
			}
			for v, err := range t.Query(ctx, f, &o) {
				if periodTableMissing(err) {
					break
				}
				if err != nil {
					yield(zero, err)
					return
				}
				if !yield(v, nil) {
					return
				}
				n++
			}
			if opts != nil && opts.Limit > 0 && n >= opts.Limit {
				return
			}
		}
	}
}

// List returns the names of the series' existing tables, oldest period
// first: one request per 1,000 tables.
func (p *PeriodTables[T]) List(ctx context.Context, opts *ListOptions) ([]string, error) {
	lo, hi := keys.PrefixRange(p.prefix)
	fb := keys.Prop("TableName").Ge(lo)
	if hi != "" {
		fb = keys.And(fb, keys.Prop("TableName").Lt(hi))
	}
	filter, err := fb.Build()
	if err != nil {
		return nil, err
	}
	pager := p.acct.Tables().NewListTablesPager(&aztables.ListTablesOptions{Filter: &filter})
	var out []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, tablekit.MapError(err, "list tables", p.prefix+"*")
		}
		for _, t := range page.Tables {
			if t.Name == nil {
				continue
			}
			if _, err := keys.ParsePeriodTable(p.prefix, p.period, *t.Name); err == nil {
				out = append(out, *t.Name)
			}
		}
	}
	return out, nil // names of one period kind sort in time order
}

// Drop deletes the table of the period containing at, and every entity in
// it: one request, whatever its size. A period without a table is not an
// error. Writes into the period, and into older ones, are refused from
// then on.
func (p *PeriodTables[T]) Drop(ctx context.Context, at time.Time, opts *DropOptions) error {
	t, err := p.Table(at)
	if err != nil {
		return err
	}
	p.markDropped(p.period.Next(at))
	p.markExists(t, false)
	return t.Drop(ctx, nil)
}

// DropBefore deletes the table of every period that ends at or before t
// (the guide's "deleting one table every day"): one request to list the
// tables, then one per table, whatever their sizes. It returns the names
// of the tables deleted, oldest first. Writes into those periods are
// refused from then on.
func (p *PeriodTables[T]) DropBefore(ctx context.Context, t time.Time, opts *DropOptions) ([]string, error) {
	p.markDropped(p.period.Start(t))
	names, err := p.List(ctx, nil)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, name := range names {
		start, _ := keys.ParsePeriodTable(p.prefix, p.period, name)
		if p.period.Next(start).After(t) {
			break
		}
		tbl, err := p.Table(start)
		if err != nil {
			return dropped, err
		}
		p.markExists(tbl, false)
		if err := tbl.Drop(ctx, nil); err != nil {
			return dropped, err
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// markDropped records that periods ending at or before end are dropped.
func (p *PeriodTables[T]) markDropped(end time.Time) {
	p.mu.Lock()
	if end.After(p.dropped) {
		p.dropped = end
	}
	p.mu.Unlock()
}

package tablecopy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// writer writes pages of entities to a target table: every page of a job
// (from any number of key ranges or segments at once) through one
// patterns.BulkWriter per kind of write, so the job keeps one pace. A
// BulkWrite per page started every page at full concurrency, as if the
// service had never refused the last one: a copy of a table half in one
// partition had 30% of its transactions refused (issue 35).
type writer struct {
	ctx         context.Context // the job's: it governs every write
	dst         *rows
	from        string // the source table's name: views named by it are renamed to dst's (retargetViews)
	insert      bool   // refuse existing entities
	concurrency int    // BulkOptions.Concurrency of the job, in all

	mu      sync.Mutex
	writers [2]*patterns.BulkWriter[entity.Entity] // upserts, inserts; made when first used
	closed  bool

	written, skipped atomic.Int64
	elsewhere        atomic.Int64 // entities whose views in other tables were left out (retargetViews)
	requests         atomic.Int64
	throttled        atomic.Int64
}

// newWriter returns a writer to dst, of entities read from the table from,
// for the job ctx governs, with at most concurrency transactions in flight
// in all; close it when done.
func newWriter(ctx context.Context, dst *rows, from string, insert bool, concurrency int) *writer {
	return &writer{ctx: ctx, dst: dst, from: from, insert: insert, concurrency: concurrency}
}

// bulk returns the job's BulkWriter for inserts or upserts.
func (w *writer) bulk(insert bool) (*patterns.BulkWriter[entity.Entity], error) {
	i := 0
	if insert {
		i = 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("the job's writer is closed")
	}
	if w.writers[i] == nil {
		bw, err := w.dst.NewBulkWriter(w.ctx, &patterns.BulkOptions{Insert: insert, Concurrency: w.concurrency})
		if err != nil {
			return nil, err
		}
		w.writers[i] = bw
	}
	return w.writers[i], nil
}

// close waits for the writes in progress and counts the job's
// transactions and throttling answers.
func (w *writer) close() {
	w.mu.Lock()
	ws := w.writers
	w.closed = true
	w.writers = [2]*patterns.BulkWriter[entity.Entity]{}
	w.mu.Unlock()
	for _, bw := range ws {
		if bw != nil {
			st := bw.Close()
			w.requests.Add(int64(st.Requests))
			w.throttled.Add(int64(st.Throttled))
		}
	}
}

// span is the smallest and largest key of a page.
type span struct{ Lo, Hi Key }

func (s span) overlaps(o span) bool { return s.Lo.Compare(o.Hi) <= 0 && o.Lo.Compare(s.Hi) <= 0 }

func spanOf(items []entity.Entity) span {
	s := span{Key{items[0].PartitionKey, items[0].RowKey}, Key{items[0].PartitionKey, items[0].RowKey}}
	for _, e := range items[1:] {
		k := Key{e.PartitionKey, e.RowKey}
		if k.Compare(s.Lo) < 0 {
			s.Lo = k
		}
		if k.Compare(s.Hi) > 0 {
			s.Hi = k
		}
	}
	return s
}

// filter is the keys from Lo to Hi, both included.
func (s span) filter() keys.Filter {
	if s.Lo.PartitionKey == s.Hi.PartitionKey {
		return keys.And(keys.PK().Eq(s.Lo.PartitionKey), keys.RK().Ge(s.Lo.RowKey), keys.RK().Le(s.Hi.RowKey))
	}
	return keys.Or(
		keys.And(keys.PK().Eq(s.Lo.PartitionKey), keys.RK().Ge(s.Lo.RowKey)),
		keys.And(keys.PK().Gt(s.Lo.PartitionKey), keys.PK().Lt(s.Hi.PartitionKey)),
		keys.And(keys.PK().Eq(s.Hi.PartitionKey), keys.RK().Le(s.Hi.RowKey)),
	)
}

// maxCarefulRows bounds the target entities read to check one page: past
// it, the page's entities are read one by one instead.
const maxCarefulRows = 5000

// write writes items (upserts, or inserts with w.insert; upsertKeys, when
// set, names keys to upsert even with w.insert). careful is for pages an
// interrupted run may have written already: the target's entities are
// read first and those identical to the source are skipped, so nothing is
// written twice and an insert does not trip over its own earlier write.
//
// It returns how many of items the target now holds as given (written,
// or found identical): on success, len(items), which callers check, so a
// page the writes lost part of does not pass for written.
func (w *writer) write(ctx context.Context, items []entity.Entity, careful bool, upsertKeys func(k string) bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(items) == 0 {
		return 0, nil
	}
	items, left := retargetAll(items, w.from, w.dst.Name())
	w.elsewhere.Add(left)
	done := 0
	if careful {
		n := len(items)
		var err error
		if items, err = w.skipIdentical(ctx, items); err != nil {
			return 0, err
		}
		done += n - len(items)
	}
	var ins, ups []entity.Entity
	for _, e := range items {
		if w.insert && (upsertKeys == nil || !upsertKeys(mapKey(e.PartitionKey, e.RowKey))) {
			ins = append(ins, e)
		} else {
			ups = append(ups, e)
		}
	}
	var failed []patterns.BulkFailure
	for _, part := range []struct {
		items  []entity.Entity
		insert bool
	}{{ins, true}, {ups, false}} {
		if len(part.items) == 0 {
			continue
		}
		for i := range part.items {
			part.items[i].ETag = ""
		}
		bw, err := w.bulk(part.insert)
		if err != nil {
			return done, fmt.Errorf("write to %s: %w", w.dst.Name(), err)
		}
		res, err := bw.Write(part.items)
		w.written.Add(int64(res.Written))
		done += res.Written
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		var be *patterns.BulkError
		if err != nil && !errors.As(err, &be) {
			return done, fmt.Errorf("write to %s: %w", w.dst.Name(), err)
		}
		failed = append(failed, res.Failed...)
	}
	if careful && len(failed) > 0 {
		// Another attempt at the same pages (a duplicate delivery of a
		// distributed job's range) may have inserted them since the read
		// back: an insert refused by an identical entity is not a failure.
		n := len(failed)
		var err error
		if failed, err = w.dropIdentical(ctx, items, failed); err != nil {
			return done, err
		}
		done += n - len(failed)
	}
	if len(failed) == 0 {
		return done, nil
	}
	return done, &WriteError{Table: w.dst.Name(), Failed: failed}
}

// writeAll is write, failing when the target does not hold every one of
// items afterwards though no write failed: what names, for the error,
// the page written.
func (w *writer) writeAll(ctx context.Context, items []entity.Entity, careful bool, upsertKeys func(k string) bool, what string) error {
	n, err := w.write(ctx, items, careful, upsertKeys)
	if err == nil && n != len(items) {
		err = fmt.Errorf("%s: %d of its %d entities written (%w)", what, n, len(items), ErrIncomplete)
	}
	return err
}

// dropIdentical returns the failures other than inserts refused because
// the target holds an entity identical to the one written, counting those
// as skipped.
func (w *writer) dropIdentical(ctx context.Context, items []entity.Entity, failed []patterns.BulkFailure) ([]patterns.BulkFailure, error) {
	byKey := make(map[string]entity.Entity, len(items))
	for _, e := range items {
		byKey[mapKey(e.PartitionKey, e.RowKey)] = e
	}
	out := failed[:0:0]
	for _, f := range failed {
		e, ok := byKey[mapKey(f.PartitionKey, f.RowKey)]
		if !ok || !errors.Is(f.Err, tablekit.ErrAlreadyExists) {
			out = append(out, f)
			continue
		}
		got, err := w.dst.Get(ctx, f.PartitionKey, f.RowKey, nil)
		if err != nil {
			return nil, fmt.Errorf("read back %s: %w", w.dst.Name(), err)
		}
		hg, err1 := EntityHash(got)
		hw, err2 := EntityHash(e)
		if err1 != nil || err2 != nil || hg != hw {
			out = append(out, f)
			continue
		}
		w.skipped.Add(1)
	}
	return out, nil
}

// WriteError names the entities a copy or restore could not write.
type WriteError struct {
	Table  string
	Failed []patterns.BulkFailure
}

// Error names the target and the first failed entities.
func (e *WriteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "write to %s: %d entities failed", e.Table, len(e.Failed))
	for i, f := range e.Failed {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-i)
			break
		}
		what := f.Err.Error()
		if errors.Is(f.Err, tablekit.ErrAlreadyExists) {
			what = "it exists in the target (--insert refuses existing entities)"
		}
		fmt.Fprintf(&b, "; (PartitionKey %q, RowKey %q): %s", f.PartitionKey, f.RowKey, what)
	}
	return b.String()
}

// Unwrap returns each failure's error.
func (e *WriteError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

// skipIdentical returns the items whose stored version in the target
// differs from them (or is absent), counting the others as skipped.
func (w *writer) skipIdentical(ctx context.Context, items []entity.Entity) ([]entity.Entity, error) {
	want := make(map[string]uint64, len(items))
	for _, e := range items {
		h, err := EntityHash(e)
		if err != nil {
			return nil, err
		}
		want[mapKey(e.PartitionKey, e.RowKey)] = h
	}
	stored := map[string]uint64{}
	n := 0
	complete := true
	for e, err := range w.dst.Query(ctx, spanOf(items).filter(), &patterns.QueryOptions{SelectAll: true, AllowTableScan: true}) {
		if err != nil {
			if errors.Is(err, tablekit.ErrNotFound) {
				break // no table yet
			}
			return nil, fmt.Errorf("read back %s: %w", w.dst.Name(), err)
		}
		if n++; n > maxCarefulRows {
			complete = false
			break
		}
		k := mapKey(e.PartitionKey, e.RowKey)
		if _, ok := want[k]; ok {
			h, err := EntityHash(e)
			if err != nil {
				return nil, err
			}
			stored[k] = h
		}
	}
	if !complete {
		var mu sync.Mutex
		stored = map[string]uint64{}
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		var firstErr error
		for _, it := range items {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				e, err := w.dst.Get(ctx, it.PartitionKey, it.RowKey, nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.Is(err, tablekit.ErrNotFound):
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				default:
					if h, herr := EntityHash(e); herr == nil {
						stored[mapKey(e.PartitionKey, e.RowKey)] = h
					}
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return nil, fmt.Errorf("read back %s: %w", w.dst.Name(), firstErr)
		}
	}
	out := items[:0:0]
	for _, e := range items {
		k := mapKey(e.PartitionKey, e.RowKey)
		if h, ok := stored[k]; ok && h == want[k] {
			w.skipped.Add(1)
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

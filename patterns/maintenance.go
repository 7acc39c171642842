package patterns

// The maintenance engine that Rebuild, Verify and Repair of every index
// repository share: the scan of the primaries, the comparison of the
// entries they want with those stored (missing, stale, orphaned), the
// report, and the bounded parallelism of the repairs. Each repository
// supplies what its entries are and how its own write path fixes them.

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// MaintenanceOptions configures Rebuild, Verify and Repair. Nil means
// defaults.
type MaintenanceOptions struct {
	// Filter selects the primaries to visit (for example
	// keys.PK().Eq("Sales")); the zero Filter scans the whole table,
	// skipping index entries stored in it. Where index entries share the
	// primaries' partitions (IndexedTable, ListIndexedTable), select whole
	// partitions: entries the filter leaves out are not seen.
	Filter keys.Filter
	// Parallelism bounds the entities processed at once (default 16).
	Parallelism int
	// ScanParallel is the number of key ranges the scan of the primaries
	// reads at once (see Table.Scan): 0 means DefaultScanParallel when
	// Filter is a table scan (the zero Filter is), and 1 otherwise (one
	// sequential range, the requests each method states).
	ScanParallel int
	// Progress, when set, is called after each primary with the number
	// done so far; calls are serialized.
	Progress func(done int)
}

func (o *MaintenanceOptions) parallelism() int {
	if o == nil || o.Parallelism <= 0 {
		return 16
	}
	return o.Parallelism
}

func (o *MaintenanceOptions) scanParallel() int {
	if o == nil {
		return 0
	}
	return o.ScanParallel
}

func (o *MaintenanceOptions) filter() keys.Filter {
	if o == nil {
		return keys.Filter{}
	}
	return o.Filter
}

func (o *MaintenanceOptions) progress() func(int) {
	if o == nil {
		return nil
	}
	return o.Progress
}

// IndexProblem says what is wrong with an index entry.
type IndexProblem int

const (
	// IndexMissing is an entry a primary wants that does not exist.
	IndexMissing IndexProblem = iota + 1
	// IndexStale is an entry that names an existing primary but does not
	// match it: a copy whose properties differ from the primary's, a copy
	// or list member filed under a value the primary no longer has, or
	// (EventualListIndexedTable) a primary whose recorded value is not its
	// value.
	IndexStale
	// IndexOrphan is an entry that names a primary that does not exist
	// (none among those scanned): left by a primary deleted behind the
	// index's back or by a lost write.
	IndexOrphan
)

func (p IndexProblem) String() string {
	switch p {
	case IndexMissing:
		return "missing"
	case IndexStale:
		return "stale"
	case IndexOrphan:
		return "orphan"
	}
	return "unknown"
}

// IndexEntry is one index entry that Verify found wrong, or that Repair
// left alone.
type IndexEntry struct {
	// Problem is what is wrong with it.
	Problem IndexProblem
	// Index is the index's name.
	Index string
	// Value is the indexed value the entry is, or should be, filed under.
	Value string
	// Entry is where the entry lives: the index copy (IndexedTable,
	// EventualIndexedTable), or the index entity whose list holds it
	// (ListIndexedTable, EventualListIndexedTable). Zero for a
	// BlobIndexedTable.
	Entry consistency.EntityRef
	// Blob is the name of the blob whose list holds the entry
	// (BlobIndexedTable only).
	Blob string
	// Primary is the entity the entry is for (missing) or names (stale,
	// orphan).
	Primary consistency.EntityRef
	// Reason says why Repair left the entry (IndexReport.Skipped only).
	Reason string
}

// IndexReport is what Verify found, and what Repair found and left.
//
// Missing, Stale and Orphans list references: for the copy indexes
// (IndexedTable, EventualIndexedTable) the copies' own keys; for the list
// indexes (ListIndexedTable, BlobIndexedTable, EventualListIndexedTable)
// the keys of the entity listed (or to be listed). Entries details each.
type IndexReport struct {
	// Primaries is the number of primaries checked.
	Primaries int
	// Missing are entries a primary should have and that do not exist.
	Missing []consistency.EntityRef
	// Stale are entries that exist but do not match the primary they
	// name (see IndexStale).
	Stale []consistency.EntityRef
	// Orphans are entries no existing primary accounts for (left by a
	// lost write, or a primary deleted without its entries).
	Orphans []consistency.EntityRef
	// Entries details every entry of Missing, Stale and Orphans, in that
	// order: its index, value, location and primary.
	Entries []IndexEntry
	// Skipped lists the entries Repair (or Rebuild) left as they were,
	// with the reason: a concurrent write changed the primary or the entry
	// since the scan (that write keeps the index itself; verify again to
	// see what remains), or a unique value that another primary holds.
	Skipped []IndexEntry
}

// OK reports whether nothing is missing, stale or orphaned.
func (r *IndexReport) OK() bool {
	return len(r.Missing) == 0 && len(r.Stale) == 0 && len(r.Orphans) == 0
}

// ixEntry is one index entry as the engine compares them: wanted by a
// primary, or stored.
type ixEntry struct {
	IndexEntry
	// key identifies the entry: where it lives and, in a list, which
	// member it is. A wanted and a stored entry with one key are the same
	// entry.
	key string
	// list marks a list member, reported by its primary's keys.
	list bool
	// props are a copy's properties (as the primary wants them, or as
	// stored), compared to tell a stale copy; nil for list members.
	props rawProps
	// etag is a stored copy's ETag.
	etag string
}

// ref is how the report's lists name the entry.
func (e *ixEntry) ref() consistency.EntityRef {
	if e.list {
		return e.Primary
	}
	return e.Entry
}

// scannedPrimary is a primary as the scan saw it.
type scannedPrimary struct {
	etag string
	row  rawProps // kept only when the repository asks for it
}

// audit compares the entries the primaries want with those stored.
type audit struct {
	opts      *MaintenanceOptions
	primaries map[consistency.EntityRef]scannedPrimary
	want      map[string]*ixEntry
	dups      []*ixEntry // wanted entries whose key another primary wants first (a unique value held twice)
	have      []*ixEntry
	haveAt    map[string]*ixEntry
	problems  []*ixEntry
	skipped   []IndexEntry
	mu        sync.Mutex
}

func newAudit(opts *MaintenanceOptions) *audit {
	return &audit{opts: opts, primaries: map[consistency.EntityRef]scannedPrimary{}, want: map[string]*ixEntry{}, haveAt: map[string]*ixEntry{}}
}

// primary records a scanned primary (row kept when keep) and reports
// progress.
func (a *audit) primary(ref consistency.EntityRef, row rawProps, keep bool) {
	etag, _ := row.str(propETag)
	s := scannedPrimary{etag: etag}
	if keep {
		s.row = row
	}
	a.primaries[ref] = s
	if p := a.opts.progress(); p != nil {
		p(len(a.primaries))
	}
}

// wants records an entry a primary wants.
func (a *audit) wants(e *ixEntry) {
	if _, taken := a.want[e.key]; taken {
		a.dups = append(a.dups, e)
		return
	}
	a.want[e.key] = e
}

// holds records a stored entry.
func (a *audit) holds(e *ixEntry) {
	a.have = append(a.have, e)
	a.haveAt[e.key] = e
}

// flag records a problem.
func (a *audit) flag(e *ixEntry, p IndexProblem) {
	e.Problem = p
	a.problems = append(a.problems, e)
}

// skip records an entry a repair left, with why.
func (a *audit) skip(e *ixEntry, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := e.IndexEntry
	s.Reason = reason
	a.skipped = append(a.skipped, s)
}

// classify sorts the stored entries and the wanted ones into problems: a
// stored entry that its primary wants is right unless its properties
// differ (stale); one no primary wants is stale when the primary it names
// was scanned, else an orphan; a wanted entry not stored is missing.
func (a *audit) classify() {
	seen := map[string]bool{}
	for _, h := range a.have {
		if w := a.want[h.key]; w != nil && w.Primary == h.Primary {
			seen[h.key] = true
			if w.props != nil && !sameProps(w.props, h.props) {
				h.Value = w.Value
				a.flag(h, IndexStale)
			}
			continue
		}
		if _, ok := a.primaries[h.Primary]; ok {
			a.flag(h, IndexStale)
		} else {
			a.flag(h, IndexOrphan)
		}
	}
	for k, w := range a.want {
		if !seen[k] {
			a.flag(w, IndexMissing)
		}
	}
	for _, d := range a.dups {
		a.flag(d, IndexMissing)
	}
	slices.SortFunc(a.problems, func(x, y *ixEntry) int {
		if x.Problem != y.Problem {
			return int(x.Problem - y.Problem)
		}
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
		return cmpRef(x.Primary, y.Primary)
	})
}

// report returns what classify found and the repairs skipped.
func (a *audit) report() *IndexReport {
	rep := &IndexReport{Primaries: len(a.primaries)}
	for _, e := range a.problems {
		rep.Entries = append(rep.Entries, e.IndexEntry)
		switch e.Problem {
		case IndexMissing:
			rep.Missing = append(rep.Missing, e.ref())
		case IndexStale:
			rep.Stale = append(rep.Stale, e.ref())
		case IndexOrphan:
			rep.Orphans = append(rep.Orphans, e.ref())
		}
	}
	for _, l := range []*[]consistency.EntityRef{&rep.Missing, &rep.Stale, &rep.Orphans} {
		sortRefs(*l)
		*l = slices.Compact(*l)
	}
	rep.Skipped = a.skipped
	return rep
}

// byPrimary groups the problems by the primary they are for or name, in
// the order the primaries first appear.
func (a *audit) byPrimary() ([]consistency.EntityRef, map[consistency.EntityRef][]*ixEntry) {
	m := map[consistency.EntityRef][]*ixEntry{}
	var order []consistency.EntityRef
	for _, e := range a.problems {
		if _, ok := m[e.Primary]; !ok {
			order = append(order, e.Primary)
		}
		m[e.Primary] = append(m[e.Primary], e)
	}
	return order, m
}

// byList groups entries of list indexes by the list that holds (or
// should hold) them, keyed by where (the index entity or blob), in the
// order the lists first appear.
func byList(entries []*ixEntry, where func(e *ixEntry) string) ([]string, map[string][]*ixEntry) {
	m := map[string][]*ixEntry{}
	var order []string
	for _, e := range entries {
		k := where(e)
		if _, ok := m[k]; !ok {
			order = append(order, k)
		}
		m[k] = append(m[k], e)
	}
	return order, m
}

// maintainer is what the engine needs of an index repository.
type maintainer interface {
	// audit scans the primaries that opts selects and the stored entries
	// into a, which it then classifies.
	audit(ctx context.Context, a *audit) error
	// repair fixes a's problems through the repository's write path.
	repair(ctx context.Context, a *audit) error
}

// verifyIndex is Verify for every index repository.
func verifyIndex(ctx context.Context, m maintainer, opts *MaintenanceOptions) (*IndexReport, *audit, error) {
	a := newAudit(opts)
	if err := m.audit(ctx, a); err != nil {
		return nil, nil, err
	}
	a.classify()
	return a.report(), a, nil
}

// repairIndex is Repair (and, for the repositories whose scan sees the
// stored entries anyway, Rebuild) for every index repository: Verify, then
// fix what it found. The report is Verify's, with Skipped filled.
func repairIndex(ctx context.Context, m maintainer, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, a, err := verifyIndex(ctx, m, opts)
	if err != nil || rep.OK() {
		return rep, err
	}
	err = m.repair(ctx, a)
	rep.Skipped = a.skipped
	return rep, err
}

// scanRows yields every row of w that f selects, with all its
// properties and its ETag, reading parallel key ranges (Table.Scan): rows
// come in no particular order. parallel 0 means DefaultScanParallel for a
// table scan and 1 (the query's order) otherwise.
//
// It is not inlined: the repositories' generic methods range over it,
// and inlined there its iterator would be compiled again in every one,
// for every entity type (183 KB of code in patterns' tests).
//
//go:noinline
func scanRows(ctx context.Context, w *wire.Table, f keys.Filter, parallel int) iter.Seq2[rawProps, error] {
	return func(yield func(rawProps, error) bool) {
		q, err := prepareQuery(w.Name(), f, &QueryOptions{SelectAll: true, AllowTableScan: true}, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		if parallel <= 0 && q.class == keys.TableScan {
			parallel = DefaultScanParallel
		}
		if parallel <= 1 {
			for row, err := range rawRows(ctx, w, q) {
				var p rawProps
				if err == nil {
					p, err = parseProps(row)
				}
				if !yield(p, err) || err != nil {
					return
				}
			}
			return
		}
		for rows, err := range scanSeq(ctx, w, f, q, &ScanOptions{Parallel: parallel}) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, row := range rows {
				p, err := parseProps(row)
				if !yield(p, err) || err != nil {
					return
				}
			}
		}
	}
}

// scanSeq runs a scan and yields its pages' rows to one consumer, as they
// come from the ranges; stopping the loop stops the scan.
func scanSeq(ctx context.Context, w *wire.Table, f keys.Filter, q query, opts *ScanOptions) iter.Seq2[[][]byte, error] {
	return func(yield func([][]byte, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		pages := make(chan [][]byte)
		done := make(chan error, 1)
		go func() {
			_, err := scanPages(ctx, w, f, q, opts, func(ctx context.Context, p scanPage) error {
				select {
				case pages <- p.rows:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			close(pages)
			done <- err
		}()
		for rows := range pages {
			if !yield(rows, nil) {
				cancel()
				for range pages {
				}
				<-done
				return
			}
		}
		if err := <-done; err != nil {
			yield(nil, err)
		}
	}
}

// ignoredProps are the properties a copy comparison leaves out: the
// service's metadata and tablekit's write-id log.
var ignoredProps = map[string]bool{propETag: true, "Timestamp": true, wire.UpdateLogProperty: true}

// sameProps reports whether two copies hold the same properties.
func sameProps(a, b rawProps) bool {
	n := 0
	for k, v := range a {
		if ignoredProps[k] {
			continue
		}
		n++
		w, ok := b[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	for k := range b {
		if !ignoredProps[k] {
			n--
		}
	}
	return n == 0
}

// sameValue compares two property values; numbers compare by value, as
// the service may drop the Double annotation of an integral value.
func sameValue(a, b entity.Value) bool {
	if a.Equal(b) {
		return true
	}
	x, y := reflect.ValueOf(a.V), reflect.ValueOf(b.V)
	num := func(r reflect.Value) (float64, bool) {
		switch {
		case r.CanInt():
			return float64(r.Int()), true
		case r.CanFloat():
			return r.Float(), true
		}
		return 0, false
	}
	fx, ok1 := num(x)
	fy, ok2 := num(y)
	return ok1 && ok2 && fx == fy
}

// touchBody is the body of a merge that changes no property: the
// condition of a transaction on a primary's ETag.
func touchBody(pk, rk string) ([]byte, error) {
	p := rawProps{}
	p.setString("PartitionKey", pk)
	p.setString("RowKey", rk)
	return p.bytes()
}

// submitUnits sends units of operations (each all-or-nothing, all of one
// partition per unit) as entity group transactions, packing the units of
// a partition into transactions of up to 100 operations. When a packed
// transaction loses a race, its units are sent one by one; it returns the
// indexes of the units that lost a race on their own.
//
// A transaction whose answer was lost and that the transport could not
// settle (tablekit.ErrOutcomeUnknown: its operations are conditional on
// ETags, and the entities changed) is settled by reading its entities
// back (see landed): a unit whose entities show its effect is done, one
// whose entities do not is sent again on its own, and one that then
// still does not show it lost a race.
//
// It takes the table's tableOps, not a Table[T]: its work does not depend
// on T, and a generic function is compiled again for every entity type.
func submitUnits(ctx context.Context, t *tableOps, units [][]Op) ([]int, error) {
	byPK := map[string][]int{}
	var order []string
	for i, u := range units {
		pk := u[0].PartitionKey
		if _, ok := byPK[pk]; !ok {
			order = append(order, pk)
		}
		byPK[pk] = append(byPK[pk], i)
	}
	var lost []int
	alone := func(i int) error {
		_, err := t.submit(ctx, units[i])
		switch {
		case err == nil:
			return nil
		case errors.Is(err, tablekit.ErrOutcomeUnknown):
			done, err := landed(ctx, t.w, units[i:i+1])
			if err != nil {
				return err
			}
			if !done[0] {
				lost = append(lost, i)
			}
			return nil
		case listRace(err):
			lost = append(lost, i)
			return nil
		}
		return err
	}
	send := func(idx []int) error {
		if len(idx) == 1 {
			return alone(idx[0])
		}
		var ops []Op
		for _, i := range idx {
			ops = append(ops, units[i]...)
		}
		_, err := t.submit(ctx, ops)
		again := idx
		switch {
		case err == nil:
			return nil
		case errors.Is(err, tablekit.ErrOutcomeUnknown):
			sent := make([][]Op, len(idx))
			for k, i := range idx {
				sent[k] = units[i]
			}
			done, err := landed(ctx, t.w, sent)
			if err != nil {
				return err
			}
			again = nil
			for k, i := range idx {
				if !done[k] {
					again = append(again, i)
				}
			}
		case !listRace(err):
			return err
		}
		for _, i := range again {
			if err := alone(i); err != nil {
				return err
			}
		}
		return nil
	}
	for _, pk := range order {
		var batch []int
		n := 0
		for _, i := range byPK[pk] {
			if len(batch) > 0 && n+len(units[i]) > MaxTransactionOps {
				if err := send(batch); err != nil {
					return lost, err
				}
				batch, n = nil, 0
			}
			batch = append(batch, i)
			n += len(units[i])
		}
		if len(batch) > 0 {
			if err := send(batch); err != nil {
				return lost, err
			}
		}
	}
	return lost, nil
}

// writeRepair writes op, a repair of one entity of table w conditional on
// the entity as scanned, and reports whether it lost a race (listRace):
// the entity changed since. An outcome the transport left open is
// settled as landed settles it.
func writeRepair(ctx context.Context, w *wire.Table, verb string, op Op) (raced bool, err error) {
	_, err = w.Write(ctx, verb, op)
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		done, err := landed(ctx, w, [][]Op{{op}})
		return err == nil && !done[0], err
	}
	if listRace(err) {
		return true, nil
	}
	return false, err
}

// readBackParallel bounds the reads with which landed settles a write.
const readBackParallel = 16

// landed settles writes whose outcome the transport left open
// (tablekit.ErrOutcomeUnknown): it reads back the entity of every
// operation of units (all of table w) and reports, for each unit, whether
// all of them show its effect (see shows). Maintenance writes make the
// index what the primaries want, so a unit whose effect shows has done
// its work, whoever's write stored it; one whose effect does not show
// did not land, or a concurrent write changed its entities since. One
// read per operation, readBackParallel at once.
func landed(ctx context.Context, w *wire.Table, units [][]Op) ([]bool, error) {
	var ops []Op
	for _, u := range units {
		ops = append(ops, u...)
	}
	ok := make([]bool, len(ops))
	err := parallel(ctx, indexes(len(ops)), readBackParallel, nil, func(ctx context.Context, i int) (int, error) {
		op := ops[i]
		body, _, err := w.Stored(ctx, op.PartitionKey, op.RowKey)
		if err != nil {
			return 0, err
		}
		var stored rawProps
		if body != nil {
			if stored, err = parseProps(body); err != nil {
				return 0, err
			}
		}
		ok[i], err = shows(op, stored)
		return 0, err
	})
	if err != nil {
		return nil, err
	}
	done := make([]bool, len(units))
	k := 0
	for u, unit := range units {
		done[u] = true
		for range unit {
			done[u] = done[u] && ok[k]
			k++
		}
	}
	return done, nil
}

// shows reports whether stored, an entity read back (nil: absent), is the
// state op leaves behind: absent after a delete; after an insert or a
// replace, op's properties and no other; after a merge, op's properties
// among others. The service's metadata and the write-id log are left out
// (see sameProps).
func shows(op Op, stored rawProps) (bool, error) {
	if op.Type == OpDelete {
		return stored == nil, nil
	}
	if stored == nil {
		return false, nil
	}
	want, err := parseProps(op.Entity)
	if err != nil {
		return false, err
	}
	if op.Type != OpMerge && op.Type != OpUpsertMerge {
		return sameProps(want, stored), nil
	}
	for k, v := range want {
		if s, ok := stored[k]; !ignoredProps[k] && (!ok || !sameValue(v, s)) {
			return false, nil
		}
	}
	return true, nil
}

// atOnce runs fn(0) to fn(n-1) all at once and returns their errors
// joined: for a handful of requests whose answers are all needed (a round
// of probes, the targets of a denormalization). parallel bounds larger
// sets.
func atOnce(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parallel runs fn on every item of seq with at most n at once; fn
// returns how many entities it handled, and progress gets the running
// total. It returns the first error.
func parallel[V any](ctx context.Context, seq iter.Seq2[V, error], n int, progress func(int), fn func(context.Context, V) (int, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		done  int
		sem   = make(chan struct{}, n)
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for v, err := range seq {
		if err != nil {
			fail(err)
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k, err := fn(ctx, v)
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			done += k
			if progress != nil {
				progress(done)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// each runs fn on every item of items with at most n at once and returns
// the first error.
func each[V any](ctx context.Context, items []V, n int, fn func(context.Context, V) error) error {
	return parallel(ctx, indexes(len(items)), n, nil, func(ctx context.Context, i int) (int, error) {
		return 0, fn(ctx, items[i])
	})
}

// indexes yields 0, …, n-1.
func indexes(n int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := range n {
			if !yield(i, nil) {
				return
			}
		}
	}
}

// partitionBatches groups the primaries of seq into batches of up to 100
// of one partition, in the order partitions fill up. Not inlined, as
// scanRows is not.
//
//go:noinline
func partitionBatches(seq iter.Seq2[rawProps, error]) iter.Seq2[[]rawProps, error] {
	return func(yield func([]rawProps, error) bool) {
		groups := map[string][]rawProps{}
		var order []string
		for p, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			pk, _ := p.str("PartitionKey")
			if _, ok := groups[pk]; !ok {
				order = append(order, pk)
			}
			groups[pk] = append(groups[pk], p)
			if len(groups[pk]) == MaxTransactionOps {
				if !yield(groups[pk], nil) {
					return
				}
				groups[pk] = groups[pk][:0:0]
			}
		}
		for _, pk := range order {
			if len(groups[pk]) > 0 && !yield(groups[pk], nil) {
				return
			}
		}
	}
}

// chunkOps splits ops into transactions of at most 100 operations and
// about 3 MiB.
func chunkOps(ops []Op) [][]Op {
	var out [][]Op
	start, size := 0, 0
	for i, op := range ops {
		s := wire.OpWireSize(op)
		if i > start && (i-start == MaxTransactionOps || size+s > 3<<20) {
			out = append(out, ops[start:i])
			start, size = i, 0
		}
		size += s
	}
	if start < len(ops) {
		out = append(out, ops[start:])
	}
	return out
}

func cmpRef(a, b consistency.EntityRef) int {
	if c := strings.Compare(a.Table, b.Table); c != 0 {
		return c
	}
	if c := strings.Compare(a.PartitionKey, b.PartitionKey); c != 0 {
		return c
	}
	return strings.Compare(a.RowKey, b.RowKey)
}

func sortRefs(r []consistency.EntityRef) { slices.SortFunc(r, cmpRef) }

// rowKeys returns a scanned row's PartitionKey and RowKey.
func rowKeys(p rawProps) (pk, rk string) {
	pk, _ = p.str("PartitionKey")
	rk, _ = p.str("RowKey")
	return pk, rk
}

// decodeRow decodes a scanned row into T.
func decodeRow[T any](t *Table[T], p rawProps) (T, error) {
	var v T
	row, err := p.bytes()
	if err == nil {
		err = t.codec.Unmarshal(row, &v)
	}
	if err != nil {
		pk, rk := rowKeys(p)
		return v, tkerr.Errorf("tablekit: %s: %w", t.describe(pk, rk), err)
	}
	return v, nil
}

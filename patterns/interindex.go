package patterns

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// EventualIndexedTableOptions configures an EventualIndexedTable. Nil
// means defaults.
type EventualIndexedTableOptions struct {
	// Table configures the primary table.
	Table *TableOptions
	// Delay keeps each enqueued intent invisible this long (rounded up to
	// whole seconds; default 1 s) so that the worker, which re-reads the
	// primary, sees the write that follows the enqueue. It must be longer
	// than a write takes.
	Delay time.Duration
}

// EventualIndexedTable is the guide's inter-partition secondary index
// pattern: copies of each entity in other partitions ("email_Sales") or
// other tables, kept eventually consistent by the consistency worker (the
// guide's eventually consistent transactions pattern).
//
// A write enqueues its intent first, a consistency.SyncCopies step, then
// writes the primary, which carries in PropCopies the list of copies it
// should have. The worker re-reads the primary when it applies the step
// and makes the copies match it, so duplicated, late and reordered
// deliveries converge, and the stock tablekit-worker binary runs it with
// none of the application's code. Lookups read copies, which lag the
// primary until the worker has run.
//
// Requests: Insert 2 (enqueue, insert); Update and Delete 3 (read, enqueue,
// write); Lookup 1; Find, Prefix, Between 1 per page.
type EventualIndexedTable[T any] struct {
	t       *Table[T]
	q       *consistency.Queue
	indexes []Index[T]
	byName  map[string]int
	tables  map[string]*Table[T] // primary and index tables, by name
	props   []string             // T's properties, without keys and Timestamp
	sel     []string
	delay   time.Duration
}

// openEventualTable opens the table of an eventually consistent
// repository that ctor ("NewX") builds over queue q, and returns it with
// the options (nil means defaults; Delay defaults to 1 s) and the name
// ctor's errors give.
func openEventualTable[T any](acct *tablekit.Account, name string, q *consistency.Queue, opts *EventualIndexedTableOptions, ctor string) (*Table[T], EventualIndexedTableOptions, string, error) {
	o := optsOf(opts)
	if o.Delay <= 0 {
		o.Delay = time.Second
	}
	t, what, err := openTable[T](acct, name, o.Table, ctor)
	if err != nil {
		return nil, o, "", err
	}
	if q == nil {
		return nil, o, "", tkerr.Errorf("tablekit: %s: %w: the queue is nil", what, tablekit.ErrInvalidArgument)
	}
	return t, o, what, nil
}

// NewEventualIndexedTable returns the repository of table name whose
// indexes are kept through queue q (run a consistency worker on it). It
// checks the indexes now and makes no request.
func NewEventualIndexedTable[T any](acct *tablekit.Account, name string, q *consistency.Queue, indexes []Index[T], opts *EventualIndexedTableOptions) (*EventualIndexedTable[T], error) {
	t, o, what, err := openEventualTable[T](acct, name, q, opts, "NewEventualIndexedTable")
	if err != nil {
		return nil, err
	}
	if err := checkHiddenProps(what, t.codec.Select(), PropPrimaryPartitionKey, PropPrimaryRowKey, PropCopies, PropIntent); err != nil {
		return nil, err
	}
	x := &EventualIndexedTable[T]{t: t, q: q, indexes: slices.Clone(indexes), byName: map[string]int{},
		tables: map[string]*Table[T]{name: t}, delay: o.Delay}
	for _, p := range t.codec.Select() {
		if p != "PartitionKey" && p != "RowKey" && p != "Timestamp" {
			x.props = append(x.props, p)
		}
	}
	for i := range x.indexes {
		ix := &x.indexes[i]
		if err := validateIndex(what, t, *ix, true); err != nil {
			return nil, err
		}
		if _, dup := x.byName[ix.Name]; dup {
			return nil, tkerr.Errorf("tablekit: %s: %w: index name %q is used twice", what, tablekit.ErrInvalidArgument, ix.Name)
		}
		x.byName[ix.Name] = i
		if ix.Table != "" && x.tables[ix.Table] == nil {
			it, err := NewTable[T](acct, ix.Table, o.Table)
			if err != nil {
				return nil, err
			}
			x.tables[ix.Table] = it
		}
	}
	x.sel = append(slices.Clone(t.codec.Select()), PropPrimaryPartitionKey, PropPrimaryRowKey)
	return x, nil
}

// Table is the primary table.
func (x *EventualIndexedTable[T]) Table() *Table[T] { return x.t }

// CreateIfNotExists creates the primary table, every index table and the
// consistency queue (with its poison queue and container, see
// consistency.Queue.Create); existing ones are not an error. One request
// per table and three for the queue.
func (x *EventualIndexedTable[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	for _, t := range x.tables {
		if err := t.CreateIfNotExists(ctx, opts); err != nil {
			return err
		}
	}
	return x.q.Create(ctx, nil)
}

func (x *EventualIndexedTable[T]) indexTable(ix *Index[T]) string {
	if ix.Table != "" {
		return ix.Table
	}
	return x.t.name
}

func (x *EventualIndexedTable[T]) copyPK(ix *Index[T], v *T, pk string) string {
	if ix.Partition != nil {
		return ix.Name + "_" + ix.Partition(v)
	}
	return ix.Name + "_" + pk
}

func interRowKey[T any](ix *Index[T], value, pk, rk string) string {
	if ix.Unique {
		return value
	}
	return keys.Join(value, pk, rk)
}

// specs returns the copies v should have.
func (x *EventualIndexedTable[T]) specs(v *T) ([]consistency.CopySpec, error) {
	out, _, err := x.specsOf(v)
	return out, err
}

// specsOf is specs, with the index of each copy (the position in
// x.indexes) and its value: an index whose value is "" has no copy.
func (x *EventualIndexedTable[T]) specsOf(v *T) ([]consistency.CopySpec, []interCopyOf, error) {
	pk, rk := x.t.codec.Keys(v)
	var out []consistency.CopySpec
	var of []interCopyOf
	for i := range x.indexes {
		ix := &x.indexes[i]
		val := ix.Key(v)
		if val == "" {
			continue
		}
		s := consistency.CopySpec{Table: x.indexTable(ix), PartitionKey: x.copyPK(ix, v, pk), RowKey: interRowKey(ix, val, pk, rk)}
		if err := validateKeys(s.PartitionKey, s.RowKey); err != nil {
			return nil, nil, tkerr.Errorf("tablekit: %s: index %q value %q: %w", x.t.describe(pk, rk), ix.Name, val, err)
		}
		props := ix.Props
		if props == nil {
			props = x.props
		}
		s.Props = append(slices.Clone(props), PropPrimaryPartitionKey, PropPrimaryRowKey)
		out = append(out, s)
		of = append(of, interCopyOf{index: ix.Name, value: val})
	}
	return out, of, nil
}

// interCopyOf is the index a copy belongs to, and the primary's value in it.
type interCopyOf struct{ index, value string }

func refsOf(specs []consistency.CopySpec) []consistency.EntityRef {
	out := make([]consistency.EntityRef, len(specs))
	for i, s := range specs {
		out[i] = s.Ref()
	}
	return out
}

// encode returns the primary's body with the hidden properties the
// worker needs, marked with the write's intent id.
func (x *EventualIndexedTable[T]) encode(v *T, intent string) (body []byte, pk, rk string, specs []consistency.CopySpec, err error) {
	body, pk, rk, err = x.t.marshal(v)
	if err != nil {
		return nil, "", "", nil, err
	}
	if err := validateKeys(pk, rk); err != nil {
		return nil, "", "", nil, err
	}
	if specs, err = x.specs(v); err != nil {
		return nil, "", "", nil, err
	}
	p, err := parseProps(body)
	if err != nil {
		return nil, "", "", nil, err
	}
	enc, err := consistency.EncodeCopies(specs...)
	if err != nil {
		return nil, "", "", nil, err
	}
	p.setString(PropCopies, enc)
	p.setString(PropPrimaryPartitionKey, pk)
	p.setString(PropPrimaryRowKey, rk)
	if intent != "" {
		p.setString(PropIntent, intent)
	}
	b, err := p.bytes()
	if err != nil {
		return nil, "", "", nil, err
	}
	return b, pk, rk, specs, nil
}

// enqueue sends the intent to sync the copies of (pk, rk). expect is the
// state the write that follows leaves the primary in: the worker waits for
// it (consistency.Expectation) before syncing. The caller settles the
// announcement (landed) once its write has succeeded.
func (x *EventualIndexedTable[T]) enqueue(ctx context.Context, pk, rk string, previous []consistency.EntityRef, expect consistency.Expectation) (*consistency.Announcement, error) {
	tx := consistency.NewTransaction(consistency.NewStep(consistency.KindSyncCopies, consistency.SyncCopiesArgs{
		Source:   consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk},
		Previous: previous,
		Property: PropCopies,
		Expect:   &expect,
	}))
	return x.q.Announce(ctx, tx, &consistency.EnqueueOptions{Delay: x.delay})
}

// insertUnique inserts body, v encoded with its write's intent id, as
// pk/rk. The intent id makes the entity unique to this write (Op.Unique):
// when the answer is lost, a stored entity equal to body settles the
// insert as landed. It sets v's ETag and Timestamp.
func insertUnique[T any](ctx context.Context, t *Table[T], v *T, pk, rk string, body []byte) error {
	etag, err := t.w.Write(ctx, "insert", Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body, Unique: true})
	if err != nil {
		return err
	}
	t.setMeta(v, etag)
	return nil
}

func intentOf(id string) consistency.Expectation {
	return consistency.Expectation{Property: PropIntent, Value: id, Ordered: true}
}

// Insert enqueues the intent to sync v's copies, then inserts v. Errors:
// tablekit.ErrAlreadyExists (the queued intent is then a harmless no-op
// sync of the existing entity). Two requests.
func (x *EventualIndexedTable[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	intent := consistency.NewIntentID()
	body, pk, rk, _, err := x.encode(v, intent)
	if err != nil {
		return err
	}
	a, err := x.enqueue(ctx, pk, rk, nil, intentOf(intent))
	if err != nil {
		return err
	}
	if err := insertUnique(ctx, x.t, v, pk, rk, body); err != nil {
		return err
	}
	return settleAnnounced(ctx, a, x.t.describe(pk, rk))
}

// Update reads the entity, calls fn on it, enqueues the intent to sync its
// copies (naming the copies the read value had, so the worker deletes
// those no longer wanted) and replaces it conditionally on the ETag read;
// on a concurrent change it starts over. A lost response that leaves open
// whether the write landed is settled as Table.Update settles it, or
// reported with tablekit.ErrOutcomeUnknown. Three requests per attempt.
func (x *EventualIndexedTable[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	var a *consistency.Announcement // the last attempt's: the one whose write landed
	v, err := x.t.modify(ctx, pk, rk, fn, func(old, v *T) ([]Op, error) {
		intent := consistency.NewIntentID()
		body, _, _, _, err := x.encode(v, intent)
		if err != nil {
			return nil, err
		}
		prev, err := x.specs(old)
		if err != nil {
			prev = nil // the old value's keys were invalid: it had no such copies
		}
		if a, err = x.enqueue(ctx, pk, rk, refsOf(prev), intentOf(intent)); err != nil {
			return nil, err
		}
		return []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
	if err != nil {
		return v, err
	}
	return v, settleAnnounced(ctx, a, x.t.describe(pk, rk))
}

// Delete removes the entity with v's keys: conditional on v's ETag unless
// opts say otherwise, as Table.Delete (tablekit.ErrPreconditionFailed when
// it changed since v was read). It reads the entity, enqueues the intent
// to remove its copies and deletes it conditionally on the ETag read,
// starting over when the entity changed in between. Three requests.
func (x *EventualIndexedTable[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	pk, rk, etag, err := x.t.deleteTarget(v, opts)
	if err != nil {
		return err
	}
	var a *consistency.Announcement // the last attempt's: the one whose delete landed
	_, err = x.t.modify(ctx, pk, rk, nil, func(old, _ *T) ([]Op, error) {
		prev, _ := x.specs(old)
		var err error
		if a, err = x.enqueue(ctx, pk, rk, refsOf(prev), consistency.Expectation{Absent: true}); err != nil {
			return nil, err
		}
		return []Op{{Type: OpDelete, PartitionKey: pk, RowKey: rk}}, nil
	}, wire.ModifyOptions{Verb: "delete", IfMatch: etag})
	if err != nil {
		return err
	}
	return settleAnnounced(ctx, a, x.t.describe(pk, rk))
}

// settleAnnounced settles a, the announcement of the write to what (a description
// of the entity) that has just succeeded: a write that came back late
// sends its intent again, without expectations
// (consistency.Announcement.Landed). Its error says the write landed.
func settleAnnounced(ctx context.Context, a *consistency.Announcement, what string) error {
	if err := a.Landed(ctx); err != nil {
		return tkerr.Errorf("tablekit: %s: the entity was written, but its views kept by the worker may miss the write until Verify and Repair: %w", what, err)
	}
	return nil
}

// Get reads the primary (pk, rk): a point query, one request;
// tablekit.ErrNotFound when there is none.
func (x *EventualIndexedTable[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	return x.t.Get(ctx, pk, rk, opts)
}

func (x *EventualIndexedTable[T]) index(name string) (*Index[T], error) {
	i, ok := x.byName[name]
	if !ok {
		return nil, tkerr.Errorf("tablekit: %s: %w: no index named %q", x.t.name, tablekit.ErrInvalidArgument, name)
	}
	return &x.indexes[i], nil
}

// Lookup reads the copy of unique index index for value in partition
// part (the primary's PartitionKey unless the index sets Partition): the
// guide's "PartitionKey eq 'email_Sales' and RowKey eq
// 'jonesj@contoso.com'". One request. The result carries the primary's
// keys and the projected properties, and no ETag.
func (x *EventualIndexedTable[T]) Lookup(ctx context.Context, index, part, value string, opts *GetOptions) (T, error) {
	var zero T
	ix, err := x.index(index)
	if err != nil {
		return zero, err
	}
	if !ix.Unique {
		return zero, tkerr.Errorf("tablekit: %s: %w: index %q is not unique; use Find", x.t.name, tablekit.ErrInvalidArgument, index)
	}
	return getCopy(ctx, x.t, x.tables[x.indexTable(ix)].w, ix.Name+"_"+part, value)
}

func (x *EventualIndexedTable[T]) copies(ctx context.Context, ix *Index[T], f keys.Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return queryCopies(ctx, x.t, x.tables[x.indexTable(ix)], f, opts, x.sel)
}

// Find returns the entities of partition part whose value in index is
// value. One request per page.
func (x *EventualIndexedTable[T]) Find(ctx context.Context, index, part, value string, opts *QueryOptions) iter.Seq2[T, error] {
	ix, err := x.index(index)
	if err != nil {
		return errSeq[T](err)
	}
	pk := keys.PK().Eq(ix.Name + "_" + part)
	if ix.Unique {
		return x.copies(ctx, ix, keys.And(pk, keys.RK().Eq(value)), opts)
	}
	return x.copies(ctx, ix, keys.And(pk, keys.RK().Prefix(keys.Join(value, ""))), opts)
}

// Prefix returns, in the index's order, the entities of partition part
// whose value starts with prefix: the guide's "PartitionKey eq
// 'email_Sales' and RowKey ge 'a' and RowKey lt 'b'". One request per page.
func (x *EventualIndexedTable[T]) Prefix(ctx context.Context, index, part, prefix string, opts *QueryOptions) iter.Seq2[T, error] {
	ix, err := x.index(index)
	if err != nil {
		return errSeq[T](err)
	}
	p := prefix
	if !ix.Unique {
		p = keys.Compound{}.Part(prefix)
	}
	return x.copies(ctx, ix, keys.And(keys.PK().Eq(ix.Name+"_"+part), keys.RK().Prefix(p)), opts)
}

// Between returns, in the index's order, the entities of partition part
// whose value lies between lo and hi, both included: the guide's
// "PartitionKey eq 'empid_Sales' and RowKey ge '000100' and RowKey le
// '000199'". One request per page.
func (x *EventualIndexedTable[T]) Between(ctx context.Context, index, part, lo, hi string, opts *QueryOptions) iter.Seq2[T, error] {
	ix, err := x.index(index)
	if err != nil {
		return errSeq[T](err)
	}
	pk := keys.PK().Eq(ix.Name + "_" + part)
	if ix.Unique {
		return x.copies(ctx, ix, keys.And(pk, keys.RK().Ge(lo), keys.RK().Le(hi)), opts)
	}
	c := keys.Compound{}
	_, end := keys.PrefixRange(c.Part(hi) + string(c.Separator()))
	return x.copies(ctx, ix, keys.And(pk, keys.RK().Ge(c.Part(lo)), keys.RK().Lt(end)), opts)
}

// interMaint is an EventualIndexedTable's Verify, Repair and Rebuild,
// apart from reading a primary (primary), the one step that needs T: Go
// compiles a generic type's methods again for every entity type, so the
// rest is compiled once.
type interMaint struct {
	ops     *tableOps            // the primary table
	tables  map[string]*tableOps // primary and index tables, by name
	indexes []interIndexName
	// primary reads the primary whose row is p; decoding says that err
	// came from decoding the row into T.
	primary func(p rawProps) (r interPrimary, decoding bool, err error)
}

// interIndexName is what maintenance reads of an Index: its name and
// table.
type interIndexName struct{ name, table string }

// interPrimary is a primary as maintenance reads it: its keys, the copies
// it wants, and the index and value of each.
type interPrimary struct {
	pk, rk string
	specs  []consistency.CopySpec
	of     []interCopyOf
}

// maint is x's maintenance.
func (x *EventualIndexedTable[T]) maint() *interMaint {
	m := &interMaint{ops: x.t.ops(), tables: map[string]*tableOps{}, primary: x.primaryOf}
	for n, t := range x.tables {
		m.tables[n] = t.ops()
	}
	for i := range x.indexes {
		m.indexes = append(m.indexes, interIndexName{name: x.indexes[i].Name, table: x.indexTable(&x.indexes[i])})
	}
	return m
}

// primaryOf is interMaint.primary.
func (x *EventualIndexedTable[T]) primaryOf(p rawProps) (interPrimary, bool, error) {
	v, err := decodeRow(x.t, p)
	if err != nil {
		return interPrimary{}, true, err
	}
	r := interPrimary{}
	r.pk, r.rk = x.t.codec.Keys(&v)
	r.specs, r.of, err = x.specsOf(&v)
	return r, false, err
}

func (x *EventualIndexedTable[T]) audit(ctx context.Context, a *audit) error {
	return x.maint().audit(ctx, a)
}
func (x *EventualIndexedTable[T]) repair(ctx context.Context, a *audit) error {
	return x.maint().repair(ctx, a)
}

// primaries yields every primary entity selected by opts with its raw
// row (index copies stored in the same table are skipped).
func (m *interMaint) primaries(ctx context.Context, opts *MaintenanceOptions) iter.Seq2[rawProps, error] {
	return func(yield func(rawProps, error) bool) {
		for p, err := range scanRows(ctx, m.ops.w, opts.filter(), opts.scanParallel()) {
			if err == nil && isCopy(p) {
				continue
			}
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// isCopy reports whether a row is an index copy: it names a primary other
// than itself.
func isCopy(p rawProps) bool {
	ppk, ok1 := p.str(PropPrimaryPartitionKey)
	prk, ok2 := p.str(PropPrimaryRowKey)
	if !ok1 || !ok2 {
		return false
	}
	pk, rk := rowKeys(p)
	return ppk != pk || prk != rk
}

// Rebuild backfills the indexes over existing primaries: it writes each
// primary's copies and stores the copy list (PropCopies) on it, so the
// worker keeps it from then on. Work goes in entity group transactions of
// up to 100 (copies grouped by index partition, primaries by partition;
// the primaries' merges are conditional on the ETags scanned), so a
// partition of 100 primaries with one index costs about 2 requests plus
// its share of the scan. A primary changed meanwhile is left to its
// writer's own queued sync; a merge whose answer was lost, and that the
// transport could not settle, is settled by reading the primary back. It
// does not look for orphaned copies (Repair does). opts.Progress receives
// the primaries done.
func (x *EventualIndexedTable[T]) Rebuild(ctx context.Context, opts *MaintenanceOptions) error {
	m := x.maint()
	return parallel(ctx, partitionBatches(m.primaries(ctx, opts)), opts.parallelism(), opts.progress(), func(ctx context.Context, batch []rawProps) (int, error) {
		return len(batch), m.rebuildBatch(ctx, batch)
	})
}

// rebuildBatch rebuilds up to 100 primaries of one partition.
func (m *interMaint) rebuildBatch(ctx context.Context, batch []rawProps) error {
	type group struct{ table, pk string }
	copies := map[group][]Op{}
	var groups []group
	merges := make([][]Op, 0, len(batch))
	for _, p := range batch {
		r, _, err := m.primary(p)
		if err != nil {
			return err
		}
		pk, rk, specs := r.pk, r.rk, r.specs
		for _, s := range specs {
			g := group{s.Table, s.PartitionKey}
			if _, ok := copies[g]; !ok {
				groups = append(groups, g)
			}
			body, err := copyOf(p, s).bytes()
			if err != nil {
				return tkerr.Errorf("tablekit: rebuild %s: copy %s: %w", m.ops.name, s.Ref(), err)
			}
			copies[g] = append(copies[g], Op{Type: OpUpsertReplace, PartitionKey: s.PartitionKey, RowKey: s.RowKey, Entity: body})
		}
		enc, err := consistency.EncodeCopies(specs...)
		if err != nil {
			return err
		}
		mp := rawProps{}
		mp.setString("PartitionKey", pk)
		mp.setString("RowKey", rk)
		mp.setString(PropCopies, enc)
		mp.setString(PropPrimaryPartitionKey, pk)
		mp.setString(PropPrimaryRowKey, rk)
		etag, _ := p.str(propETag)
		body, err := mp.bytes()
		if err != nil {
			return tkerr.Errorf("tablekit: rebuild %s: %w", m.ops.name, err)
		}
		merges = append(merges, []Op{{Type: OpMerge, PartitionKey: pk, RowKey: rk, Entity: body, ETag: etag}})
	}
	for _, g := range groups {
		for _, chunk := range chunkOps(copies[g]) {
			if _, err := m.tables[g.table].submit(ctx, chunk); err != nil {
				return err
			}
		}
	}
	// A primary changed since the scan is left to its writer's sync.
	_, err := submitUnits(ctx, m.ops, merges)
	return err
}

// copyOf is the copy s of the primary whose row is p.
func copyOf(p rawProps, s consistency.CopySpec) rawProps {
	pk, rk := rowKeys(p)
	c := p.project(s.PartitionKey, s.RowKey, s.Props)
	c.setString(PropPrimaryPartitionKey, pk)
	c.setString(PropPrimaryRowKey, rk)
	return c
}

// Verify compares the copies that exist with those the primaries want:
// it scans the primaries (opts.Filter) and every index's partitions
// (PartitionKey prefix Name + "_", a range scan of each index table), and
// reports missing copies, stale ones (properties that differ from the
// primary's, or a value the primary no longer has) and orphans (their
// primary is gone). It changes nothing. Requests: one per page of each
// scan. Copies in partitions outside opts.Filter's primaries count as
// orphans, so verify a filtered subset only when the index partitions hold
// nothing else (Repair re-reads a copy's primary before deleting it, so it
// never deletes a wanted copy).
func (x *EventualIndexedTable[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, x, opts)
	return rep, err
}

func (m *interMaint) audit(ctx context.Context, a *audit) error {
	for p, err := range m.primaries(ctx, a.opts) {
		if err != nil {
			return err
		}
		r, decoding, err := m.primary(p)
		if err != nil {
			if decoding {
				return tkerr.Errorf("tablekit: verify: %w", err)
			}
			return err
		}
		src := consistency.EntityRef{Table: m.ops.name, PartitionKey: r.pk, RowKey: r.rk}
		_, indexed := p.str(PropCopies)
		a.primary(src, p, !indexed && len(r.specs) > 0)
		for i, s := range r.specs {
			a.wants(&ixEntry{IndexEntry: IndexEntry{Index: r.of[i].index, Value: r.of[i].value, Entry: s.Ref(), Primary: src},
				key: s.Ref().String(), props: copyOf(p, s)})
		}
	}
	for i := range m.indexes {
		ix := &m.indexes[i]
		tbl := ix.table
		lo, hi := keys.PrefixRange(ix.name + "_")
		for p, err := range scanRows(ctx, m.tables[tbl].w, keys.And(keys.PK().Ge(lo), keys.PK().Lt(hi)), 0) {
			if err != nil {
				return err
			}
			pk, rk := rowKeys(p)
			ref := consistency.EntityRef{Table: tbl, PartitionKey: pk, RowKey: rk}
			e := &ixEntry{IndexEntry: IndexEntry{Index: ix.name, Value: rk, Entry: ref}, key: ref.String(), props: p}
			ppk, ok1 := p.str(PropPrimaryPartitionKey)
			prk, ok2 := p.str(PropPrimaryRowKey)
			if ok1 && ok2 {
				e.Primary = consistency.EntityRef{Table: m.ops.name, PartitionKey: ppk, RowKey: prk}
			}
			a.holds(e)
		}
	}
	return nil
}

// Repair runs Verify and fixes what it found through the worker's own
// read-repair step, applied in-process (consistency.Apply): a primary that
// was never indexed is first backfilled as Rebuild does; each stale or
// orphaned copy is synced against the primary it names (which deletes it
// unless that primary now wants it) or deleted when it names none; then
// each primary with a missing or stale copy is synced. The step re-reads
// the primary, so repairs are safe against concurrent writers. Requests:
// Verify's, then for each primary synced about 2 reads and one write per
// copy. It returns the report of what it found.
func (x *EventualIndexedTable[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, x, opts)
}

func (m *interMaint) repair(ctx context.Context, a *audit) error {
	type job struct {
		source consistency.EntityRef
		prev   []consistency.EntityRef
	}
	jobs := map[consistency.EntityRef]*job{}
	var order []consistency.EntityRef
	var deletes []consistency.Step
	for _, e := range a.problems {
		src := e.Primary
		if src == (consistency.EntityRef{}) || validateKeys(src.PartitionKey, src.RowKey) != nil {
			deletes = append(deletes, consistency.DeleteEntity(e.Entry))
			continue
		}
		if s := a.primaries[src]; s.row != nil {
			// Never indexed: backfill it as Rebuild does.
			if err := m.rebuildBatch(ctx, []rawProps{s.row}); err != nil {
				return err
			}
			a.primaries[src] = scannedPrimary{etag: s.etag}
		}
		if jobs[src] == nil {
			jobs[src] = &job{source: src}
			order = append(order, src)
		}
		if e.Problem != IndexMissing && e.Entry != (consistency.EntityRef{}) {
			jobs[src].prev = append(jobs[src].prev, e.Entry)
		}
	}
	// Syncs that delete copies go first, so that a copy a primary wants
	// under a key another primary's stale copy holds is written after it
	// goes.
	var first, then []consistency.Step
	for _, src := range order {
		j := jobs[src]
		if len(j.prev) > 0 {
			first = append(first, consistency.SyncCopies(j.source, PropCopies, j.prev...))
		} else {
			then = append(then, consistency.SyncCopies(j.source, PropCopies))
		}
	}
	for _, steps := range [][]consistency.Step{append(deletes, first...), then} {
		if err := each(ctx, steps, a.opts.parallelism(), func(ctx context.Context, s consistency.Step) error {
			return consistency.Apply(ctx, m.ops.acct, consistency.NewTransaction(s), nil, nil)
		}); err != nil {
			return err
		}
	}
	return nil
}

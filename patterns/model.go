package patterns

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Views declares what a Model keeps beside each entity of T: the guide's
// patterns that derive rows from an entity, each named, each kept by every
// write of the Model.
//
//	patterns.Views[Order]{
//		Indexes: []patterns.Index[Order]{{Name: "number", Unique: true, Key: func(o *Order) string { return o.Number }}},
//		EventualIndexes: []patterns.Index[Order]{{Name: "status", Key: func(o *Order) string { return o.Status },
//			Partition: func(o *Order) string { return o.Status }, Table: "OrdersByStatus"}},
//		Tails: []patterns.Tail[Order]{{Name: "recent", Time: func(o *Order) time.Time { return o.Placed }}},
//	}
//
// Where a view lives decides how it is kept. Indexes and Tails live in the
// entity's own partition and are written in the entity's entity group
// transaction, so they never disagree with it (the intra-partition
// secondary index and log tail patterns). EventualIndexes live in other
// partitions or tables and are kept by the consistency worker from a
// queued intent (the inter-partition secondary index pattern, through the
// eventually consistent transactions pattern): they lag the entity until
// the worker has run.
type Views[T any] struct {
	// Indexes are intra-partition secondary indexes: a copy of the entity
	// in its partition under the RowKey Name + "_" + value (Unique), or
	// Name + "_" + value + "_" + RowKey. Table and Partition must be unset.
	Indexes []Index[T]
	// EventualIndexes are inter-partition secondary indexes: a copy under
	// the PartitionKey Name + "_" + Partition(v) (the entity's
	// PartitionKey when Partition is nil) and the RowKey value (Unique),
	// or value + "_" + PartitionKey + "_" + RowKey, in Table (the
	// entity's table when empty). They need ModelOptions.Queue.
	EventualIndexes []Index[T]
	// Tails are log tails: a row per entity in its partition, under a
	// RowKey that sorts newest first (Name + "_" + the inverted ticks of
	// Time(v) + "_" + RowKey), read with Latest.
	Tails []Tail[T]
	// Lists are index entities (the guide's option 3, as in
	// EventualListIndexedTable): one entity per value, in Table (the
	// entity's table when empty) and partition Partition (Name when
	// empty), under the RowKey Prefix + value, whose list property holds
	// the keys (keys.Join(PartitionKey, RowKey)) of the entities with that
	// value in every partition; kept by the worker's index-list step, read
	// with Listed. They need ModelOptions.Queue.
	Lists []ListIndex[T]
}

// Tail declares a log tail of a Model (the guide's log tail pattern): the
// entities of a partition read newest first ("a customer's recent
// orders"), in one query of the n first rows.
type Tail[T any] struct {
	// Name prefixes the tail's RowKeys (Name + "_"); ASCII letters and
	// digits, distinct among a Model's views.
	Name string
	// Time is the entity's place in the tail; a zero time leaves the
	// entity out of it.
	Time func(v *T) time.Time
	// Props lists the properties a tail row carries; nil means all.
	Props []string
}

// ModelOptions configures a Model. Nil means defaults.
type ModelOptions struct {
	// Table configures the entity's table (codec, transport,
	// MaxAttempts).
	Table *TableOptions
	// Queue is the consistency queue of the EventualIndexes (run a worker
	// on it) and of Archive. Required when there are EventualIndexes.
	Queue *consistency.Queue
	// Delay keeps each enqueued intent invisible this long (default 1 s),
	// as EventualIndexedTableOptions.Delay.
	Delay time.Duration
	// Container is the blob container of T's blob fields (`table:"Items,blob"`,
	// see Model); required when T has one.
	Container string
}

// Model is the repository of an entity type and all its views: one
// table, one write per operation, and every view (Views) kept by every
// write: Insert, Replace, Merge, Upsert, Update, Delete, BulkWrite,
// DeleteWhere and Archive. A per-pattern repository (IndexedTable,
// EventualIndexedTable, EventualListIndexedTable, LogTail, LargeEntities)
// is the easy way in for one pattern; a Model combines them on one type.
//
// A write computes the views of the entity as stored and as written, and
// writes the difference: the views of the entity's partition in the
// entity's entity group transaction, the others through one queued intent
// that the worker applies (intent first: the intent is enqueued before
// the entity is written, and the worker re-reads the entity when it
// applies it, so duplicated, late and reordered deliveries converge). The
// entity carries the list of its views (consistency.CopiesProperty), so
// the stock tablekit-worker keeps them and a consistency.MoveEntity step
// moves the entity without leaving any behind; nothing the caller writes
// names that property.
//
// The user's keys are the entity's keys: a RowKey must not start with a
// view's prefix (Name + "_") of a view in the entity's partition.
//
// Requests: Insert 1, plus 1 (the enqueue) with EventualIndexes or Lists;
// Update, Replace, Merge and Delete 2 (read, transaction), plus 1 when a
// view the worker keeps changes (an eventual index's value or projected
// properties, a list's value); Upsert as Update, or as Insert plus the
// read when the entity is new; Archive 1; Get, Lookup 1; Find, Prefix,
// Between, Latest 1 per page; Listed 1 plus a read per member. A field
// tagged blob adds an upload when its content is new, a download when
// Update's fn sees it, and a read in Get. Every view the worker keeps goes
// in one queue message per write. A write that loses a race to a
// concurrent writer reads and writes again, with a message of its own:
// the message of the attempt that lost may have been applied already.
//
// Plain writes through Table() bypass the views: write through the Model.
type Model[T any] struct {
	t        *Table[T]
	q        *consistency.Queue
	local    []localView[T]
	eventual []Index[T]
	lists    []ListIndex[T]
	byName   map[string]modelIndex
	tables   map[string]*Table[T]
	props    []string // T's properties, without keys and Timestamp
	sel      []string // what a copy query selects
	delay    time.Duration
	blobs    modelBlobs
}

// localView is a view in the entity's partition: an intra-partition index
// or a tail, as an index whose copies share the entity's partition.
type localView[T any] struct {
	Index[T]
	tail bool
}

// modelIndex locates a view by name.
type modelIndex struct {
	eventual bool
	list     bool
	i        int
}

// NewModel returns the repository of table name with the given views. It
// checks T and the views now (names unique and valid, key functions set,
// projected properties of T, a queue for the eventual ones) and makes no
// request.
func NewModel[T any](acct *tablekit.Account, name string, views Views[T], opts *ModelOptions) (*Model[T], error) {
	o := optsOf(opts)
	if o.Delay <= 0 {
		o.Delay = time.Second
	}
	t, err := newTable[T](acct, name, o.Table, true)
	if err != nil {
		return nil, err
	}
	what := "NewModel[" + t.codec.Type().String() + "]"
	if err := checkHiddenProps(what, t.codec.Select(), PropPrimaryPartitionKey, PropPrimaryRowKey, PropCopies, PropIntent); err != nil {
		return nil, err
	}
	m := &Model[T]{t: t, q: o.Queue, byName: map[string]modelIndex{}, tables: map[string]*Table[T]{name: t}, delay: o.Delay}
	for _, p := range t.codec.Select() {
		if p != "PartitionKey" && p != "RowKey" && p != "Timestamp" {
			m.props = append(m.props, p)
		}
	}
	name1 := func(n string, at modelIndex) error {
		if _, dup := m.byName[n]; dup {
			return tkerr.Errorf("tablekit: %s: %w: view name %q is used twice", what, tablekit.ErrInvalidArgument, n)
		}
		m.byName[n] = at
		return nil
	}
	for _, ix := range views.Indexes {
		if err := validateIndex(what, t, ix, false); err != nil {
			return nil, err
		}
		if err := name1(ix.Name, modelIndex{i: len(m.local)}); err != nil {
			return nil, err
		}
		m.local = append(m.local, localView[T]{Index: ix})
	}
	for _, tl := range views.Tails {
		if tl.Time == nil {
			return nil, tkerr.Errorf("tablekit: %s: %w: tail %q has no Time function", what, tablekit.ErrInvalidArgument, tl.Name)
		}
		at := tl.Time
		ix := Index[T]{Name: tl.Name, Props: tl.Props, Key: func(v *T) string {
			if tm := at(v); !tm.IsZero() {
				return keys.InvertedTicks(tm)
			}
			return ""
		}}
		if err := validateIndex(what, t, ix, false); err != nil {
			return nil, err
		}
		if err := name1(tl.Name, modelIndex{i: len(m.local)}); err != nil {
			return nil, err
		}
		m.local = append(m.local, localView[T]{Index: ix, tail: true})
	}
	if len(m.local) > maxIndexes {
		return nil, tkerr.Errorf("tablekit: %s: %w: %d views in the entity's partition; an update that changes each takes 1 + 2 per view operations and a transaction holds %d, so at most %d fit",
			what, tablekit.ErrInvalidTransaction, len(m.local), MaxTransactionOps, maxIndexes)
	}
	for _, ix := range views.EventualIndexes {
		if err := validateIndex(what, t, ix, true); err != nil {
			return nil, err
		}
		if err := name1(ix.Name, modelIndex{eventual: true, i: len(m.eventual)}); err != nil {
			return nil, err
		}
		m.eventual = append(m.eventual, ix)
		if ix.Table != "" && m.tables[ix.Table] == nil {
			it, err := newTable[T](acct, ix.Table, o.Table, true)
			if err != nil {
				return nil, err
			}
			m.tables[ix.Table] = it
		}
	}
	for _, ix := range views.Lists {
		if err := validateListIndex(what, t, &ix); err != nil {
			return nil, err
		}
		if ix.Partition == "" {
			ix.Partition = ix.Name
		}
		if err := keys.ValidateKey("PartitionKey", ix.Partition); err != nil {
			return nil, tkerr.Errorf("tablekit: %s: list %q: %w", what, ix.Name, err)
		}
		if err := checkHiddenProps(what, t.codec.Select(), listProp(&ix)); err != nil {
			return nil, err
		}
		if err := name1(ix.Name, modelIndex{list: true, i: len(m.lists)}); err != nil {
			return nil, err
		}
		m.lists = append(m.lists, ix)
		if ix.Table != "" && m.tables[ix.Table] == nil {
			it, err := newTable[T](acct, ix.Table, o.Table, true)
			if err != nil {
				return nil, err
			}
			m.tables[ix.Table] = it
		}
	}
	if m.queued() && m.q == nil {
		return nil, tkerr.Errorf("tablekit: %s: %w: EventualIndexes and Lists need ModelOptions.Queue, the queue their worker reads", what, tablekit.ErrInvalidArgument)
	}
	if err := m.openBlobs(what, acct, o.Container); err != nil {
		return nil, err
	}
	m.sel = append(slices.Clone(t.codec.Select()), PropPrimaryPartitionKey, PropPrimaryRowKey)
	return m, nil
}

// openBlobs checks T's blob fields and the container that keeps them.
func (m *Model[T]) openBlobs(what string, acct *tablekit.Account, container string) error {
	m.blobs = modelBlobs{fields: m.t.codec.BlobFields(), container: container}
	if len(m.blobs.fields) == 0 {
		return nil
	}
	if acct.Blobs() == nil {
		return tkerr.Errorf("tablekit: %s: %w: field %s is tagged blob", what, tablekit.ErrNoEndpoint, m.blobs.fields[0].GoName)
	}
	if container == "" {
		return tkerr.Errorf("tablekit: %s: %w: field %s is tagged blob; set ModelOptions.Container", what, tablekit.ErrInvalidArgument, m.blobs.fields[0].GoName)
	}
	if err := keys.ValidateContainerName(container); err != nil {
		return tkerr.Errorf("tablekit: %s: %w", what, err)
	}
	taken := map[string]bool{}
	for _, p := range m.t.codec.Select() {
		taken[p] = true
	}
	for _, f := range m.blobs.fields {
		for _, p := range []string{f.Property, f.Property + LargeSizeSuffix, f.Property + LargeContentTypeSuffix, f.Property + LargeHashSuffix} {
			if taken[p] {
				return tkerr.Errorf("tablekit: %s: %w: property %s of blob field %s is also another field's", what, tablekit.ErrInvalidEntity, p, f.GoName)
			}
			taken[p] = true
		}
	}
	return nil
}

// Table is the entity's table. Its own writes store exactly the caller's
// entity and keep no view.
func (m *Model[T]) Table() *Table[T] { return m.t }

// CreateIfNotExists creates the entity's table, every index table and the
// queue (with its poison queue and container); existing ones are not an
// error. One request per table and three for the queue.
func (m *Model[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	for _, t := range m.tables {
		if err := t.CreateIfNotExists(ctx, opts); err != nil {
			return err
		}
	}
	if len(m.blobs.fields) > 0 {
		if err := createContainer(ctx, m.t.acct, m.blobs.container); err != nil {
			return err
		}
	}
	if m.q != nil {
		return m.q.Create(ctx, nil)
	}
	return nil
}

// hasViews reports whether the entities carry the list of their views.
func (m *Model[T]) hasViews() bool { return len(m.local) > 0 || m.queued() }

// queued reports whether some views are kept by the worker.
func (m *Model[T]) queued() bool { return len(m.eventual) > 0 || len(m.lists) > 0 }

// modelState is an entity as a Model writes it: its body, keys, the rows of
// its partition's views and the specs of its views elsewhere.
type modelState struct {
	body   []byte
	pk, rk string
	locals []intraCopy
	specs  []consistency.CopySpec // eventual views
	specOf []interCopyOf          // the view and value of each of specs
	lists  []string               // the entity's value in each list ("" when in none)
	props  rawProps               // the entity's properties, without the bookkeeping
	intnt  string                 // the write's intent id
}

func (s *modelState) intent() (string, bool) { return s.intnt, s.intnt != "" }

// state computes what v is written as, with intent as its intent id and
// its blob fields kept in the blobs refs names.
func (m *Model[T]) state(v *T, intent string, refs map[string]BlobInfo) (*modelState, error) {
	body, pk, rk, err := m.t.marshal(v)
	if err != nil {
		return nil, err
	}
	if err := validateKeys(pk, rk); err != nil {
		return nil, err
	}
	for i := range m.local {
		if strings.HasPrefix(rk, m.local[i].Name+"_") {
			return nil, tkerr.Errorf("tablekit: %s: %w: RowKey %q starts with the prefix of view %q, whose rows share the partition; change the key or the view's name", m.t.describe(pk, rk), tablekit.ErrInvalidKey, rk, m.local[i].Name)
		}
	}
	s := &modelState{pk: pk, rk: rk, intnt: intent}
	if !m.hasViews() && len(refs) == 0 {
		s.body = body
		return s, nil
	}
	if s.props, err = parseProps(body); err != nil {
		return nil, err
	}
	if !m.hasViews() {
		setBlobProps(s.props, refs)
		if s.body, err = s.props.bytes(); err != nil {
			return nil, tkerr.Errorf("tablekit: %s: %w", m.t.describe(pk, rk), err)
		}
		return s, nil
	}
	var list []consistency.CopySpec
	for i := range m.local {
		ix := &m.local[i]
		val := ix.Key(v)
		if val == "" {
			continue
		}
		crk := intraRowKey(&ix.Index, val, rk)
		if err := keys.ValidateKey("RowKey", crk); err != nil {
			return nil, tkerr.Errorf("tablekit: %s: view %q value %q: %w", m.t.describe(pk, rk), ix.Name, val, err)
		}
		c := s.props.project(pk, crk, m.projected(ix.Props))
		c.setString(PropPrimaryPartitionKey, pk)
		c.setString(PropPrimaryRowKey, rk)
		cb, err := c.bytes()
		if err != nil {
			return nil, tkerr.Errorf("tablekit: %s: view %q row: %w", m.t.describe(pk, rk), ix.Name, err)
		}
		s.locals = append(s.locals, intraCopy{index: ix.Name, value: val, rk: crk, body: cb, props: c})
		list = append(list, consistency.CopySpec{Table: m.t.name, PartitionKey: pk, RowKey: crk, Local: true,
			Props: append(slices.Clone(m.projected(ix.Props)), PropPrimaryPartitionKey, PropPrimaryRowKey)})
	}
	for i := range m.eventual {
		ix := &m.eventual[i]
		val := ix.Key(v)
		if val == "" {
			continue
		}
		cpk := ix.Name + "_" + pk
		if ix.Partition != nil {
			cpk = ix.Name + "_" + ix.Partition(v)
		}
		tbl := ix.Table
		if tbl == "" {
			tbl = m.t.name
		}
		sp := consistency.CopySpec{Table: tbl, PartitionKey: cpk, RowKey: interRowKey(ix, val, pk, rk),
			Props: append(slices.Clone(m.projected(ix.Props)), PropPrimaryPartitionKey, PropPrimaryRowKey)}
		if err := validateKeys(sp.PartitionKey, sp.RowKey); err != nil {
			return nil, tkerr.Errorf("tablekit: %s: view %q value %q: %w", m.t.describe(pk, rk), ix.Name, val, err)
		}
		s.specs = append(s.specs, sp)
		s.specOf = append(s.specOf, interCopyOf{index: ix.Name, value: val})
		list = append(list, sp)
	}
	s.lists = make([]string, len(m.lists))
	for i := range m.lists {
		ix := &m.lists[i]
		val := ix.Key(v)
		s.lists[i] = val
		if val == "" {
			continue
		}
		ref := m.listRef(ix, val)
		if err := keys.ValidateKey("RowKey", ref.RowKey); err != nil {
			return nil, tkerr.Errorf("tablekit: %s: list %q value %q: %w", m.t.describe(pk, rk), ix.Name, val, err)
		}
		list = append(list, consistency.CopySpec{Table: ref.Table, PartitionKey: ref.PartitionKey, RowKey: ref.RowKey, List: ix.property(), Member: keys.Join(pk, rk)})
	}
	enc, err := consistency.EncodeCopies(list...)
	if err != nil {
		return nil, err
	}
	p := make(rawProps, len(s.props)+4)
	for k, v := range s.props {
		p[k] = v
	}
	setBlobProps(p, refs)
	p.setString(PropCopies, enc)
	if len(m.eventual) > 0 {
		p.setString(PropPrimaryPartitionKey, pk)
		p.setString(PropPrimaryRowKey, rk)
	}
	if m.queued() {
		p.setString(PropIntent, intent)
	}
	for i := range m.lists {
		p.setString(listProp(&m.lists[i]), s.lists[i])
	}
	if s.body, err = p.bytes(); err != nil {
		return nil, tkerr.Errorf("tablekit: %s: %w", m.t.describe(pk, rk), err)
	}
	return s, nil
}

// projected is the property list of a view: props, or all of T's.
func (m *Model[T]) projected(props []string) []string {
	if props == nil {
		return m.props
	}
	return props
}

// eventualChanged reports whether the eventual views of old and cur differ:
// other keys, or other projected values.
func (m *Model[T]) eventualChanged(old, cur *modelState) bool {
	if len(old.specs) != len(cur.specs) {
		return true
	}
	for i := range old.specs {
		o, c := old.specs[i], cur.specs[i]
		if o.Ref() != c.Ref() {
			return true
		}
		if !sameProps(old.props.project("", "", o.Props), cur.props.project("", "", c.Props)) {
			return true
		}
	}
	return false
}

func (m *Model[T]) src(pk, rk string) consistency.EntityRef {
	return consistency.EntityRef{Table: m.t.name, PartitionKey: pk, RowKey: rk}
}

// enqueue sends the intent to keep the views of (pk, rk) the worker keeps:
// with sync, a sync-copies step for the copies elsewhere (previous are
// those the entity had), and an index-list step for each list value of
// lists, all in one message. The caller settles the announcement (nil
// when nothing was sent) once its write has succeeded.
func (m *Model[T]) enqueue(ctx context.Context, pk, rk string, sync bool, previous []consistency.EntityRef, lists []listValue, expect consistency.Expectation) (*consistency.Announcement, error) {
	tx := consistency.NewTransaction()
	if sync {
		tx.Add(consistency.NewStep(consistency.KindSyncCopies, consistency.SyncCopiesArgs{
			Source: m.src(pk, rk), Previous: previous, Property: PropCopies, Expect: &expect,
		}))
	}
	for _, lv := range lists {
		ix := &m.lists[lv.list]
		eq, _ := json.Marshal(lv.value) // a string always encodes
		tx.Add(consistency.IndexList(consistency.IndexListArgs{
			Index: m.listRef(ix, lv.value), Property: ix.property(), Member: keys.Join(pk, rk),
			Source: m.src(pk, rk), Where: listProp(ix), Equals: eq, Expect: &expect,
		}))
	}
	if len(tx.Steps) == 0 {
		return nil, nil
	}
	return m.q.Announce(ctx, tx, &consistency.EnqueueOptions{Delay: m.delay})
}

// conflict names the unique view whose value is taken.
func (m *Model[T]) conflict(err error, pk string, ops []Op, locals []intraCopy) error {
	return intraConflict(m.t.name, err, pk, ops, locals)
}

// Insert adds v with its views: the intent for the eventual ones first
// (with EventualIndexes), then v and the rows of its partition's views in
// one transaction. Errors: tablekit.ErrAlreadyExists when v's keys exist,
// or an *IndexConflictError (also ErrAlreadyExists) when a unique value of
// an index in v's partition is taken; either way nothing is written (the
// queued intent is then a no-op). On success v's ETag is set. One request,
// two with EventualIndexes.
func (m *Model[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	intent := ""
	if m.queued() {
		intent = consistency.NewIntentID()
	}
	if _, err := m.state(v, intent, nil); err != nil {
		return err // refused before any blob is uploaded
	}
	up := &blobUploads{}
	pk, rk := m.t.codec.Keys(v)
	refs, err := m.putBlobs(ctx, v, pk, rk, nil, up)
	if err != nil {
		m.forget(ctx, up, nil, err)
		return err
	}
	s, err := m.state(v, intent, refs)
	if err == nil {
		err = m.insert(ctx, v, s, intent != "" || len(up.all) > 0)
	}
	m.forget(ctx, up, refs, err)
	return err
}

// forget deletes the blobs a write uploaded and the entity does not name:
// all of them when the write failed for sure, those it did not keep
// otherwise. After an unknown outcome the stored entity may name any, and
// all stay.
func (m *Model[T]) forget(ctx context.Context, up *blobUploads, kept map[string]BlobInfo, err error) {
	if errors.Is(err, tablekit.ErrOutcomeUnknown) || len(up.all) == 0 {
		return
	}
	if err != nil {
		kept = nil
	}
	var drop []BlobInfo
	for _, b := range up.all {
		if k, ok := kept[b.Property]; !ok || k.Name != b.Name {
			drop = append(drop, b)
		}
	}
	ctx = context.WithoutCancel(ctx)
	for _, b := range drop {
		_, _ = m.t.acct.Blobs().DeleteBlob(ctx, b.Container, b.Name, nil)
	}
}

// insert writes the new entity s: the intent first, then the entity and
// its partition's views in one transaction.
// unique says that s's body is this write's alone (an intent id, a fresh
// blob name), which settles a lost answer exactly.
func (m *Model[T]) insert(ctx context.Context, v *T, s *modelState, unique bool) error {
	var a *consistency.Announcement
	if m.queued() {
		intent, _ := s.intent()
		lists := listChanges(&modelState{}, s, len(m.lists), map[listValue]bool{})
		var err error
		if a, err = m.enqueue(ctx, s.pk, s.rk, len(s.specs) > 0, nil, lists, intentOf(intent)); err != nil {
			return err
		}
	}
	if len(s.locals) == 0 {
		etag, err := m.t.w.Write(ctx, "insert", Op{Type: OpInsert, PartitionKey: s.pk, RowKey: s.rk, Entity: s.body, Unique: unique})
		if err != nil {
			return err
		}
		m.t.setMeta(v, etag)
		return settleAnnounced(ctx, a, m.t.describe(s.pk, s.rk))
	}
	ops := make([]Op, 0, 1+len(s.locals))
	ops = append(ops, Op{Type: OpInsert, PartitionKey: s.pk, RowKey: s.rk, Entity: s.body, Unique: unique})
	for _, c := range s.locals {
		ops = append(ops, Op{Type: OpInsert, PartitionKey: s.pk, RowKey: c.rk, Entity: c.body, Owned: true})
	}
	res, err := m.t.SubmitOps(ctx, ops, nil)
	if err != nil {
		return m.conflict(err, s.pk, ops, s.locals)
	}
	m.t.setMeta(v, res[0].ETag)
	return settleAnnounced(ctx, a, m.t.describe(s.pk, s.rk))
}

// write is the read-modify-write of every Model write but Insert: it reads
// (pk, rk), lets change derive the new entity from the stored one (nil
// for a delete), and writes the entity and its partition's views in one
// transaction conditional on the read, after the intent for the eventual
// views when they change. It starts over on a race, enqueueing again only
// for views the intents sent so far did not name.
// writeMode says what a Model write does besides fn.
type writeMode struct {
	primary OpType // the entity's operation: OpReplace, OpMerge or OpDelete
	// repair rewrites every view row of the partition (upserts, never
	// inserts), deletes the partition's rows in stale, and enqueues
	// nothing: Repair syncs the eventual views itself.
	repair bool
	stale  []string
}

func (m *Model[T]) write(ctx context.Context, pk, rk string, fn func(*T) error, mode writeMode, mo wire.ModifyOptions) (T, error) {
	del := mode.primary == OpDelete
	var sent []Op
	var locals []intraCopy
	var refsBefore, refsAfter map[string]BlobInfo
	up := &blobUploads{}
	var prepare func(old *T, stored []byte) error
	if fn != nil && len(m.blobs.fields) > 0 && !mode.repair {
		// fn sees the blob fields as stored.
		prepare = func(old *T, stored []byte) error {
			refs, err := m.blobRefs(stored)
			if err != nil {
				return err
			}
			return m.loadBlobs(ctx, old, refs)
		}
	}
	missing := map[string]bool{}
	mo.Race = func(err error) bool { return intraRace(err, sent, missing) }
	var a *consistency.Announcement // the last attempt's: the one whose write landed
	v, err := m.t.modifyWith(ctx, pk, rk, fn, prepare, func(old, v *T, stored []byte) ([]Op, error) {
		a = nil
		// Each attempt has an intent of its own, and its own message when
		// it changes a view the worker keeps: a message sent for an
		// attempt that lost a race may have been applied already, to the
		// state the winner left, before this attempt's write lands.
		intent := ""
		if m.queued() {
			intent = consistency.NewIntentID()
		}
		before, err := m.state(old, "", nil)
		if err != nil {
			before = &modelState{} // the stored entity's keys or values were invalid: it had no such views
		}
		if refsBefore, err = m.blobRefs(stored); err != nil {
			return nil, err
		}
		refsAfter = nil
		var after *modelState
		var ops []Op
		if del {
			after = &modelState{}
			ops = []Op{{Type: OpDelete, PartitionKey: pk, RowKey: rk}}
		} else {
			if mode.repair {
				refsAfter = refsBefore // a repair rewrites the entity as stored
			} else if refsAfter, err = m.putBlobs(ctx, v, pk, rk, refsBefore, up); err != nil {
				return nil, err
			}
			if after, err = m.state(v, intent, refsAfter); err != nil {
				return nil, err
			}
			ops = []Op{{Type: mode.primary, PartitionKey: pk, RowKey: rk, Entity: after.body}}
		}
		locals = after.locals
		want := map[string]bool{}
		for _, c := range after.locals {
			want[c.rk] = true
		}
		had := map[string]bool{}
		gone := slices.Clone(mode.stale)
		for _, c := range before.locals {
			gone = append(gone, c.rk)
		}
		for _, crk := range gone {
			if !had[crk] && !want[crk] && !missing[crk] {
				ops = append(ops, Op{Type: OpDelete, PartitionKey: pk, RowKey: crk})
			}
			had[crk] = true
		}
		for _, c := range after.locals {
			typ := OpInsert
			if had[c.rk] || mode.repair {
				typ = OpUpsertReplace
			}
			ops = append(ops, Op{Type: typ, PartitionKey: pk, RowKey: c.rk, Entity: c.body, Owned: true})
		}
		if m.queued() && !mode.repair {
			// An intent is due when this write changes the eventual views
			// of the entity as read (their keys or what they carry), or
			// the value of a list.
			var prev []consistency.EntityRef
			for _, sp := range before.specs {
				prev = append(prev, sp.Ref())
			}
			sync := len(m.eventual) > 0 && (del || m.eventualChanged(before, after))
			lists := listChanges(before, after, len(m.lists), map[listValue]bool{})
			if sync || len(lists) > 0 {
				expect := intentOf(intent)
				if del {
					expect = consistency.Expectation{Absent: true}
				}
				if a, err = m.enqueue(ctx, pk, rk, sync, prev, lists, expect); err != nil {
					return nil, err
				}
			}
		}
		sent = ops
		return ops, nil
	}, mo)
	m.forget(ctx, up, refsAfter, err)
	if err != nil {
		return v, m.conflict(err, pk, sent, locals)
	}
	lerr := settleAnnounced(ctx, a, m.t.describe(pk, rk))
	return v, cmp.Or(lerr, m.dropBlobs(ctx, pk, rk, unnamed(refsBefore, refsAfter)))
}

// Update reads the entity, calls fn on it and writes it with its views
// (see Model), conditionally on the ETag read; on a concurrent change it
// starts over, up to TableOptions.MaxAttempts (or opts.MaxAttempts) times,
// so fn must be safe to call again. Errors: those of fn,
// tablekit.ErrNotFound, *IndexConflictError, and tablekit.ErrOutcomeUnknown
// when a lost response leaves open whether the change landed.
func (m *Model[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	return m.write(ctx, pk, rk, fn, writeMode{primary: OpReplace}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
}

// replaceWith is the change of Replace and Merge: the stored entity
// becomes v, keys and all.
func (m *Model[T]) replaceWith(v *T) func(*T) error {
	return func(cur *T) error {
		*cur = *v
		return nil
	}
}

// Replace writes v over the stored entity with v's keys, with its views,
// conditionally on v's ETag unless opts say otherwise (as Table.Replace:
// tablekit.ErrPreconditionFailed when it changed since v was read;
// tablekit.ErrNotFound when there is none). On success v's ETag is set.
func (m *Model[T]) Replace(ctx context.Context, v *T, opts *WriteOptions) error {
	return m.overwrite(ctx, v, opts, OpReplace)
}

// Merge is Replace with a merge of the entity's properties: properties the
// stored entity has and T does not are kept. The views are derived from v,
// which holds every property of T.
func (m *Model[T]) Merge(ctx context.Context, v *T, opts *WriteOptions) error {
	return m.overwrite(ctx, v, opts, OpMerge)
}

func (m *Model[T]) overwrite(ctx context.Context, v *T, opts *WriteOptions, typ OpType) error {
	pk, rk, etag, err := m.t.deleteTarget(v, opts)
	if err != nil {
		return err
	}
	got, err := m.write(ctx, pk, rk, m.replaceWith(v), writeMode{primary: typ}, wire.ModifyOptions{IfMatch: etag, Verb: "replace"})
	if err != nil {
		return err
	}
	m.t.setMeta(v, m.t.codec.ETag(&got))
	return nil
}

// Upsert writes v with its views whether or not an entity with its keys
// exists: as Replace without a condition when one does, as Insert when
// none does (a concurrent insert makes it start over).
func (m *Model[T]) Upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	if v == nil {
		return tkerr.Errorf("tablekit: %s: %w: nil *%s", m.t.name, tablekit.ErrInvalidEntity, m.t.codec.Type())
	}
	typ := OpReplace
	if opts != nil && opts.Mode == UpsertMerge {
		typ = OpMerge
	}
	pk, rk := m.t.codec.Keys(v)
	for range m.t.maxAttempts {
		got, err := m.write(ctx, pk, rk, m.replaceWith(v), writeMode{primary: typ}, wire.ModifyOptions{Verb: "upsert"})
		if err == nil {
			m.t.setMeta(v, m.t.codec.ETag(&got))
			return nil
		}
		if !tablekit.IsNotFound(err) {
			return err
		}
		err = m.Insert(ctx, v, nil)
		var ce *IndexConflictError
		if err == nil || !tablekit.IsAlreadyExists(err) || errors.As(err, &ce) {
			return err
		}
	}
	return tkerr.Errorf("tablekit: upsert %s: %w: inserted and deleted by others %d times", m.t.describe(pk, rk), tablekit.ErrPreconditionFailed, m.t.maxAttempts)
}

// Delete removes the entity with v's keys and its views: conditional on
// v's ETag unless opts say otherwise (tablekit.ErrPreconditionFailed when
// it changed since v was read; tablekit.ErrNotFound when there is none).
// It reads the entity to learn its views, enqueues the intent to remove
// the eventual ones (with EventualIndexes), and deletes the entity and its
// partition's views in one transaction: two requests, three with
// EventualIndexes.
func (m *Model[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	pk, rk, etag, err := m.t.deleteTarget(v, opts)
	if err != nil {
		return err
	}
	_, err = m.write(ctx, pk, rk, nil, writeMode{primary: OpDelete}, wire.ModifyOptions{Verb: "delete", IfMatch: etag})
	return err
}

// ArchiveOptions configures Archive. Nil means defaults.
type ArchiveOptions struct {
	// PartitionKey and RowKey are the archived entity's keys; empty means
	// the entity's own.
	PartitionKey, RowKey string
}

// Archive moves the entity (pk, rk) to table archive through the worker
// (the guide's eventually consistent transactions pattern, its own
// example): it enqueues a consistency.MoveEntity step, which copies the
// entity as it is when the worker runs, without the Model's bookkeeping,
// and deletes it with every view. It needs ModelOptions.Queue, and the
// table archive must exist (create it with its own repository: a Model
// with no views reads the archived entities' blob fields back). One
// request; the entity moves when the worker has run. The archived entity
// keeps naming its blobs, which stay where they are.
func (m *Model[T]) Archive(ctx context.Context, pk, rk, archive string, opts *ArchiveOptions) error {
	if m.q == nil {
		return tkerr.Errorf("tablekit: archive %s: %w: the Model has no queue (ModelOptions.Queue)", m.t.describe(pk, rk), tablekit.ErrInvalidArgument)
	}
	if err := validateKeys(pk, rk); err != nil {
		return err
	}
	if err := keys.ValidateTableName(archive); err != nil {
		return tkerr.Errorf("tablekit: archive %s: %w", m.t.describe(pk, rk), err)
	}
	o := optsOf(opts)
	to := consistency.EntityRef{Table: archive, PartitionKey: o.PartitionKey, RowKey: o.RowKey}
	return m.q.Enqueue(ctx, consistency.NewTransaction(consistency.MoveEntity(m.src(pk, rk), to)), nil)
}

// Get reads the entity (pk, rk) and its blob fields: a point query, one
// request, and one more per non-empty blob field (a blob whose content
// does not match its entity's size or SHA-256 fails with ErrBlobCorrupt);
// tablekit.ErrNotFound when there is none.
func (m *Model[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	if len(m.blobs.fields) == 0 {
		return m.t.Get(ctx, pk, rk, opts)
	}
	v, _, body, err := m.t.read(ctx, pk, rk)
	if err != nil {
		return v, err
	}
	refs, err := m.blobRefs(body)
	if err == nil {
		err = m.loadBlobs(ctx, &v, refs)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// view returns the view called name.
func (m *Model[T]) view(name string) (*Index[T], bool, error) {
	at, ok := m.byName[name]
	if !ok {
		return nil, false, tkerr.Errorf("tablekit: %s: %w: no view named %q", m.t.name, tablekit.ErrInvalidArgument, name)
	}
	if at.list {
		return nil, false, tkerr.Errorf("tablekit: %s: %w: view %q is a list; read it with Listed or ListMembers", m.t.name, tablekit.ErrInvalidArgument, name)
	}
	if at.eventual {
		return &m.eventual[at.i], true, nil
	}
	return &m.local[at.i].Index, false, nil
}

// viewTable is the table of an eventual index's copies.
func (m *Model[T]) viewTable(ix *Index[T]) *Table[T] {
	if ix.Table != "" {
		return m.tables[ix.Table]
	}
	return m.t
}

// Lookup returns the entity whose value in the unique index is value, in
// partition part: the entity's PartitionKey for an index of Indexes, the
// index's partition (Partition(v), or the entity's PartitionKey) for one
// of EventualIndexes. One request. The result has the entity's keys, the
// index's projected properties and no ETag.
func (m *Model[T]) Lookup(ctx context.Context, index, part, value string, opts *GetOptions) (T, error) {
	var zero T
	ix, eventual, err := m.view(index)
	if err != nil {
		return zero, err
	}
	if !ix.Unique {
		return zero, tkerr.Errorf("tablekit: %s: %w: view %q is not a unique index; use Find", m.t.name, tablekit.ErrInvalidArgument, index)
	}
	if eventual {
		return getCopy(ctx, m.t, m.viewTable(ix).w, ix.Name+"_"+part, value)
	}
	return getCopy(ctx, m.t, m.t.w, part, intraRowKey(ix, value, ""))
}

// Find returns the entities of partition part (as Lookup says) whose value
// in index is value. One request per page.
func (m *Model[T]) Find(ctx context.Context, index, part, value string, opts *QueryOptions) iter.Seq2[T, error] {
	return m.search(ctx, index, part, opts, func(ix *Index[T], eventual bool) []keys.Filter {
		switch {
		case ix.Unique:
			return []keys.Filter{keys.RK().Eq(m.rowKey(ix, eventual, value))}
		case eventual:
			return []keys.Filter{keys.RK().Prefix(keys.Join(value, ""))}
		}
		return []keys.Filter{keys.RK().Prefix(ix.Name + "_" + keys.Join(value, ""))}
	})
}

// Prefix returns, in the index's order, the entities of partition part
// whose value in index starts with prefix. One request per page.
func (m *Model[T]) Prefix(ctx context.Context, index, part, prefix string, opts *QueryOptions) iter.Seq2[T, error] {
	return m.search(ctx, index, part, opts, func(ix *Index[T], eventual bool) []keys.Filter {
		p := prefix
		if !ix.Unique {
			p = keys.Compound{}.Part(prefix)
		}
		return []keys.Filter{keys.RK().Prefix(m.rowKey(ix, eventual, p))}
	})
}

// Between returns, in the index's order, the entities of partition part
// whose value in index lies between lo and hi, both included. One request
// per page.
func (m *Model[T]) Between(ctx context.Context, index, part, lo, hi string, opts *QueryOptions) iter.Seq2[T, error] {
	return m.search(ctx, index, part, opts, func(ix *Index[T], eventual bool) []keys.Filter {
		if ix.Unique {
			return []keys.Filter{keys.RK().Ge(m.rowKey(ix, eventual, lo)), keys.RK().Le(m.rowKey(ix, eventual, hi))}
		}
		c := keys.Compound{}
		_, end := keys.PrefixRange(m.rowKey(ix, eventual, c.Part(hi)+string(c.Separator())))
		return []keys.Filter{keys.RK().Ge(m.rowKey(ix, eventual, c.Part(lo))), keys.RK().Lt(end)}
	})
}

// rowKey is the RowKey text a query of index starts from for s.
func (m *Model[T]) rowKey(ix *Index[T], eventual bool, s string) string {
	if eventual {
		return s
	}
	return ix.Name + "_" + s
}

func (m *Model[T]) search(ctx context.Context, index, part string, opts *QueryOptions, rk func(ix *Index[T], eventual bool) []keys.Filter) iter.Seq2[T, error] {
	ix, eventual, err := m.view(index)
	if err != nil {
		return errSeq[T](err)
	}
	if opts != nil && opts.Limit > 0 {
		if err := m.t.requireSorted("Model's Find, Prefix or Between with a Limit"); err != nil {
			return errSeq[T](err)
		}
	}
	in, pk := m.t, part
	if eventual {
		in, pk = m.viewTable(ix), ix.Name+"_"+part
	}
	return queryCopies(ctx, m.t, in, keys.And(append([]keys.Filter{keys.PK().Eq(pk)}, rk(ix, eventual)...)...), opts, m.sel)
}

// Latest returns the n entities of partition pk that come first in tail,
// newest first: one request. n must be 1 to 1000. The results carry the
// tail's properties and no ETag.
func (m *Model[T]) Latest(ctx context.Context, tail, pk string, n int, opts *LatestOptions) ([]T, error) {
	at, ok := m.byName[tail]
	if !ok || at.eventual || at.list || !m.local[at.i].tail {
		return nil, tkerr.Errorf("tablekit: %s: %w: no tail named %q", m.t.name, tablekit.ErrInvalidArgument, tail)
	}
	if n < 1 || n > MaxPageSize {
		return nil, tkerr.Errorf("tablekit: %s: %w: latest %d; n must be 1 to %d", m.t.name, tablekit.ErrInvalidArgument, n, MaxPageSize)
	}
	if err := m.t.requireSorted("Model.Latest"); err != nil {
		return nil, err
	}
	out := make([]T, 0, n)
	for v, err := range queryCopies(ctx, m.t, m.t, keys.And(keys.PK().Eq(pk), keys.RK().Prefix(tail+"_")), &QueryOptions{Top: n, Limit: n}, m.sel) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

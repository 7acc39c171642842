package patterns

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Rebuild, Verify and Repair of the index entities pattern's three
// options. An entry is one member of one list: the keys of an entity
// listed under a value.

// listMember is the entry that lists primary src under value, in the list
// at where (an index entity or blob, as key).
func listMember[T any](ix *ListIndex[T], value, where string, src consistency.EntityRef, member string) *ixEntry {
	return &ixEntry{IndexEntry: IndexEntry{Index: ix.Name, Value: value, Primary: src}, key: where + "\x00" + member, list: true}
}

// primaryValue reads the primary at src and returns its value in ix and
// its ETag; found is false when it does not exist.
func primaryValue[T any](ctx context.Context, t *Table[T], ix *ListIndex[T], src consistency.EntityRef) (value, etag string, found bool, err error) {
	v, etag, err := t.getWithETag(ctx, src.PartitionKey, src.RowKey)
	if tablekit.IsNotFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	return ix.Key(&v), etag, true, nil
}

// primaryRead is what primaryValue read of one primary.
type primaryRead struct {
	value, etag string
	found       bool
}

// memberReads is how many primaries a list's repair reads at once.
const memberReads = 16

// primaryValues reads the primaries at refs, memberReads at once: a list's
// repair reads every entity whose membership it settles, and a list
// being rebuilt has up to 99 of them a transaction.
func primaryValues[T any](ctx context.Context, t *Table[T], ix *ListIndex[T], refs []consistency.EntityRef) ([]primaryRead, error) {
	out := make([]primaryRead, len(refs))
	err := parallel(ctx, indexes(len(refs)), memberReads, nil, func(ctx context.Context, i int) (int, error) {
		v, etag, found, err := primaryValue(ctx, t, ix, refs[i])
		out[i] = primaryRead{v, etag, found}
		return 0, err
	})
	return out, err
}

// ---- option 2: ListIndexedTable ----

// Rebuild lists every entity that opts selects in the index entity of its
// value in its partition and unlists the members that do not belong: it
// is Repair without the report, since the scan of the partitions shows
// the index entities at no extra cost. Lists already right are not
// written. Requests and guarantees are Repair's.
func (x *ListIndexedTable[T]) Rebuild(ctx context.Context, opts *MaintenanceOptions) error {
	_, err := repairIndex(ctx, x, opts)
	return err
}

// Verify compares the index entities with the entities, in one scan of the
// rows opts.Filter selects (index entities share the entities'
// partitions, so select whole partitions), and reports missing members,
// stale ones (listed under a value the entity no longer has) and orphans
// (listed, but the entity is gone). It changes nothing. Requests: one per
// page of the scan.
func (x *ListIndexedTable[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, x, opts)
	return rep, err
}

// Repair runs Verify and fixes each index entity with a wrong member the
// way Insert, Update and Delete write it: it reads the index entity, reads
// each entity whose membership it changes, and writes the index entity
// (conditional on its ETag) together with a merge of each of those
// entities that changes none of their properties (conditional on the
// ETags read) in one entity group transaction, starting over when any of
// them changed meanwhile, up to TableOptions.MaxAttempts times. A
// member is listed when its entity has the value and unlisted otherwise,
// as the entities are when read, so a repair racing a write never lists
// a stale member or drops a live one. A list that kept changing is
// reported in Skipped. The index entities of a partition are repaired one
// after another, the partitions Parallelism at once. Requests: Verify's,
// then per index entity to fix two (read, transaction) plus one read per
// member it changes (16 at once).
func (x *ListIndexedTable[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, x, opts)
}

// isListEntity reports whether a scanned row is one of the index's
// entities.
func isListEntity[T any](t *Table[T], ix *ListIndex[T], p rawProps) bool {
	if _, ok := p.str(ix.property()); !ok {
		return false
	}
	_, rk := rowKeys(p)
	if !strings.HasPrefix(rk, ix.Prefix) {
		return false
	}
	return ix.Prefix != "" || !slices.Contains(t.codec.Select(), ix.property())
}

// listMembers returns the members of a scanned index entity.
func listMembers[T any](t *Table[T], ix *ListIndex[T], p rawProps) (memberList, error) {
	pk, rk := rowKeys(p)
	body, err := p.bytes()
	if err != nil {
		return nil, err
	}
	le, err := parseListEntity(t.name, pk, rk, ix.property(), body, "")
	return le.members, err
}

func (x *ListIndexedTable[T]) audit(ctx context.Context, a *audit) error {
	for p, err := range scanRows(ctx, x.t.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		pk, rk := rowKeys(p)
		if isListEntity(x.t, &x.ix, p) {
			members, err := listMembers(x.t, &x.ix, p)
			if err != nil {
				return err
			}
			at := consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk}
			for _, m := range members {
				e := listMember(&x.ix, strings.TrimPrefix(rk, x.ix.Prefix), at.String(), consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: m}, m)
				e.Entry = at
				a.holds(e)
			}
			continue
		}
		v, err := decodeRow(x.t, p)
		if err != nil {
			return err
		}
		src := consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk}
		a.primary(src, p, false)
		if val := x.ix.Key(&v); val != "" {
			at := consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: x.ix.Prefix + val}
			e := listMember(&x.ix, val, at.String(), src, rk)
			e.Entry = at
			a.wants(e)
		}
	}
	return nil
}

func (x *ListIndexedTable[T]) repair(ctx context.Context, a *audit) error {
	// A partition's lists one after another (an entity that moves from one
	// list to another is merged by both transactions), the partitions in
	// parallel.
	parts, byPK := byList(a.problems, func(e *ixEntry) string { return e.Entry.PartitionKey })
	return each(ctx, parts, a.opts.parallelism(), func(ctx context.Context, pk string) error {
		order, lists := byList(byPK[pk], func(e *ixEntry) string { return e.Entry.RowKey })
		for _, irk := range order {
			entries := lists[irk]
			for start := 0; start < len(entries); start += MaxTransactionOps - 1 {
				chunk := entries[start:min(start+MaxTransactionOps-1, len(entries))]
				err := x.repairList(ctx, chunk)
				if listRace(err) {
					for _, e := range chunk {
						a.skip(e, "the index entity or its entities kept changing during the repair")
					}
					continue
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// repairList settles the membership of the entries' entities in their
// index entity (all entries name the same one): a read-modify-write of
// the index entity, as Insert's, with the entities it lists or unlists
// merged unchanged in the same transaction, conditional on the ETags read.
func (x *ListIndexedTable[T]) repairList(ctx context.Context, entries []*ixEntry) error {
	at := entries[0].Entry
	pk, irk, value := at.PartitionKey, at.RowKey, entries[0].Value
	_, err := x.t.w.ModifyBatch(ctx, pk, irk, func(raw []byte, etag string) ([]Op, error) {
		le, err := parseListEntity(x.t.name, pk, irk, x.ix.property(), raw, etag)
		if err != nil {
			return nil, err
		}
		le.body = nil // ModifyBatch writes the log of the entity it reads
		m := le.members
		refs := make([]consistency.EntityRef, len(entries))
		for i, e := range entries {
			refs[i] = e.Primary
		}
		reads, err := primaryValues(ctx, x.t, &x.ix, refs)
		if err != nil {
			return nil, err
		}
		var touched []Op
		for i, e := range entries {
			found, eetag := reads[i].found, reads[i].etag
			rk := e.Primary.RowKey
			_, listed := slices.BinarySearch(m, rk)
			if want := found && reads[i].value == value; want == listed {
				continue
			} else if want {
				m = m.with(rk)
			} else {
				m = m.without(rk)
			}
			if found {
				body, err := touchBody(pk, rk)
				if err != nil {
					return nil, err
				}
				touched = append(touched, Op{Type: OpMerge, PartitionKey: pk, RowKey: rk, Entity: body, ETag: eetag})
			}
		}
		if slices.Equal(m, le.members) {
			return nil, wire.ErrNoChange
		}
		op, ok, err := listOp(pk, irk, x.ix.property(), x.ix.Name, value, le, m)
		if err != nil || !ok {
			return nil, err
		}
		return append([]Op{op}, touched...), nil
	}, &wire.ModifyOptions{MaxAttempts: x.t.maxAttempts, Verb: "repair", Race: listRace})
	return err
}

// ---- option 1: BlobIndexedTable ----

// Rebuild lists every entity that opts selects in the blob of its value
// and unlists the members that do not belong: it is Repair without the
// report (the blobs are read to be written anyway). Lists already right
// are not written. Requests and guarantees are Repair's.
func (x *BlobIndexedTable[T]) Rebuild(ctx context.Context, opts *MaintenanceOptions) error {
	_, err := repairIndex(ctx, x, opts)
	return err
}

// Verify compares the index blobs with the entities: it scans the
// entities opts.Filter selects and reads every blob of the index, and
// reports missing members, stale ones (listed under a value the entity no
// longer has) and orphans (listed, but the entity is gone, or outside
// opts.Filter: verify a filtered subset only to find missing members). It
// changes nothing. Requests: one per page of the scan, one per 5,000
// blobs listed, and one read per blob (Parallelism at once).
func (x *BlobIndexedTable[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, x, opts)
	return rep, err
}

// Repair runs Verify and fixes each blob with a wrong member through the
// blob's ETag-conditioned read-modify-write, as Insert and Delete do:
// missing members are added; a stale or orphaned member is removed only
// when its entity, read after Verify, does not have the value, and is
// read once more after the removal and listed again if a concurrent write
// gave it the value meanwhile (entity and blob never change atomically;
// Lookup skips what the blob over-lists). Requests: Verify's, then per
// blob to fix two (read, write), plus two reads per member it removes
// (16 at once).
func (x *BlobIndexedTable[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, x, opts)
}

func (x *BlobIndexedTable[T]) member(value string, m Member) *ixEntry {
	e := listMember(&x.ix, value, x.BlobName(value), consistency.EntityRef{Table: x.t.name, PartitionKey: m.PartitionKey, RowKey: m.RowKey}, keys.Join(m.PartitionKey, m.RowKey))
	e.Blob = x.BlobName(value)
	return e
}

func (x *BlobIndexedTable[T]) audit(ctx context.Context, a *audit) error {
	for p, err := range scanRows(ctx, x.t.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		v, err := decodeRow(x.t, p)
		if err != nil {
			return err
		}
		pk, rk := rowKeys(p)
		a.primary(consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk}, p, false)
		if val := x.ix.Key(&v); val != "" {
			a.wants(x.member(val, Member{pk, rk}))
		}
	}
	prefix := x.BlobName("")
	var values []string
	pager := x.blobs.NewListBlobsFlatPager(x.container, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return tablekit.MapError(err, "list index blobs", x.container+"/"+prefix)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name != nil {
				values = append(values, strings.TrimPrefix(*b.Name, prefix))
			}
		}
	}
	return each(ctx, values, a.opts.parallelism(), func(ctx context.Context, value string) error {
		list, _, err := x.read(ctx, value)
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, m := range list {
			a.holds(x.member(value, m))
		}
		return err
	})
}

func (x *BlobIndexedTable[T]) repair(ctx context.Context, a *audit) error {
	order, lists := byList(a.problems, func(e *ixEntry) string { return e.Blob })
	return each(ctx, order, a.opts.parallelism(), func(ctx context.Context, blob string) error {
		entries := lists[blob]
		value := entries[0].Value
		var add, remove []Member
		var check []consistency.EntityRef
		for _, e := range entries {
			if e.Problem == IndexMissing {
				add = append(add, Member{e.Primary.PartitionKey, e.Primary.RowKey})
				continue
			}
			check = append(check, e.Primary)
		}
		reads, err := primaryValues(ctx, x.t, &x.ix, check)
		if err != nil {
			return err
		}
		for i, r := range reads {
			if !r.found || r.value != value {
				remove = append(remove, Member{check[i].PartitionKey, check[i].RowKey})
			}
		}
		if err := x.changeMany(ctx, value, add, remove); err != nil {
			return err
		}
		// A write that gave a removed entity the value meanwhile listed it
		// first and found it listed: list it again.
		removed := make([]consistency.EntityRef, len(remove))
		for i, m := range remove {
			removed[i] = consistency.EntityRef{Table: x.t.name, PartitionKey: m.PartitionKey, RowKey: m.RowKey}
		}
		reads, err = primaryValues(ctx, x.t, &x.ix, removed)
		if err != nil {
			return err
		}
		var relist []Member
		for i, r := range reads {
			if r.found && r.value == value {
				relist = append(relist, remove[i])
			}
		}
		if len(relist) == 0 {
			return nil
		}
		return x.changeMany(ctx, value, relist, nil)
	})
}

// ---- option 3: EventualListIndexedTable ----

// Rebuild records each entity's value on it (the property the worker's
// index-list step reads) where it is missing or wrong, then lists every
// entity that opts selects in the index entity of its value and unlists
// the members that do not belong: it is Repair without the report (the
// index entities are read to be written anyway). Requests and guarantees
// are Repair's.
func (x *EventualListIndexedTable[T]) Rebuild(ctx context.Context, opts *MaintenanceOptions) error {
	_, err := repairIndex(ctx, x, opts)
	return err
}

// Verify compares the index entities with the entities: it scans the
// entities opts.Filter selects and the index's partition (PartitionKey
// ListIndex.Partition, RowKeys from ListIndex.Prefix), and reports
// missing members, stale ones (listed under a value the entity no longer
// has, or an entity whose recorded value, the property the worker reads,
// is not its value) and orphans (listed, but the entity is gone, or
// outside opts.Filter). It changes nothing; members the worker has not
// caught up with yet show as missing or stale. Requests: one per page of
// each scan.
func (x *EventualListIndexedTable[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, x, opts)
	return rep, err
}

// Repair runs Verify and fixes what it found directly, not through the
// queue, so that it returns with the index fixed: it first records the
// value on each entity whose recorded value is wrong (a merge of that one
// property, conditional on the ETag scanned; an entity changed meanwhile
// is skipped, as its writer enqueued its own step; a lost answer is
// settled by reading the entity back), then applies, in
// process (consistency.Apply), the worker's own index-list step for each
// wrong member. The step re-reads the entity when it runs and writes the
// index entity conditionally on its ETag, so repairs converge with the
// worker and with concurrent writers, whatever order they run in.
// The steps of one index entity run one after another, the index
// entities Parallelism at once. Requests: Verify's, then one merge per
// entity whose recorded value is wrong and four per member fixed (the
// step reads the entity, reads and writes the index entity, and reads the
// entity again to see it did not change meanwhile).
func (x *EventualListIndexedTable[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, x, opts)
}

// markerKey is the key of the entry that stands for an entity's recorded
// value.
const markerKey = "marker\x00"

func (x *EventualListIndexedTable[T]) member(value string, src consistency.EntityRef) *ixEntry {
	at := x.indexRef(value)
	e := listMember(&x.ix, value, at.String(), src, keys.Join(src.PartitionKey, src.RowKey))
	e.Entry = at
	return e
}

func (x *EventualListIndexedTable[T]) audit(ctx context.Context, a *audit) error {
	for p, err := range scanRows(ctx, x.t.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		pk, rk := rowKeys(p)
		if x.it == x.t && pk == x.ix.Partition && isListEntity(x.t, &x.ix, p) {
			continue // an index entity in the entities' table
		}
		v, err := decodeRow(x.t, p)
		if err != nil {
			return err
		}
		src := consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk}
		a.primary(src, p, false)
		val := x.ix.Key(&v)
		if val != "" {
			a.wants(x.member(val, src))
		}
		if rec, _ := p.str(x.where); rec != val {
			// The step would list the entity under rec: record val first.
			m := &ixEntry{IndexEntry: IndexEntry{Index: x.ix.Name, Value: rec, Entry: src, Primary: src}, key: markerKey + src.String(), list: true}
			m.props = rawProps{}
			m.props.setString(x.where, val)
			a.holds(m)
		}
	}
	for p, err := range scanRows(ctx, x.it.w, keys.And(keys.PK().Eq(x.ix.Partition), keys.RK().Prefix(x.ix.Prefix)), 0) {
		if err != nil {
			return err
		}
		if !isListEntity(x.it, &x.ix, p) {
			continue
		}
		_, rk := rowKeys(p)
		members, err := listMembers(x.it, &x.ix, p)
		if err != nil {
			return err
		}
		for _, m := range members {
			parts, err := keys.Split(m)
			if err != nil || len(parts) != 2 {
				continue // not a member this repository wrote
			}
			a.holds(x.member(strings.TrimPrefix(rk, x.ix.Prefix), consistency.EntityRef{Table: x.t.name, PartitionKey: parts[0], RowKey: parts[1]}))
		}
	}
	return nil
}

func (x *EventualListIndexedTable[T]) repair(ctx context.Context, a *audit) error {
	var marks, steps []*ixEntry
	for _, e := range a.problems {
		if strings.HasPrefix(e.key, markerKey) {
			marks = append(marks, e)
		} else {
			steps = append(steps, e)
		}
	}
	err := each(ctx, marks, a.opts.parallelism(), func(ctx context.Context, e *ixEntry) error {
		p := e.props.project(e.Primary.PartitionKey, e.Primary.RowKey, nil)
		body, err := p.bytes()
		if err != nil {
			return err
		}
		raced, err := writeRepair(ctx, x.t.w, "merge", Op{Type: OpMerge, PartitionKey: e.Primary.PartitionKey, RowKey: e.Primary.RowKey, Entity: body, ETag: a.primaries[e.Primary].etag})
		if raced {
			a.skip(e, "the entity changed during the repair; its writer enqueued its own step")
		}
		return err
	})
	if err != nil {
		return err
	}
	// One list's steps one after another (they would only contend for its
	// index entity), the lists in parallel.
	order, lists := byList(steps, func(e *ixEntry) string { return e.Entry.String() })
	return each(ctx, order, a.opts.parallelism(), func(ctx context.Context, at string) error {
		for _, e := range lists[at] {
			eq, _ := json.Marshal(e.Value) // a string always encodes
			step := consistency.IndexList(consistency.IndexListArgs{
				Index: e.Entry, Property: x.ix.property(), Member: keys.Join(e.Primary.PartitionKey, e.Primary.RowKey),
				Source: e.Primary, Where: x.where, Equals: eq,
			})
			if err := consistency.Apply(ctx, x.t.acct, consistency.NewTransaction(step), nil, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

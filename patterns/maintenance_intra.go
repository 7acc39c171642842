package patterns

import (
	"context"
	"strings"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
)

// Rebuild writes the index copies of every primary that opts selects that
// lacks them or holds stale ones (an index added to existing data, or
// rows written without the repository), and deletes the copies no
// primary wants: it is Repair without the report, since the scan of the
// primaries' partitions shows the stored copies at no extra cost. Copies
// already right are left as they are. Requests and guarantees are
// Repair's; a primary that a concurrent write changed is left to that
// write, which writes its copies itself.
func (x *IndexedTable[T]) Rebuild(ctx context.Context, opts *MaintenanceOptions) error {
	_, err := repairIndex(ctx, x, opts)
	return err
}

// Verify compares the copies stored with those the primaries want, in one
// scan of the rows opts.Filter selects (primaries and copies share their
// partitions, so select whole partitions), and reports missing copies,
// stale ones (properties that differ from the primary's, or a value the
// primary no longer has) and orphans (their primary is gone). It changes
// nothing. Requests: one per page of the scan (1,000 rows).
func (x *IndexedTable[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, x, opts)
	return rep, err
}

// Repair runs Verify and fixes what it found through the repository's own
// write path: one entity group transaction per primary, conditional on the
// primary's ETag as scanned (a merge that changes none of its
// properties), that inserts its missing copies and replaces or deletes its
// stale ones conditionally on their ETags. The transactions of a
// partition are packed up to 100 operations. A copy whose primary the
// scan did not see is handled after reading that primary: deleted,
// conditionally on its ETag, when the primary does not exist. A
// transaction that loses a race applies nothing, and that primary's
// entries are listed in the report's Skipped (the concurrent write keeps
// its copies itself; verify again to see what remains); so is a copy
// whose unique value another primary's copy holds. A transaction whose
// answer was lost, and that the transport could not settle, is settled by
// reading its entities back: a primary's repair is done when they show
// it, and is otherwise sent again on its own. Requests: Verify's, then
// one transaction per partition for each 100 operations (one per primary
// after a lost race), one read per orphan, and one read per operation of
// a transaction settled by reading back.
func (x *IndexedTable[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, x, opts)
}

// intraMaint is an IndexedTable's Verify, Repair and Rebuild over its
// table, apart from what a primary's copies should be (wanted), the one
// step that needs T: Go compiles a generic type's methods again for every
// entity type, so the rest is compiled once.
type intraMaint struct {
	ops     *tableOps // the table
	indexes []intraIndexName
	primary string
	// wanted returns the primary whose row is p, and the copies it wants.
	wanted func(p rawProps) (consistency.EntityRef, []*ixEntry, error)
}

// intraIndexName is what maintenance reads of an Index: its name, and
// whether it is unique.
type intraIndexName struct {
	name   string
	unique bool
}

// maint is x's maintenance.
func (x *IndexedTable[T]) maint() *intraMaint {
	m := &intraMaint{ops: x.t.ops(), primary: x.primary, wanted: x.wanted}
	for i := range x.indexes {
		m.indexes = append(m.indexes, intraIndexName{name: x.indexes[i].Name, unique: x.indexes[i].Unique})
	}
	return m
}

func (x *IndexedTable[T]) audit(ctx context.Context, a *audit) error { return x.maint().audit(ctx, a) }
func (x *IndexedTable[T]) repair(ctx context.Context, a *audit) error {
	return x.maint().repair(ctx, a)
}

// wanted returns the copies the primary whose row is p wants.
func (x *IndexedTable[T]) wanted(p rawProps) (consistency.EntityRef, []*ixEntry, error) {
	v, err := decodeRow(x.t, p)
	if err != nil {
		return consistency.EntityRef{}, nil, err
	}
	_, pk, rk, copies, err := x.encode(&v)
	if err != nil {
		return consistency.EntityRef{}, nil, err
	}
	src := consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk}
	out := make([]*ixEntry, len(copies))
	for i, c := range copies {
		out[i] = &ixEntry{IndexEntry: IndexEntry{Index: c.index, Value: c.value, Entry: consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: c.rk}, Primary: src}, key: pk + "\x00" + c.rk, props: c.props}
	}
	return src, out, nil
}

// copyIndex returns the index a stored row is a copy of, nil when it is
// not a copy.
func (m *intraMaint) copyIndex(p rawProps) *intraIndexName {
	prk, ok := p.str(PropPrimaryRowKey)
	_, rk := rowKeys(p)
	if !ok || prk == rk {
		return nil
	}
	for i := range m.indexes {
		if strings.HasPrefix(rk, m.indexes[i].name+"_") {
			return &m.indexes[i]
		}
	}
	return nil
}

// isPrimaryKey reports whether rk is a primary's RowKey.
func (m *intraMaint) isPrimaryKey(rk string) bool {
	if m.primary != "" {
		return strings.HasPrefix(rk, m.primary+"_")
	}
	for i := range m.indexes {
		if strings.HasPrefix(rk, m.indexes[i].name+"_") {
			return false
		}
	}
	return true
}

func (m *intraMaint) ref(pk, rk string) consistency.EntityRef {
	return consistency.EntityRef{Table: m.ops.name, PartitionKey: pk, RowKey: rk}
}

func (m *intraMaint) audit(ctx context.Context, a *audit) error {
	for p, err := range scanRows(ctx, m.ops.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		pk, rk := rowKeys(p)
		if ix := m.copyIndex(p); ix != nil {
			prk, _ := p.str(PropPrimaryRowKey)
			etag, _ := p.str(propETag)
			val := strings.TrimPrefix(rk, ix.name+"_")
			if parts, err := keys.Split(val); !ix.unique && err == nil && len(parts) == 2 {
				val = parts[0]
			}
			a.holds(&ixEntry{IndexEntry: IndexEntry{Index: ix.name, Value: val, Entry: m.ref(pk, rk), Primary: m.ref(pk, prk)},
				key: pk + "\x00" + rk, props: p, etag: etag})
			continue
		}
		if _, hidden := p.str(PropPrimaryRowKey); hidden || !m.isPrimaryKey(rk) {
			continue // a copy of an index this repository does not declare, or a row of another kind
		}
		src, want, err := m.wanted(p)
		if err != nil {
			return err
		}
		a.primary(src, p, false)
		for _, e := range want {
			a.wants(e)
		}
	}
	return nil
}

// intraUnit is the transaction that repairs one primary's copies.
type intraUnit struct {
	ops     []Op
	entries []*ixEntry
	// late marks a unit that inserts a copy under a key another
	// primary's stale copy holds: it goes after the units that delete.
	late bool
}

func (m *intraMaint) repair(ctx context.Context, a *audit) error {
	order, groups := a.byPrimary()
	// Read the primaries of copies the scan did not account for.
	var unseen []consistency.EntityRef
	for _, src := range order {
		if _, ok := a.primaries[src]; !ok {
			unseen = append(unseen, src)
		}
	}
	fresh := make(map[consistency.EntityRef]rawProps, len(unseen))
	var mu = &a.mu
	err := each(ctx, unseen, a.opts.parallelism(), func(ctx context.Context, src consistency.EntityRef) error {
		var p rawProps
		body, etag, err := m.ops.w.Stored(ctx, src.PartitionKey, src.RowKey)
		if err == nil && body != nil {
			if p, err = parseProps(body); err == nil {
				p.setString(propETag, etag)
			}
		}
		mu.Lock()
		fresh[src] = p
		mu.Unlock()
		return err
	})
	if err != nil {
		return err
	}
	var units []intraUnit
	for _, src := range order {
		u, err := m.unit(a, src, groups[src], fresh)
		if err != nil {
			return err
		}
		if len(u.ops) > 0 {
			units = append(units, u)
		}
	}
	for _, late := range []bool{false, true} {
		var batch [][]Op
		var which []intraUnit
		for _, u := range units {
			if u.late == late {
				batch, which = append(batch, u.ops), append(which, u)
			}
		}
		if len(batch) == 0 {
			continue
		}
		lost, err := submitUnits(ctx, m.ops, batch)
		if err != nil {
			return err
		}
		for _, i := range lost {
			for _, e := range which[i].entries {
				a.skip(e, "the entity or the copy changed during the repair, or another entity holds the unique value")
			}
		}
	}
	return nil
}

// unit builds the transaction that repairs the entries of primary src:
// conditional on the primary as scanned (or as read now, for one the scan
// did not see), or, when the primary does not exist, deletions
// conditional on the copies' ETags.
func (m *intraMaint) unit(a *audit, src consistency.EntityRef, entries []*ixEntry, fresh map[consistency.EntityRef]rawProps) (intraUnit, error) {
	u := intraUnit{entries: entries}
	etag := a.primaries[src].etag
	want := map[string]*ixEntry{}
	if s, ok := a.primaries[src]; ok {
		for _, e := range entries {
			if w := a.want[e.key]; w != nil && w.Primary == src {
				want[e.key] = w
			}
		}
		etag = s.etag
	} else if p := fresh[src]; p != nil {
		etag, _ = p.str(propETag)
		_, ws, err := m.wanted(p)
		if err != nil {
			return u, err
		}
		for _, w := range ws {
			want[w.key] = w
		}
	} else {
		src = consistency.EntityRef{} // the primary does not exist
	}
	if src != (consistency.EntityRef{}) {
		body, err := touchBody(src.PartitionKey, src.RowKey)
		if err != nil {
			return u, err
		}
		u.ops = append(u.ops, Op{Type: OpMerge, PartitionKey: src.PartitionKey, RowKey: src.RowKey, Entity: body, ETag: etag})
	}
	for _, e := range entries {
		pk, rk := e.Entry.PartitionKey, e.Entry.RowKey
		w := want[e.key]
		switch {
		case e.Problem == IndexMissing:
			body, err := e.props.bytes()
			if err != nil {
				return u, err
			}
			if h := a.haveAt[e.key]; h != nil {
				u.late = true
			}
			u.ops = append(u.ops, Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body})
		case w != nil:
			if sameProps(w.props, e.props) {
				continue
			}
			body, err := w.props.bytes()
			if err != nil {
				return u, err
			}
			u.ops = append(u.ops, Op{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body, ETag: e.etag})
		default:
			u.ops = append(u.ops, Op{Type: OpDelete, PartitionKey: pk, RowKey: rk, ETag: e.etag})
		}
	}
	if len(u.ops) == 1 && src != (consistency.EntityRef{}) {
		u.ops = nil // nothing left to change
	}
	return u, nil
}

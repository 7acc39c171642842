package patterns

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Verify compares every view of the Model's entities with what the
// entities imply: it scans the entity's table (opts.Filter; the zero
// Filter scans it whole) and each other table of EventualIndexes (the
// range of its index's partitions), and reports view rows that are
// missing, stale (properties that differ from the entity's, or a value it
// no longer has) and orphaned (their entity is gone), for every kind of
// view: indexes in the entity's partition, tails and eventual indexes. It
// changes nothing. Requests: one per page of each scan. Eventual views lag
// their entity until the worker has run: verify after it has.
func (m *Model[T]) Verify(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	rep, _, err := verifyIndex(ctx, m, opts)
	return rep, err
}

// Repair runs Verify and fixes what it found through the Model's own write
// path: each entity with a wrong view is written again (its partition's
// view rows rewritten, and the ones it does not want deleted, in one
// transaction conditional on the entity as read), then its eventual views
// are synced by the worker's own step, applied in this process
// (consistency.Apply). A view whose entity is gone is deleted: in the
// entity's partition conditionally on the ETag scanned, elsewhere by the
// same step (which deletes what a missing entity names). Writes re-read
// the entity, so a repair is safe beside concurrent writers. It returns
// Verify's report.
func (m *Model[T]) Repair(ctx context.Context, opts *MaintenanceOptions) (*IndexReport, error) {
	return repairIndex(ctx, m, opts)
}

// viewOf returns the view a stored row belongs to, and whether the row is
// a view row at all (it names an entity other than itself).
func (m *Model[T]) viewOf(table string, p rawProps) (name string, src consistency.EntityRef, isView bool) {
	pk, rk := rowKeys(p)
	ppk, ok1 := p.str(PropPrimaryPartitionKey)
	prk, ok2 := p.str(PropPrimaryRowKey)
	if !ok1 || !ok2 || (ppk == pk && prk == rk) {
		return "", consistency.EntityRef{}, false
	}
	src = m.src(ppk, prk)
	if table == m.t.name && ppk == pk {
		for i := range m.local {
			if strings.HasPrefix(rk, m.local[i].Name+"_") {
				return m.local[i].Name, src, true
			}
		}
		return "", src, true
	}
	for i := range m.eventual {
		ix := &m.eventual[i]
		if m.viewTable(ix).name == table && strings.HasPrefix(pk, ix.Name+"_") {
			return ix.Name, src, true
		}
	}
	return "", src, true
}

func (m *Model[T]) audit(ctx context.Context, a *audit) error {
	held := func(table string, p rawProps) bool {
		name, src, isView := m.viewOf(table, p)
		if !isView {
			return false
		}
		pk, rk := rowKeys(p)
		ref := consistency.EntityRef{Table: table, PartitionKey: pk, RowKey: rk}
		etag, _ := p.str(propETag)
		a.holds(&ixEntry{IndexEntry: IndexEntry{Index: name, Value: rk, Entry: ref, Primary: src}, key: ref.String(), props: p, etag: etag})
		return true
	}
	for p, err := range scanRows(ctx, m.t.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		if held(m.t.name, p) || m.listEntity(m.t.name, p) != nil {
			continue
		}
		v, err := decodeRow(m.t, p)
		if err != nil {
			return tkerr.Errorf("tablekit: verify: %w", err)
		}
		s, err := m.state(&v, "", nil)
		if err != nil {
			return tkerr.Errorf("tablekit: verify: %w", err)
		}
		src := m.src(s.pk, s.rk)
		_, listed := p.str(PropCopies)
		a.primary(src, p, !listed && m.hasViews())
		for _, c := range s.locals {
			ref := consistency.EntityRef{Table: m.t.name, PartitionKey: s.pk, RowKey: c.rk}
			a.wants(&ixEntry{IndexEntry: IndexEntry{Index: c.index, Value: c.value, Entry: ref, Primary: src}, key: ref.String(), props: c.props})
		}
		for i, sp := range s.specs {
			c := p.project(sp.PartitionKey, sp.RowKey, sp.Props)
			c.setString(PropPrimaryPartitionKey, s.pk)
			c.setString(PropPrimaryRowKey, s.rk)
			a.wants(&ixEntry{IndexEntry: IndexEntry{Index: s.specOf[i].index, Value: s.specOf[i].value, Entry: sp.Ref(), Primary: src}, key: sp.Ref().String(), props: c})
		}
		for i, val := range s.lists {
			if val == "" {
				continue
			}
			ref := m.listRef(&m.lists[i], val)
			a.wants(&ixEntry{IndexEntry: IndexEntry{Index: m.lists[i].Name, Value: val, Entry: ref, Primary: src}, list: true,
				key: ref.String() + "|" + keys.Join(s.pk, s.rk)})
		}
	}
	for i := range m.lists {
		ix := &m.lists[i]
		f := keys.PK().Eq(ix.Partition)
		if ix.Prefix != "" {
			f = keys.And(f, keys.RK().Prefix(ix.Prefix))
		}
		for p, err := range scanRows(ctx, m.listTable(ix).w, f, 1) {
			if err != nil {
				return err
			}
			pk, rk := rowKeys(p)
			ref := consistency.EntityRef{Table: m.listTable(ix).name, PartitionKey: pk, RowKey: rk}
			text, _ := p.str(ix.property())
			members, err := consistency.DecodeMembers(text)
			if err != nil {
				return tkerr.Errorf("tablekit: verify: index entity %s: %w", ref, err)
			}
			for _, mk := range members {
				parts, err := keys.Split(mk)
				if err != nil || len(parts) != 2 {
					return tkerr.Errorf("tablekit: verify: index entity %s lists %q, which is not a keys.Join(PartitionKey, RowKey)", ref, mk)
				}
				a.holds(&ixEntry{IndexEntry: IndexEntry{Index: ix.Name, Value: strings.TrimPrefix(rk, ix.Prefix), Entry: ref, Primary: m.src(parts[0], parts[1])},
					list: true, key: ref.String() + "|" + mk})
			}
		}
	}
	scanned := map[string]bool{m.t.name: true}
	for i := range m.eventual {
		ix := &m.eventual[i]
		tbl := m.viewTable(ix)
		if scanned[tbl.name] && tbl == m.t && a.opts.filter().IsZero() {
			continue // seen by the scan of the entity's table
		}
		lo, hi := keys.PrefixRange(ix.Name + "_")
		for p, err := range scanRows(ctx, tbl.w, keys.And(keys.PK().Ge(lo), keys.PK().Lt(hi)), 0) {
			if err != nil {
				return err
			}
			if tbl == m.t && !a.opts.filter().IsZero() {
				if _, seen := a.haveAt[rowRef(tbl.name, p).String()]; seen {
					continue
				}
			}
			held(tbl.name, p)
		}
	}
	return nil
}

func rowRef(table string, p rawProps) consistency.EntityRef {
	pk, rk := rowKeys(p)
	return consistency.EntityRef{Table: table, PartitionKey: pk, RowKey: rk}
}

func (m *Model[T]) repair(ctx context.Context, a *audit) error {
	order, byPrimary := a.byPrimary()
	return each(ctx, order, a.opts.parallelism(), func(ctx context.Context, src consistency.EntityRef) error {
		var stale []string
		var prev []consistency.EntityRef
		for _, e := range byPrimary[src] {
			if e.Problem == IndexMissing || e.Entry == (consistency.EntityRef{}) || e.list {
				continue
			}
			if e.Entry.Table == m.t.name && e.Entry.PartitionKey == src.PartitionKey {
				stale = append(stale, e.Entry.RowKey)
			} else {
				prev = append(prev, e.Entry)
			}
		}
		if validateKeys(src.PartitionKey, src.RowKey) == nil {
			_, err := m.write(ctx, src.PartitionKey, src.RowKey, func(*T) error { return nil }, writeMode{primary: OpReplace, repair: true, stale: stale}, wire.ModifyOptions{Verb: "repair"})
			switch {
			case err == nil:
				stale = nil // deleted in the entity's transaction
			case !tablekit.IsNotFound(err):
				return err
			}
		}
		for _, e := range byPrimary[src] {
			if e.Problem == IndexMissing || !slices.Contains(stale, e.Entry.RowKey) || e.Entry.Table != m.t.name {
				continue
			}
			// The entity is gone: its view goes, unless it changed since the scan.
			if _, err := m.t.w.Write(ctx, "repair: delete", Op{Type: OpDelete, PartitionKey: e.Entry.PartitionKey, RowKey: e.Entry.RowKey, ETag: e.etag}); err != nil && !tablekit.IsNotFound(err) {
				if tablekit.IsPreconditionFailed(err) {
					a.skip(e, "changed since the scan")
					continue
				}
				return err
			}
		}
		tx := consistency.NewTransaction()
		if len(m.eventual) > 0 || len(prev) > 0 {
			tx.Add(consistency.SyncCopies(src, PropCopies, prev...))
		}
		for _, e := range byPrimary[src] {
			if !e.list {
				continue
			}
			ix, err := m.list(e.Index)
			if err != nil {
				return err
			}
			eq, _ := json.Marshal(e.Value)
			// Lists the entity, or takes it out, as it is now.
			tx.Add(consistency.IndexList(consistency.IndexListArgs{Index: e.Entry, Property: ix.property(), Member: keys.Join(src.PartitionKey, src.RowKey),
				Source: src, Where: listProp(ix), Equals: eq}))
		}
		if len(tx.Steps) == 0 {
			return nil
		}
		return consistency.Apply(ctx, m.t.acct, tx, nil, nil)
	})
}

// listEntity returns the list whose index entity a row of table is, nil
// when it is none.
func (m *Model[T]) listEntity(table string, p rawProps) *ListIndex[T] {
	pk, rk := rowKeys(p)
	for i := range m.lists {
		ix := &m.lists[i]
		if m.listTable(ix).name == table && pk == ix.Partition && strings.HasPrefix(rk, ix.Prefix) {
			if _, ok := p[ix.property()]; ok {
				return ix
			}
		}
	}
	return nil
}

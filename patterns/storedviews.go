package patterns

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// VerifyViews checks, without their Go type, the views the entities of
// table list in their consistency.CopiesProperty (a Model's, an
// EventualIndexedTable's): what the stock worker sees, and what
// `tablekit views` runs. Each listed view must exist and hold the
// entity's properties it names; a view row that names an entity of table
// (consistency.PrimaryPartitionKeyProperty and PrimaryRowKeyProperty)
// that does not list it is stale, or an orphan when that entity is gone.
// It scans table (opts.Filter; the zero Filter scans it whole) and, in the
// other tables the lists name, the partitions of each view's prefix (its
// PartitionKey up to the first '_'). It changes nothing.
//
// It sees what the lists say: a view an entity should have and does not
// list (an entity written around its repository, or before a view was
// declared) is not missing to it; the Model's own Verify, which knows the
// declaration, reports those.
func VerifyViews(ctx context.Context, acct *tablekit.Account, table string, opts *MaintenanceOptions) (*IndexReport, error) {
	sv, err := newStoredViews(acct, table)
	if err != nil {
		return nil, err
	}
	rep, _, err := verifyIndex(ctx, sv, opts)
	return rep, err
}

// RepairViews runs VerifyViews and mends what it found with the worker's
// own sync-copies step, applied in this process (consistency.Apply) once
// per entity concerned: the views an entity lists are written from it
// (those of its own partition too), and the stale and orphaned rows that
// name it are deleted unless it lists them. The step re-reads the entity,
// so a repair is safe beside concurrent writers. It returns Verify's
// report.
func RepairViews(ctx context.Context, acct *tablekit.Account, table string, opts *MaintenanceOptions) (*IndexReport, error) {
	sv, err := newStoredViews(acct, table)
	if err != nil {
		return nil, err
	}
	return repairIndex(ctx, sv, opts)
}

// storedViews is the maintainer of the views a table's entities list.
type storedViews struct {
	acct *tablekit.Account
	t    *Table[entity.Entity]
}

func newStoredViews(acct *tablekit.Account, table string) (*storedViews, error) {
	t, err := NewTable[entity.Entity](acct, table, nil)
	if err != nil {
		return nil, err
	}
	return &storedViews{acct: acct, t: t}, nil
}

// viewName is the name of the view a row at (pk, rk) belongs to: the
// prefix of its RowKey in its entity's partition, else of its
// PartitionKey.
func viewName(local bool, pk, rk string) string {
	k := pk
	if local {
		k = rk
	}
	name, _, _ := strings.Cut(k, "_")
	return name
}

func (sv *storedViews) audit(ctx context.Context, a *audit) error {
	type place struct{ table, prefix string }
	places := map[place]bool{}
	held := func(table string, p rawProps) bool {
		pk, rk := rowKeys(p)
		ppk, ok1 := p.str(PropPrimaryPartitionKey)
		prk, ok2 := p.str(PropPrimaryRowKey)
		if !ok1 || !ok2 || (table == sv.t.name && ppk == pk && prk == rk) {
			return false
		}
		ref := consistency.EntityRef{Table: table, PartitionKey: pk, RowKey: rk}
		etag, _ := p.str(propETag)
		a.holds(&ixEntry{IndexEntry: IndexEntry{Index: viewName(table == sv.t.name && ppk == pk, pk, rk), Value: rk, Entry: ref,
			Primary: consistency.EntityRef{Table: sv.t.name, PartitionKey: ppk, RowKey: prk}}, key: ref.String(), props: p, etag: etag})
		return true
	}
	for p, err := range scanRows(ctx, sv.t.w, a.opts.filter(), a.opts.scanParallel()) {
		if err != nil {
			return err
		}
		if held(sv.t.name, p) {
			continue
		}
		text, ok := p.str(PropCopies)
		if !ok {
			continue // an entity without views
		}
		pk, rk := rowKeys(p)
		src := consistency.EntityRef{Table: sv.t.name, PartitionKey: pk, RowKey: rk}
		var specs []consistency.CopySpec
		if text != "" {
			if err := json.Unmarshal([]byte(text), &specs); err != nil {
				return tkerr2(src, err)
			}
		}
		a.primary(src, p, false)
		for _, s := range specs {
			c := p.project(s.PartitionKey, s.RowKey, nilIfEmpty(s.Props))
			for _, k := range []struct{ name, v string }{{PropPrimaryPartitionKey, pk}, {PropPrimaryRowKey, rk}} {
				if containsName(s.Props, k.name) {
					c.setString(k.name, k.v)
				}
			}
			ref := s.Ref()
			a.wants(&ixEntry{IndexEntry: IndexEntry{Index: viewName(s.Local, s.PartitionKey, s.RowKey), Value: s.RowKey, Entry: ref, Primary: src},
				key: ref.String(), props: c})
			if !s.Local {
				places[place{s.Table, viewName(false, s.PartitionKey, "") + "_"}] = true
			}
		}
	}
	for pl := range places {
		if pl.table == sv.t.name && a.opts.filter().IsZero() {
			continue // seen by the scan of the table
		}
		w, err := NewTable[entity.Entity](sv.acct, pl.table, nil)
		if err != nil {
			return err
		}
		lo, hi := keys.PrefixRange(pl.prefix)
		for p, err := range scanRows(ctx, w.w, keys.And(keys.PK().Ge(lo), keys.PK().Lt(hi)), 0) {
			if err != nil {
				return err
			}
			if _, seen := a.haveAt[rowRef(pl.table, p).String()]; !seen {
				held(pl.table, p)
			}
		}
	}
	return nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func containsName(s []string, n string) bool {
	for _, x := range s {
		if x == n {
			return true
		}
	}
	return false
}

func tkerr2(src consistency.EntityRef, err error) error {
	return &listError{src: src, err: err}
}

// listError reports a list of views tablekit cannot read.
type listError struct {
	src consistency.EntityRef
	err error
}

func (e *listError) Error() string {
	return "tablekit: verify views: " + e.src.String() + ": " + PropCopies + " is not a JSON list of views: " + e.err.Error()
}

func (e *listError) Unwrap() error { return e.err }

func (sv *storedViews) repair(ctx context.Context, a *audit) error {
	order, byPrimary := a.byPrimary()
	return each(ctx, order, a.opts.parallelism(), func(ctx context.Context, src consistency.EntityRef) error {
		var prev []consistency.EntityRef
		for _, e := range byPrimary[src] {
			if e.Problem != IndexMissing {
				prev = append(prev, e.Entry)
			}
		}
		step := consistency.NewStep(consistency.KindSyncCopies, consistency.SyncCopiesArgs{Source: src, Property: PropCopies, Previous: prev, Local: true})
		return consistency.Apply(ctx, sv.acct, consistency.NewTransaction(step), nil, nil)
	})
}

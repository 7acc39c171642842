package consistency

import (
	"cmp"
	"context"
	"encoding/json"
	"sort"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// KindCopyProps keeps denormalized properties of a target entity (the
// department's ManagerName, ManagerPhone) equal to properties of a source
// entity in another partition or table (the manager's employee entity),
// the guide's denormalization pattern when the two cannot share an entity
// group transaction (CopyPropsArgs). Idempotent and order-free: it reads
// both entities when it runs and makes the target's copied properties
// match the source as it is then, so duplicated, late and reordered
// messages converge.
const KindCopyProps = "copy-props"

// CopyPropsArgs are the arguments of KindCopyProps.
//
// Applying it: read the target; if it is gone, or Link names a target
// property that no longer holds the source's keys (the department has
// another manager now), there is nothing to do. Otherwise read the source
// and replace the target, conditionally on its ETag, with each mapped
// property set to the source's value (types kept), or removed when the
// source or its property is gone; on a concurrent change of the target,
// start over. The replace goes through the core's read-modify-write loop,
// so the target also carries its write-id log (the String property
// "TkUpdates"); a write whose outcome even the log cannot settle
// fails with tablekit.ErrOutcomeUnknown, which the worker retries.
type CopyPropsArgs struct {
	Source EntityRef `json:"source"`
	Target EntityRef `json:"target"`
	// Props maps source property names to target property names.
	Props map[string]string `json:"props"`
	// Link, when set, is the target property holding the source's
	// "PartitionKey/RowKey" (keys.Join form is the caller's choice; it is
	// compared as a string with LinkValue).
	Link      string `json:"link,omitempty"`
	LinkValue string `json:"linkValue,omitempty"`
	// Expect, when set, makes the step wait (as SyncCopiesArgs.Expect
	// does) until the source shows the write its writer announced.
	Expect *Expectation `json:"expect,omitempty"`
}

func (a *CopyPropsArgs) validate(kind string) error {
	if err := cmp.Or(a.Source.validateField(kind, "source"), a.Target.validateField(kind, "target"), validateProps(kind, a.Props)); err != nil {
		return err
	}
	if (a.Link == "") != (a.LinkValue == "") {
		return argsError(kind, "link and linkValue go together")
	}
	return a.Expect.validate(kind)
}

// validateProps checks a mapping of source to target property names.
func validateProps(kind string, props map[string]string) error {
	if len(props) == 0 {
		return argsError(kind, "props maps no property")
	}
	for s, t := range props {
		if s == "" || t == "" || reservedProp(s) || reservedProp(t) {
			return argsError(kind, "props maps "+s+" to "+t+": names must be non-empty and not keys or Timestamp")
		}
		if err := entity.ValidatePropertyName(t); err != nil {
			return invalidArgs(kind, "props["+s+"]", err)
		}
	}
	return nil
}

func reservedProp(n string) bool {
	return n == "PartitionKey" || n == "RowKey" || n == "Timestamp"
}

// CopyProps returns a KindCopyProps step.
func CopyProps(source, target EntityRef, props map[string]string) Step {
	return NewStep(KindCopyProps, CopyPropsArgs{Source: source, Target: target, Props: props})
}

func applyCopyProps(ctx context.Context, c *Call, a *CopyPropsArgs) error {
	ts := c.tableSet()
	tt, err := ts.table(a.Target.Table)
	if err != nil {
		return err
	}
	// Deterministic order, for stable bodies.
	names := make([]string, 0, len(a.Props))
	for s := range a.Props {
		names = append(names, s)
	}
	sort.Strings(names)
	// The core's read-modify-write loop: read the target, read the source,
	// replace the target conditionally on what was read; on a race, pause
	// and start over.
	_, err = tt.Modify(ctx, a.Target.PartitionKey, a.Target.RowKey, func(stored []byte) (wire.Op, error) {
		target, err := decodeStored(a.Target, stored)
		if err != nil {
			return wire.Op{}, err
		}
		if a.Link != "" {
			if v, _ := stringProp(target, a.Link); v != a.LinkValue {
				return wire.Op{}, wire.ErrNoChange // the target follows another source now
			}
		}
		source, _, srcFound, err := getEntity(ctx, ts, a.Source)
		if err != nil {
			return wire.Op{}, err
		}
		if err := a.Expect.wait(c, a.Source, srcFound, source); err != nil {
			return wire.Op{}, err
		}
		changed := false
		for _, s := range names {
			t := a.Props[s]
			var v entity.Value
			var ok bool
			if srcFound {
				v, ok = source.Properties[s]
			}
			old, had := target.Properties[t]
			switch {
			case ok && (!had || !old.Equal(v)):
				target.Set(t, v)
				changed = true
			case !ok && had:
				delete(target.Properties, t)
				changed = true
			}
		}
		if !changed {
			return wire.Op{}, wire.ErrNoChange
		}
		// MarshalJSON checks Azure's limits (entity.Entity.Validate).
		body, err := target.MarshalJSON()
		if err != nil {
			return wire.Op{}, Permanent(&wrapped{msg: "consistency: copy-props: write " + a.Target.String() + ": " + err.Error(), err: err})
		}
		return wire.Op{Type: wire.OpReplace, PartitionKey: a.Target.PartitionKey, RowKey: a.Target.RowKey, Entity: body}, nil
	}, &wire.ModifyOptions{MaxAttempts: maxReadRepair, Verb: "copy-props: replace", MustExist: true, Typed: true, Race: lostRace})
	if entityMissing(err) {
		return nil // the target is gone: nothing to copy into
	}
	return modifyErr(err, lostRace)
}

// KindCopyPropsWhere is KindCopyProps for the targets a query finds
// (CopyPropsWhereArgs): every entity of a table that a filter matches and
// whose link property names the source, such as every employee of a
// department, each showing its manager's phone. The query runs when the
// step does, not when it was enqueued, so a target that joined the set in
// between is included and one that left it is not, and a redelivery
// queries again. Each target found is then copied as KindCopyProps copies
// it (its link checked again in the conditional write), so the step is
// idempotent and order-free like KindCopyProps.
const KindCopyPropsWhere = "copy-props-where"

// CopyPropsWhereArgs are the arguments of KindCopyPropsWhere.
//
// Applying it: query Table with Filter and Link eq LinkValue, selecting
// the keys alone (one request per page of up to 1,000), then apply
// KindCopyProps to each entity found, in key order: read the target,
// check its link, read the source, replace the target if a copied
// property differs (two or three requests per target). A failure stops
// the step; the redelivery queries again and finds the targets already
// copied unchanged.
type CopyPropsWhereArgs struct {
	Source EntityRef `json:"source"`
	// Table is the table of the targets.
	Table string `json:"table"`
	// Filter is an OData $filter in the subset keys.ParseFilter reads;
	// empty means every entity of Table that names the source.
	Filter string `json:"filter,omitempty"`
	// Props maps source property names to target property names.
	Props map[string]string `json:"props"`
	// Link is the target property that holds LinkValue, the source's
	// keys (keys.Join form is the caller's choice), on every target of
	// this source. Both are required: the query finds candidates, the
	// link decides.
	Link      string `json:"link"`
	LinkValue string `json:"linkValue"`
	// Expect, when set, makes each copy wait (as SyncCopiesArgs.Expect
	// does) until the source shows the write its writer announced.
	Expect *Expectation `json:"expect,omitempty"`
}

func (a *CopyPropsWhereArgs) validate(kind string) error {
	if err := a.Source.validateField(kind, "source"); err != nil {
		return err
	}
	if err := keys.ValidateTableName(a.Table); err != nil {
		return invalidArgs(kind, "table", err)
	}
	if _, err := a.filter(); err != nil {
		return invalidArgs(kind, "filter", err)
	}
	if err := validateProps(kind, a.Props); err != nil {
		return err
	}
	if a.Link == "" || a.LinkValue == "" {
		return argsError(kind, "link and linkValue are required: they decide which matches are the source's targets")
	}
	if err := entity.ValidatePropertyName(a.Link); err != nil {
		return invalidArgs(kind, "link", err)
	}
	return a.Expect.validate(kind)
}

// filter is the query the step sends: Filter and the link.
func (a *CopyPropsWhereArgs) filter() (string, error) {
	f, err := keys.ParseFilter(a.Filter)
	if err != nil {
		return "", err
	}
	return keys.And(f, keys.Prop(a.Link).Eq(a.LinkValue)).Build()
}

// CopyPropsWhere returns a KindCopyPropsWhere step.
func CopyPropsWhere(args CopyPropsWhereArgs) Step { return NewStep(KindCopyPropsWhere, args) }

func applyCopyPropsWhere(ctx context.Context, c *Call, a *CopyPropsWhereArgs) error {
	tt, err := c.tableSet().table(a.Table)
	if err != nil {
		return err
	}
	filter, err := a.filter()
	if err != nil {
		return Permanent(err) // validated already; kept for safety
	}
	// The keys first, then the copies: a copy is a read-modify-write of
	// its own, and the query's pages need not stay open meanwhile.
	var targets []EntityRef
	for raw, err := range tt.Rows(ctx, wire.Query{Filter: filter, Select: "PartitionKey,RowKey"}) {
		if err != nil {
			return err
		}
		var k struct{ PartitionKey, RowKey string }
		if err := json.Unmarshal(raw, &k); err != nil {
			return &wrapped{msg: "consistency: " + c.Kind + ": query " + a.Table + ": " + err.Error(), err: err}
		}
		targets = append(targets, EntityRef{Table: a.Table, PartitionKey: k.PartitionKey, RowKey: k.RowKey})
	}
	for _, t := range targets {
		err := applyCopyProps(ctx, c, &CopyPropsArgs{Source: a.Source, Target: t, Props: a.Props, Link: a.Link, LinkValue: a.LinkValue, Expect: a.Expect})
		if err != nil {
			return err
		}
	}
	return nil
}

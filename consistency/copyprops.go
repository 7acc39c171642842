package consistency

import (
	"cmp"
	"context"
	"sort"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
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
	if err := cmp.Or(a.Source.validateField(kind, "source"), a.Target.validateField(kind, "target")); err != nil {
		return err
	}
	if len(a.Props) == 0 {
		return argsError(kind, "props maps no property")
	}
	for s, t := range a.Props {
		if s == "" || t == "" || reservedProp(s) || reservedProp(t) {
			return argsError(kind, "props maps "+s+" to "+t+": names must be non-empty and not keys or Timestamp")
		}
		if err := entity.ValidatePropertyName(t); err != nil {
			return invalidArgs(kind, "props["+s+"]", err)
		}
	}
	if (a.Link == "") != (a.LinkValue == "") {
		return argsError(kind, "link and linkValue go together")
	}
	return a.Expect.validate(kind)
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

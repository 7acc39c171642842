package patterns

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// EventualDenormalization is the guide's denormalization pattern when the
// source and its copies cannot share an entity group transaction: the
// manager's employee entity in one partition or table, the departments
// that show the manager's name and phone in others. Each change of a
// source enqueues a consistency copy-props step per target, which the
// worker (the stock tablekit-worker) applies by reading the source and
// the target when it runs, so duplicated, late and reordered deliveries
// converge; a target whose link property names another source by then is
// left alone.
//
// Requests: UpdateSource 3 (read, enqueue, write); reading a target is
// the target's own point query.
type EventualDenormalization[S any] struct {
	src     *Table[S]
	q       *consistency.Queue
	targets func(s *S) []consistency.EntityRef
	props   map[string]string
	link    string
	delay   time.Duration
}

// EventualDenormalizationOptions configures an EventualDenormalization.
// Nil means defaults.
type EventualDenormalizationOptions struct {
	// Table configures the source table.
	Table *TableOptions
	// Link names a target property that holds the source's keys as
	// keys.Join(PartitionKey, RowKey); the worker then skips targets that
	// have moved on to another source. Empty means no check.
	Link string
	// Delay keeps each intent invisible this long (default 1 s), so the
	// worker usually finds the source already written; the step also
	// waits for the write it announces (consistency.Expectation).
	Delay time.Duration
}

// NewEventualDenormalization returns the denormalization whose sources
// live in sourceTable: targets lists the entities that copy a source's
// properties, and props maps source property names to target property
// names. It makes no request.
func NewEventualDenormalization[S any](acct *tablekit.Account, sourceTable string, q *consistency.Queue, targets func(s *S) []consistency.EntityRef, props map[string]string, opts *EventualDenormalizationOptions) (*EventualDenormalization[S], error) {
	if q == nil || targets == nil || len(props) == 0 {
		return nil, fmt.Errorf("tablekit: NewEventualDenormalization: %w: queue, targets and props are required", tablekit.ErrInvalidArgument)
	}
	var o EventualDenormalizationOptions
	if opts != nil {
		o = *opts
	}
	src, err := NewTable[S](acct, sourceTable, o.Table)
	if err != nil {
		return nil, err
	}
	if err := checkHiddenProps("NewEventualDenormalization", src.codec.Select(), PropIntent); err != nil {
		return nil, err
	}
	if o.Delay <= 0 {
		o.Delay = time.Second
	}
	// Validate the mapping now, as the worker would.
	probe := consistency.CopyPropsArgs{Source: consistency.EntityRef{Table: sourceTable, PartitionKey: "p", RowKey: "r"},
		Target: consistency.EntityRef{Table: sourceTable, PartitionKey: "p", RowKey: "t"}, Props: props}
	if err := consistency.NewTransaction(consistency.NewStep(consistency.KindCopyProps, probe)).Validate(); err != nil {
		return nil, err
	}
	return &EventualDenormalization[S]{src: src, q: q, targets: targets, props: props, link: o.Link, delay: o.Delay}, nil
}

// Sources is the table of source entities.
func (x *EventualDenormalization[S]) Sources() *Table[S] { return x.src }

// CreateIfNotExists creates the source table and the consistency queue
// (its poison queue and blob container too, see consistency.Queue.Create);
// existing ones are not an error. Four requests. The targets' tables are
// the targets' own.
func (x *EventualDenormalization[S]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	if err := x.src.CreateIfNotExists(ctx, opts); err != nil {
		return err
	}
	return x.q.Create(ctx)
}

// UpdateSource reads the source, calls fn on it, enqueues the intent to
// refresh every target's copied properties and replaces the source
// conditionally on the ETag read (a concurrent change starts it over; a
// lost response is settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown). Three requests per attempt.
func (x *EventualDenormalization[S]) UpdateSource(ctx context.Context, pk, rk string, fn func(*S) error, opts *UpdateOptions) (S, error) {
	return x.src.modify(ctx, pk, rk, fn, func(_, v *S) ([]Op, error) {
		body, _, _, err := x.src.marshal(v)
		if err != nil {
			return nil, err
		}
		intent := consistency.NewIntentID()
		if body, err = wire.WithProp(body, PropIntent, intent); err != nil {
			return nil, err
		}
		if err := x.enqueue(ctx, v, pk, rk, &consistency.Expectation{Property: PropIntent, Value: intent, Ordered: true}); err != nil {
			return nil, err
		}
		return []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
}

// Refresh enqueues the refresh of the targets of the source (pk, rk) as it
// is now, for instance after a target was linked to it. Two requests
// (read, enqueue).
func (x *EventualDenormalization[S]) Refresh(ctx context.Context, pk, rk string) error {
	v, err := x.src.Get(ctx, pk, rk, nil)
	if err != nil {
		return err
	}
	return x.enqueue(ctx, &v, pk, rk, nil)
}

func (x *EventualDenormalization[S]) enqueue(ctx context.Context, v *S, pk, rk string, expect *consistency.Expectation) error {
	source := consistency.EntityRef{Table: x.src.name, PartitionKey: pk, RowKey: rk}
	tx := consistency.NewTransaction()
	for _, t := range x.targets(v) {
		args := consistency.CopyPropsArgs{Source: source, Target: t, Props: x.props, Expect: expect}
		if x.link != "" {
			args.Link, args.LinkValue = x.link, keys.Join(pk, rk)
		}
		tx.Add(consistency.NewStep(consistency.KindCopyProps, args))
	}
	if len(tx.Steps) == 0 {
		return nil
	}
	return x.q.Enqueue(ctx, tx, &consistency.EnqueueOptions{Delay: x.delay})
}

package patterns

import (
	"context"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
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
// The targets are listed by the source (NewEventualDenormalization) or
// found by a query (NewEventualDenormalizationWhere: every employee of
// the department, each showing its manager's phone). A query runs in the
// worker's step, when the intent is applied, not when it is enqueued: a
// target that joined the set in between gets the copy too, one that left
// it is left alone, and a redelivered message queries again, while each
// copy stays idempotent. There is no limit on the number of targets.
//
// Requests: UpdateSource 3 (read, enqueue, write), whatever the number of
// targets; reading a target is the target's own point query. The worker
// makes 2 or 3 per target (read it, read the source, write when a copy
// differs), and with a query one more per page of up to 1,000 targets.
type EventualDenormalization[S any] struct {
	src       *Table[S]
	q         *consistency.Queue
	targets   func(s *S) []consistency.EntityRef
	where     func(s *S) keys.Filter
	table     string // the targets' table, with where
	allowScan bool
	props     map[string]string
	link      string
	delay     time.Duration
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
	// AllowTableScan lets NewEventualDenormalizationWhere's query span
	// partitions of the targets' table (the worker then reads every
	// partition). Without it such a filter fails with
	// tablekit.ErrTableScan, before the intent is enqueued or the source
	// written. NewEventualDenormalization ignores it.
	AllowTableScan bool
}

// NewEventualDenormalization returns the denormalization whose sources
// live in sourceTable: targets lists the entities that copy a source's
// properties, and props maps source property names to target property
// names. It makes no request.
func NewEventualDenormalization[S any](acct *tablekit.Account, sourceTable string, q *consistency.Queue, targets func(s *S) []consistency.EntityRef, props map[string]string, opts *EventualDenormalizationOptions) (*EventualDenormalization[S], error) {
	if q == nil || targets == nil || len(props) == 0 {
		return nil, tkerr.Errorf("tablekit: NewEventualDenormalization: %w: queue, targets and props are required", tablekit.ErrInvalidArgument)
	}
	// Validate the mapping now, as the worker would.
	probe := consistency.NewStep(consistency.KindCopyProps, consistency.CopyPropsArgs{Source: consistency.EntityRef{Table: sourceTable, PartitionKey: "p", RowKey: "r"},
		Target: consistency.EntityRef{Table: sourceTable, PartitionKey: "p", RowKey: "t"}, Props: props})
	x, err := newEventualDenormalization[S]("NewEventualDenormalization", acct, sourceTable, q, props, opts, probe)
	if err != nil {
		return nil, err
	}
	x.targets = targets
	return x, nil
}

// NewEventualDenormalizationWhere returns the denormalization whose
// sources live in sourceTable and whose targets a query finds: every
// entity of targetTable that the filter targetsWhere returns matches and
// whose link property (opts.Link, required here) holds the source's keys
// as keys.Join(PartitionKey, RowKey). For the guide's example,
//
//	func(d *Department) keys.Filter { return keys.PK().Eq(d.Company) }
//
// with Link "DepartmentID" finds every employee of the department in the
// company's partition. The filter may be the zero Filter (the link alone
// decides); one that spans partitions needs opts.AllowTableScan. props
// maps source property names to target property names. The query runs
// in the worker's copy-props-where step when the intent is applied (see
// EventualDenormalization). It makes no request.
func NewEventualDenormalizationWhere[S any](acct *tablekit.Account, sourceTable string, q *consistency.Queue, targetTable string, targetsWhere func(s *S) keys.Filter, props map[string]string, opts *EventualDenormalizationOptions) (*EventualDenormalization[S], error) {
	const what = "NewEventualDenormalizationWhere"
	if q == nil || targetsWhere == nil || len(props) == 0 {
		return nil, tkerr.Errorf("tablekit: %s: %w: queue, targetsWhere and props are required", what, tablekit.ErrInvalidArgument)
	}
	if opts == nil || opts.Link == "" {
		return nil, tkerr.Errorf("tablekit: %s: %w: Link is required: the query finds candidates, the link decides which are the source's targets", what, tablekit.ErrInvalidArgument)
	}
	if err := keys.ValidateTableName(targetTable); err != nil {
		return nil, tkerr.Errorf("tablekit: %s: target table: %w", what, err)
	}
	probe := consistency.CopyPropsWhere(consistency.CopyPropsWhereArgs{Source: consistency.EntityRef{Table: sourceTable, PartitionKey: "p", RowKey: "r"},
		Table: targetTable, Props: props, Link: opts.Link, LinkValue: keys.Join("p", "r")})
	x, err := newEventualDenormalization[S](what, acct, sourceTable, q, props, opts, probe)
	if err != nil {
		return nil, err
	}
	x.where, x.table, x.allowScan = targetsWhere, targetTable, opts.AllowTableScan
	return x, nil
}

// newEventualDenormalization is what both constructors share; probe is a
// step of theirs, validated as the worker would validate it.
func newEventualDenormalization[S any](what string, acct *tablekit.Account, sourceTable string, q *consistency.Queue, props map[string]string, opts *EventualDenormalizationOptions, probe consistency.Step) (*EventualDenormalization[S], error) {
	o := optsOf(opts)
	src, err := NewTable[S](acct, sourceTable, o.Table)
	if err != nil {
		return nil, err
	}
	if err := checkHiddenProps(what, src.codec.Select(), PropIntent); err != nil {
		return nil, err
	}
	if o.Delay <= 0 {
		o.Delay = time.Second
	}
	if err := consistency.ValidateSteps(consistency.NewTransaction(probe)); err != nil {
		return nil, tkerr.Errorf("tablekit: %s: %w: %w", what, tablekit.ErrInvalidArgument, err)
	}
	return &EventualDenormalization[S]{src: src, q: q, props: props, link: o.Link, delay: o.Delay}, nil
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
	return x.q.Create(ctx, nil)
}

// UpdateSource reads the source, calls fn on it, enqueues the intent to
// refresh every target's copied properties and replaces the source
// conditionally on the ETag read (a concurrent change starts it over; a
// lost response is settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown). Three requests per attempt. With a query,
// a filter that does not build (tablekit.ErrInvalidFilter) or spans
// partitions without AllowTableScan (tablekit.ErrTableScan) fails after
// the read, before anything is enqueued or written.
func (x *EventualDenormalization[S]) UpdateSource(ctx context.Context, pk, rk string, fn func(*S) error, opts *UpdateOptions) (S, error) {
	var a *consistency.Announcement // the last attempt's: the one whose write landed
	v, err := x.src.modify(ctx, pk, rk, fn, func(_, v *S) ([]Op, error) {
		body, _, _, err := x.src.marshal(v)
		if err != nil {
			return nil, err
		}
		intent := consistency.NewIntentID()
		if body, err = wire.WithProp(body, PropIntent, intent); err != nil {
			return nil, err
		}
		if a, err = x.enqueue(ctx, v, pk, rk, &consistency.Expectation{Property: PropIntent, Value: intent, Ordered: true}); err != nil {
			return nil, err
		}
		return []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
	if err != nil {
		return v, err
	}
	return v, settleAnnounced(ctx, a, x.src.describe(pk, rk))
}

// Refresh enqueues the refresh of the targets of the source (pk, rk) as it
// is now, for instance after a target was linked to it. Two requests
// (read, enqueue).
func (x *EventualDenormalization[S]) Refresh(ctx context.Context, pk, rk string, opts *RefreshOptions) error {
	v, err := x.src.Get(ctx, pk, rk, nil)
	if err != nil {
		return err
	}
	_, err = x.enqueue(ctx, &v, pk, rk, nil)
	return err
}

// enqueue sends the refresh of the targets of the source (pk, rk), whose
// value is v; with expect, as the announcement of the write that follows
// (nil when there is no target to refresh).
func (x *EventualDenormalization[S]) enqueue(ctx context.Context, v *S, pk, rk string, expect *consistency.Expectation) (*consistency.Announcement, error) {
	source := consistency.EntityRef{Table: x.src.name, PartitionKey: pk, RowKey: rk}
	tx := consistency.NewTransaction()
	if x.where != nil {
		step, err := x.queryStep(v, source, expect)
		if err != nil {
			return nil, err
		}
		tx.Add(step)
	}
	for _, t := range x.listed(v) {
		args := consistency.CopyPropsArgs{Source: source, Target: t, Props: x.props, Expect: expect}
		if x.link != "" {
			args.Link, args.LinkValue = x.link, keys.Join(pk, rk)
		}
		tx.Add(consistency.NewStep(consistency.KindCopyProps, args))
	}
	if len(tx.Steps) == 0 {
		return nil, nil
	}
	return x.q.Announce(ctx, tx, &consistency.EnqueueOptions{Delay: x.delay})
}

// listed returns the targets v lists; none when a query finds them.
func (x *EventualDenormalization[S]) listed(v *S) []consistency.EntityRef {
	if x.targets == nil {
		return nil
	}
	return x.targets(v)
}

// queryStep is the copy-props-where step that refreshes the targets of
// source, which the worker finds with TargetsWhere's filter.
func (x *EventualDenormalization[S]) queryStep(v *S, source consistency.EntityRef, expect *consistency.Expectation) (consistency.Step, error) {
	f := x.where(v)
	text, err := f.Build()
	if err != nil {
		return consistency.Step{}, tkerr.Errorf("tablekit: update %s: targetsWhere: %w", x.src.describe(source.PartitionKey, source.RowKey), err)
	}
	if keys.Classify(f) == keys.TableScan && !x.allowScan {
		return consistency.Step{}, tkerr.Errorf("tablekit: update %s: targetsWhere: %w: %s filter %q", x.src.describe(source.PartitionKey, source.RowKey), tablekit.ErrTableScan, x.table, text)
	}
	return consistency.CopyPropsWhere(consistency.CopyPropsWhereArgs{Source: source, Table: x.table, Filter: text, Props: x.props,
		Link: x.link, LinkValue: keys.Join(source.PartitionKey, source.RowKey), Expect: expect}), nil
}

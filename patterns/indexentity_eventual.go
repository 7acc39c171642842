package patterns

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// EventualListIndexedTable is the guide's index entities pattern, option
// 3: index entities in a separate partition or table (PartitionKey
// ListIndex.Partition, default its Name; RowKey Prefix + value), whose
// lists of member keys (keys.Join(PartitionKey, RowKey)) are kept by the
// consistency worker's index-list step. The entity carries its indexed
// value in a property ("TkList" + Name) that the step reads when it runs,
// so duplicated and reordered deliveries converge and the stock worker
// needs none of the application's code. Lists span partitions ("every
// Jones in the organization").
//
// Before enqueuing an addition the writer reads the index entity and
// refuses, with a *ListTooLargeError pointing to option 1, a list that
// would no longer fit.
//
// Requests: Insert 3 (read the index entity, enqueue, insert); Update 3,
// or 4 when the value changes; Delete 3; Find 1 + one read per member,
// in parallel. Find re-checks each entity's value, so it never returns
// an entity the worker has not unlisted yet.
type EventualListIndexedTable[T any] struct {
	t     *Table[T]
	it    *Table[T] // the index entities' table
	q     *consistency.Queue
	ix    ListIndex[T]
	where string
	delay time.Duration
}

// NewEventualListIndexedTable returns the repository of table name whose
// list index ix is kept through queue q. It makes no request.
func NewEventualListIndexedTable[T any](acct *tablekit.Account, name string, q *consistency.Queue, ix ListIndex[T], opts *EventualIndexedTableOptions) (*EventualListIndexedTable[T], error) {
	t, o, what, err := openEventualTable[T](acct, name, q, opts, "NewEventualListIndexedTable")
	if err != nil {
		return nil, err
	}
	if err := validateListIndex(what, t, &ix); err != nil {
		return nil, err
	}
	x := &EventualListIndexedTable[T]{t: t, it: t, q: q, ix: ix, where: "TkList" + ix.Name, delay: o.Delay}
	if err := checkHiddenProps(what, t.codec.Select(), x.where, PropIntent); err != nil {
		return nil, err
	}
	if ix.Table != "" && ix.Table != name {
		if x.it, err = NewTable[T](acct, ix.Table, o.Table); err != nil {
			return nil, err
		}
	}
	if x.ix.Partition == "" {
		x.ix.Partition = ix.Name
	}
	if err := keys.ValidateKey("PartitionKey", x.ix.Partition); err != nil {
		return nil, tkerr.Errorf("tablekit: %s: list index %q: %w", what, ix.Name, err)
	}
	return x, nil
}

// Table is the entities' table.
func (x *EventualListIndexedTable[T]) Table() *Table[T] { return x.t }

// CreateIfNotExists creates the entities' table, the index table and the
// consistency queue (with its poison queue and container, see
// consistency.Queue.Create); existing ones are not an error. Five
// requests.
func (x *EventualListIndexedTable[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	if err := x.t.CreateIfNotExists(ctx, opts); err != nil {
		return err
	}
	if err := x.it.CreateIfNotExists(ctx, opts); err != nil {
		return err
	}
	return x.q.Create(ctx, nil)
}

func (x *EventualListIndexedTable[T]) indexRef(value string) consistency.EntityRef {
	return consistency.EntityRef{Table: x.it.name, PartitionKey: x.ix.Partition, RowKey: x.ix.Prefix + value}
}

// step is the index-list step that lists or unlists (pk, rk) under value,
// whichever the entity's state says when the worker runs it. The worker
// first waits for the entity to show expect, the state the write that
// follows the enqueue leaves it in, so a step that runs before the write
// lands does not settle on the state before it.
func (x *EventualListIndexedTable[T]) step(pk, rk, value string, expect consistency.Expectation) consistency.Step {
	eq, _ := json.Marshal(value) // a string always encodes
	return consistency.IndexList(consistency.IndexListArgs{
		Index:    x.indexRef(value),
		Property: x.ix.property(),
		Member:   keys.Join(pk, rk),
		Source:   consistency.EntityRef{Table: x.t.name, PartitionKey: pk, RowKey: rk},
		Where:    x.where,
		Equals:   eq,
		Expect:   &expect,
	})
}

// checkFits reads value's index entity and refuses an addition that would
// pass the String limit.
func (x *EventualListIndexedTable[T]) checkFits(ctx context.Context, value, member string) error {
	ref := x.indexRef(value)
	le, err := readListEntity(ctx, x.it.w, ref.PartitionKey, ref.RowKey, x.ix.property())
	if err != nil {
		return err
	}
	_, err = encodeList(x.ix.Name, value, le.members.with(member))
	return err
}

// encode marshals v with its indexed value and the write's intent id
// (PropIntent), which the index-list step waits for.
func (x *EventualListIndexedTable[T]) encode(v *T, intent string) ([]byte, string, string, error) {
	body, pk, rk, err := x.t.marshal(v)
	if err != nil {
		return nil, "", "", err
	}
	if err := validateKeys(pk, rk); err != nil {
		return nil, "", "", err
	}
	if val := x.ix.Key(v); val != "" {
		if err := keys.ValidateKey("RowKey", x.ix.Prefix+val); err != nil {
			return nil, "", "", tkerr.Errorf("tablekit: %s: list index %q value %q: %w", x.t.describe(pk, rk), x.ix.Name, val, err)
		}
	}
	p, err := parseProps(body)
	if err != nil {
		return nil, "", "", err
	}
	p.setString(x.where, x.ix.Key(v))
	p.setString(PropIntent, intent)
	b, err := p.bytes()
	if err != nil {
		return nil, "", "", err
	}
	return b, pk, rk, nil
}

// Insert checks that the list has room, enqueues the intent to list v,
// then inserts v. Three requests (one when v has no value).
func (x *EventualListIndexedTable[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	intent := consistency.NewIntentID()
	body, pk, rk, err := x.encode(v, intent)
	if err != nil {
		return err
	}
	var a *consistency.Announcement
	if val := x.ix.Key(v); val != "" {
		if err := x.checkFits(ctx, val, keys.Join(pk, rk)); err != nil {
			return err
		}
		if a, err = x.q.Announce(ctx, consistency.NewTransaction(x.step(pk, rk, val, intentOf(intent))), &consistency.EnqueueOptions{Delay: x.delay}); err != nil {
			return err
		}
	}
	if err := insertUnique(ctx, x.t, v, pk, rk, body); err != nil {
		return err
	}
	return settleAnnounced(ctx, a, x.t.describe(pk, rk))
}

// Update reads the entity, calls fn on it and replaces it conditionally on
// the ETag read; when the value changes it first checks the new list has
// room and enqueues the intent to move the entity from the old list to the
// new one. A concurrent change starts it over; a lost response is settled
// as Table.Update settles it, or reported with tablekit.ErrOutcomeUnknown.
func (x *EventualListIndexedTable[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	var a *consistency.Announcement // the last attempt's: the one whose write landed
	v, err := x.t.modify(ctx, pk, rk, fn, func(old, v *T) ([]Op, error) {
		a = nil
		intent := consistency.NewIntentID()
		body, _, _, err := x.encode(v, intent)
		if err != nil {
			return nil, err
		}
		if ov, nv := x.ix.Key(old), x.ix.Key(v); ov != nv {
			tx := consistency.NewTransaction()
			if nv != "" {
				if err := x.checkFits(ctx, nv, keys.Join(pk, rk)); err != nil {
					return nil, err
				}
				tx.Add(x.step(pk, rk, nv, intentOf(intent)))
			}
			if ov != "" {
				tx.Add(x.step(pk, rk, ov, intentOf(intent)))
			}
			if a, err = x.q.Announce(ctx, tx, &consistency.EnqueueOptions{Delay: x.delay}); err != nil {
				return nil, err
			}
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
// it changed since v was read; tablekit.ErrNotFound when it does not
// exist). It reads the entity, enqueues the intent to unlist it and
// deletes it conditionally on the ETag read. Three requests.
func (x *EventualListIndexedTable[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	old, etag, err := x.t.readForDelete(ctx, v, opts)
	if err != nil {
		return err
	}
	pk, rk := x.t.codec.Keys(&old)
	var a *consistency.Announcement
	if ov := x.ix.Key(&old); ov != "" {
		if a, err = x.q.Announce(ctx, consistency.NewTransaction(x.step(pk, rk, ov, consistency.Expectation{Absent: true})), &consistency.EnqueueOptions{Delay: x.delay}); err != nil {
			return err
		}
	}
	if err := x.t.Delete(ctx, &old, &WriteOptions{ETag: etag}); err != nil {
		return err
	}
	return settleAnnounced(ctx, a, x.t.describe(pk, rk))
}

// Members returns the keys of the entities listed under value, in every
// partition (one request; none listed is an empty list, not an error).
func (x *EventualListIndexedTable[T]) Members(ctx context.Context, value string, opts *GetOptions) ([]Member, error) {
	return readMembers(ctx, x.it.w, x.indexRef(value), x.ix.property())
}

// readMembers reads the members that the list property prop of the index
// entity ref holds (none when it does not exist).
func readMembers(ctx context.Context, w *wire.Table, ref consistency.EntityRef, prop string) ([]Member, error) {
	le, err := readListEntity(ctx, w, ref.PartitionKey, ref.RowKey, prop)
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(le.members))
	for _, m := range le.members {
		parts, err := keys.Split(m)
		if err != nil || len(parts) != 2 {
			return nil, fmt.Errorf("tablekit: index entity %s lists %q, which is not a keys.Join(PartitionKey, RowKey)", ref, m)
		}
		out = append(out, Member{PartitionKey: parts[0], RowKey: parts[1]})
	}
	return out, nil
}

// Find returns the entities whose value is value: one request for the
// index entity, then one read per member in parallel up to
// ListIndex.Parallelism; members whose entity is gone or changed value
// (the worker has not caught up) are skipped.
func (x *EventualListIndexedTable[T]) Find(ctx context.Context, value string, opts *QueryOptions) iter.Seq2[T, error] {
	return lookupMembers(ctx, x.t, x.ix, value, x.Members, opts)
}

// Get reads the entity (pk, rk): a point query, one request;
// tablekit.ErrNotFound when there is none.
func (x *EventualListIndexedTable[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	return x.t.Get(ctx, pk, rk, opts)
}

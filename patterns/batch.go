package patterns

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
)

// Limits of an entity group transaction (the guide's EGT). The SDK checks
// none of them and Azurite accepts some batches Azure rejects, so tablekit
// checks them before sending.
const (
	// MaxTransactionOps is the most operations one transaction may hold.
	MaxTransactionOps = wire.MaxTransactionOps
	// MaxTransactionBytes is the largest request body of a transaction.
	MaxTransactionBytes = wire.MaxTransactionBytes
)

// OpType is the kind of one operation in a transaction.
type OpType = wire.OpType

// The operations of a transaction.
const (
	// OpInsert adds an entity; it fails if one exists.
	OpInsert = wire.OpInsert
	// OpReplace replaces an existing entity (If-Match: the ETag, or *).
	OpReplace = wire.OpReplace
	// OpMerge merges into an existing entity (If-Match: the ETag, or *).
	OpMerge = wire.OpMerge
	// OpUpsertReplace inserts or replaces.
	OpUpsertReplace = wire.OpUpsertReplace
	// OpUpsertMerge inserts or merges.
	OpUpsertMerge = wire.OpUpsertMerge
	// OpDelete deletes an existing entity (If-Match: the ETag, or *).
	OpDelete = wire.OpDelete
)

// Op is one operation of a transaction on an encoded entity: Type,
// PartitionKey, RowKey, Entity (the codec's JSON; unused by OpDelete) and
// ETag (the If-Match condition of OpReplace, OpMerge and OpDelete; empty
// means "*"). Patterns use Ops to put entities of different Go types (an
// employee and its index entities) into one transaction.
type Op = wire.Op

// OpResult is the outcome of one operation of a successful transaction:
// its StatusCode (201 or 204) and the entity's new ETag (empty for
// deletes).
type OpResult = wire.Result

// UpdateLogProperty is the property in which every read-modify-write
// (Table.Update and the patterns built on it) records the ids of an
// entity's last writes, so that a write whose response was lost can tell
// whether it landed.
const UpdateLogProperty = wire.UpdateLogProperty

// ValidateTransaction checks ops against the rules Azure applies to an
// entity group transaction: 1 to 100 operations, one PartitionKey, at most
// one operation per entity, valid keys, and a request body of at most
// 4 MiB. Errors wrap tablekit.ErrInvalidTransaction (or ErrInvalidKey) and
// name the operation's index.
func ValidateTransaction(ops []Op) error { return wire.ValidateTransaction(ops) }

// Transaction builds an entity group transaction on a Table: up to 100
// operations on entities of one partition, applied atomically by Submit.
// Builder errors (an entity that does not encode) are reported by Submit
// with the operation's index. A Transaction is not safe for concurrent use.
type Transaction[T any] struct {
	t *Table[T]
	b txBuilder
}

// Transaction starts an entity group transaction on t.
//
//go:noinline
func (t *Table[T]) Transaction() *Transaction[T] {
	return &Transaction[T]{t: t, b: txBuilder{
		name: t.name,
		codec: func(v any) (*entity.Codec, error) {
			if v.(*T) == nil {
				return nil, tkerr.Errorf("tablekit: %s: %w: nil *%s", t.name, tablekit.ErrInvalidEntity, t.codec.Type())
			}
			return t.codec, nil
		},
		marshal: func(c *entity.Codec, v any) ([]byte, error) { return c.Marshal(v) },
	}}
}

// Insert adds an insert of v.
func (x *Transaction[T]) Insert(v *T) *Transaction[T] { x.b.add(OpInsert, v, nil); return x }

// Replace adds a replace of v, conditional as Table.Replace is.
func (x *Transaction[T]) Replace(v *T, opts *WriteOptions) *Transaction[T] {
	x.b.add(OpReplace, v, opts)
	return x
}

// Merge adds a merge of v, conditional as Table.Merge is.
func (x *Transaction[T]) Merge(v *T, opts *WriteOptions) *Transaction[T] {
	x.b.add(OpMerge, v, opts)
	return x
}

// Upsert adds an insert-or-replace (or, with UpsertMerge,
// insert-or-merge) of v.
func (x *Transaction[T]) Upsert(v *T, opts *UpsertOptions) *Transaction[T] {
	x.b.upsert(v, opts)
	return x
}

// Delete adds a delete of the entity with v's keys, conditional as
// Table.Delete is.
func (x *Transaction[T]) Delete(v *T, opts *WriteOptions) *Transaction[T] {
	x.b.add(OpDelete, v, opts)
	return x
}

// Add appends an already-encoded operation, such as an index entity of
// another Go type in the same partition.
func (x *Transaction[T]) Add(op Op) *Transaction[T] { x.b.addOp(op); return x }

// Len is the number of operations so far.
func (x *Transaction[T]) Len() int { return len(x.b.ops) }

// Ops returns the operations so far (for inspection; do not modify).
func (x *Transaction[T]) Ops() []Op { return x.b.ops }

// Submit validates and sends the transaction (one request) and, on
// success, stores each written entity's new ETag and Timestamp into its
// value. Errors: a builder error; tablekit.ErrInvalidTransaction when a
// rule is broken (before any request); or a *tablekit.TransactionError
// naming the failing operation (no operation applied).
func (x *Transaction[T]) Submit(ctx context.Context, opts *SubmitOptions) ([]OpResult, error) {
	return x.b.submit(ctx, x.t.ops().submit)
}

// txBuilder is the untyped core of Transaction[T] and MixedTransaction:
// each value is encoded by the codec of its type, and kept to receive its
// new ETag.
type txBuilder struct {
	name    string                                       // the table's
	codec   func(v any) (*entity.Codec, error)           // v's codec, or why v cannot be written
	marshal func(c *entity.Codec, v any) ([]byte, error) // v's entity JSON
	ops     []Op
	vals    []any // the value of each op, nil for raw ops
	codecs  []*entity.Codec
	err     error
}

// add appends the operation typ on v; a failure is kept for Submit, and
// later calls do nothing.
func (x *txBuilder) add(typ OpType, v any, opts *WriteOptions) {
	if x.err != nil {
		return
	}
	if err := x.encode(typ, v, opts); err != nil {
		x.err = fmt.Errorf("operation %d (%v): %w", len(x.ops), typ, err)
	}
}

func (x *txBuilder) encode(typ OpType, v any, opts *WriteOptions) error {
	c, err := x.codec(v)
	if err != nil {
		return err
	}
	if (typ == OpMerge || typ == OpUpsertMerge) && c.Encrypted() {
		return ErrEncryptedMerge
	}
	var etag string
	if typ == OpReplace || typ == OpMerge || typ == OpDelete {
		m, err := ifMatch(c, v, opts, x.name)
		if err != nil {
			return err
		}
		etag = opETag(m)
	}
	body, err := x.marshal(c, v)
	if err != nil {
		return err
	}
	if typ == OpDelete {
		body = nil
	}
	pk, rk := c.Keys(v)
	x.ops = append(x.ops, Op{Type: typ, PartitionKey: pk, RowKey: rk, Entity: body, ETag: string(etag)})
	x.vals = append(x.vals, v)
	x.codecs = append(x.codecs, c)
	return nil
}

// upsert adds the upsert of v opts ask for.
func (x *txBuilder) upsert(v any, opts *UpsertOptions) {
	mode, err := upsertMode(opts)
	if err != nil && x.err == nil {
		x.err = fmt.Errorf("operation %d (upsert): %w", len(x.ops), err)
	}
	x.add(upsertOp(mode), v, nil)
}

func (x *txBuilder) addOp(op Op) {
	if x.err != nil {
		return
	}
	x.ops = append(x.ops, op)
	x.vals = append(x.vals, nil)
	x.codecs = append(x.codecs, nil)
}

// submit sends the operations through send and, on success, stores each
// written entity's new ETag and Timestamp into its value.
func (x *txBuilder) submit(ctx context.Context, send func(context.Context, []Op) ([]OpResult, error)) ([]OpResult, error) {
	if x.err != nil {
		return nil, tkerr.Errorf("tablekit: transaction on %s: %w", x.name, x.err)
	}
	results, err := send(ctx, x.ops)
	if err != nil {
		return nil, err
	}
	for i, v := range x.vals {
		if v != nil && x.ops[i].Type != OpDelete && results[i].ETag != "" {
			x.codecs[i].SetMeta(v, results[i].ETag, TimestampFromETag(results[i].ETag))
		}
	}
	return results, nil
}

// upsertOp is the operation of an upsert in mode.
func upsertOp(mode UpsertMode) OpType {
	if mode == UpsertMerge {
		return OpUpsertMerge
	}
	return OpUpsertReplace
}

// transactionIndex reports the failing index of a transaction error.
func transactionIndex(err error) (int, bool) {
	var te *tablekit.TransactionError
	if errors.As(err, &te) && te.Index >= 0 {
		return te.Index, true
	}
	return 0, false
}

// SubmitOps validates ops and sends them as one entity group transaction
// on t's table (on the fast path when t has one). Patterns use it for
// transactions that mix Go types in one partition; errors are those of
// SubmitTransaction. One request.
func (t *Table[T]) SubmitOps(ctx context.Context, ops []Op, opts *SubmitOptions) ([]OpResult, error) {
	return t.ops().submit(ctx, ops)
}

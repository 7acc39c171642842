package patterns

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
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
	t    *Table[T]
	ops  []Op
	vals []*T // the value of each op, to receive its new ETag (nil for raw ops)
	err  error
}

// Transaction starts an entity group transaction on t.
func (t *Table[T]) Transaction() *Transaction[T] { return &Transaction[T]{t: t} }

func (x *Transaction[T]) add(typ OpType, v *T, etag string) *Transaction[T] {
	if x.err != nil {
		return x
	}
	body, pk, rk, err := x.t.marshal(v)
	if err != nil {
		x.err = fmt.Errorf("operation %d (%v): %w", len(x.ops), typ, err)
		return x
	}
	if typ == OpDelete {
		body = nil
	}
	x.ops = append(x.ops, Op{Type: typ, PartitionKey: pk, RowKey: rk, Entity: body, ETag: etag})
	x.vals = append(x.vals, v)
	return x
}

func (x *Transaction[T]) conditional(typ OpType, v *T, opts *WriteOptions) *Transaction[T] {
	if x.err != nil {
		return x
	}
	if v == nil {
		return x.add(typ, v, "")
	}
	etag, err := x.t.ifMatch(v, opts)
	if err != nil {
		x.err = fmt.Errorf("operation %d (%v): %w", len(x.ops), typ, err)
		return x
	}
	if etag == azcore.ETagAny {
		etag = ""
	}
	return x.add(typ, v, string(etag))
}

// Insert adds an insert of v.
func (x *Transaction[T]) Insert(v *T) *Transaction[T] { return x.add(OpInsert, v, "") }

// Replace adds a replace of v, conditional as Table.Replace is.
func (x *Transaction[T]) Replace(v *T, opts *WriteOptions) *Transaction[T] {
	return x.conditional(OpReplace, v, opts)
}

// Merge adds a merge of v, conditional as Table.Merge is.
func (x *Transaction[T]) Merge(v *T, opts *WriteOptions) *Transaction[T] {
	if x.err == nil && x.t.codec.Encrypted() {
		x.err = fmt.Errorf("operation %d (merge): %w", len(x.ops), ErrEncryptedMerge)
		return x
	}
	return x.conditional(OpMerge, v, opts)
}

// Upsert adds an insert-or-replace (or insert-or-merge) of v.
func (x *Transaction[T]) Upsert(v *T, mode UpsertMode) *Transaction[T] {
	if mode == UpsertMerge {
		if x.err == nil && x.t.codec.Encrypted() {
			x.err = fmt.Errorf("operation %d (upsert-merge): %w", len(x.ops), ErrEncryptedMerge)
			return x
		}
		return x.add(OpUpsertMerge, v, "")
	}
	return x.add(OpUpsertReplace, v, "")
}

// Delete adds a delete of the entity with v's keys, conditional as
// Table.Delete is.
func (x *Transaction[T]) Delete(v *T, opts *WriteOptions) *Transaction[T] {
	return x.conditional(OpDelete, v, opts)
}

// Add appends an already-encoded operation, such as an index entity of
// another Go type in the same partition.
func (x *Transaction[T]) Add(op Op) *Transaction[T] {
	if x.err != nil {
		return x
	}
	x.ops = append(x.ops, op)
	x.vals = append(x.vals, nil)
	return x
}

// Len is the number of operations so far.
func (x *Transaction[T]) Len() int { return len(x.ops) }

// Ops returns the operations so far (for inspection; do not modify).
func (x *Transaction[T]) Ops() []Op { return x.ops }

// Submit validates and sends the transaction (one request) and, on
// success, stores each written entity's new ETag and Timestamp into its
// value. Errors: a builder error; tablekit.ErrInvalidTransaction when a
// rule is broken (before any request); or a *tablekit.TransactionError
// naming the failing operation (no operation applied).
func (x *Transaction[T]) Submit(ctx context.Context) ([]OpResult, error) {
	if x.err != nil {
		return nil, fmt.Errorf("tablekit: transaction on %s: %w", x.t.name, x.err)
	}
	results, err := x.t.submit(ctx, x.ops)
	if err != nil {
		return nil, err
	}
	for i, v := range x.vals {
		if v != nil && x.ops[i].Type != OpDelete && results[i].ETag != "" {
			x.t.setMeta(v, results[i].ETag)
		}
	}
	return results, nil
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
func (t *Table[T]) SubmitOps(ctx context.Context, ops []Op) ([]OpResult, error) {
	return t.submit(ctx, ops)
}

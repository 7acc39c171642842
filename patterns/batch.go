package patterns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
)

// Limits of an entity group transaction (the guide's EGT). The SDK checks
// none of them and Azurite accepts some batches Azure rejects, so tablekit
// checks them before sending.
const (
	// MaxTransactionOps is the most operations one transaction may hold.
	MaxTransactionOps = 100
	// MaxTransactionBytes is the largest request body of a transaction.
	MaxTransactionBytes = 4 << 20
)

// OpType is the kind of one operation in a transaction.
type OpType int

const (
	// OpInsert adds an entity; it fails if one exists.
	OpInsert OpType = iota
	// OpReplace replaces an existing entity (If-Match: the ETag, or *).
	OpReplace
	// OpMerge merges into an existing entity (If-Match: the ETag, or *).
	OpMerge
	// OpUpsertReplace inserts or replaces.
	OpUpsertReplace
	// OpUpsertMerge inserts or merges.
	OpUpsertMerge
	// OpDelete deletes an existing entity (If-Match: the ETag, or *).
	OpDelete
)

var opNames = [...]string{"insert", "replace", "merge", "upsert-replace", "upsert-merge", "delete"}

func (o OpType) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "OpType(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}

// Op is one operation of a transaction on an encoded entity. Patterns use
// Ops to put entities of different Go types (an employee and its index
// entities) into one transaction.
type Op struct {
	Type         OpType
	PartitionKey string
	RowKey       string
	// Entity is the entity's JSON (entity.Codec.Marshal's output); unused
	// by OpDelete.
	Entity []byte
	// ETag is the If-Match condition of OpReplace, OpMerge and OpDelete;
	// empty means "*" (the entity must exist, whatever its version).
	ETag string
}

// OpResult is the outcome of one operation of a successful transaction.
type OpResult struct {
	StatusCode int    // 201 or 204
	ETag       string // the entity's new ETag; empty for deletes
}

// ValidateTransaction checks ops against the rules Azure applies to an
// entity group transaction: 1 to 100 operations, one PartitionKey, at most
// one operation per entity, valid keys, and a request body of at most
// 4 MiB. Errors wrap tablekit.ErrInvalidTransaction (or ErrInvalidKey) and
// name the operation's index.
func ValidateTransaction(ops []Op) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: no operations", tablekit.ErrInvalidTransaction)
	}
	if len(ops) > MaxTransactionOps {
		return fmt.Errorf("%w: %d operations; at most %d are allowed", tablekit.ErrInvalidTransaction, len(ops), MaxTransactionOps)
	}
	seen := make(map[string]int, len(ops))
	size := 0
	for i, op := range ops {
		if op.Type < OpInsert || op.Type > OpDelete {
			return fmt.Errorf("%w: operation %d: unknown type %v", tablekit.ErrInvalidTransaction, i, op.Type)
		}
		if err := validateKeys(op.PartitionKey, op.RowKey); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if op.PartitionKey != ops[0].PartitionKey {
			return fmt.Errorf("%w: operation %d has PartitionKey %q but operation 0 has %q; a transaction covers one partition", tablekit.ErrInvalidTransaction, i, op.PartitionKey, ops[0].PartitionKey)
		}
		if j, dup := seen[op.RowKey]; dup {
			return fmt.Errorf("%w: operations %d and %d both touch RowKey %q; one operation per entity", tablekit.ErrInvalidTransaction, j, i, op.RowKey)
		}
		seen[op.RowKey] = i
		if op.Type != OpDelete && len(op.Entity) == 0 {
			return fmt.Errorf("%w: operation %d (%v) has no entity body", tablekit.ErrInvalidTransaction, i, op.Type)
		}
		size += opWireSize(op)
	}
	if size > MaxTransactionBytes {
		return fmt.Errorf("%w: the request body would be about %d bytes; at most %d (4 MiB) are allowed", tablekit.ErrInvalidTransaction, size, MaxTransactionBytes)
	}
	return nil
}

// opWireSize bounds from above the bytes one operation adds to a batch
// body: the MIME part headers, the request line with the percent-encoded
// keys and the table URL (up to 256 bytes), the operation's headers and the
// entity.
func opWireSize(op Op) int {
	const overhead = 256 /* part headers */ + 256 /* URL */ + 320 /* request headers */
	return overhead + 3*(len(op.PartitionKey)+len(op.RowKey)) + len(op.ETag) + len(op.Entity)
}

// SubmitTransaction validates ops and sends them as one entity group
// transaction on client: all are applied or none. Update and delete
// operations without an ETag send If-Match: * so they never insert
// (aztables would otherwise upsert). On failure the error is a
// *tablekit.TransactionError naming the failing operation's index, which
// unwraps to its sentinel (tablekit.ErrAlreadyExists, ErrNotFound,
// ErrPreconditionFailed, ...). One request.
func SubmitTransaction(ctx context.Context, client *aztables.Client, tableName string, ops []Op) ([]OpResult, error) {
	if err := ValidateTransaction(ops); err != nil {
		return nil, fmt.Errorf("tablekit: transaction on %s: %w", tableName, err)
	}
	actions := make([]aztables.TransactionAction, len(ops))
	for i, op := range ops {
		a := aztables.TransactionAction{Entity: op.Entity}
		etag := azcore.ETagAny
		if op.ETag != "" {
			etag = azcore.ETag(op.ETag)
		}
		switch op.Type {
		case OpInsert:
			a.ActionType = aztables.TransactionTypeAdd
		case OpReplace:
			a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateReplace, &etag
		case OpMerge:
			a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateMerge, &etag
		case OpUpsertReplace:
			a.ActionType = aztables.TransactionTypeInsertReplace
		case OpUpsertMerge:
			a.ActionType = aztables.TransactionTypeInsertMerge
		case OpDelete:
			a.ActionType, a.IfMatch = aztables.TransactionTypeDelete, &etag
			a.Entity = keysOnly(op.PartitionKey, op.RowKey)
		}
		actions[i] = a
	}
	var raw *http.Response
	_, err := client.SubmitTransaction(policy.WithCaptureResponse(ctx, &raw), actions, nil)
	if err != nil {
		return nil, tablekit.MapError(err, "transaction on", tableName+" (PartitionKey "+strconv.Quote(ops[0].PartitionKey)+")")
	}
	results := make([]OpResult, len(ops))
	if raw != nil {
		if body, perr := runtime.Payload(raw); perr == nil {
			parseBatchResults(raw.Header.Get("Content-Type"), body, results)
		}
	}
	return results, nil
}

// keysOnly is the minimal entity body the SDK needs for a delete.
func keysOnly(pk, rk string) []byte {
	b := make([]byte, 0, len(pk)+len(rk)+32)
	b = append(b, `{"PartitionKey":`...)
	b = appendJSONString(b, pk)
	b = append(b, `,"RowKey":`...)
	b = appendJSONString(b, rk)
	return append(b, '}')
}

// parseBatchResults fills results from a successful batch response: one
// inner HTTP response per operation, in order, each with its status and
// (for writes) ETag. A body it cannot read leaves results zero: the
// transaction succeeded either way.
func parseBatchResults(contentType string, body []byte, results []OpResult) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return
	}
	outer := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, err := outer.NextPart()
	if err != nil {
		return
	}
	_, cparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
	if err != nil || cparams["boundary"] == "" {
		return
	}
	inner := multipart.NewReader(part, cparams["boundary"])
	for i := 0; i < len(results); i++ {
		p, err := inner.NextPart()
		if err != nil {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		results[i] = OpResult{StatusCode: resp.StatusCode, ETag: resp.Header.Get("ETag")}
	}
}

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

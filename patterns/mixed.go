package patterns

import (
	"context"
	"iter"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// MixedTable is a repository over a heterogeneous table: entities of
// several Go types in one table, often in one partition (the guide's
// "Work with heterogeneous entity types": departments and employees side by
// side). An entity.Registry maps each type to a kind stored in a
// discriminator property, and every row read is decoded into its
// registered type. It is safe for concurrent use.
type MixedTable struct {
	name string
	w    *wire.Table
	reg  *entity.Registry
}

// NewMixedTable returns the heterogeneous repository of table name. The
// registry's kinds must be registered before use; opts.Table chooses the
// transport (SDKPath), nil means the defaults. It makes no request.
func NewMixedTable(acct *tablekit.Account, name string, reg *entity.Registry, opts *MixedTableOptions) (*MixedTable, error) {
	if acct == nil || reg == nil {
		return nil, tkerr.Errorf("tablekit: NewMixedTable: %w: account and registry are required", tablekit.ErrInvalidArgument)
	}
	var to *TableOptions
	if opts != nil {
		to = opts.Table
	}
	w, err := wire.Open(acct, name, to.wireOptions())
	if err != nil {
		return nil, err
	}
	return &MixedTable{name: name, w: w, reg: reg}, nil
}

// Client is the underlying SDK client.
func (m *MixedTable) Client() *aztables.Client { return m.w.Client() }

// Registry is the table's kind registry.
func (m *MixedTable) Registry() *entity.Registry { return m.reg }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request.
func (m *MixedTable) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return m.w.Create(ctx)
}

// Encode returns v's entity JSON with its discriminator, and its keys, for
// use in a transaction (Op).
func (m *MixedTable) Encode(v any) (body []byte, pk, rk string, err error) {
	c, err := m.codecOf(v)
	if err != nil {
		return nil, "", "", err
	}
	body, err = m.reg.Marshal(v)
	if err != nil {
		return nil, "", "", err
	}
	pk, rk = c.Keys(v)
	return body, pk, rk, nil
}

// codecOf returns the codec of v's registered type.
func (m *MixedTable) codecOf(v any) (*entity.Codec, error) {
	k, ok := m.reg.KindOf(v)
	if !ok {
		return nil, tkerr.Errorf("tablekit: %s: %w: type %T is not registered", m.name, entity.ErrUnknownKind, v)
	}
	c, _ := m.reg.Codec(k)
	return c, nil
}

// MixedTransaction builds an entity group transaction on a MixedTable:
// values of any registered types in one partition (a department and its
// employees, so that the department's employee count changes with them,
// the guide's reason for keeping them in one partition), applied
// atomically by Submit. Values are pointers to registered types; each is
// written with its discriminator, and conditional operations use its ETag
// field as Transaction[T]'s do. Builder errors are reported by Submit with
// the operation's index. A MixedTransaction is not safe for concurrent use.
type MixedTransaction struct {
	m *MixedTable
	b txBuilder
}

// Transaction starts an entity group transaction on m.
func (m *MixedTable) Transaction() *MixedTransaction {
	return &MixedTransaction{m: m, b: txBuilder{
		name:    m.name,
		codec:   m.codecOf,
		marshal: func(_ *entity.Codec, v any) ([]byte, error) { return m.reg.Marshal(v) },
	}}
}

// Insert adds an insert of v.
func (x *MixedTransaction) Insert(v any) *MixedTransaction { x.b.add(OpInsert, v, nil); return x }

// Replace adds a replace of v, conditional on v's ETag unless opts say
// otherwise (as Table.Replace is).
func (x *MixedTransaction) Replace(v any, opts *WriteOptions) *MixedTransaction {
	x.b.add(OpReplace, v, opts)
	return x
}

// Merge adds a merge of v, conditional as Replace is.
func (x *MixedTransaction) Merge(v any, opts *WriteOptions) *MixedTransaction {
	x.b.add(OpMerge, v, opts)
	return x
}

// Upsert adds an insert-or-replace (or, with UpsertMerge,
// insert-or-merge) of v.
func (x *MixedTransaction) Upsert(v any, opts *UpsertOptions) *MixedTransaction {
	x.b.upsert(v, opts)
	return x
}

// Delete adds a delete of the entity with v's keys, conditional as
// Replace is.
func (x *MixedTransaction) Delete(v any, opts *WriteOptions) *MixedTransaction {
	x.b.add(OpDelete, v, opts)
	return x
}

// Add appends an already-encoded operation.
func (x *MixedTransaction) Add(op Op) *MixedTransaction { x.b.addOp(op); return x }

// Len is the number of operations so far.
func (x *MixedTransaction) Len() int { return len(x.b.ops) }

// Ops returns the operations so far (for inspection; do not modify).
func (x *MixedTransaction) Ops() []Op { return x.b.ops }

// Submit validates and sends the transaction (one request) and, on
// success, stores each written entity's new ETag and Timestamp into its
// value. Errors are those of Transaction.Submit.
func (x *MixedTransaction) Submit(ctx context.Context, opts *SubmitOptions) ([]OpResult, error) {
	return x.b.submit(ctx, x.m.w.Batch)
}

// Insert adds v, a pointer to a value of a registered type, with its
// discriminator; it fails with tablekit.ErrAlreadyExists when an entity
// with its keys exists. On success v's ETag and Timestamp fields are set.
// One request.
func (m *MixedTable) Insert(ctx context.Context, v any, opts *InsertOptions) error {
	return m.write(ctx, "insert", func(b *txBuilder) { b.add(OpInsert, v, nil) })
}

// Replace replaces the stored entity with v, conditional on v's ETag unless
// opts say otherwise, as Table.Replace. One request.
func (m *MixedTable) Replace(ctx context.Context, v any, opts *WriteOptions) error {
	return m.write(ctx, "replace", func(b *txBuilder) { b.add(OpReplace, v, opts) })
}

// Merge merges v's properties into the stored entity, conditional as
// Replace is, as Table.Merge. One request.
func (m *MixedTable) Merge(ctx context.Context, v any, opts *WriteOptions) error {
	return m.write(ctx, "merge", func(b *txBuilder) { b.add(OpMerge, v, opts) })
}

// Upsert inserts v or replaces (with UpsertMerge, merges into) the stored
// entity, whatever its ETag, as Table.Upsert. One request.
func (m *MixedTable) Upsert(ctx context.Context, v any, opts *UpsertOptions) error {
	return m.write(ctx, "upsert", func(b *txBuilder) { b.upsert(v, opts) })
}

// Delete removes the entity with v's keys, conditional on v's ETag unless
// opts say otherwise, as Table.Delete. One request.
func (m *MixedTable) Delete(ctx context.Context, v any, opts *WriteOptions) error {
	return m.write(ctx, "delete", func(b *txBuilder) { b.add(OpDelete, v, opts) })
}

// write encodes the one operation add builds, as a transaction of the
// table would, and sends it as a single write.
func (m *MixedTable) write(ctx context.Context, verb string, add func(b *txBuilder)) error {
	x := m.Transaction()
	add(&x.b)
	if x.b.err != nil {
		return tkerr.Errorf("tablekit: %s on %s: %w", verb, m.name, x.b.err)
	}
	_, err := x.b.submit(ctx, func(ctx context.Context, ops []Op) ([]OpResult, error) {
		etag, err := m.w.Write(ctx, verb, ops[0])
		return []OpResult{{ETag: etag}}, err
	})
	return err
}

// Get reads the entity (pk, rk) and decodes it into its registered type
// (a pointer to it): a point query, one request; tablekit.ErrNotFound when there is none.
func (m *MixedTable) Get(ctx context.Context, pk, rk string, opts *GetOptions) (any, error) {
	body, _, err := m.w.Get(ctx, pk, rk)
	if err != nil {
		return nil, err
	}
	v, err := m.reg.Resolve(body)
	if err != nil {
		return nil, tkerr.Errorf("tablekit: get %s: %w", m.describe(pk, rk), err)
	}
	return v, nil
}

// Query returns the rows matching f, each decoded into its registered type,
// in key order. Every property is returned unless opts.Select names some.
// Table scans are refused unless opts.AllowTableScan is set.
func (m *MixedTable) Query(ctx context.Context, f keys.Filter, opts *QueryOptions) iter.Seq2[any, error] {
	return func(yield func(any, error) bool) {
		o := QueryOptions{SelectAll: true}
		if opts != nil {
			o = *opts
			o.SelectAll = len(o.Select) == 0
		}
		q, err := prepareQuery(m.name, f, &o, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		for raw, err := range rawRows(ctx, m.w, q) {
			if err != nil {
				yield(nil, err)
				return
			}
			v, err := m.reg.Resolve(raw)
			if err != nil {
				yield(nil, tkerr.Errorf("tablekit: query %s: %w", m.name, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

func (m *MixedTable) describe(pk, rk string) string { return m.w.Label(pk, rk) }

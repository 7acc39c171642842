package patterns

import (
	"context"
	"slices"
	"strconv"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// WideChunksProperty is the property of a wide entity's first physical
// entity that holds how many physical entities the logical one has now.
// It is reserved: a logical entity cannot have a property of that name.
const WideChunksProperty = "TkChunks"

// MaxWideChunks is the most physical entities a wide entity may span: an
// entity group transaction holds at most 100 operations, and a write must
// also delete the chunks a shrinking entity leaves over.
const MaxWideChunks = MaxTransactionOps

// wideChunkBytes is the entity size a chunk is filled to: under the 1 MiB
// limit with room to spare for the keys and the system properties.
const wideChunkBytes = entity.MaxEntitySize - 4096

// WideEntity is one logical entity of a WideEntities table: any number of
// properties, stored over several physical entities.
type WideEntity struct {
	PartitionKey string
	RowKey       string
	// Properties are the logical entity's properties, by name. Names must
	// be C# identifiers and not WideChunksProperty.
	Properties map[string]entity.Value
	// ETag is the version of the first physical entity when the entity was
	// read or last written. Replace and Delete are conditional on it, as
	// on Table: every write rewrites the first physical entity, so it
	// versions the logical entity as a whole.
	ETag string

	rows []string // physical RowKeys seen by the last Get or write
}

// Chunks returns the RowKeys of the physical entities the last Get or write
// saw (leftovers of an older, larger version included).
func (e *WideEntity) Chunks() []string { return slices.Clone(e.rows) }

// WideEntities is the guide's wide entities pattern ("Use multiple
// physical entities to store logical entities with more than 252
// properties"), such as 365 daily message counts of an employee. A logical
// entity (PartitionKey, RowKey) is stored as physical entities in the same
// partition with RowKeys keys.Join(RowKey, "00"), keys.Join(RowKey, "01"),
// ...; properties are packed in name order, at most 252 (and about 1 MiB)
// per physical entity, and the first one also records the chunk count.
//
// Insert, Replace and Upsert write every physical entity in one entity
// group transaction, so a
// logical entity is never seen half written, and deletes in the same
// transaction the chunks a shrinking entity no longer needs. Get reads all
// of them with one range query: one request, where the guide needs one per
// physical entity. Readers ignore chunks beyond the recorded count, so
// leftovers of a blind write (one that did not read the entity first)
// are never returned; the next Replace of a value read by Get deletes them.
//
// A logical entity spans at most MaxWideChunks physical entities and one
// transaction body (4 MiB). WideEntities is safe for concurrent use.
type WideEntities struct {
	t *Table[entity.Entity]
}

// NewWideEntities returns the wide entity repository of table name;
// opts.Table chooses the transport (SDKPath), nil means the defaults. It makes no
// request; call CreateIfNotExists to create the table.
func NewWideEntities(acct *tablekit.Account, name string, opts *WideEntitiesOptions) (*WideEntities, error) {
	o := optsOf(opts)
	t, err := NewTable[entity.Entity](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	return &WideEntities{t: t}, nil
}

// Table is the underlying table of physical entities.
func (w *WideEntities) Table() *Table[entity.Entity] { return w.t }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request.
func (w *WideEntities) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return w.t.CreateIfNotExists(ctx, opts)
}

// WideChunkRowKey returns the RowKey of physical entity i of the logical
// entity rk.
func WideChunkRowKey(rk string, i int) string {
	return keys.Join(rk, keys.PadUint(uint64(max(i, 0)), 2))
}

func wideChunkPrefix(rk string) string {
	return keys.Join(rk, "")
}

// Get reads the logical entity (pk, rk) with one range query: one request.
// It fails with tablekit.ErrNotFound when the entity does not exist.
func (w *WideEntities) Get(ctx context.Context, pk, rk string, opts *GetOptions) (*WideEntity, error) {
	if err := validateKeys(pk, rk); err != nil {
		return nil, err
	}
	prefix := wideChunkPrefix(rk)
	rows, err := Collect(w.t.Query(ctx, keys.And(keys.PK().Eq(pk), keys.RK().Prefix(prefix)), &QueryOptions{SelectAll: true}))
	if err != nil {
		return nil, err
	}
	out := &WideEntity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{}}
	chunks := map[int]*entity.Entity{}
	for i := range rows {
		r := &rows[i]
		out.rows = append(out.rows, r.RowKey)
		suffix := r.RowKey[len(prefix):]
		n, err := strconv.Atoi(suffix)
		if err != nil || len(suffix) != 2 || n < 0 {
			continue // another logical entity's key that shares the prefix
		}
		chunks[n] = r
	}
	first, ok := chunks[0]
	if !ok {
		return nil, tkerr.Errorf("tablekit: wide entity %s: %w", w.describe(pk, rk), tablekit.ErrNotFound)
	}
	count := 1
	if v, ok := first.Properties[WideChunksProperty]; ok {
		if n, ok := v.V.(int32); ok && n >= 1 && n <= MaxWideChunks {
			count = int(n)
		}
	}
	for i := 0; i < count; i++ {
		c, ok := chunks[i]
		if !ok {
			return nil, tkerr.Errorf("tablekit: wide entity %s: %w: physical entity %q of %d is missing", w.describe(pk, rk), tablekit.ErrInvalidEntity, WideChunkRowKey(rk, i), count)
		}
		for name, v := range c.Properties {
			if i == 0 && name == WideChunksProperty || name == UpdateLogProperty {
				continue // tablekit's own: the chunk count and the write-id log
			}
			out.Properties[name] = v
		}
	}
	out.ETag = first.ETag
	return out, nil
}

// Insert writes the new logical entity e in one entity group transaction:
// one request. It fails with tablekit.ErrAlreadyExists (wrapped in a
// *tablekit.TransactionError) when the entity exists. On success e.ETag
// is the new version.
func (w *WideEntities) Insert(ctx context.Context, e *WideEntity, opts *InsertOptions) error {
	return w.write(ctx, e, OpInsert, "")
}

// Replace writes e over the stored logical entity in one entity group
// transaction: one request. As Table.Replace, it is conditional on e.ETag
// unless opts say otherwise, and fails with tablekit.ErrPreconditionFailed
// when another writer changed the entity since it was read, or
// tablekit.ErrNotFound when it does not exist (both wrapped in a
// *tablekit.TransactionError). Physical entities e had when it was read
// that the new version does not need are deleted in the same transaction.
// On success e.ETag is the new version.
func (w *WideEntities) Replace(ctx context.Context, e *WideEntity, opts *WriteOptions) error {
	if e == nil {
		return w.nilEntity()
	}
	etag, err := condition(e.ETag, opts, w.describe(e.PartitionKey, e.RowKey))
	if err != nil {
		return err
	}
	return w.write(ctx, e, OpReplace, opETag(etag))
}

// Upsert writes e whether or not it exists, whatever its version, in one
// entity group transaction: one request. Only UpsertReplace is possible:
// a wide entity's properties are packed over its physical entities by
// name, so a merge could not keep the packing; read it with Get and
// Replace it instead (UpsertMerge is refused with
// tablekit.ErrInvalidArgument). On success e.ETag is the new version.
func (w *WideEntities) Upsert(ctx context.Context, e *WideEntity, opts *UpsertOptions) error {
	mode, err := upsertMode(opts)
	if err != nil {
		return err
	}
	if mode == UpsertMerge {
		return tkerr.Errorf("tablekit: wide entities %s: %w: UpsertMerge cannot keep a wide entity's packing; Get it and Replace it", w.t.name, tablekit.ErrInvalidArgument)
	}
	return w.write(ctx, e, OpUpsertReplace, "")
}

func (w *WideEntities) nilEntity() error {
	return tkerr.Errorf("tablekit: wide entity on %s: %w: nil *WideEntity", w.t.name, tablekit.ErrInvalidArgument)
}

// write writes every physical entity of e in one transaction, the first
// with the operation first (conditional on etag when set), the others as
// upserts, and deletes the chunks e was read with that it no longer
// needs.
func (w *WideEntities) write(ctx context.Context, e *WideEntity, first OpType, etag string) error {
	if e == nil {
		return w.nilEntity()
	}
	if err := validateKeys(e.PartitionKey, e.RowKey); err != nil {
		return err
	}
	chunks, err := w.split(e)
	if err != nil {
		return err
	}
	ops := make([]Op, 0, len(chunks)+len(e.rows))
	written := make(map[string]bool, len(chunks))
	for i, c := range chunks {
		body, err := c.MarshalJSON()
		if err != nil {
			return tkerr.Errorf("tablekit: wide entity %s: physical entity %d: %w", w.describe(e.PartitionKey, e.RowKey), i, err)
		}
		op := Op{Type: OpUpsertReplace, PartitionKey: c.PartitionKey, RowKey: c.RowKey, Entity: body}
		if i == 0 {
			op.Type, op.ETag = first, etag
		}
		ops = append(ops, op)
		written[c.RowKey] = true
	}
	if first != OpInsert {
		for _, rk := range e.rows {
			if !written[rk] {
				ops = append(ops, Op{Type: OpDelete, PartitionKey: e.PartitionKey, RowKey: rk})
			}
		}
	}
	if len(ops) > MaxTransactionOps {
		return tkerr.Errorf("tablekit: wide entity %s: %w: the write needs %d operations (%d physical entities, %d leftovers to delete); one transaction holds %d",
			w.describe(e.PartitionKey, e.RowKey), tablekit.ErrInvalidEntity, len(ops), len(chunks), len(ops)-len(chunks), MaxTransactionOps)
	}
	results, err := w.t.w.Batch(ctx, ops)
	if err != nil {
		return err
	}
	e.ETag = results[0].ETag
	e.rows = e.rows[:0]
	for _, c := range chunks {
		e.rows = append(e.rows, c.RowKey)
	}
	return nil
}

// Delete removes every physical entity of e in one transaction. As
// Table.Delete, it is conditional on e.ETag unless opts say otherwise
// (tablekit.ErrPreconditionFailed when the entity changed). When e was
// neither read nor written by this repository it is read first (two
// requests); otherwise one request. A missing entity is
// tablekit.ErrNotFound.
func (w *WideEntities) Delete(ctx context.Context, e *WideEntity, opts *WriteOptions) error {
	if e == nil {
		return w.nilEntity()
	}
	cond, err := condition(e.ETag, opts, w.describe(e.PartitionKey, e.RowKey))
	if err != nil {
		return err
	}
	etag := opETag(cond)
	rows := e.rows
	if len(rows) == 0 {
		cur, err := w.Get(ctx, e.PartitionKey, e.RowKey, nil)
		if err != nil {
			return err
		}
		if etag != "" && cur.ETag != etag {
			return tkerr.Errorf("tablekit: delete wide entity %s: %w: the entity changed since it was read (stored ETag %s, expected %s)", w.describe(e.PartitionKey, e.RowKey), tablekit.ErrPreconditionFailed, cur.ETag, etag)
		}
		rows, etag = cur.rows, cur.ETag
	}
	first := WideChunkRowKey(e.RowKey, 0)
	ops := make([]Op, 0, len(rows))
	for _, rk := range rows {
		op := Op{Type: OpDelete, PartitionKey: e.PartitionKey, RowKey: rk}
		if rk == first {
			op.ETag = etag
		}
		ops = append(ops, op)
	}
	if _, err := w.t.w.Batch(ctx, ops); err != nil {
		return err
	}
	e.rows, e.ETag = nil, ""
	return nil
}

// split packs e's properties, in name order, into physical entities.
func (w *WideEntities) split(e *WideEntity) ([]entity.Entity, error) {
	names := make([]string, 0, len(e.Properties))
	for name := range e.Properties {
		if name == WideChunksProperty {
			return nil, tkerr.Errorf("tablekit: wide entity %s: %w: property %s is reserved for the chunk count", w.describe(e.PartitionKey, e.RowKey), tablekit.ErrInvalidEntity, name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	base := 4 + 2*azrules.UTF16Len(e.PartitionKey) + 2*azrules.UTF16Len(WideChunkRowKey(e.RowKey, 0)) + wideTimestampBytes
	newChunk := func(i int) entity.Entity {
		return entity.Entity{PartitionKey: e.PartitionKey, RowKey: WideChunkRowKey(e.RowKey, i), Properties: map[string]entity.Value{}}
	}
	chunks := []entity.Entity{newChunk(0)}
	// The first chunk holds the count too.
	props, size := 1, base+8+2*len(WideChunksProperty)+4
	for _, name := range names {
		v := e.Properties[name]
		ps := 8 + 2*azrules.UTF16Len(name) + wideValueSize(v)
		if props+1 > entity.MaxProperties || size+ps > wideChunkBytes {
			if len(chunks) == MaxWideChunks {
				return nil, tkerr.Errorf("tablekit: wide entity %s: %w: %d properties need more than %d physical entities", w.describe(e.PartitionKey, e.RowKey), tablekit.ErrInvalidEntity, len(names), MaxWideChunks)
			}
			chunks = append(chunks, newChunk(len(chunks)))
			props, size = 0, base
		}
		chunks[len(chunks)-1].Properties[name] = v
		props++
		size += ps
	}
	chunks[0].Properties[WideChunksProperty] = entity.Int32(int32(len(chunks)))
	return chunks, nil
}

// wideTimestampBytes is the Timestamp property's share of an entity's size.
const wideTimestampBytes = 8 + 2*len("Timestamp") + 8

// wideValueSize is a value's share of an entity's size by the service's
// formula (see the entity package's limits).
func wideValueSize(v entity.Value) int {
	switch x := v.V.(type) {
	case string:
		return 4 + 2*azrules.UTF16Len(x)
	case []byte:
		return 4 + len(x)
	case bool:
		return 1
	case int32:
		return 4
	case entity.GUID:
		return 16
	}
	return 8 // Int64, Double, DateTime
}

func (w *WideEntities) describe(pk, rk string) string {
	return w.t.name + " (PartitionKey " + strconv.Quote(pk) + ", RowKey " + strconv.Quote(rk) + ")"
}

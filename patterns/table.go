package patterns

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
)

// ErrNoETag is returned by a conditional write of a value whose ETag field
// is empty: read the entity first, or ask for an unconditional write.
var ErrNoETag = errors.New("tablekit: the entity's ETag is empty; read it first or use WriteOptions{Unconditional: true}")

// ErrEncryptedMerge is returned by Merge (and merge upserts) of a type with
// encrypted properties. A merge would leave properties the caller did not
// send untouched next to freshly encrypted ones, and the codec could not
// verify the entity as a whole on read; replace the entity instead.
var ErrEncryptedMerge = errors.New("tablekit: merge of an entity type with encrypted properties; use Replace or an upsert in replace mode")

// TableOptions configures a Table. A nil *TableOptions means the defaults.
type TableOptions struct {
	// Codec passes options to the entity codec (the KeyProvider for
	// `encrypt` fields).
	Codec *entity.Options
	// MaxAttempts bounds every read-modify-write loop of the repository
	// (Update, and the reads-then-writes of the patterns built on Table)
	// on ETag conflicts. Default 16; UpdateOptions.MaxAttempts overrides
	// it for one call.
	MaxAttempts int
	// SDKPath sends every request through the aztables client instead of
	// tablekit's own REST calls (the fast path). Both behave the same;
	// the fast path skips the SDK's map[string]any round trips. Cosmos DB
	// Table endpoints always use the SDK path.
	SDKPath bool
	// NoUpdateLog keeps tablekit's write-id log (UpdateLogProperty,
	// "TkUpdates") out of the table's entities, for tables whose entities
	// must hold only what their writers put there (other software reads
	// them). Plain writes (Insert, Replace, Merge, Upsert, Delete,
	// BulkWrite, transactions) never add it; without this option, the
	// read-modify-writes tablekit owns (Update, and the patterns' updates
	// built on it) record it to settle a lost answer. With it, such a lost
	// answer is settled only when the entity still has the version the
	// update read (it did not land, and the update tries again); otherwise
	// the update fails with an error wrapping tablekit.ErrOutcomeUnknown,
	// more often than with the log under concurrent writers.
	NoUpdateLog bool
}

// wireOptions is how a repository configured by o opens its tables.
func (o *TableOptions) wireOptions() *wire.Options {
	if o == nil {
		return &wire.Options{}
	}
	return &wire.Options{SDKPath: o.SDKPath, NoUpdateLog: o.NoUpdateLog}
}

// Table is a typed repository over one Azure table: every row is a T,
// encoded and decoded by the entity codec. It is safe for concurrent use.
//
// T must be a struct type whose PartitionKey and RowKey fields (by name or
// by `table:",pk"` / `table:",rk"` tags) are strings. When T has an ETag
// field, Replace, Merge and Delete are conditional on it by default
// (optimistic concurrency), and every write stores the new ETag and
// Timestamp back into the value.
type Table[T any] struct {
	tableCore
}

// tableCore is what a Table holds. What a Table does that does not
// depend on T is done by tableOps, the same struct: its methods are
// compiled once, where the methods of Table[T] are compiled again for
// every entity type a program uses (each a distinct shape to Go's
// generics), in the user's package; Table's methods that need no T
// forward to it. (They are not tableCore's: a method of an embedded field
// is promoted, and Go compiles a wrapper of it for every Table[T] too.)
type tableCore struct {
	acct        *tablekit.Account
	name        string
	w           *wire.Table
	codec       *entity.Codec
	props       map[string]bool // what a filter may name; nil: anything (see filterProps)
	maxAttempts int
}

// tableOps is tableCore with the methods that need no T.
type tableOps tableCore

// ops is t's tableOps.
func (t *Table[T]) ops() *tableOps { return (*tableOps)(&t.tableCore) }

// NewTable returns the repository of table name for rows of type T. It
// checks T's codec (tags, field types) and the table name now, so a bad
// struct tag fails at start-up rather than on the first write. It makes no
// request; call CreateIfNotExists to create the table.
func NewTable[T any](acct *tablekit.Account, name string, opts *TableOptions) (*Table[T], error) {
	return newTable[T](acct, name, opts, false)
}

// newTable is NewTable; blobs says that the caller keeps T's blob fields
// (entity.Codec.BlobFields), which a plain Table would drop.
func newTable[T any](acct *tablekit.Account, name string, opts *TableOptions, blobs bool) (*Table[T], error) {
	c, err := openTableCore(acct, name, opts, reflect.TypeFor[T](), blobs)
	if err != nil {
		return nil, err
	}
	return &Table[T]{c}, nil
}

// openTableCore is newTable for the entity type typ.
func openTableCore(acct *tablekit.Account, name string, opts *TableOptions, typ reflect.Type, blobs bool) (tableCore, error) {
	if acct == nil {
		return tableCore{}, tkerr.Errorf("tablekit: NewTable: %w: account is nil", tablekit.ErrInvalidArgument)
	}
	o := optsOf(opts)
	codec, err := entity.CodecOf(typ, o.Codec)
	if err != nil {
		return tableCore{}, err
	}
	if bf := codec.BlobFields(); len(bf) > 0 && !blobs {
		return tableCore{}, tkerr.Errorf("tablekit: NewTable[%s]: %w: field %s is tagged blob, and a Table stores no blob (its writes would drop the field); use patterns.NewModel, which keeps it in Blob storage", codec.Type(), tablekit.ErrInvalidEntity, bf[0].GoName)
	}
	for _, p := range codec.Select() {
		if strings.HasPrefix(p, ReservedPrefix) {
			return tableCore{}, tkerr.Errorf("tablekit: NewTable[%s]: %w: property %s starts with %q, which tablekit reserves for its own properties; rename it with a table tag", codec.Type(), tablekit.ErrInvalidEntity, p, ReservedPrefix)
		}
	}
	w, err := wire.Open(acct, name, o.wireOptions())
	if err != nil {
		return tableCore{}, err
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = wire.DefaultMaxAttempts
	}
	return tableCore{acct: acct, name: name, w: w, codec: codec, props: filterProps(codec), maxAttempts: o.MaxAttempts}, nil
}

// Name is the table's name.
func (t *Table[T]) Name() string { return t.name }

// Client is the underlying SDK client, for what tablekit does not wrap.
func (t *Table[T]) Client() *aztables.Client { return t.w.Client() }

// Codec is T's entity codec.
func (t *Table[T]) Codec() *entity.Codec { return t.codec }

// Account is the account the table lives in.
func (t *Table[T]) Account() *tablekit.Account { return t.acct }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request. A table deleted moments ago cannot be created again at once: that
// returns an error wrapping tablekit.ErrConflict (TableBeingDeleted).
func (t *Table[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return t.w.Create(ctx)
}

// Drop deletes the table and every entity in it (one request, whatever its
// size). A table that does not exist is not an error.
func (t *Table[T]) Drop(ctx context.Context, opts *DropOptions) error {
	return t.w.Drop(ctx)
}

// WriteOptions modifies a conditional write. A nil *WriteOptions means the
// defaults: conditional on the value's ETag when T has an ETag field.
type WriteOptions struct {
	// Unconditional writes whatever the stored entity's ETag (If-Match: *).
	// The entity must still exist for Replace, Merge and Delete.
	Unconditional bool
	// ETag overrides the value's ETag field as the If-Match condition.
	ETag string
}

// ifMatch returns the If-Match value for a conditional write of v.
func (t *Table[T]) ifMatch(v *T, opts *WriteOptions) (azcore.ETag, error) {
	return ifMatch(t.codec, v, opts, t.name)
}

// ifMatch returns the If-Match value for a conditional write of v, whose
// codec is c, in table: the ETag opts give, * when opts ask for none or
// the type has no ETag field, else v's ETag (ErrNoETag when it is empty).
func ifMatch(c *entity.Codec, v any, opts *WriteOptions, table string) (azcore.ETag, error) {
	if !c.HasETag() && (opts == nil || opts.ETag == "") {
		return azcore.ETagAny, nil
	}
	pk, rk := c.Keys(v)
	return condition(c.ETag(v), opts, describeKeys(table, pk, rk))
}

// condition returns the If-Match value of a conditional write of an item
// whose version is etag (described by what in errors): the ETag opts
// give, * when opts ask for none, else etag (ErrNoETag when it is empty).
func condition(etag string, opts *WriteOptions, what string) (azcore.ETag, error) {
	if opts != nil {
		if opts.ETag != "" {
			return azcore.ETag(opts.ETag), nil
		}
		if opts.Unconditional {
			return azcore.ETagAny, nil
		}
	}
	if etag == "" {
		return "", fmt.Errorf("%w (%s)", ErrNoETag, what)
	}
	return azcore.ETag(etag), nil
}

// opETag is the condition an If-Match value puts on a core operation:
// none ("") for *, else the ETag.
func opETag(m azcore.ETag) string {
	if m == azcore.ETagAny {
		return ""
	}
	return string(m)
}

// Insert adds v; it fails with tablekit.ErrAlreadyExists when an entity
// with its keys exists. On success v's ETag and Timestamp fields are set.
// One request.
func (t *Table[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	return t.insert(ctx, v, false)
}

// insert is Insert; unique tells that v's keys were made for this write
// alone (a fresh random suffix), so that a stored entity equal to v after
// a lost answer is this write's (see wire.Op.Unique).
func (t *Table[T]) insert(ctx context.Context, v *T, unique bool) error {
	body, pk, rk, err := t.marshal(v)
	if err != nil {
		return err
	}
	etag, err := t.w.Write(ctx, "insert", Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body, Unique: unique})
	if err != nil {
		return err
	}
	t.setMeta(v, etag)
	return nil
}

// write sends one entity write through the core and returns the new
// ETag; a lost response is resolved there (see wire.Table.Write).
func (t *tableOps) write(ctx context.Context, typ OpType, pk, rk string, body []byte, etag, op string) (string, error) {
	return t.w.Write(ctx, op, Op{Type: typ, PartitionKey: pk, RowKey: rk, Entity: body, ETag: etag})
}

// Replace replaces the stored entity with v (properties absent from v are
// removed). It is conditional on v's ETag unless opts say otherwise, and
// fails with tablekit.ErrPreconditionFailed when the entity changed since
// it was read, or tablekit.ErrNotFound when it does not exist. One request.
func (t *Table[T]) Replace(ctx context.Context, v *T, opts *WriteOptions) error {
	return t.update(ctx, v, opts, aztables.UpdateModeReplace, "replace")
}

// Merge merges v's properties into the stored entity (properties absent
// from v are kept). Conditions and errors are those of Replace. Types with
// encrypted properties cannot be merged (ErrEncryptedMerge). One request.
func (t *Table[T]) Merge(ctx context.Context, v *T, opts *WriteOptions) error {
	if t.codec.Encrypted() {
		return ErrEncryptedMerge
	}
	return t.update(ctx, v, opts, aztables.UpdateModeMerge, "merge")
}

func (t *Table[T]) update(ctx context.Context, v *T, opts *WriteOptions, mode aztables.UpdateMode, op string) error {
	body, pk, rk, err := t.marshal(v)
	if err != nil {
		return err
	}
	etag, err := t.ifMatch(v, opts)
	if err != nil {
		return err
	}
	typ := OpReplace
	if mode == aztables.UpdateModeMerge {
		typ = OpMerge
	}
	newETag, err := t.ops().write(ctx, typ, pk, rk, body, string(etag), op)
	if err != nil {
		return err
	}
	t.setMeta(v, newETag)
	return nil
}

// Upsert inserts v or, when it exists, replaces or merges it, whatever its
// ETag: the checklist's advice to prefer upserts over read-then-write. On
// success v's ETag and Timestamp fields are set. opts.Mode chooses
// replace (the default) or merge. One request.
func (t *Table[T]) Upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	mode, err := upsertMode(opts)
	if err != nil {
		return err
	}
	if mode == UpsertMerge && t.codec.Encrypted() {
		return ErrEncryptedMerge
	}
	body, pk, rk, err := t.marshal(v)
	if err != nil {
		return err
	}
	typ := OpUpsertReplace
	if mode == UpsertMerge {
		typ = OpUpsertMerge
	}
	etag, err := t.ops().write(ctx, typ, pk, rk, body, "", "upsert")
	if err != nil {
		return err
	}
	t.setMeta(v, etag)
	return nil
}

// Delete removes the entity with v's keys, conditional on v's ETag unless
// opts say otherwise. It fails with tablekit.ErrNotFound when the entity
// does not exist and tablekit.ErrPreconditionFailed when it changed. One
// request.
func (t *Table[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	pk, rk := t.codec.Keys(v)
	if err := validateKeys(pk, rk); err != nil {
		return err
	}
	etag, err := t.ifMatch(v, opts)
	if err != nil {
		return err
	}
	return t.ops().deleteKeys(ctx, pk, rk, etag)
}

// deleteTarget returns the keys of v and the version a delete of v is
// conditional on ("" for none), for repositories that read before they
// delete (wire.ModifyOptions.IfMatch).
func (t *Table[T]) deleteTarget(v *T, opts *WriteOptions) (pk, rk, etag string, err error) {
	if v == nil {
		return "", "", "", tkerr.Errorf("tablekit: delete from %s: %w: nil *%s", t.name, tablekit.ErrInvalidArgument, t.codec.Type())
	}
	return t.ops().deleteTargetOf(v, opts)
}

// deleteTargetOf is deleteTarget of v, a non-nil *T.
func (t *tableOps) deleteTargetOf(v any, opts *WriteOptions) (pk, rk, etag string, err error) {
	pk, rk = t.codec.Keys(v)
	if err := validateKeys(pk, rk); err != nil {
		return "", "", "", err
	}
	m, err := ifMatch(t.codec, v, opts, t.name)
	if err != nil {
		return "", "", "", err
	}
	return pk, rk, opETag(m), nil
}

// readForDelete reads the entity a delete of v (conditional per opts)
// removes, for repositories that must see it before deleting it (its
// index values, its blobs): it returns the stored entity and its ETag, or
// tablekit.ErrPreconditionFailed when the delete is conditional and the
// stored version is another. One request.
func (t *Table[T]) readForDelete(ctx context.Context, v *T, opts *WriteOptions) (old T, etag string, err error) {
	pk, rk, want, err := t.deleteTarget(v, opts)
	if err != nil {
		return old, "", err
	}
	etag, err = t.ops().readForDeleteInto(ctx, pk, rk, want, &old)
	return old, etag, err
}

// readForDeleteInto is readForDelete of the entity (pk, rk) into old (a
// *T), want being the ETag the delete is conditional on ("" for none).
func (t *tableOps) readForDeleteInto(ctx context.Context, pk, rk, want string, old any) (etag string, err error) {
	etag, _, err = t.readInto(ctx, pk, rk, old)
	if err != nil {
		return "", err
	}
	if want != "" && want != etag {
		return "", tkerr.Errorf("tablekit: delete %s: %w: the entity changed since it was read (stored ETag %s, expected %s)", describeKeys(t.name, pk, rk), tablekit.ErrPreconditionFailed, etag, want)
	}
	return etag, nil
}

func (t *tableOps) deleteKeys(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	_, err := t.write(ctx, OpDelete, pk, rk, nil, opETag(etag), "delete")
	return err
}

// DeleteIfExists removes the entity with the given keys, whatever its ETag.
// It reports whether the entity existed; a missing entity is not an error.
// One request.
func (t *Table[T]) DeleteIfExists(ctx context.Context, pk, rk string, opts *DeleteIfExistsOptions) (existed bool, err error) {
	return t.ops().deleteIfExists(ctx, pk, rk)
}

func (t *tableOps) deleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
	if err := validateKeys(pk, rk); err != nil {
		return false, err
	}
	err = t.deleteKeys(ctx, pk, rk, azcore.ETagAny)
	if errors.Is(err, tablekit.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Get reads one entity: the guide's point query, the fastest there is. It
// fails with tablekit.ErrNotFound when there is none. One request.
func (t *Table[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	v, _, err := t.getWithETag(ctx, pk, rk)
	return v, err
}

// Update is a read-modify-write loop that loses no concurrent update: it
// reads the entity, calls fn on it, and replaces it conditionally on the
// ETag it read; when another writer got there first (HTTP 412) it reads
// again and calls fn again, up to TableOptions.MaxAttempts times
// (UpdateOptions.MaxAttempts for this call).
// fn must be safe to call more than once and should not keep the pointer.
// An error from fn aborts the update and is returned as is. The entity must
// exist (tablekit.ErrNotFound otherwise). Two requests per attempt.
//
// Update applies fn's change exactly once, or fails with an error wrapping
// tablekit.ErrOutcomeUnknown: when a write's response is lost (and azcore
// retries it while other writers are at work), the entity's write-id log
// (UpdateLogProperty, one of its 252 properties) tells whether the
// write landed, and when it cannot tell, Update says so instead of applying
// the change a second time. On ErrOutcomeUnknown, Get the entity and decide.
func (t *Table[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	return t.modify(ctx, pk, rk, fn, func(_, v *T) ([]Op, error) {
		body, _, _, err := t.marshal(v)
		return []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, err
	}, wire.ModifyOptions{Verb: "update", MaxAttempts: updateAttempts(opts, 0)})
}

// modify is the read-modify-write of the entity (pk, rk) of t through
// wire.ModifyBatch, for repositories that keep other entities in step with
// it. Each attempt decodes the stored entity (old, with the ETag read),
// applies fn to a copy (v; a nil fn leaves it as read), checks that fn
// kept the keys, and sends the operations ops returns, the first being
// v's own write: ModifyBatch makes it conditional on the ETag read and
// adds the write-id log. The entity must exist (tablekit.ErrNotFound
// otherwise); o.MaxAttempts defaults to the table's. On success v carries
// the entity's new ETag (none when the write's response was lost and
// others have written since).
func (t *Table[T]) modify(ctx context.Context, pk, rk string, fn func(*T) error, ops func(old, v *T) ([]Op, error), o wire.ModifyOptions) (T, error) {
	return t.modifyWith(ctx, pk, rk, fn, nil, func(old, v *T, _ []byte) ([]Op, error) { return ops(old, v) }, o)
}

// modifyWith is modify with the stored entity's body given to ops, and
// prepare, when set, called on the stored value before fn sees it.
func (t *Table[T]) modifyWith(ctx context.Context, pk, rk string, fn func(*T) error, prepare func(old *T, stored []byte) error, ops func(old, v *T, stored []byte) ([]Op, error), o wire.ModifyOptions) (T, error) {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = t.maxAttempts
	}
	o.MustExist = true
	var v T
	m, err := t.w.ModifyBatch(ctx, pk, rk, func(stored []byte, etag string) ([]Op, error) {
		var old T
		if err := t.ops().decodeStored(stored, etag, &old, pk, rk); err != nil {
			return nil, err
		}
		if prepare != nil {
			if err := prepare(&old, stored); err != nil {
				return nil, err
			}
		}
		v = old
		if fn != nil {
			if err := fn(&v); err != nil {
				return nil, err
			}
			if err := t.ops().keptKeys(&v, pk, rk); err != nil {
				return nil, err
			}
		}
		return ops(&old, &v, stored)
	}, &o)
	if err != nil {
		var zero T
		return zero, err
	}
	t.codec.SetMeta(&v, m.ETag, TimestampFromETag(m.ETag))
	return v, nil
}

// decodeStored decodes stored, the entity (pk, rk) as read with etag,
// into v (a *T).
func (t *tableOps) decodeStored(stored []byte, etag string, v any, pk, rk string) error {
	if err := t.codec.Unmarshal(stored, v); err != nil {
		return tkerr.Errorf("tablekit: get %s: %w", describeKeys(t.name, pk, rk), err)
	}
	t.codec.SetMeta(v, etag, time.Time{})
	return nil
}

// keptKeys checks that v (a *T an update's fn changed) still has the
// keys (pk, rk).
func (t *tableOps) keptKeys(v any, pk, rk string) error {
	if npk, nrk := t.codec.Keys(v); npk != pk || nrk != rk {
		return fmt.Errorf("tablekit: update %s: fn changed the entity's keys to (%q, %q); keys are immutable, insert a new entity instead", describeKeys(t.name, pk, rk), npk, nrk)
	}
	return nil
}

// read fetches one entity and decodes it, returning its ETag and JSON
// too. A missing entity is an error wrapping tablekit.ErrNotFound.
func (t *Table[T]) read(ctx context.Context, pk, rk string) (T, string, []byte, error) {
	var v T
	etag, body, err := t.ops().readInto(ctx, pk, rk, &v)
	return v, etag, body, err
}

// readInto is read, decoding into v (a *T).
func (t *tableOps) readInto(ctx context.Context, pk, rk string, v any) (etag string, body []byte, err error) {
	if err := validateKeys(pk, rk); err != nil {
		return "", nil, err
	}
	body, etag, err = t.w.Get(ctx, pk, rk)
	if err != nil {
		return "", nil, err
	}
	if err := t.decodeStored(body, etag, v, pk, rk); err != nil {
		return "", nil, err
	}
	return etag, body, nil
}

func (t *Table[T]) getWithETag(ctx context.Context, pk, rk string) (T, string, error) {
	v, etag, _, err := t.read(ctx, pk, rk)
	return v, etag, err
}

func (t *Table[T]) marshal(v *T) (body []byte, pk, rk string, err error) {
	if v == nil {
		return nil, "", "", t.ops().nilEntity()
	}
	return t.ops().marshalValue(v)
}

// nilEntity is the error of a write given a nil *T.
func (t *tableOps) nilEntity() error {
	return tkerr.Errorf("tablekit: %s: %w: nil *%s", t.name, tablekit.ErrInvalidEntity, t.codec.Type())
}

// marshalValue is marshal of v, a non-nil *T.
func (t *tableOps) marshalValue(v any) (body []byte, pk, rk string, err error) {
	body, err = t.codec.Marshal(v)
	if err != nil {
		return nil, "", "", err
	}
	pk, rk = t.codec.Keys(v)
	return body, pk, rk, nil
}

func (t *Table[T]) setMeta(v *T, etag string) {
	t.codec.SetMeta(v, etag, TimestampFromETag(etag))
}

func (t *tableCore) describe(pk, rk string) string { return describeKeys(t.name, pk, rk) }

func validateKeys(pk, rk string) error { return wire.ValidateKeys(pk, rk) }

func randomID() string { return wire.RandomID() }

// TimestampFromETag extracts the service timestamp an entity ETag carries
// (W/"datetime'2026-01-02T03%3A04%3A05.1234567Z'"), or the zero time when
// the ETag has another form.
func TimestampFromETag(etag string) time.Time { return wire.TimestampFromETag(etag) }

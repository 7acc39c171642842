package patterns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/keys"
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
	// MaxUpdateAttempts bounds Update's read-modify-write loop on ETag
	// conflicts. Default 16.
	MaxUpdateAttempts int
	// SDKPath sends every request through the aztables client instead of
	// tablekit's own REST calls (the fast path). Both behave the same;
	// the fast path skips the SDK's map[string]any round trips. Cosmos DB
	// Table endpoints always use the SDK path.
	SDKPath bool
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
	acct        *tablekit.Account
	name        string
	client      *aztables.Client
	codec       *entity.Codec
	maxAttempts int
	fast        *fastPath // nil: use the SDK
}

// NewTable returns the repository of table name for rows of type T. It
// checks T's codec (tags, field types) and the table name now, so a bad
// struct tag fails at start-up rather than on the first write. It makes no
// request; call CreateIfNotExists to create the table.
func NewTable[T any](acct *tablekit.Account, name string, opts *TableOptions) (*Table[T], error) {
	if acct == nil {
		return nil, errors.New("tablekit: NewTable: account is nil")
	}
	var o TableOptions
	if opts != nil {
		o = *opts
	}
	codec, err := entity.CodecOf(reflect.TypeFor[T](), o.Codec)
	if err != nil {
		return nil, err
	}
	client, err := acct.Table(name)
	if err != nil {
		return nil, err
	}
	if o.MaxUpdateAttempts <= 0 {
		o.MaxUpdateAttempts = 16
	}
	return &Table[T]{acct: acct, name: name, client: client, codec: codec, maxAttempts: o.MaxUpdateAttempts,
		fast: newFastPath(acct, name, o.SDKPath)}, nil
}

// Name is the table's name.
func (t *Table[T]) Name() string { return t.name }

// Client is the underlying SDK client, for what tablekit does not wrap.
func (t *Table[T]) Client() *aztables.Client { return t.client }

// Codec is T's entity codec.
func (t *Table[T]) Codec() *entity.Codec { return t.codec }

// Account is the account the table lives in.
func (t *Table[T]) Account() *tablekit.Account { return t.acct }

// CreateIfNotExists creates the table; an existing table is not an error.
// A table deleted moments ago cannot be created again at once: that
// returns an error wrapping tablekit.ErrConflict (TableBeingDeleted).
func (t *Table[T]) CreateIfNotExists(ctx context.Context) error {
	_, err := t.client.CreateTable(ctx, nil)
	err = tablekit.MapError(err, "create table", t.name)
	if errors.Is(err, tablekit.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Drop deletes the table and every entity in it (one request, whatever its
// size). A table that does not exist is not an error.
func (t *Table[T]) Drop(ctx context.Context) error {
	_, err := t.client.Delete(ctx, nil)
	err = tablekit.MapError(err, "delete table", t.name)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil
	}
	return err
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
	if opts != nil {
		if opts.ETag != "" {
			return azcore.ETag(opts.ETag), nil
		}
		if opts.Unconditional {
			return azcore.ETagAny, nil
		}
	}
	if !t.codec.HasETag() {
		return azcore.ETagAny, nil
	}
	if etag := t.codec.ETag(v); etag != "" {
		return azcore.ETag(etag), nil
	}
	pk, rk := t.codec.Keys(v)
	return "", fmt.Errorf("%w (%s)", ErrNoETag, t.describe(pk, rk))
}

// Insert adds v; it fails with tablekit.ErrAlreadyExists when an entity
// with its keys exists. On success v's ETag and Timestamp fields are set.
// One request.
func (t *Table[T]) Insert(ctx context.Context, v *T) error {
	body, pk, rk, err := t.marshal(v)
	if err != nil {
		return err
	}
	etag, err := t.write(ctx, OpInsert, pk, rk, body, "", "insert")
	if err != nil {
		return err
	}
	t.setMeta(v, etag)
	return nil
}

// write sends one entity write and returns the new ETag. A failure that
// echoes the write's own earlier attempt (see ambiguous.go) is resolved by
// reading the entity back.
func (t *Table[T]) write(ctx context.Context, typ OpType, pk, rk string, body []byte, etag, op string) (string, error) {
	ctx, tries := attempts.With(ctx)
	newETag, err := t.writeOnce(ctx, typ, pk, rk, body, etag, op)
	if ambiguous(typ, err, tries.Load()) {
		stored, storedETag, rerr := readStored(ctx, t.client, t.fast, t.name, pk, rk)
		if rerr == nil && showsEffect(Op{Type: typ, Entity: body}, stored) {
			return storedETag, nil
		}
	}
	return newETag, err
}

func (t *Table[T]) writeOnce(ctx context.Context, typ OpType, pk, rk string, body []byte, etag, op string) (string, error) {
	return writeEntity(ctx, t.client, t.fast, typ, pk, rk, body, etag, op, t.describe(pk, rk))
}

// writeEntity sends one entity write, on the fast path when there is one,
// and returns the new ETag; label names the entity in errors. An empty
// etag means If-Match: * for the conditional operations.
func writeEntity(ctx context.Context, client *aztables.Client, fast *fastPath, typ OpType, pk, rk string, body []byte, etag, op, label string) (string, error) {
	if fast != nil {
		return fast.write(ctx, typ, pk, rk, body, etag, op, label)
	}
	var err error
	var newETag azcore.ETag
	ifMatch := azcore.ETag(etag)
	if ifMatch == "" {
		ifMatch = azcore.ETagAny
	}
	switch typ {
	case OpInsert:
		var resp aztables.AddEntityResponse
		resp, err = client.AddEntity(ctx, body, nil)
		newETag = resp.ETag
	case OpReplace, OpMerge:
		mode := aztables.UpdateModeReplace
		if typ == OpMerge {
			mode = aztables.UpdateModeMerge
		}
		var resp aztables.UpdateEntityResponse
		resp, err = client.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &ifMatch, UpdateMode: mode})
		newETag = resp.ETag
	case OpUpsertReplace, OpUpsertMerge:
		mode := aztables.UpdateModeReplace
		if typ == OpUpsertMerge {
			mode = aztables.UpdateModeMerge
		}
		var resp aztables.UpsertEntityResponse
		resp, err = client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: mode})
		newETag = resp.ETag
	case OpDelete:
		_, err = client.DeleteEntity(ctx, pk, rk, &aztables.DeleteEntityOptions{IfMatch: &ifMatch})
	}
	if err != nil {
		return "", tablekit.MapError(err, op, label)
	}
	return string(newETag), nil
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
	newETag, err := t.write(ctx, typ, pk, rk, body, string(etag), op)
	if err != nil {
		return err
	}
	t.setMeta(v, newETag)
	return nil
}

// UpsertMode chooses what an upsert does to an existing entity.
type UpsertMode int

const (
	// UpsertReplace replaces an existing entity (insert-or-replace).
	UpsertReplace UpsertMode = iota
	// UpsertMerge merges into an existing entity (insert-or-merge).
	UpsertMerge
)

// Upsert inserts v or, when it exists, replaces or merges it, whatever its
// ETag: the checklist's advice to prefer upserts over read-then-write. On
// success v's ETag and Timestamp fields are set. One request.
func (t *Table[T]) Upsert(ctx context.Context, v *T, mode UpsertMode) error {
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
	etag, err := t.write(ctx, typ, pk, rk, body, "", "upsert")
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
	return t.deleteKeys(ctx, pk, rk, etag)
}

func (t *Table[T]) deleteKeys(ctx context.Context, pk, rk string, etag azcore.ETag) error {
	if etag == azcore.ETagAny {
		etag = ""
	}
	_, err := t.write(ctx, OpDelete, pk, rk, nil, string(etag), "delete")
	return err
}

// DeleteIfExists removes the entity with the given keys, whatever its ETag.
// It reports whether the entity existed; a missing entity is not an error.
// One request.
func (t *Table[T]) DeleteIfExists(ctx context.Context, pk, rk string) (existed bool, err error) {
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
func (t *Table[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	v, _, err := t.getWithETag(ctx, pk, rk)
	return v, err
}

// Update is a read-modify-write loop that loses no concurrent update: it
// reads the entity, calls fn on it, and replaces it conditionally on the
// ETag it read; when another writer got there first (HTTP 412) it reads
// again and calls fn again, up to TableOptions.MaxUpdateAttempts times.
// fn must be safe to call more than once and should not keep the pointer.
// An error from fn aborts the update and is returned as is. The entity must
// exist (tablekit.ErrNotFound otherwise). Two requests per attempt.
//
// Update never applies fn's change twice, even when a write reaches the
// service but its response is lost and azcore retries it while other
// writers are at work: each write records a random id in the entity's
// UpdateLogProperty (the ids of the last 8 updates), and a write that fails
// after a retry counts as done when its id is in the stored log. The
// property is one of the entity's 252.
func (t *Table[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error) (T, error) {
	var zero T
	var lastErr error
	id := randomID()[:16]
	for attempt := 0; attempt < t.maxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		v, etag, raw, err := t.read(ctx, pk, rk)
		if err != nil {
			return zero, err
		}
		if err := fn(&v); err != nil {
			return zero, err
		}
		if npk, nrk := t.codec.Keys(&v); npk != pk || nrk != rk {
			return zero, fmt.Errorf("tablekit: update %s: fn changed the entity's keys to (%q, %q); keys are immutable, insert a new entity instead", t.describe(pk, rk), npk, nrk)
		}
		body, _, _, err := t.marshal(&v)
		if err != nil {
			return zero, err
		}
		body = withUpdateLog(body, updateLog(raw), id)
		wctx, tries := attempts.With(ctx)
		newETag, err := t.writeOnce(wctx, OpReplace, pk, rk, body, etag, "update")
		if err == nil {
			t.setMeta(&v, newETag)
			return v, nil
		}
		if ambiguous(OpReplace, err, tries.Load()) {
			stored, storedETag, rerr := readStored(ctx, t.client, t.fast, t.name, pk, rk)
			if rerr == nil && slices.Contains(updateLog(stored), id) {
				// Our write landed; later writers may have followed it.
				if log := updateLog(stored); log[len(log)-1] == id {
					t.setMeta(&v, storedETag)
				} else {
					t.codec.SetMeta(&v, "", time.Time{})
				}
				return v, nil
			}
		}
		if !errors.Is(err, tablekit.ErrPreconditionFailed) {
			return zero, err
		}
		lastErr = err
		if err := conflictPause(ctx, attempt); err != nil {
			return zero, err
		}
	}
	return zero, fmt.Errorf("tablekit: update %s: gave up after %d attempts, the entity kept changing: %w", t.describe(pk, rk), t.maxAttempts, lastErr)
}

// conflictPause waits a random time, growing with the attempt and capped
// at 50 ms, after a lost optimistic-concurrency race, so that writers
// contending for one entity spread out instead of colliding again.
func conflictPause(ctx context.Context, attempt int) error {
	limit := time.Millisecond << min(attempt, 6)
	if limit > 50*time.Millisecond {
		limit = 50 * time.Millisecond
	}
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(limit))))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// readForUpdate is the first half of every read-modify-write loop: it
// reads (pk, rk), applies fn to a copy, and checks that fn kept the keys.
// An error from fn is returned as is.
func (t *Table[T]) readForUpdate(ctx context.Context, pk, rk string, fn func(*T) error) (old, v T, etag string, err error) {
	old, etag, err = t.getWithETag(ctx, pk, rk)
	if err != nil {
		return old, v, "", err
	}
	v = old
	if err := fn(&v); err != nil {
		return old, v, "", err
	}
	if npk, nrk := t.codec.Keys(&v); npk != pk || nrk != rk {
		return old, v, "", fmt.Errorf("tablekit: update %s: fn changed the entity's keys to (%q, %q); keys are immutable, insert a new entity instead", t.describe(pk, rk), npk, nrk)
	}
	return old, v, etag, nil
}

// read fetches one entity and decodes it, returning its ETag and JSON
// too. A missing entity is an error wrapping tablekit.ErrNotFound.
func (t *Table[T]) read(ctx context.Context, pk, rk string) (T, string, []byte, error) {
	var v T
	if err := validateKeys(pk, rk); err != nil {
		return v, "", nil, err
	}
	body, etag, err := fetchEntity(ctx, t.client, t.fast, t.describe(pk, rk), pk, rk)
	if err != nil {
		return v, "", nil, err
	}
	if err := t.codec.Unmarshal(body, &v); err != nil {
		return v, "", nil, fmt.Errorf("tablekit: get %s: %w", t.describe(pk, rk), err)
	}
	t.codec.SetMeta(&v, etag, time.Time{})
	return v, etag, body, nil
}

func (t *Table[T]) getWithETag(ctx context.Context, pk, rk string) (T, string, error) {
	v, etag, _, err := t.read(ctx, pk, rk)
	return v, etag, err
}

func (t *Table[T]) marshal(v *T) (body []byte, pk, rk string, err error) {
	if v == nil {
		return nil, "", "", fmt.Errorf("tablekit: %s: %w: nil *%s", t.name, tablekit.ErrInvalidEntity, t.codec.Type())
	}
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

func (t *Table[T]) describe(pk, rk string) string {
	return t.name + " (PartitionKey " + strconv.Quote(pk) + ", RowKey " + strconv.Quote(rk) + ")"
}

func validateKeys(pk, rk string) error {
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return keys.ValidateKey("RowKey", rk)
}

// TimestampFromETag extracts the service timestamp an entity ETag carries
// (W/"datetime'2026-01-02T03%3A04%3A05.1234567Z'"), or the zero time when
// the ETag has another form.
func TimestampFromETag(etag string) time.Time {
	i := strings.Index(etag, "datetime'")
	if i < 0 {
		return time.Time{}
	}
	rest := etag[i+len("datetime'"):]
	j := strings.IndexByte(rest, '\'')
	if j < 0 {
		return time.Time{}
	}
	s, err := url.QueryUnescape(rest[:j])
	if err != nil {
		return time.Time{}
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return ts.UTC()
}

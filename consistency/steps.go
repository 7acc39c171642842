package consistency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// The built-in step kinds. The tablekit-worker binary runs all of them
// with no user code.
const (
	// KindUpsertEntity writes an entity (UpsertEntityArgs). Idempotent:
	// writing the same entity again leaves the same state (replace
	// writes the whole entity; merge writes the same property values).
	KindUpsertEntity = "upsert-entity"
	// KindDeleteEntity deletes an entity if it exists (EntityRef).
	// Idempotent: a missing entity is success.
	KindDeleteEntity = "delete-entity"
	// KindMoveEntity copies an entity to another table (or keys) and
	// deletes the source (MoveEntityArgs), the guide's archive example.
	// Idempotent: when the source is gone and the destination exists the
	// move is done; the delete is conditioned on the ETag read, so a
	// source updated meanwhile is copied again, never lost.
	KindMoveEntity = "move-entity"
	// KindPutBlob uploads a blob, overwriting it (PutBlobArgs).
	// Idempotent: the same bytes give the same blob.
	KindPutBlob = "put-blob"
	// KindDeleteBlob deletes a blob if it exists (BlobRef). Idempotent:
	// a missing blob is success.
	KindDeleteBlob = "delete-blob"
	// KindSyncCopies makes the copies of a source entity (secondary index
	// entities in other partitions or tables, denormalized copies) match
	// the source as it is when the step runs (SyncCopiesArgs). Idempotent
	// and order-insensitive: it reads the source every time.
	KindSyncCopies = "sync-copies"
	// KindIndexList adds a member key to, or removes it from, a list kept
	// in an index entity, according to whether the source entity currently
	// qualifies (IndexListArgs): the guide's index-entity option 3.
	// Idempotent and order-insensitive: membership is read from the
	// source every time.
	KindIndexList = "index-list"
	// KindBlobCleanup deletes a blob that the source entity no longer
	// references (BlobCleanupArgs): orphans of the large-entities pattern.
	// Idempotent: a blob still referenced is kept, a missing one ignored.
	KindBlobCleanup = "blob-cleanup"
)

// maxReadRepair bounds the read-apply-reread loops of sync-copies and
// index-list, and the attempts of the core's read-modify-write loop
// (wire.Table.Modify) in copy-props, index-list and move-entity; past it
// the step fails with a retryable error and the worker tries again later.
const maxReadRepair = 8

type builtin struct {
	validate func(json.RawMessage) (any, error) // the decoded arguments, a *T
	apply    Handler
}

var builtins = map[string]builtin{
	KindUpsertEntity:   builtinOf(KindUpsertEntity, applyUpsertEntity),
	KindDeleteEntity:   builtinOf(KindDeleteEntity, applyDeleteEntity),
	KindMoveEntity:     builtinOf(KindMoveEntity, applyMoveEntity),
	KindPutBlob:        builtinOf(KindPutBlob, applyPutBlob),
	KindDeleteBlob:     builtinOf(KindDeleteBlob, applyDeleteBlob),
	KindSyncCopies:     builtinOf(KindSyncCopies, applySyncCopies),
	KindIndexList:      builtinOf(KindIndexList, applyIndexList),
	KindBlobCleanup:    builtinOf(KindBlobCleanup, applyBlobCleanup),
	KindCopyProps:      builtinOf(KindCopyProps, applyCopyProps),
	KindCopyPropsWhere: builtinOf(KindCopyPropsWhere, applyCopyPropsWhere),
}

// builtinOf is the built-in step kind whose arguments are a T: both its
// validation and apply decode and validate them first.
func builtinOf[T any, P interface {
	*T
	validator
}](kind string, apply func(ctx context.Context, c *Call, args *T) error) builtin {
	return builtin{validate: validateAs[T, P](kind), apply: func(ctx context.Context, c *Call) error {
		// The worker validated the step just before: its decoded
		// arguments are used, not decoded a second time.
		if a, ok := c.parsed.(*T); ok && a != nil {
			return apply(ctx, c, a)
		}
		a, err := decodeArgs[T, P](c.Kind, c.Args)
		if err != nil {
			return err
		}
		return apply(ctx, c, a)
	}}
}

type validator interface{ validate(kind string) error }

func validateAs[T any, P interface {
	*T
	validator
}](kind string) func(json.RawMessage) (any, error) {
	return func(raw json.RawMessage) (any, error) {
		a, err := decodeArgs[T, P](kind, raw)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
}

func decodeArgs[T any, P interface {
	*T
	validator
}](kind string, raw json.RawMessage) (*T, error) {
	c := Call{Kind: kind, Args: raw}
	v := new(T)
	if err := c.Decode(v); err != nil {
		return nil, err
	}
	if err := P(v).validate(kind); err != nil {
		return nil, err
	}
	return v, nil
}

// ---- upsert-entity ----

// UpsertEntityArgs are the arguments of KindUpsertEntity.
type UpsertEntityArgs struct {
	Table string `json:"table"`
	// Entity is the entity in the Table service's JSON form, with
	// PartitionKey, RowKey and "@odata.type" annotations for typed
	// properties (Int64, Double, DateTime, Guid, Binary), as
	// entity.Marshal produces it.
	Entity json.RawMessage `json:"entity"`
	// Mode is tablekit.UpsertReplace (the default: the stored entity
	// becomes exactly Entity) or tablekit.UpsertMerge. It travels as
	// "replace" or "merge", as aztables.UpdateMode did.
	Mode tablekit.UpsertMode `json:"mode,omitempty"`

	parsed entity.Entity // Entity, decoded and checked by validate
}

func (a *UpsertEntityArgs) validate(kind string) error {
	if err := keys.ValidateTableName(a.Table); err != nil {
		return invalidArgs(kind, "table", err)
	}
	if !a.Mode.Valid() {
		return argsError(kind, "mode "+a.Mode.String()+" is neither replace nor merge")
	}
	e, err := parseStepEntity(kind, a.Entity)
	a.parsed = e
	return err
}

// UpsertEntity returns a KindUpsertEntity step writing entity (the Table
// service JSON of one entity) to table with the given mode. Enqueue, Apply and the worker refuse the step, before any
// request, when the entity breaks one of Azure's limits
// (entity.Entity.Validate): too many properties, a String or Binary
// value too long, an entity over 1 MiB, an invalid property name or key.
func UpsertEntity(table string, entity []byte, mode tablekit.UpsertMode) Step {
	return NewStep(KindUpsertEntity, UpsertEntityArgs{Table: table, Entity: entity, Mode: mode})
}

func applyUpsertEntity(ctx context.Context, c *Call, a *UpsertEntityArgs) error {
	typ := wire.OpUpsertReplace
	if a.Mode == tablekit.UpsertMerge {
		typ = wire.OpUpsertMerge
	}
	return upsertEntity(ctx, c.tableSet(), a.Table, a.parsed, typ)
}

// ---- delete-entity ----

func (r *EntityRef) validate(kind string) error {
	if err := keys.ValidateTableName(r.Table); err != nil {
		return invalidArgs(kind, "table", err)
	}
	if err := keys.ValidateKey("PartitionKey", r.PartitionKey); err != nil {
		return invalidArgs(kind, "pk", err)
	}
	if err := keys.ValidateKey("RowKey", r.RowKey); err != nil {
		return invalidArgs(kind, "rk", err)
	}
	return nil
}

// DeleteEntity returns a KindDeleteEntity step.
func DeleteEntity(ref EntityRef) Step { return NewStep(KindDeleteEntity, ref) }

func applyDeleteEntity(ctx context.Context, c *Call, r *EntityRef) error {
	return deleteEntityIfExists(ctx, c.tableSet(), *r, "")
}

// ---- move-entity ----

// MoveEntityArgs are the arguments of KindMoveEntity.
type MoveEntityArgs struct {
	From EntityRef `json:"from"`
	// To is the destination; an empty pk or rk keeps the source's.
	To EntityRef `json:"to"`
	// MissingOK makes the step succeed when neither the source nor the
	// destination exists. By default that is a permanent error wrapping
	// tablekit.ErrNotFound: the entity to move never existed, or was
	// deleted from its destination after the move.
	MissingOK bool `json:"missingOk,omitempty"`
}

func (a *MoveEntityArgs) validate(kind string) error {
	if err := a.From.validateField(kind, "from"); err != nil {
		return err
	}
	to := a.dest()
	if err := to.validateField(kind, "to"); err != nil {
		return err
	}
	if to == a.From {
		return argsError(kind, "from and to name the same entity")
	}
	return nil
}

func (a *MoveEntityArgs) dest() EntityRef {
	to := a.To
	if to.PartitionKey == "" {
		to.PartitionKey = a.From.PartitionKey
	}
	if to.RowKey == "" {
		to.RowKey = a.From.RowKey
	}
	return to
}

// MoveEntity returns a KindMoveEntity step moving from to to, keeping the
// entity's own properties and their types exactly. The entity's views go
// with it: the copies its CopiesProperty lists (an index's copies in other
// partitions or tables, its rows in its own partition) are deleted, and
// the destination carries none of the bookkeeping that named them
// (CopiesProperty, IntentProperty and the primary key properties), so a moved indexed entity leaves no orphan.
func MoveEntity(from, to EntityRef) Step {
	return NewStep(KindMoveEntity, MoveEntityArgs{From: from, To: to})
}

// withoutBookkeeping returns e without the properties that describe its
// place among its views (CopiesProperty, IntentProperty and the primary key properties).
func withoutBookkeeping(e entity.Entity) entity.Entity {
	for _, n := range bookkeeping {
		delete(e.Properties, n)
	}
	return e
}

func applyMoveEntity(ctx context.Context, c *Call, a *MoveEntityArgs) error {
	to := a.dest()
	ts := c.tableSet()
	from, err := ts.table(a.From.Table)
	if err != nil {
		return err
	}
	// The core's read-modify-write loop: read the source, copy it, delete
	// it conditionally on the ETag read, with the views that live in its
	// partition (one entity group transaction); a source updated meanwhile
	// (412) is read and copied again, never lost. The copies elsewhere are
	// deleted before the source (a redelivery after the source is gone no
	// longer knows them) and again after it: a sync of the source that ran
	// in between, and saw it still there, wrote them back.
	var elsewhere []EntityRef
	var lists []IndexListArgs
	var sent []wire.Op
	missing := map[EntityRef]bool{}
	_, err = from.ModifyBatch(ctx, a.From.PartitionKey, a.From.RowKey, func(stored []byte, _ string) ([]wire.Op, error) {
		p, err := decodeStored(a.From, stored)
		if err != nil {
			return nil, err
		}
		specs, err := parseCopies(c.Kind, a.From, CopiesProperty, p)
		if err != nil {
			return nil, err
		}
		ops := []wire.Op{{Type: wire.OpDelete, PartitionKey: a.From.PartitionKey, RowKey: a.From.RowKey}}
		elsewhere = elsewhere[:0]
		lists = lists[:0]
		for _, s := range specs {
			r := s.Ref()
			switch {
			case s.List != "":
				lists = append(lists, IndexListArgs{Index: r, Property: s.List, Member: s.Member})
			case s.Local && !missing[r]:
				ops = append(ops, wire.Op{Type: wire.OpDelete, PartitionKey: r.PartitionKey, RowKey: r.RowKey})
			case !s.Local:
				elsewhere = append(elsewhere, r)
			}
		}
		if err := dropViews(ctx, ts, elsewhere, lists); err != nil {
			return nil, err
		}
		if err := upsertEntity(ctx, ts, to.Table, withoutBookkeeping(withKeys(p, to.PartitionKey, to.RowKey, nil)), wire.OpUpsertReplace); err != nil {
			return nil, err
		}
		sent = ops
		return ops, nil
	}, &wire.ModifyOptions{MaxAttempts: maxReadRepair, Verb: "move-entity: delete", MustExist: true, Typed: true, Race: func(err error) bool {
		// A view of the source's partition already gone: what its
		// deletion wanted; the next attempt leaves it out.
		if i, ok := txIndex(err); ok && i > 0 && i < len(sent) && entityMissing(err) {
			missing[EntityRef{Table: a.From.Table, PartitionKey: sent[i].PartitionKey, RowKey: sent[i].RowKey}] = true
			return true
		}
		return lostRace(err)
	}})
	if err == nil {
		return dropViews(ctx, ts, elsewhere, lists)
	}
	if !entityMissing(err) {
		return modifyErr(err, lostRace)
	}
	_, _, there, err := getEntity(ctx, ts, to)
	if err != nil {
		return err
	}
	if there || a.MissingOK {
		return nil // done, by this or an earlier delivery
	}
	return Permanent(&wrapped{msg: "consistency: move-entity: neither " + a.From.String() + " nor " + to.String() + " exists", err: tablekit.ErrNotFound})
}

// dropViews deletes the copies refs and takes the members out of the
// lists of lists: the views of an entity that moves.
func dropViews(ctx context.Context, ts *tableSet, refs []EntityRef, lists []IndexListArgs) error {
	for _, r := range refs {
		if err := deleteEntityIfExists(ctx, ts, r, ""); err != nil {
			return err
		}
	}
	for i := range lists {
		idx, err := ts.table(lists[i].Index.Table)
		if err != nil {
			return err
		}
		if err := setMembership(ctx, idx, &lists[i], false); err != nil {
			return err
		}
	}
	return nil
}

// txIndex reports the index of the failing operation of a transaction.
func txIndex(err error) (int, bool) {
	var te *tablekit.TransactionError
	if errors.As(err, &te) && te.Index >= 0 {
		return te.Index, true
	}
	return 0, false
}

// ---- put-blob / delete-blob ----

// PutBlobArgs are the arguments of KindPutBlob.
type PutBlobArgs struct {
	Container   string `json:"container"`
	Name        string `json:"name"`
	Data        []byte `json:"data"` // base64 in JSON
	ContentType string `json:"contentType,omitempty"`
}

func (a *PutBlobArgs) validate(kind string) error {
	return (&BlobRef{Container: a.Container, Name: a.Name}).validate(kind)
}

func (b *BlobRef) validate(kind string) error {
	if err := keys.ValidateContainerName(b.Container); err != nil {
		return invalidArgs(kind, "container", err)
	}
	if err := keys.ValidateBlobName(b.Name); err != nil {
		return invalidArgs(kind, "name", err)
	}
	return nil
}

// PutBlob returns a KindPutBlob step.
func PutBlob(container, name string, data []byte, contentType string) Step {
	return NewStep(KindPutBlob, PutBlobArgs{Container: container, Name: name, Data: data, ContentType: contentType})
}

func applyPutBlob(ctx context.Context, c *Call, a *PutBlobArgs) error {
	if c.Account.Blobs() == nil {
		return Permanent(tablekit.ErrNoEndpoint)
	}
	var o *azblob.UploadBufferOptions
	if a.ContentType != "" {
		o = &azblob.UploadBufferOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr(a.ContentType)}}
	}
	_, err := c.Account.Blobs().UploadBuffer(ctx, a.Container, a.Name, a.Data, o)
	return tablekit.MapError(err, "put blob", a.Container+"/"+a.Name)
}

// DeleteBlob returns a KindDeleteBlob step.
func DeleteBlob(container, name string) Step {
	return NewStep(KindDeleteBlob, BlobRef{Container: container, Name: name})
}

func applyDeleteBlob(ctx context.Context, c *Call, a *BlobRef) error {
	return deleteBlobIfExists(ctx, c.Account, *a)
}

func deleteBlobIfExists(ctx context.Context, acct *tablekit.Account, b BlobRef) error {
	if acct.Blobs() == nil {
		return Permanent(tablekit.ErrNoEndpoint)
	}
	_, err := acct.Blobs().DeleteBlob(ctx, b.Container, b.Name, nil)
	err = tablekit.MapError(err, "delete blob", b.Container+"/"+b.Name)
	var se *tablekit.ServiceError
	if tablekit.IsNotFound(err) && asServiceError(err, &se) && se.Code == "BlobNotFound" {
		return nil
	}
	return err
}

// ---- sync-copies ----

// CopySpec is one desired copy of a source entity, as listed in the
// source's copies property: where the copy lives and which properties it
// carries (Props empty means all of them).
type CopySpec struct {
	Table        string   `json:"table"`
	PartitionKey string   `json:"pk"`
	RowKey       string   `json:"rk"`
	Props        []string `json:"props,omitempty"`
	// Local marks a view in the source's own table and partition, which
	// the source's writer keeps in the source's entity group transaction
	// (an intra-partition index copy, a log-tail row): sync-copies leaves
	// it alone, and move-entity deletes it in the transaction that
	// deletes the source.
	Local bool `json:"local,omitempty"`
	// List, when set, makes the view a membership rather than a copy: the
	// entity at Table, PartitionKey, RowKey is an index entity whose
	// string property List holds Member among its members (the index
	// entities pattern, kept by index-list steps). sync-copies leaves it
	// alone, and move-entity takes Member out of the list.
	List   string `json:"list,omitempty"`
	Member string `json:"member,omitempty"`
}

// Ref is the copy's location.
func (c CopySpec) Ref() EntityRef { return EntityRef{c.Table, c.PartitionKey, c.RowKey} }

// SyncCopiesArgs are the arguments of KindSyncCopies.
//
// The source entity carries, in the string property named by Property, a
// JSON array of CopySpec: the copies it should have. The writer that
// changes the source enqueues the step with Previous, the copies the
// source had before the write (from the value it replaced). Applying it:
// read the source; if it exists, upsert every desired copy (the source's
// properties, projected to the spec's Props, under the copy's keys, types
// kept) and delete the previous copies (and any copy written by an earlier
// pass of this step) that are no longer desired; if the source is gone,
// delete every previous copy. The source is read again at the end and the
// pass repeated if it changed meanwhile, so that copies match the source
// whatever order messages arrive in.
//
// Expect closes the window between the writer's enqueue and its write:
// when set, the step first waits (returns a retryable error, so the
// message comes back after the worker's backoff) while the source does not
// show the write its writer announced, for ExpectDeliveries deliveries and
// then while the message is younger than the worker's ExpectWindow; after
// that it assumes the write failed or was superseded and makes the copies
// match the source as it is.
type SyncCopiesArgs struct {
	Source   EntityRef    `json:"source"`
	Previous []EntityRef  `json:"previous,omitempty"`
	Property string       `json:"property"`
	Expect   *Expectation `json:"expect,omitempty"`
	// Local writes the copies the source lists as local too (a repair:
	// otherwise the source's own writer keeps them, in its transaction).
	Local bool `json:"local,omitempty"`
}

// Expectation is the state of a source entity once its writer's write has
// landed: absent (a delete), or carrying Value in the string property
// Property (an intent id the writer stores with each write).
//
// With Ordered, intent values sort in write order (NewIntentID makes such
// values): a source that carries a greater value has been written again
// since, so the announced write landed and was superseded, and the step
// applies at once instead of waiting.
type Expectation struct {
	Absent   bool   `json:"absent,omitempty"`
	Property string `json:"property,omitempty"`
	Value    string `json:"value,omitempty"`
	Ordered  bool   `json:"ordered,omitempty"`
}

// NewIntentID returns an intent id that sorts after every id made before
// it on this machine, and on others whose clocks agree within the time a
// write takes: a 16-digit hexadecimal UnixNano followed by 8 random bytes.
func NewIntentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x", uint64(time.Now().UnixNano())) + hex.EncodeToString(b[:])
}

// ExpectDeliveries is how many deliveries a step with an Expectation waits
// for its source to show the announced write at least (fewer when the
// worker's MaxDequeueCount is lower, so the message is never poisoned for
// waiting). It waits on while the message is younger than the worker's
// ExpectWindow: a count alone is no measure of time, since a receive whose
// answer is lost counts as a delivery too, and a write slowed by retries
// can land well after three quick deliveries.
const ExpectDeliveries = 3

// DefaultExpectWindow is WorkerOptions.ExpectWindow's default: how long
// after its enqueue a step still waits for the write its writer announced.
// It covers a write that azcore's default retries (0.8 s, 1.6 s, 3.2 s
// apart, each try up to the service's 30 s) bring in late.
const DefaultExpectWindow = 30 * time.Second

func (e *Expectation) met(found bool, p entity.Entity) bool {
	if e.Absent {
		return !found
	}
	if !found {
		return false
	}
	v, ok := stringProp(p, e.Property)
	return ok && (v == e.Value || e.Ordered && v > e.Value)
}

// wait returns a retryable error while the source src (found, p) does not
// meet the expectation and the step should wait for its writer's write,
// and nil when the step should apply now (no expectation, met, or waited
// long enough).
func (e *Expectation) wait(c *Call, src EntityRef, found bool, p entity.Entity) error {
	if e == nil || e.met(found, p) || !stillWaiting(c) {
		return nil
	}
	return Retryable(errors.New("consistency: " + c.Kind + ": " + src.String() + " does not show its writer's write yet: " + e.found(found, p) +
		"; retrying later (delivery " + strconv.FormatInt(c.DequeueCount, 10) + ", queued " + c.Age.Round(time.Second).String() +
		"; it applies to what is there after " + c.ExpectWindow.String() + " queued and " + strconv.Itoa(expectLimit(c)) + " deliveries, or at delivery " +
		strconv.FormatInt(max(c.MaxDequeueCount-1, 1), 10) + ")"))
}

// found says what a source that does not meet e shows instead.
func (e *Expectation) found(found bool, p entity.Entity) string {
	switch {
	case e.Absent:
		return "it still exists (its delete has not landed)"
	case !found:
		return "it does not exist (its write has not landed, or it was deleted or moved since)"
	}
	v, ok := stringProp(p, e.Property)
	if !ok {
		return "it has no " + e.Property + " (written without its repository?)"
	}
	return "its " + e.Property + " is " + strconv.Quote(v) + ", an earlier write's, not " + strconv.Quote(e.Value)
}

// expectLimit is how many deliveries a step waits for its source.
func expectLimit(c *Call) int {
	limit := int64(ExpectDeliveries)
	if c.MaxDequeueCount > 0 && c.MaxDequeueCount-1 < limit {
		limit = c.MaxDequeueCount - 1
	}
	return int(limit)
}

// stillWaiting reports whether a step whose expectation is not met should
// be retried later rather than applied now: for ExpectDeliveries
// deliveries, and after them while the message is younger than
// ExpectWindow, but never on the delivery before the poison queue's.
func stillWaiting(c *Call) bool {
	if c.DequeueCount == 0 {
		return false // Apply: the caller's own write is done
	}
	if c.MaxDequeueCount > 0 && c.DequeueCount >= c.MaxDequeueCount-1 {
		return false
	}
	return c.DequeueCount < int64(expectLimit(c)) || c.Age < c.ExpectWindow
}

func (a *SyncCopiesArgs) validate(kind string) error {
	if err := a.Source.validateField(kind, "source"); err != nil {
		return err
	}
	for i, p := range a.Previous {
		if err := p.validateField(kind, "previous["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	if a.Property == "" {
		return argsError(kind, "property names no property")
	}
	return a.Expect.validate(kind)
}

// validate checks an optional expectation (nil is valid).
func (e *Expectation) validate(kind string) error {
	if e != nil && !e.Absent && (e.Property == "" || e.Value == "") {
		return argsError(kind, "expect needs absent, or a property and a value")
	}
	return nil
}

// SyncCopies returns a KindSyncCopies step.
func SyncCopies(source EntityRef, property string, previous ...EntityRef) Step {
	return NewStep(KindSyncCopies, SyncCopiesArgs{Source: source, Previous: previous, Property: property})
}

// EncodeCopies encodes copy specs for the copies property of a source
// entity.
func EncodeCopies(specs ...CopySpec) (string, error) {
	if specs == nil {
		specs = []CopySpec{}
	}
	b, err := json.Marshal(specs)
	return string(b), err
}

func applySyncCopies(ctx context.Context, c *Call, a *SyncCopiesArgs) error {
	stale := map[EntityRef]bool{}
	for _, p := range a.Previous {
		stale[p] = true
	}
	ts := c.tableSet()
	return untilSourceSettles(ctx, ts, c.Kind, a.Source, func(pass int, p entity.Entity, found bool) error {
		if pass == 0 {
			if err := a.Expect.wait(c, a.Source, found, p); err != nil {
				return err
			}
		}
		desired := map[EntityRef]bool{}
		if found {
			specs, err := parseCopies(c.Kind, a.Source, a.Property, p)
			if err != nil {
				return err
			}
			for _, s := range specs {
				if s.List != "" {
					continue // a membership, which index-list steps keep
				}
				r := s.Ref()
				desired[r] = true
				if s.Local && !a.Local {
					continue // the source's writer keeps it, in the source's transaction
				}
				stale[r] = true // written by this pass; removed by a later one if no longer desired
				if err := upsertEntity(ctx, ts, r.Table, copyOf(p, a.Source, s), wire.OpUpsertReplace); err != nil {
					return err
				}
			}
		}
		for _, r := range sortedRefs(stale) {
			if desired[r] || r == a.Source {
				continue
			}
			if err := deleteEntityIfExists(ctx, ts, r, ""); err != nil {
				return err
			}
		}
		return nil
	})
}

// untilSourceSettles reads the source entity src and runs pass on it
// (found is false when src does not exist), then reads src again and
// repeats while it changed meanwhile, so that what pass derives matches
// the source whatever order messages arrive in; past maxReadRepair passes
// the step fails with a retryable error.
func untilSourceSettles(ctx context.Context, ts *tableSet, kind string, src EntityRef, pass func(n int, p entity.Entity, found bool) error) error {
	for n := range maxReadRepair {
		p, etag, found, err := getEntity(ctx, ts, src)
		if err != nil {
			return err
		}
		if err := pass(n, p, found); err != nil {
			return err
		}
		_, etag2, found2, err := getEntity(ctx, ts, src)
		if err != nil {
			return err
		}
		if found2 == found && etag2 == etag {
			return nil
		}
	}
	return Retryable(errors.New("consistency: " + kind + ": " + src.String() + " kept changing"))
}

func parseCopies(kind string, src EntityRef, prop string, p entity.Entity) ([]CopySpec, error) {
	if _, ok := p.Properties[prop]; !ok {
		return nil, nil
	}
	s, ok := stringProp(p, prop)
	if !ok {
		return nil, Permanent(argsError(kind, "property "+prop+" of "+src.String()+" is not a string"))
	}
	if s == "" {
		return nil, nil
	}
	var specs []CopySpec
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&specs); err != nil {
		return nil, Permanent(argsError(kind, "property "+prop+" of "+src.String()+" is not a JSON array of copies: "+err.Error()))
	}
	for i, sp := range specs {
		if err := sp.Ref().validateField(kind, prop+"["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
		if sp.Ref() == src {
			return nil, argsError(kind, "property "+prop+" of "+src.String()+" lists the source itself as a copy")
		}
		if (sp.List == "") != (sp.Member == "") || sp.List != "" && sp.Local {
			return nil, Permanent(argsError(kind, "property "+prop+" of "+src.String()+" lists "+sp.Ref().String()+" with a list and no member, a member and no list, or as a local list"))
		}
		if sp.Local && (sp.Table != src.Table || sp.PartitionKey != src.PartitionKey) {
			return nil, Permanent(argsError(kind, "property "+prop+" of "+src.String()+" lists "+sp.Ref().String()+" as local, outside the source's partition"))
		}
	}
	return specs, nil
}

// copyOf is the copy s of the source entity p (at src): p's properties
// that s names, under s's keys; the primary key properties, when s names
// them, hold src's keys whether or not p carries them.
func copyOf(p entity.Entity, src EntityRef, s CopySpec) entity.Entity {
	c := withKeys(p, s.PartitionKey, s.RowKey, s.Props)
	if slices.Contains(s.Props, PrimaryPartitionKeyProperty) {
		c.Properties[PrimaryPartitionKeyProperty] = entity.String(src.PartitionKey)
	}
	if slices.Contains(s.Props, PrimaryRowKeyProperty) {
		c.Properties[PrimaryRowKeyProperty] = entity.String(src.RowKey)
	}
	return c
}

func sortedRefs(m map[EntityRef]bool) []EntityRef {
	out := make([]EntityRef, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b EntityRef) int {
		if a.Table != b.Table {
			return strings.Compare(a.Table, b.Table)
		}
		if a.PartitionKey != b.PartitionKey {
			return strings.Compare(a.PartitionKey, b.PartitionKey)
		}
		return strings.Compare(a.RowKey, b.RowKey)
	})
	return out
}

// ---- index-list ----

// IndexListArgs are the arguments of KindIndexList.
//
// The index entity holds, in the string property named by Property, a
// JSON array of member keys (sorted, without duplicates). Member belongs
// in the list when the source entity exists and its property Where equals
// Equals (compared as JSON values: "Sales", 42, true). Applying the step
// reads the source, then adds or removes Member with an ETag-conditioned
// merge of the index entity (created on the first add) through the core's
// read-modify-write loop, retrying on 412 up to a bound, and repeats if the
// source changed meanwhile. The index entity also carries the loop's
// write-id log (the String property wire.UpdateLogProperty,
// "TkUpdates"), which settles a write whose response was lost; when
// even the log cannot, the step fails with tablekit.ErrOutcomeUnknown and
// the worker retries it.
//
// Expect, when set, makes the step wait for the source to show its
// writer's write, as SyncCopiesArgs.Expect does: without it, a step that
// runs before the write lands finds no member to list and never runs
// again.
type IndexListArgs struct {
	Index    EntityRef       `json:"index"`
	Property string          `json:"property"`
	Member   string          `json:"member"`
	Source   EntityRef       `json:"source"`
	Where    string          `json:"where"`
	Equals   json.RawMessage `json:"equals"`
	Expect   *Expectation    `json:"expect,omitempty"`
}

func (a *IndexListArgs) validate(kind string) error {
	if err := cmp.Or(a.Index.validateField(kind, "index"), a.Source.validateField(kind, "source")); err != nil {
		return err
	}
	if a.Property == "" || a.Where == "" {
		return argsError(kind, "property and where must name properties")
	}
	if err := entity.ValidatePropertyName(a.Property); err != nil {
		return invalidArgs(kind, "property", err)
	}
	if a.Member == "" {
		return argsError(kind, "member is empty")
	}
	if eq := bytes.TrimSpace(a.Equals); len(eq) == 0 || string(eq) == "null" || !json.Valid(eq) {
		return argsError(kind, "equals is not a JSON value (null never matches: the Table service stores no nulls)")
	}
	return a.Expect.validate(kind)
}

// IndexList returns a KindIndexList step.
func IndexList(a IndexListArgs) Step { return NewStep(KindIndexList, a) }

// DecodeMembers parses an index entity's list property.
func DecodeMembers(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var m []string
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

func applyIndexList(ctx context.Context, c *Call, a *IndexListArgs) error {
	var want any
	if err := json.Unmarshal(a.Equals, &want); err != nil {
		return Permanent(err)
	}
	ts := c.tableSet()
	idx, err := ts.table(a.Index.Table)
	if err != nil {
		return err
	}
	return untilSourceSettles(ctx, ts, c.Kind, a.Source, func(pass int, src entity.Entity, found bool) error {
		if pass == 0 {
			if err := a.Expect.wait(c, a.Source, found, src); err != nil {
				return err
			}
		}
		member := false
		if found {
			if v, ok := src.Properties[a.Where]; ok {
				// Compared as JSON values, as the service carries them.
				var got any
				raw, err := v.AppendJSON(nil)
				member = err == nil && json.Unmarshal(raw, &got) == nil && reflect.DeepEqual(got, want)
			}
		}
		return setMembership(ctx, idx, a, member)
	})
}

// setMembership adds or removes a.Member through the core's
// read-modify-write loop (wire.Table.Modify): an insert of the index
// entity on the first add, else a merge conditional on the ETag read.
func setMembership(ctx context.Context, idx *wire.Table, a *IndexListArgs, member bool) error {
	_, err := idx.Modify(ctx, a.Index.PartitionKey, a.Index.RowKey, func(stored []byte) (wire.Op, error) {
		found := stored != nil
		var list []string
		if found {
			p, err := decodeStored(a.Index, stored)
			if err != nil {
				return wire.Op{}, err
			}
			s, _ := stringProp(p, a.Property)
			if list, err = DecodeMembers(s); err != nil {
				return wire.Op{}, Permanent(argsError(KindIndexList, "property "+a.Property+" of "+a.Index.String()+" is not a JSON array of strings"))
			}
		}
		present := slices.Contains(list, a.Member)
		if !found && !member {
			return wire.Op{}, wire.ErrNoChange
		}
		if found && present == member && slices.IsSorted(list) && len(slices.Compact(slices.Clone(list))) == len(list) {
			return wire.Op{}, wire.ErrNoChange
		}
		if member && !present {
			list = append(list, a.Member)
		} else if !member {
			list = slices.DeleteFunc(list, func(m string) bool { return m == a.Member })
		}
		slices.Sort(list)
		list = slices.Compact(list)
		if list == nil {
			list = []string{}
		}
		enc, _ := json.Marshal(list)
		ie := entity.Entity{PartitionKey: a.Index.PartitionKey, RowKey: a.Index.RowKey, Properties: map[string]entity.Value{a.Property: entity.String(string(enc))}}
		// MarshalJSON checks Azure's limits (entity.Entity.Validate).
		body, err := ie.MarshalJSON()
		if err != nil {
			// The keys and the property name were validated with the
			// step: what fails is the list's length.
			return wire.Op{}, Permanent(&wrapped{
				msg: "consistency: index-list: the list of " + a.Index.String() + " cannot be stored: " + err.Error() +
					"; keep this index in a blob (patterns.BlobIndexedTable, the guide's option 1)",
				err: err,
			})
		}
		typ := wire.OpMerge
		if !found {
			typ = wire.OpInsert
		}
		return wire.Op{Type: typ, PartitionKey: a.Index.PartitionKey, RowKey: a.Index.RowKey, Entity: body}, nil
	}, &wire.ModifyOptions{MaxAttempts: maxReadRepair, Verb: "index-list: write", Typed: true, Race: lostRace})
	return modifyErr(err, lostRace)
}

// ---- blob-cleanup ----

// BlobCleanupArgs are the arguments of KindBlobCleanup. The blob is
// deleted unless the source entity exists and its string property Property
// references it: equals Name, or is a JSON array of strings containing
// Name. Give every version of a large property its own blob name, so a
// name once unreferenced never becomes referenced again.
type BlobCleanupArgs struct {
	Container string    `json:"container"`
	Name      string    `json:"name"`
	Source    EntityRef `json:"source"`
	Property  string    `json:"property"`
}

func (a *BlobCleanupArgs) validate(kind string) error {
	if err := (&BlobRef{a.Container, a.Name}).validate(kind); err != nil {
		return err
	}
	if err := a.Source.validateField(kind, "source"); err != nil {
		return err
	}
	if a.Property == "" {
		return argsError(kind, "property names no property")
	}
	return nil
}

// BlobCleanup returns a KindBlobCleanup step.
func BlobCleanup(container, name string, source EntityRef, property string) Step {
	return NewStep(KindBlobCleanup, BlobCleanupArgs{Container: container, Name: name, Source: source, Property: property})
}

func applyBlobCleanup(ctx context.Context, c *Call, a *BlobCleanupArgs) error {
	p, _, found, err := getEntity(ctx, c.tableSet(), a.Source)
	if err != nil {
		return err
	}
	if found {
		if s, ok := stringProp(p, a.Property); ok {
			if s == a.Name {
				return nil
			}
			var names []string
			if json.Unmarshal([]byte(s), &names) == nil && slices.Contains(names, a.Name) {
				return nil
			}
		}
	}
	return deleteBlobIfExists(ctx, c.Account, BlobRef{a.Container, a.Name})
}

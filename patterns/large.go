package patterns

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Suffixes of the properties that describe a blob-backed field F. The
// property F itself holds the blob's name (the guide's "store a link to
// the photo in the Photo property of your employee entity").
const (
	LargeSizeSuffix        = "Size"        // FSize: Edm.Int64, the blob's length in bytes
	LargeContentTypeSuffix = "ContentType" // FContentType: Edm.String
	LargeHashSuffix        = "SHA256"      // FSHA256: Edm.String, hex SHA-256 of the content
)

// ErrBlobCorrupt is returned by a read of a blob-backed field whose content
// does not match the size or SHA-256 its entity records.
var ErrBlobCorrupt = errors.New("tablekit: blob content does not match its entity's size or SHA-256")

// LargeEntitiesOptions configures a LargeEntities. A nil
// *LargeEntitiesOptions means the defaults.
type LargeEntitiesOptions struct {
	// Table passes options to the entity codec (encryption keys), the
	// transport (SDKPath) and MaxAttempts, which bounds the read-write
	// loops of Upsert and Delete on ETag conflicts (default 16).
	Table *TableOptions
	// Queue is the consistency queue that receives a blob-cleanup step
	// for every blob a write or delete leaves unreferenced; a worker
	// deletes the blob unless the entity references it again (the
	// guide's "use the Eventually consistent transactions pattern").
	// Nil deletes such blobs directly after the entity write, best effort.
	Queue *consistency.Queue
	// ContentType names a field's content type; default
	// http.DetectContentType of the data.
	ContentType func(field string, data []byte) string
}

// BlobInfo describes the blob that holds one field of an entity.
type BlobInfo struct {
	Field       string // the Go field
	Property    string // the entity property holding the blob's name
	Container   string
	Name        string
	Size        int64
	ContentType string
	SHA256      string // hex
}

// LargeEntities is the guide's large entities pattern ("Use Blob storage
// to store large property values"): fields of T tagged with the blob
// option, such as
//
//	Photo []byte `table:"Photo,blob"`
//
// are stored in blobs of one container, and the entity keeps, per field F,
// the blob's name in property F and its size, content type and SHA-256 in
// FSize, FContentType and FSHA256. The option is only valid on top-level
// []byte fields; a nil or empty slice stores no blob.
//
// Writes upload the blobs first and then write the entity, so an entity
// never references a blob that is not there. Each write uses new blob
// names, so a reader never sees a blob change under an entity; the blobs a
// replace or delete leaves unreferenced are removed through the
// consistency worker (a blob-cleanup step, which deletes a blob only while
// no entity references it) when LargeEntitiesOptions.Queue is set, or
// directly otherwise. A crash between the upload and the entity write, or
// between the entity write and the cleanup, leaves an unreferenced blob
// behind, never a dangling reference.
//
// Reads are eager (Get fills the fields: one request for the entity plus
// one per blob) or lazy (GetLazy returns the BlobInfo of each field, and
// Open streams one blob as an io.ReadCloser that checks its size and
// SHA-256 at EOF).
//
// Untagged properties keep the entity's limits: an entity that would pass
// 1 MiB without blob tags fails before any request with an error wrapping
// tablekit.ErrInvalidEntity; tablekit never moves a property to a blob on
// its own, since readers of the table would not know where to find it.
//
// Requests: Insert 2 (1 blob field; one more per further field), Get 2,
// GetLazy 1, Upsert of an existing entity 4 (read, upload, replace, enqueue),
// Delete 3 (read, delete, enqueue). A LargeEntities is safe for
// concurrent use.
type LargeEntities[T any] struct {
	acct      *tablekit.Account
	name      string
	container string
	w         *wire.Table
	codec     *entity.Codec // of the derived type: blob fields skipped
	derived   reflect.Type
	fields    []largeField
	queue     *consistency.Queue
	ctype     func(string, []byte) string
	attempts  int
}

type largeField struct {
	index  int    // in T
	goName string // the Go field
	prop   string // the property holding the blob name
}

// NewLargeEntities returns the large entity repository of table name, with
// blobs in container. It reads T's blob tags and checks the rest of T's
// codec now, and makes no request.
//
// The entity codec does not know the blob option, so the repository
// derives a struct type from T (reflect.StructOf) whose blob fields are
// tagged `table:"-"` and converts values between the two; T must therefore
// be a struct type without EntityMarshaler/EntityUnmarshaler methods.
func NewLargeEntities[T any](acct *tablekit.Account, name, container string, opts *LargeEntitiesOptions) (*LargeEntities[T], error) {
	if acct == nil {
		return nil, tkerr.Errorf("tablekit: NewLargeEntities: %w: account is nil", tablekit.ErrInvalidArgument)
	}
	if acct.Blobs() == nil {
		return nil, tkerr.Errorf("tablekit: large entities %s: %w", name, tablekit.ErrNoEndpoint)
	}
	if err := keys.ValidateContainerName(container); err != nil {
		return nil, err
	}
	o := optsOf(opts)
	if o.ContentType == nil {
		o.ContentType = func(_ string, data []byte) string { return http.DetectContentType(data) }
	}
	attempts := wire.DefaultMaxAttempts
	if o.Table != nil && o.Table.MaxAttempts > 0 {
		attempts = o.Table.MaxAttempts
	}
	typ := reflect.TypeFor[T]()
	derived, fields, err := largeDerive(typ)
	if err != nil {
		return nil, err
	}
	var codecOpts *entity.Options
	if o.Table != nil {
		codecOpts = o.Table.Codec
	}
	codec, err := entity.CodecOf(derived, codecOpts)
	if err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, p := range codec.Select() {
		taken[p] = true
	}
	for _, f := range fields {
		for _, p := range []string{f.prop, f.prop + LargeSizeSuffix, f.prop + LargeContentTypeSuffix, f.prop + LargeHashSuffix} {
			if taken[p] {
				return nil, tkerr.Errorf("tablekit: large entities %s: %w: type %s: property %s of blob field %s is also used by another field", name, tablekit.ErrInvalidEntity, typ, p, f.goName)
			}
			taken[p] = true
		}
	}
	w, err := wire.Open(acct, name, o.Table.wireOptions())
	if err != nil {
		return nil, err
	}
	return &LargeEntities[T]{acct: acct, name: name, container: container, w: w, codec: codec, derived: derived,
		fields: fields, queue: o.Queue, ctype: o.ContentType, attempts: attempts}, nil
}

// largeDerive reads T's blob tags and builds the type the codec sees.
func largeDerive(typ reflect.Type) (derived reflect.Type, fields []largeField, err error) {
	if typ.Kind() != reflect.Struct {
		return nil, nil, tkerr.Errorf("tablekit: large entities: %w: %s is not a struct type", tablekit.ErrInvalidEntity, typ)
	}
	for _, hook := range []reflect.Type{reflect.TypeFor[entity.EntityMarshaler](), reflect.TypeFor[entity.EntityUnmarshaler]()} {
		if typ.Implements(hook) || reflect.PointerTo(typ).Implements(hook) {
			return nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s implements %s; blob fields need the struct codec", tablekit.ErrInvalidEntity, typ, hook)
		}
	}
	sfs := make([]reflect.StructField, typ.NumField())
	for i := range sfs {
		sf := typ.Field(i)
		sfs[i] = sf
		tag, ok := sf.Tag.Lookup("table")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		if !slices.Contains(parts[1:], "blob") {
			continue
		}
		if len(parts) != 2 {
			return nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s field %s: the blob option takes no other options (tag %q)", tablekit.ErrInvalidEntity, typ, sf.Name, tag)
		}
		if sf.Type != reflect.TypeFor[[]byte]() || !sf.IsExported() || sf.Anonymous {
			return nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s field %s: the blob option needs an exported []byte field, not %s", tablekit.ErrInvalidEntity, typ, sf.Name, sf.Type)
		}
		prop := parts[0]
		if prop == "" {
			prop = sf.Name
		}
		fields = append(fields, largeField{index: i, goName: sf.Name, prop: prop})
		sfs[i].Tag = `table:"-"`
	}
	if len(fields) == 0 {
		return nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s has no field tagged `table:\"Name,blob\"`; use Table[T]", tablekit.ErrInvalidEntity, typ)
	}
	defer func() {
		if r := recover(); r != nil {
			derived, fields, err = nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s cannot be mirrored by reflect.StructOf (%v); avoid embedded types with methods", tablekit.ErrInvalidEntity, typ, r)
		}
	}()
	derived = reflect.StructOf(sfs)
	if !derived.ConvertibleTo(typ) || !typ.ConvertibleTo(derived) {
		return nil, nil, tkerr.Errorf("tablekit: large entities: %w: type %s cannot be mirrored by reflect.StructOf", tablekit.ErrInvalidEntity, typ)
	}
	return derived, fields, nil
}

// Name is the table's name.
func (l *LargeEntities[T]) Name() string { return l.name }

// Container is the blob container's name.
func (l *LargeEntities[T]) Container() string { return l.container }

// CreateIfNotExists creates the table and the container (two requests),
// and the cleanup queue when Options.Queue is set (see
// consistency.Queue.Create, three more); existing ones are not an error.
func (l *LargeEntities[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	if err := l.w.Create(ctx); err != nil {
		return err
	}
	if err := createContainer(ctx, l.acct, l.container); err != nil {
		return err
	}
	if l.queue != nil {
		return l.queue.Create(ctx, nil)
	}
	return nil
}

// createContainer creates the blob container name; an existing one is not
// an error. One request.
func createContainer(ctx context.Context, acct *tablekit.Account, name string) error {
	_, err := acct.Blobs().CreateContainer(ctx, name, nil)
	if err = tablekit.MapError(err, "create container", name); err != nil && !errors.Is(err, tablekit.ErrAlreadyExists) {
		return err
	}
	return nil
}

// upload stores v's blob fields under new names and returns the entity
// body referencing them, with the infos of the blobs written.
func (l *LargeEntities[T]) upload(ctx context.Context, v *T) (body []byte, pk, rk string, written []BlobInfo, err error) {
	if v == nil {
		return nil, "", "", nil, tkerr.Errorf("tablekit: %s: %w: nil *%s", l.name, tablekit.ErrInvalidEntity, reflect.TypeFor[T]())
	}
	dv := reflect.ValueOf(v).Elem().Convert(l.derived)
	base, err := l.codec.Marshal(dv.Interface())
	if err != nil {
		return nil, "", "", nil, err
	}
	var e entity.Entity
	if err := e.UnmarshalJSON(base); err != nil {
		return nil, "", "", nil, err
	}
	pk, rk = e.PartitionKey, e.RowKey
	rv := reflect.ValueOf(v).Elem()
	for _, f := range l.fields {
		data := rv.Field(f.index).Bytes()
		if len(data) == 0 {
			continue
		}
		sum := sha256.Sum256(data)
		b := BlobInfo{Field: f.goName, Property: f.prop, Container: l.container, Name: l.blobName(pk, rk, f.prop),
			Size: int64(len(data)), ContentType: l.ctype(f.goName, data), SHA256: hex.EncodeToString(sum[:])}
		_, err := l.acct.Blobs().UploadBuffer(ctx, l.container, b.Name, data, &azblob.UploadBufferOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &b.ContentType},
		})
		if err != nil {
			l.deleteNow(written)
			return nil, "", "", nil, tablekit.MapError(err, "upload blob", l.container+"/"+b.Name)
		}
		written = append(written, b)
		e.Set(f.prop, entity.String(b.Name))
		e.Set(f.prop+LargeSizeSuffix, entity.Int64(b.Size))
		e.Set(f.prop+LargeContentTypeSuffix, entity.String(b.ContentType))
		e.Set(f.prop+LargeHashSuffix, entity.String(b.SHA256))
	}
	body, err = e.MarshalJSON()
	if err != nil {
		l.deleteNow(written)
		return nil, "", "", nil, err
	}
	return body, pk, rk, written, nil
}

// blobName is "<table>/<pk>/<rk>/<property>.<random>": keys cannot hold
// '/', so the parts stay apart; every write gets a new name. Keys too long
// for a blob name (azrules.MaxBlobNameUnits, 1,024 UTF-16 code units) are
// replaced by their hash.
func (l *LargeEntities[T]) blobName(pk, rk, prop string) string {
	return newBlobName(l.name, pk, rk, prop)
}

// newBlobName is a new blob's name for property prop of the entity (pk,
// rk) of table: "<table>/<pk>/<rk>/<prop>.<random>"; keys cannot hold '/',
// so the parts stay apart. Keys too long for a blob name
// (azrules.MaxBlobNameUnits, 1,024 UTF-16 code units) are replaced by
// their hash.
func newBlobName(table, pk, rk, prop string) string {
	var rnd [16]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
	name := table + "/" + pk + "/" + rk + "/" + prop + "." + hex.EncodeToString(rnd[:])
	if azrules.CheckBlobNameLength(name) != nil {
		h := sha256.Sum256([]byte(pk + "\x00" + rk))
		name = table + "/" + hex.EncodeToString(h[:]) + "/" + prop + "." + hex.EncodeToString(rnd[:])
	}
	return name
}

// Insert uploads v's blob fields, then inserts the entity referencing them;
// it fails with tablekit.ErrAlreadyExists when the entity exists (and
// deletes the blobs it uploaded). On success v's ETag and Timestamp fields
// are set. When the insert's outcome is unknown (tablekit.ErrOutcomeUnknown)
// the blobs are kept: the stored entity may reference them. Requests: one
// per non-empty blob field, plus one.
func (l *LargeEntities[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	body, pk, rk, written, err := l.upload(ctx, v)
	if err != nil {
		return err
	}
	etag, err := l.w.Write(ctx, "insert", Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body, Unique: len(written) > 0})
	if err != nil {
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
			l.deleteNow(written)
		}
		return err
	}
	l.setMeta(v, etag)
	return nil
}

// Upsert inserts v or replaces the stored entity with it, whatever its
// version, and has the blobs the old version referenced removed. Only
// UpsertReplace is possible (UpsertMerge is refused with
// tablekit.ErrInvalidArgument: a merge would leave the old version's blob
// references beside the new ones). It reads
// the stored entity first (to learn its blobs), uploads v's blobs, and
// replaces the entity conditionally on the version it read, reading again
// when another writer got there first. Requests for an existing entity with
// one blob field: 4 (read, upload, replace, enqueue the cleanup); for a new
// one: 3.
func (l *LargeEntities[T]) Upsert(ctx context.Context, v *T, opts *UpsertOptions) error {
	mode, err := upsertMode(opts)
	if err != nil {
		return err
	}
	if mode == UpsertMerge {
		return tkerr.Errorf("tablekit: large entities %s: %w: UpsertMerge; a large entity is always written whole", l.name, tablekit.ErrInvalidArgument)
	}
	body, pk, rk, written, err := l.upload(ctx, v)
	if err != nil {
		return err
	}
	var old []BlobInfo
	m, err := l.w.Modify(ctx, pk, rk, func(stored []byte) (Op, error) {
		old = nil
		if stored == nil {
			return Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body}, nil
		}
		refs, err := l.refs(stored, pk, rk)
		if err != nil {
			return Op{}, err
		}
		old = refs
		return Op{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}, nil
	}, &wire.ModifyOptions{MaxAttempts: l.attempts, Verb: "upsert"})
	if err != nil {
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
			l.deleteNow(written)
		}
		return err
	}
	l.setMeta(v, m.ETag)
	return l.cleanup(ctx, pk, rk, unreferenced(old, written))
}

// Delete removes the entity with v's keys and has its blobs removed: it
// reads the entity, deletes it conditionally on that version, and
// enqueues the cleanup. As Table.Delete, it is conditional on v's ETag
// unless opts say otherwise (tablekit.ErrPreconditionFailed when the
// entity changed since v was read); a missing entity is
// tablekit.ErrNotFound. Three requests.
func (l *LargeEntities[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	if v == nil {
		return tkerr.Errorf("tablekit: delete from %s: %w: nil *%s", l.name, tablekit.ErrInvalidArgument, reflect.TypeFor[T]())
	}
	dv := reflect.New(l.derived)
	dv.Elem().Set(reflect.ValueOf(v).Elem().Convert(l.derived))
	pk, rk := l.codec.Keys(dv.Interface())
	etag, err := ifMatch(l.codec, dv.Interface(), opts, l.name)
	if err != nil {
		return err
	}
	var old []BlobInfo
	_, err = l.w.Modify(ctx, pk, rk, func(stored []byte) (Op, error) {
		refs, err := l.refs(stored, pk, rk)
		if err != nil {
			return Op{}, err
		}
		old = refs
		return Op{Type: OpDelete, PartitionKey: pk, RowKey: rk}, nil
	}, &wire.ModifyOptions{MaxAttempts: l.attempts, Verb: "delete", MustExist: true, IfMatch: opETag(etag)})
	if err != nil {
		return err
	}
	return l.cleanup(ctx, pk, rk, old)
}

func unreferenced(old, current []BlobInfo) []BlobInfo {
	var out []BlobInfo
	for _, o := range old {
		if !slices.ContainsFunc(current, func(c BlobInfo) bool { return c.Name == o.Name }) {
			out = append(out, o)
		}
	}
	return out
}

// cleanup has the blobs gone: a blob-cleanup step per blob through the
// queue (one request), or direct deletes.
func (l *LargeEntities[T]) cleanup(ctx context.Context, pk, rk string, blobs []BlobInfo) error {
	if len(blobs) == 0 {
		return nil
	}
	if l.queue == nil {
		l.deleteNow(blobs)
		return nil
	}
	src := consistency.EntityRef{Table: l.name, PartitionKey: pk, RowKey: rk}
	tx := consistency.NewTransaction()
	for _, b := range blobs {
		tx.Add(consistency.BlobCleanup(b.Container, b.Name, src, b.Property))
	}
	if err := l.queue.Enqueue(ctx, tx, nil); err != nil {
		return tkerr.Errorf("tablekit: %s: the entity was written but the cleanup of its old blobs could not be enqueued (they stay as orphans): %w", l.describe(pk, rk), err)
	}
	return nil
}

// deleteNow deletes blobs at once, best effort: they are not referenced.
func (l *LargeEntities[T]) deleteNow(blobs []BlobInfo) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range blobs {
		_, _ = l.acct.Blobs().DeleteBlob(ctx, b.Container, b.Name, nil)
	}
}

// readRefs reads the stored entity's blob references and ETag.
func (l *LargeEntities[T]) readRefs(ctx context.Context, pk, rk string) ([]BlobInfo, string, bool, error) {
	raw, etag, err := l.getRaw(ctx, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	refs, err := l.refs(raw, pk, rk)
	return refs, etag, err == nil, err
}

func (l *LargeEntities[T]) getRaw(ctx context.Context, pk, rk string) ([]byte, string, error) {
	return l.w.Get(ctx, pk, rk)
}

func (l *LargeEntities[T]) refs(raw []byte, pk, rk string) ([]BlobInfo, error) {
	var e entity.Entity
	if err := e.UnmarshalJSON(raw); err != nil {
		return nil, tkerr.Errorf("tablekit: get %s: %w", l.describe(pk, rk), err)
	}
	var out []BlobInfo
	for _, f := range l.fields {
		name, ok := e.Properties[f.prop].V.(string)
		if !ok || name == "" {
			continue
		}
		b := BlobInfo{Field: f.goName, Property: f.prop, Container: l.container, Name: name}
		b.Size, _ = e.Properties[f.prop+LargeSizeSuffix].V.(int64)
		b.ContentType, _ = e.Properties[f.prop+LargeContentTypeSuffix].V.(string)
		b.SHA256, _ = e.Properties[f.prop+LargeHashSuffix].V.(string)
		out = append(out, b)
	}
	return out, nil
}

// GetLazy reads the entity (pk, rk) without its blobs: the blob fields are
// left nil and the BlobInfo of each non-empty one is returned, to Open
// when needed. One request; tablekit.ErrNotFound when there is none.
func (l *LargeEntities[T]) GetLazy(ctx context.Context, pk, rk string, opts *GetOptions) (T, []BlobInfo, error) {
	var v T
	raw, etag, err := l.getRaw(ctx, pk, rk)
	if err != nil {
		return v, nil, err
	}
	dp := reflect.New(l.derived)
	if err := l.codec.Unmarshal(raw, dp.Interface()); err != nil {
		return v, nil, tkerr.Errorf("tablekit: get %s: %w", l.describe(pk, rk), err)
	}
	l.codec.SetMeta(dp.Interface(), etag, TimestampFromETag(etag))
	reflect.ValueOf(&v).Elem().Set(dp.Elem().Convert(reflect.TypeFor[T]()))
	refs, err := l.refs(raw, pk, rk)
	return v, refs, err
}

// Get reads the entity (pk, rk) and every blob it references into its
// fields: one request for the entity and one per blob. A blob whose content
// does not match the entity's size or hash fails with ErrBlobCorrupt.
func (l *LargeEntities[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	v, refs, err := l.GetLazy(ctx, pk, rk, opts)
	if err != nil {
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	for _, b := range refs {
		r, err := l.Open(ctx, b, nil)
		if err != nil {
			var zero T
			return zero, err
		}
		buf := bytes.NewBuffer(make([]byte, 0, max(b.Size, 0)))
		_, err = io.Copy(buf, r)
		r.Close()
		if err != nil {
			var zero T
			return zero, err
		}
		for _, f := range l.fields {
			if f.goName == b.Field {
				rv.Field(f.index).SetBytes(buf.Bytes())
			}
		}
	}
	return v, nil
}

// Open streams the blob b: one request. The reader fails with
// ErrBlobCorrupt at EOF when the content does not match b's size or
// SHA-256.
func (l *LargeEntities[T]) Open(ctx context.Context, b BlobInfo, opts *GetOptions) (io.ReadCloser, error) {
	resp, err := l.acct.Blobs().DownloadStream(ctx, b.Container, b.Name, nil)
	if err != nil {
		return nil, tablekit.MapError(err, "download blob", b.Container+"/"+b.Name)
	}
	return &largeReader{rc: resp.Body, h: sha256.New(), info: b}, nil
}

type largeReader struct {
	rc   io.ReadCloser
	h    hash.Hash
	n    int64
	info BlobInfo
}

func (r *largeReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if err == io.EOF {
		if r.n != r.info.Size || (r.info.SHA256 != "" && hex.EncodeToString(r.h.Sum(nil)) != r.info.SHA256) {
			return n, fmt.Errorf("%w: blob %s/%s has %d bytes and SHA-256 %x; the entity records %d bytes and %s",
				ErrBlobCorrupt, r.info.Container, r.info.Name, r.n, r.h.Sum(nil), r.info.Size, r.info.SHA256)
		}
	}
	return n, err
}

func (r *largeReader) Close() error { return r.rc.Close() }

func (l *LargeEntities[T]) setMeta(v *T, etag string) {
	dv := reflect.New(l.derived)
	dv.Elem().Set(reflect.ValueOf(v).Elem().Convert(l.derived))
	l.codec.SetMeta(dv.Interface(), etag, TimestampFromETag(etag))
	reflect.ValueOf(v).Elem().Set(dv.Elem().Convert(reflect.TypeFor[T]()))
}

func (l *LargeEntities[T]) describe(pk, rk string) string { return l.w.Label(pk, rk) }

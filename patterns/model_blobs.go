package patterns

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"reflect"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// A Model keeps a []byte field tagged with the blob option
// (`table:"Items,blob"`) in Blob storage, as LargeEntities does: the
// guide's large entities pattern on any Model. The entity holds, per field
// F, the blob's name in F and its size, content type and SHA-256 in FSize,
// FContentType and FSHA256; a nil or empty slice stores no blob. Each new
// content gets a new blob name, uploaded before the entity is written, so
// an entity never names a blob that is not there and a reader never sees a
// blob change under an entity; a write that keeps a field's content keeps
// its blob. The blobs a write or a delete leaves unnamed are removed
// through the queue (a consistency.BlobCleanup step, which deletes a blob
// only while its entity does not name it) or, without a queue, directly.
// An archived entity keeps naming its blobs, which stay where they are.

// blobs holds what a Model needs to keep T's blob fields.
type modelBlobs struct {
	fields    []entity.BlobField
	container string
}

// blobRefs returns the blobs a stored entity names, by property.
func (m *Model[T]) blobRefs(stored []byte) (map[string]BlobInfo, error) {
	if len(m.blobs.fields) == 0 || stored == nil {
		return nil, nil
	}
	p, err := parseProps(stored)
	if err != nil {
		return nil, err
	}
	out := map[string]BlobInfo{}
	for _, f := range m.blobs.fields {
		name, ok := p[f.Property].V.(string)
		if !ok || name == "" {
			continue
		}
		b := BlobInfo{Field: f.GoName, Property: f.Property, Container: m.blobs.container, Name: name}
		b.Size, _ = p[f.Property+LargeSizeSuffix].V.(int64)
		b.ContentType, _ = p[f.Property+LargeContentTypeSuffix].V.(string)
		b.SHA256, _ = p[f.Property+LargeHashSuffix].V.(string)
		out[f.Property] = b
	}
	return out, nil
}

// blobUploads remembers the blobs a write uploaded, by content, across the
// attempts of its read-modify-write loop.
type blobUploads struct {
	mu  sync.Mutex
	all []BlobInfo
}

func (u *blobUploads) find(prop, sum string) (BlobInfo, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, b := range u.all {
		if b.Property == prop && b.SHA256 == sum {
			return b, true
		}
	}
	return BlobInfo{}, false
}

func (u *blobUploads) add(b BlobInfo) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.all = append(u.all, b)
}

// putBlobs returns the blobs v's blob fields are kept in: the stored one
// (old) where the content is the same, one this write uploaded already,
// or a new one, uploaded now.
func (m *Model[T]) putBlobs(ctx context.Context, v *T, pk, rk string, old map[string]BlobInfo, up *blobUploads) (map[string]BlobInfo, error) {
	if len(m.blobs.fields) == 0 {
		return nil, nil
	}
	rv := reflect.ValueOf(v).Elem()
	refs := map[string]BlobInfo{}
	for _, f := range m.blobs.fields {
		data := rv.Field(f.Index).Bytes()
		if len(data) == 0 {
			continue
		}
		h := sha256.Sum256(data)
		sum := hex.EncodeToString(h[:])
		if o, ok := old[f.Property]; ok && o.SHA256 == sum && o.Size == int64(len(data)) {
			refs[f.Property] = o
			continue
		}
		if b, ok := up.find(f.Property, sum); ok {
			refs[f.Property] = b
			continue
		}
		b := BlobInfo{Field: f.GoName, Property: f.Property, Container: m.blobs.container, Name: newBlobName(m.t.name, pk, rk, f.Property),
			Size: int64(len(data)), ContentType: http.DetectContentType(data), SHA256: sum}
		_, err := m.t.acct.Blobs().UploadBuffer(ctx, b.Container, b.Name, data, &azblob.UploadBufferOptions{
			HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &b.ContentType},
		})
		if err != nil {
			return nil, tablekit.MapError(err, "upload blob", b.Container+"/"+b.Name)
		}
		up.add(b)
		refs[f.Property] = b
	}
	return refs, nil
}

// setBlobProps names refs' blobs in the entity's properties p.
func setBlobProps(p rawProps, refs map[string]BlobInfo) {
	for _, b := range refs {
		p.setString(b.Property, b.Name)
		p[b.Property+LargeSizeSuffix] = entity.Int64(b.Size)
		p.setString(b.Property+LargeContentTypeSuffix, b.ContentType)
		p.setString(b.Property+LargeHashSuffix, b.SHA256)
	}
}

// loadBlobs reads the blobs refs names into v's fields, checking each
// against its size and SHA-256 (ErrBlobCorrupt). One request per blob.
func (m *Model[T]) loadBlobs(ctx context.Context, v *T, refs map[string]BlobInfo) error {
	rv := reflect.ValueOf(v).Elem()
	for _, f := range m.blobs.fields {
		b, ok := refs[f.Property]
		if !ok {
			rv.Field(f.Index).SetBytes(nil)
			continue
		}
		resp, err := m.t.acct.Blobs().DownloadStream(ctx, b.Container, b.Name, nil)
		if err != nil {
			return tablekit.MapError(err, "download blob", b.Container+"/"+b.Name)
		}
		r := &largeReader{rc: resp.Body, h: sha256.New(), info: b}
		buf := bytes.NewBuffer(make([]byte, 0, max(b.Size, 0)))
		_, err = io.Copy(buf, r)
		r.Close()
		if err != nil {
			return err
		}
		rv.Field(f.Index).SetBytes(buf.Bytes())
	}
	return nil
}

// dropBlobs has the blobs that the entity (pk, rk) no longer names go:
// through the queue, whose worker deletes each only while the entity does
// not name it (one request), or directly, best effort.
func (m *Model[T]) dropBlobs(ctx context.Context, pk, rk string, blobs []BlobInfo) error {
	if len(blobs) == 0 {
		return nil
	}
	if m.q == nil {
		ctx := context.WithoutCancel(ctx)
		for _, b := range blobs {
			_, _ = m.t.acct.Blobs().DeleteBlob(ctx, b.Container, b.Name, nil)
		}
		return nil
	}
	tx := consistency.NewTransaction()
	for _, b := range blobs {
		tx.Add(consistency.BlobCleanup(b.Container, b.Name, m.src(pk, rk), b.Property))
	}
	if err := m.q.Enqueue(ctx, tx, nil); err != nil {
		return tkerr.Errorf("tablekit: %s: the entity was written, but the removal of the blobs it no longer names could not be enqueued (they stay, named by nothing): %w", m.t.describe(pk, rk), err)
	}
	return nil
}

// unnamed returns the blobs of before that after does not name.
func unnamed(before, after map[string]BlobInfo) []BlobInfo {
	var out []BlobInfo
	for _, b := range before {
		kept := false
		for _, a := range after {
			kept = kept || a.Name == b.Name
		}
		if !kept {
			out = append(out, b)
		}
	}
	return out
}

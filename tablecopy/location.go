package tablecopy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// BlobScheme starts a Location in Blob storage: blob://CONTAINER/PREFIX.
const BlobScheme = "blob://"

// Location is where a backup lives: a local directory, or a container and
// name prefix in Blob storage. Its objects are the manifest, the
// checkpoint and the per-table segments and key lists (see docs/COPY.md
// for the layout). A Location is safe for concurrent use.
type Location struct {
	s store
}

// Dir is the Location of a local directory, created on the first write.
func Dir(dir string) *Location {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	return &Location{s: dirStore{dir: abs}}
}

// Blob is the Location of the blobs under prefix in container, in the
// account of client. The container is created on the first write.
func Blob(client *azblob.Client, container, prefix string) *Location {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Location{s: &blobStore{c: client, container: container, prefix: prefix}}
}

// ParseLocation reads a location as the commands take it: blob://CONTAINER
// or blob://CONTAINER/PREFIX (in acct's Blob storage), else a local
// directory. A path naming a manifest file (…/manifest.json) means its
// directory.
func ParseLocation(s string, acct *tablekit.Account) (*Location, error) {
	s = strings.TrimSuffix(s, "/"+manifestName)
	if s == manifestName {
		s = "."
	}
	if rest, ok := strings.CutPrefix(s, BlobScheme); ok {
		container, prefix, _ := strings.Cut(rest, "/")
		if err := checkContainer(container); err != nil {
			return nil, tkerr.Errorf("tablekit: location %q: %w", s, err)
		}
		if acct == nil || acct.Blobs() == nil {
			return nil, tkerr.Errorf("tablekit: location %q: %w: the account has no blob endpoint", s, tablekit.ErrInvalidArgument)
		}
		return Blob(acct.Blobs(), container, prefix), nil
	}
	if s == "" {
		return nil, tkerr.Errorf("tablekit: %w: empty location", tablekit.ErrInvalidArgument)
	}
	return Dir(s), nil
}

// checkContainer applies Blob storage's container name rules
// (azrules.CheckContainerName): 3 to 63 lowercase letters, digits and
// single hyphens, starting and ending with a letter or digit.
func checkContainer(c string) error {
	if err := azrules.CheckContainerName(c); err != nil {
		return fmt.Errorf("%w: container name %q: %v (want 3 to 63 lowercase letters, digits and single hyphens)", tablekit.ErrInvalidName, c, err)
	}
	return nil
}

// resolve reads a Location recorded in a manifest (an incremental
// backup's base): blob://… is in l's Blob storage account, or else in
// the account of the backup that names it.
func (l *Location) resolve(s string) (*Location, error) {
	if rest, ok := strings.CutPrefix(s, BlobScheme); ok {
		bs, ok := l.s.(*blobStore)
		if !ok {
			return nil, fmt.Errorf("%w: the base %s is in Blob storage and %s is not", tablekit.ErrInvalidArgument, s, l)
		}
		container, prefix, _ := strings.Cut(rest, "/")
		if err := checkContainer(container); err != nil {
			return nil, err
		}
		return Blob(bs.c, container, prefix), nil
	}
	if s == "" {
		return nil, fmt.Errorf("%w: no base location", tablekit.ErrInvalidArgument)
	}
	p := filepath.FromSlash(s)
	if d, ok := l.s.(dirStore); ok && !filepath.IsAbs(p) {
		p = filepath.Join(d.dir, p)
	}
	return Dir(p), nil
}

// reference is how a backup at from records l as its base: a directory
// relative to from's directory when both are local (the chain can move as
// a whole), else l's String.
func (l *Location) reference(from *Location) string {
	ld, ok1 := l.s.(dirStore)
	fd, ok2 := from.s.(dirStore)
	if ok1 && ok2 {
		if rel, err := filepath.Rel(fd.dir, ld.dir); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return l.String()
}

// String names the location without secrets: a directory's path, or
// blob://CONTAINER/PREFIX in account NAME.
func (l *Location) String() string { return l.s.String() }

// errNotExist is what a store returns for a missing object.
var errNotExist = fs.ErrNotExist

// store is one kind of Location. Objects are named by slash-separated
// relative paths.
type store interface {
	// Append writes data at offset off of object name, creating it if
	// needed; off is the object's length as the caller committed it
	// (anything past it, from a failed attempt, is overwritten or the
	// append fails). On return the data is durable. An append retried
	// after its first attempt landed is not applied twice.
	Append(ctx context.Context, name string, off int64, data []byte) error
	// Put replaces object name with data atomically: readers see the old
	// object or the new one.
	Put(ctx context.Context, name string, data []byte) error
	// Open reads object name from its start, at most n bytes when n >= 0.
	Open(ctx context.Context, name string, n int64) (io.ReadCloser, error)
	// Delete removes object name; a missing one is not an error.
	Delete(ctx context.Context, name string) error
	String() string
}

func (l *Location) get(ctx context.Context, name string) ([]byte, error) {
	r, err := l.s.Open(ctx, name, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, tkerr.Errorf("tablekit: read %s in %s: %w", name, l, err)
	}
	return b, nil
}

// dirStore is a local directory.
type dirStore struct{ dir string }

func (d dirStore) path(name string) string { return filepath.Join(d.dir, filepath.FromSlash(name)) }

func (d dirStore) String() string { return d.dir }

func (d dirStore) Append(_ context.Context, name string, off int64, data []byte) error {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteAt(data, off); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d dirStore) Put(_ context.Context, name string, data []byte) error {
	p := d.path(name)
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable once the directory is.
	if df, err := os.Open(dir); err == nil {
		_ = df.Sync()
		df.Close()
	}
	return nil
}

func (d dirStore) Open(_ context.Context, name string, n int64) (io.ReadCloser, error) {
	f, err := os.Open(d.path(name))
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return f, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, n), f}, nil
}

func (d dirStore) Delete(_ context.Context, name string) error {
	err := os.Remove(d.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// blobStore is a prefix in a blob container. Appended objects are append
// blobs; the others block blobs.
type blobStore struct {
	c                 *azblob.Client
	container, prefix string
	created           atomic.Bool
}

// maxAppendBlock is the largest block an append blob takes in one request
// on every service version Azurite and Azure answer.
const maxAppendBlock = 4 << 20

func (b *blobStore) String() string {
	s := BlobScheme + b.container
	if b.prefix != "" {
		s += "/" + strings.TrimSuffix(b.prefix, "/")
	}
	return s
}

func (b *blobStore) name(n string) string { return path.Join(b.prefix, n) }

func (b *blobStore) ensureContainer(ctx context.Context) error {
	if b.created.Load() {
		return nil
	}
	_, err := b.c.CreateContainer(ctx, b.container, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return tablekit.MapError(err, "create container", b.container)
	}
	b.created.Store(true)
	return nil
}

func (b *blobStore) Append(ctx context.Context, name string, off int64, data []byte) error {
	ab := b.c.ServiceClient().NewContainerClient(b.container).NewAppendBlobClient(b.name(name))
	for len(data) > 0 {
		n := min(len(data), maxAppendBlock)
		// Conditional on the position: azcore's retry of an append whose
		// first answer was lost fails instead of appending twice.
		o := &appendblob.AppendBlockOptions{AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: toPtr(off)}}
		_, err := ab.AppendBlock(ctx, nopSeeker(data[:n]), o)
		if err != nil && off == 0 && bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
			if err = b.ensureContainer(ctx); err != nil {
				return err
			}
			if _, err = ab.Create(ctx, &appendblob.CreateOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: toPtr(azcore.ETagAny)}}}); err != nil && !bloberror.HasCode(err, bloberror.BlobAlreadyExists) {
				return tablekit.MapError(err, "create append blob", b.name(name))
			}
			_, err = ab.AppendBlock(ctx, nopSeeker(data[:n]), o)
		}
		if err != nil && bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet) {
			// Landed already, if the blob now ends where this block does.
			props, perr := ab.GetProperties(ctx, nil)
			if perr == nil && props.ContentLength != nil && *props.ContentLength == off+int64(n) {
				err = nil
			}
		}
		if err != nil {
			return tablekit.MapError(err, "append to blob", b.name(name))
		}
		off += int64(n)
		data = data[n:]
	}
	return nil
}

func (b *blobStore) Put(ctx context.Context, name string, data []byte) error {
	if err := b.ensureContainer(ctx); err != nil {
		return err
	}
	bb := b.c.ServiceClient().NewContainerClient(b.container).NewBlockBlobClient(b.name(name))
	if _, err := bb.UploadBuffer(ctx, data, &blockblob.UploadBufferOptions{}); err != nil {
		return tablekit.MapError(err, "upload blob", b.name(name))
	}
	return nil
}

func (b *blobStore) Open(ctx context.Context, name string, n int64) (io.ReadCloser, error) {
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	o := &azblob.DownloadStreamOptions{}
	if n > 0 {
		o.Range = blob.HTTPRange{Count: n}
	}
	resp, err := b.c.DownloadStream(ctx, b.container, b.name(name), o)
	if err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
			return nil, fmt.Errorf("%s: %w", b.name(name), errNotExist)
		}
		return nil, tablekit.MapError(err, "download blob", b.name(name))
	}
	return resp.Body, nil
}

func (b *blobStore) Delete(ctx context.Context, name string) error {
	_, err := b.c.DeleteBlob(ctx, b.container, b.name(name), nil)
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
		return tablekit.MapError(err, "delete blob", b.name(name))
	}
	return nil
}

type readSeekNopCloser struct{ *bytes.Reader }

func (readSeekNopCloser) Close() error { return nil }

func nopSeeker(b []byte) readSeekNopCloser { return readSeekNopCloser{bytes.NewReader(b)} }

func toPtr[T any](v T) *T { return &v }

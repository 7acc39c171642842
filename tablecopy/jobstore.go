package tablecopy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/patterns"
)

// errStale is a conditional write of a job object that lost: the object
// was created, or changed, since the writer read it.
var errStale = errors.New("changed by another writer")

// jobStore holds a distributed job's record and its ranges' states, each
// an object written conditionally on the version its writer read (an ETag),
// so that two holders of one range cannot both write its state.
type jobStore interface {
	// load returns the object name and its version; a missing one fails
	// with fs.ErrNotExist.
	load(ctx context.Context, name string) (data []byte, etag string, err error)
	// save writes name if it is still at version etag ("" creates it, and
	// fails when it exists) and returns its new version; a lost race fails
	// with errStale.
	save(ctx context.Context, name string, data []byte, etag string) (string, error)
	// ref is the job reference naming this store (what "tablekit job"
	// takes).
	ref() string
}

// Job references.
const (
	// TableJobScheme starts the reference of a copy job: its record is in
	// the checkpoint table of the target's account,
	// table://CHECKPOINTTABLE/JOBID.
	TableJobScheme = "table://"
)

// tableJobStore keeps a copy job in the checkpoint table: PartitionKey
// "job-ID", RowKey the object's name, the JSON in State0, State1, ...
type tableJobStore struct {
	tbl *rows
	id  string
}

func newTableJobStore(acct *tablekit.Account, table, id string) (*tableJobStore, error) {
	tbl, err := patterns.NewTable[entity.Entity](acct, table, nil)
	if err != nil {
		return nil, err
	}
	return &tableJobStore{tbl: tbl, id: id}, nil
}

func (s *tableJobStore) pk() string  { return "job-" + s.id }
func (s *tableJobStore) ref() string { return TableJobScheme + s.tbl.Name() + "/" + s.id }

func (s *tableJobStore) load(ctx context.Context, name string) ([]byte, string, error) {
	e, err := s.tbl.Get(ctx, s.pk(), name, nil)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, "", fmt.Errorf("%s in %s: %w", name, s.ref(), fs.ErrNotExist)
	}
	if err != nil {
		return nil, "", err
	}
	return []byte(getChunks(e)), e.ETag, nil
}

func (s *tableJobStore) save(ctx context.Context, name string, data []byte, etag string) (string, error) {
	e := entity.Entity{PartitionKey: s.pk(), RowKey: name, Properties: map[string]entity.Value{"Updated": entity.DateTime(time.Now().UTC())}}
	putChunks(&e, string(data))
	var err error
	if etag == "" {
		err = s.tbl.Insert(ctx, &e, nil)
	} else {
		err = s.tbl.Replace(ctx, &e, &patterns.WriteOptions{ETag: etag})
	}
	switch {
	case errors.Is(err, tablekit.ErrAlreadyExists), errors.Is(err, tablekit.ErrPreconditionFailed), etag != "" && errors.Is(err, tablekit.ErrNotFound):
		return "", fmt.Errorf("%s in %s: %w", name, s.ref(), errStale)
	case err != nil:
		return "", err
	}
	if e.ETag == "" {
		_, tag, err := s.load(ctx, name)
		return tag, err
	}
	return e.ETag, nil
}

// blobJobStore keeps a backup job in its Location (Blob storage):
// job/job.json and job/range-NNNNN.json.
type blobJobStore struct{ b *blobStore }

func (s blobJobStore) ref() string { return s.b.String() }

func (s blobJobStore) client(name string) *blockblob.Client {
	return s.b.c.ServiceClient().NewContainerClient(s.b.container).NewBlockBlobClient(s.b.name("job/" + name + ".json"))
}

func (s blobJobStore) load(ctx context.Context, name string) ([]byte, string, error) {
	resp, err := s.client(name).DownloadStream(ctx, nil)
	if err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound) {
			return nil, "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), fs.ErrNotExist)
		}
		return nil, "", tablekit.MapError(err, "download blob", s.b.name("job/"+name+".json"))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	return data, string(deref(resp.ETag)), nil
}

func (s blobJobStore) save(ctx context.Context, name string, data []byte, etag string) (string, error) {
	if err := s.b.ensureContainer(ctx); err != nil {
		return "", err
	}
	cond := &blob.ModifiedAccessConditions{IfMatch: toPtr(azcore.ETag(etag))}
	if etag == "" {
		cond = &blob.ModifiedAccessConditions{IfNoneMatch: toPtr(azcore.ETagAny)}
	}
	resp, err := s.client(name).Upload(ctx, nopSeeker(data), &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
	if err != nil {
		if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists, bloberror.BlobNotFound) {
			return "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), errStale)
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == 412 || re.StatusCode == 409) {
			return "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), errStale)
		}
		return "", tablekit.MapError(err, "upload blob", s.b.name("job/"+name+".json"))
	}
	return string(deref(resp.ETag)), nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// openJobStore reads a job reference: table://CHECKPOINTTABLE/JOBID (a
// copy, in acct's tables), blob://CONTAINER/PREFIX (a backup, in acct's
// Blob storage) or a directory (a backup to a shared filesystem).
func openJobStore(ref string, acct *tablekit.Account) (jobStore, error) {
	if rest, ok := strings.CutPrefix(ref, TableJobScheme); ok {
		table, id, _ := strings.Cut(rest, "/")
		if table == "" || !validJobID(id) {
			return nil, tkerr.Errorf("tablekit: job %q: %w: want table://CHECKPOINTTABLE/JOBID or blob://CONTAINER/PREFIX", ref, tablekit.ErrInvalidArgument)
		}
		return newTableJobStore(acct, table, id)
	}
	if strings.HasPrefix(ref, BlobScheme) {
		l, err := ParseLocation(ref, acct)
		if err != nil {
			return nil, err
		}
		return blobJobStore{b: l.s.(*blobStore)}, nil
	}
	if ref == "" || strings.Contains(ref, "://") {
		return nil, tkerr.Errorf("tablekit: job %q: %w: want table://CHECKPOINTTABLE/JOBID, blob://CONTAINER/PREFIX or a backup's directory", ref, tablekit.ErrInvalidArgument)
	}
	return dirJobStore{d: Dir(ref).s.(dirStore)}, nil
}

// validJobID: letters, digits, '-' and '.', 1 to 64 of them (a job id is
// part of queue message ids, blob names and PartitionKeys).
func validJobID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// endpointKey is an endpoint as jobs record and compare it: without a
// query string (where a SAS would be) or a trailing slash.
func endpointKey(u string) string {
	return strings.TrimSuffix(endpointOnly(u), "/")
}

// dirJobStore keeps a backup job in its local Location (a directory every
// worker mounts at the same path): job/job.json and job/range-NNNNN.json.
// An object's version is the SHA-256 of its content; a conditional write
// holds an advisory lock on job/NAME.lock (flock, released by the kernel
// when its holder dies, SIGKILL included) while it compares the version
// and replaces the object whole (a temporary file renamed over it).
type dirJobStore struct{ d dirStore }

func (s dirJobStore) ref() string { return s.d.dir }

func (s dirJobStore) path(name string) string { return s.d.path("job/" + name + ".json") }

func (s dirJobStore) load(_ context.Context, name string) ([]byte, string, error) {
	data, err := os.ReadFile(s.path(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), fs.ErrNotExist)
		}
		return nil, "", err
	}
	return data, contentTag(data), nil
}

func (s dirJobStore) save(ctx context.Context, name string, data []byte, etag string) (string, error) {
	p := s.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, s.d.path("job/"+name+".lock"))
	if err != nil {
		return "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), err)
	}
	defer unlock()
	cur, err := os.ReadFile(p)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", err
	case err == nil && (etag == "" || contentTag(cur) != etag), err != nil && etag != "":
		return "", fmt.Errorf("job/%s.json in %s: %w", name, s.ref(), errStale)
	}
	if err := s.d.Put(ctx, "job/"+name+".json", data); err != nil {
		return "", err
	}
	return contentTag(data), nil
}

// contentTag is a local job object's version: the SHA-256 of its content.
// Every write of a range's state carries a new owner or time, so no two
// versions share a tag.
func contentTag(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:16])
}

// jobDirAllowed reports whether dir is one of roots or under one.
func jobDirAllowed(dir string, roots []string) bool {
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(abs, dir)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

package blobs

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/headcase"
)

// container is one container and its blobs.
type container struct {
	name string

	mu       sync.RWMutex
	deleted  bool // set when the container is deleted under a request holding it
	meta     metadata
	etag     string
	modified time.Time
	access   string // x-ms-blob-public-access: "", "blob" or "container"
	lease    lease
	acl      []acl.Identifier // stored access policies (Set Container ACL)
	blobs    map[string]*blob
	names    []string // names of blobs (committed ones), sorted
	staged   map[string]*staging
}

// blobKind is a blob's type.
type blobKind uint8

const (
	blockBlob blobKind = iota + 1
	appendBlob
	pageBlob
)

// String is the type as x-ms-blob-type and BlobType write it.
func (k blobKind) String() string {
	switch k {
	case appendBlob:
		return "AppendBlob"
	case pageBlob:
		return "PageBlob"
	}
	return "BlockBlob"
}

// blob is one committed blob.
type blob struct {
	kind blobKind
	// data is the content. It is never changed in place: a write
	// replaces it, an append writes beyond the end every earlier reader
	// holds.
	data []byte
	// blocks are a block blob's committed blocks, in order.
	blocks []block
	// appended counts an append blob's committed blocks.
	appended int
	sealed   bool
	meta     metadata
	// tags are the blob's index tags (tags.go).
	tags tagSet
	// tiering is a block blob's access tier (tier.go).
	tiering tiering
	// page is a page blob's size, sequence number and pages (page.go).
	page     pageState
	props    contentProps
	etag     string
	modified time.Time
	created  time.Time
	// lease is the blob's lease; it stays with the blob when a write
	// replaces the blob (put).
	lease lease
	// copy describes the Copy Blob that last wrote the blob; a write
	// that replaces the blob otherwise clears it.
	copy copyInfo
	// file names the content's file in a location (persist.go), "" in
	// memory or when the content is kept in the location's database.
	file string
	// snapshots are the blob's snapshots, oldest first; they stay with
	// the blob when a write replaces it, and are never changed in place
	// (a change makes a new slice).
	snapshots []snapshot
}

// block is a committed block: its id (decoded) and its bytes in the
// blob's data.
type block struct {
	id       string
	off, len int
}

// staging holds a blob's uncommitted blocks.
type staging struct {
	order  []string          // ids, oldest first
	blocks map[string][]byte // by decoded id
	// etag and modified are the uncommitted blob's, from its first
	// block: Get Block List answers with them.
	etag     string
	modified time.Time
}

// contentProps are the blob's content headers as stored.
type contentProps struct {
	contentType, contentEncoding, contentLanguage, contentDisposition, cacheControl string
	contentMD5                                                                      []byte
}

// metaPair is one metadata name and value.
type metaPair struct{ name, value string }

// metadata is a container's or blob's metadata, sorted by name.
type metadata []metaPair

// view is what a reader copies out of a blob under the lock.
type view struct {
	kind      blobKind
	data      []byte
	blocks    []block
	committed int
	sealed    bool
	meta      metadata
	tags      tagSet
	tiering   tiering
	page      pageState
	props     contentProps
	etag      string
	modified  time.Time
	created   time.Time
	lease     lease
	copy      copyInfo
	appended  int
}

func (b *blob) view() view {
	n := len(b.blocks)
	if b.kind == appendBlob {
		n = b.appended
	}
	return view{kind: b.kind, data: b.data, blocks: b.blocks, committed: n, sealed: b.sealed, meta: b.meta, tags: b.tags,
		tiering: b.tiering, page: b.page, props: b.props, etag: b.etag, modified: b.modified, created: b.created, lease: b.lease,
		copy: b.copy, appended: b.appended}
}

// container returns the container named name, or nil.
func (s *Service) container(name string) *container {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.containers[name]
}

// blobExists says whether a committed blob exists, for the choice of
// SAS permission; it answers false for a container that is missing.
func (s *Service) blobExists(cname, bname string) bool {
	c := s.container(cname)
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.blobs[bname]
	return ok && !c.deleted
}

// lockContainer returns the named container locked for writing (unlock
// with c.mu.Unlock), or ContainerNotFound.
func (s *Service) lockContainer(name string) (*container, *answer.Error) {
	c := s.container(name)
	if c == nil {
		return nil, errContainerNotFound
	}
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return nil, errContainerNotFound
	}
	return c, nil
}

// lockExisting locks q's container and returns it with the blob q names,
// when the blob exists and cond's write conditions hold for it
// (conditions.existing); the caller unlocks c. A refusal leaves nothing
// locked.
func (s *Service) lockExisting(q *request, cond conditions) (*container, *blob, *answer.Error) {
	c, e := s.lockContainer(q.container)
	if e != nil {
		return nil, nil, e
	}
	b, e := cond.existing(c, q.blob)
	if e != nil {
		c.mu.Unlock()
		return nil, nil, e
	}
	return c, b, nil
}

// rlockContainer is lockContainer for reading (unlock with
// c.mu.RUnlock).
func (s *Service) rlockContainer(name string) (*container, *answer.Error) {
	c := s.container(name)
	if c == nil {
		return nil, errContainerNotFound
	}
	c.mu.RLock()
	if c.deleted {
		c.mu.RUnlock()
		return nil, errContainerNotFound
	}
	return c, nil
}

// put stores b as the committed blob name; it drops the blob's
// uncommitted blocks, as a commit does. The blob it replaces hands on its
// lease (the write was checked against it) and its snapshots.
func (c *container) put(name string, b *blob) {
	if old, ok := c.blobs[name]; ok {
		b.lease, b.snapshots = old.lease, old.snapshots
	} else {
		i, _ := slices.BinarySearch(c.names, name)
		c.names = slices.Insert(c.names, i, name)
	}
	c.blobs[name] = b
	delete(c.staged, name)
}

// remove deletes the blob name and its uncommitted blocks.
func (c *container) remove(name string) {
	if _, ok := c.blobs[name]; ok {
		i, _ := slices.BinarySearch(c.names, name)
		c.names = slices.Delete(c.names, i, i+1)
	}
	delete(c.blobs, name)
	delete(c.staged, name)
}

// parseMetadata reads the x-ms-meta-* headers. Names must be C#
// identifiers (azrules.CheckMetadataName), all names and values together
// at most azrules.MaxMetadataBytes. A name keeps the case it was sent in
// (headcase: Go's HTTP server puts header names in their canonical form),
// as Azure keeps it ("metadata names preserve the case with which they
// were created, but are case-insensitive when set or read": the REST
// docs' "Naming and Referencing Containers, Blobs, and Metadata"; Azurite
// 3.37 reads them from the raw headers for that reason).
func parseMetadata(h http.Header) (metadata, *answer.Error) {
	var md metadata
	size := 0
	for k, vs := range h {
		if len(k) <= len("x-ms-meta-") || !strings.EqualFold(k[:len("x-ms-meta-")], "x-ms-meta-") {
			continue
		}
		name := headcase.Name(h, k)
		if azrules.CheckMetadataName(name) != nil {
			return nil, answer.InvalidMetadata()
		}
		v := strings.Join(vs, ",")
		size += len(name) + len(v)
		md = append(md, metaPair{name, v})
	}
	if azrules.CheckMetadataSize(size) != nil {
		return nil, answer.MetadataTooLarge()
	}
	slices.SortFunc(md, func(a, b metaPair) int { return strings.Compare(a.name, b.name) })
	return md, nil
}

// setMetadataHeaders writes md as x-ms-meta-* headers.
func setMetadataHeaders(h http.Header, md metadata) {
	for _, p := range md {
		h["x-ms-meta-"+p.name] = []string{p.value}
	}
}

// validContainerName is Azure's answer to a container name
// azrules.CheckContainerName refuses: a length outside 3 to 63 is out of
// range, a character an invalid resource name. System containers ($logs,
// ...) are left to the operation.
func validContainerName(name string) *answer.Error {
	if strings.HasPrefix(name, "$") {
		return nil
	}
	err := azrules.CheckContainerName(name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, azrules.ErrLength):
		return answer.ResourceNameLength()
	}
	return answer.InvalidResourceName()
}

// validBlobName checks a blob name's length (azrules.CheckBlobNameLength,
// in UTF-16 code units): over it, Azure answers 400 OutOfRangeInput to
// every operation.
func validBlobName(name string) *answer.Error {
	if name != "" && azrules.CheckBlobNameLength(name) != nil {
		return answer.OutOfRangeInput()
	}
	return nil
}

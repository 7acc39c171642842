package blobs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// Persistence (Config.Location): the service keeps everything in memory,
// as without a location, and writes each change through to the location's
// database (disk.BlobsFile) before it answers: a write that was answered
// survives a crash, and Open loads the state back.
//
// The database holds one bucket per container in bucketContainers. In it:
// the container's record (keyContainer); its blobs' records (bucketBlobs,
// by name); the blobs' uncommitted block lists (bucketStaged, by name)
// and the blocks' bytes (bucketBlocks, by name, length-prefixed, and block
// id); the blobs' snapshots (bucketSnapshots, by name, length-prefixed,
// and the snapshot's time). Records are JSON, one encoding per record
// type (containerRecord, blobRecord, stagingRecord, snapshotRecord): a
// field added to a container or a blob is kept by adding it there. The
// service's properties (CORS rules) are in bucketService.
//
// A snapshot's content is its own: inline in its record up to inlineMax
// bytes, else a file of its own, written when the snapshot is taken (the
// blob's own file is replaced or appended to afterwards).
//
// A committed blob's content of up to inlineMax bytes is kept beside the
// records (bucketData, keyed by the blob's name, length-prefixed, and the
// offset of the piece, so that an append writes only what it appends),
// and read back into memory at Open. A larger one is a file of its own in
// disk.BlobDataDir (files.go), named in its record, written and fsync'd
// before the record is committed; a file no record names is removed at
// Open. At Open the files are mapped, not read: a large blob's bytes come
// into memory when it is read, as the operating system's cache, which can
// evict them.
var (
	bucketContainers = []byte("containers")
	bucketBlobs      = []byte("blobs")
	bucketStaged     = []byte("staged")
	bucketBlocks     = []byte("blocks")
	bucketSnapshots  = []byte("snapshots")
	keyContainer     = []byte("container")
	bucketData       = []byte("data")
	bucketService    = []byte("service")
	keyProperties    = []byte("properties")
)

// containerBuckets are the buckets each container's bucket holds.
var containerBuckets = [][]byte{bucketBlobs, bucketData, bucketStaged, bucketBlocks, bucketSnapshots, bucketPages, bucketSnapshotPages}

// inlineMax is the largest content kept in the database rather than in a
// file: a file costs two more fsyncs (its own and its directory's) per
// write, a content in the database costs memory from Open on.
var inlineMax = 64 << 10

// store is a service's database and the group committing to it, and the
// directory of its content files.
type store struct {
	db    *bolt.DB
	group *disk.Group
	files string
}

// containerRecord is a container as stored, but its blobs.
type containerRecord struct {
	Meta     [][2]string      `json:"meta,omitempty"`
	ETag     string           `json:"etag"`
	Modified time.Time        `json:"modified"`
	Access   string           `json:"access,omitempty"`
	Lease    *leaseRecord     `json:"lease,omitempty"`
	ACL      []acl.Identifier `json:"acl,omitempty"`
}

func (c *container) record() containerRecord {
	return containerRecord{Meta: metaRecord(c.meta), ETag: c.etag, Modified: c.modified, Access: c.access,
		Lease: c.lease.record(), ACL: c.acl}
}

func (r containerRecord) container(name string) *container {
	return &container{name: name, meta: r.metadata(), etag: r.ETag, modified: r.Modified, access: r.Access,
		lease: r.Lease.lease(), acl: r.ACL, blobs: map[string]*blob{}, staged: map[string]*staging{}}
}

// leaseRecord is a lease as stored, with its times absolute: a fixed
// lease that expires, or a breaking one that breaks, while the emulator
// is stopped has done so when it starts again. nil for no lease.
type leaseRecord struct {
	State   leaseState `json:"state"`
	ID      string     `json:"id,omitempty"`
	Seconds int        `json:"seconds,omitempty"`
	Expires time.Time  `json:"expires,omitzero"`
	BreakAt time.Time  `json:"breakAt,omitzero"`
}

func (l lease) record() *leaseRecord {
	if l == (lease{}) {
		return nil
	}
	return &leaseRecord{State: l.state, ID: l.id, Seconds: l.seconds, Expires: l.expires, BreakAt: l.breakAt}
}

func (r *leaseRecord) lease() lease {
	if r == nil {
		return lease{}
	}
	return lease{state: r.State, id: r.ID, seconds: r.Seconds, expires: r.Expires, breakAt: r.BreakAt}
}

// copyRecord is what a blob keeps of the copy that wrote it (copyInfo).
type copyRecord struct {
	ID        string    `json:"id"`
	Source    string    `json:"source"`
	Status    string    `json:"status"`
	Progress  string    `json:"progress"`
	Completed time.Time `json:"completed"`
}

func (r containerRecord) metadata() metadata { return fromMetaRecord(r.Meta) }

// blobRecord is a committed blob as stored, but its content: Size bytes,
// at the start of File (in the location's disk.BlobDataDir) or, when File
// is empty, in bucketData.
type blobRecord struct {
	Kind     blobKind      `json:"kind"`
	Size     int           `json:"size"`
	File     string        `json:"file,omitempty"`
	Blocks   []blockRecord `json:"blocks,omitempty"`
	Appended int           `json:"appended,omitempty"`
	Sealed   bool          `json:"sealed,omitempty"`
	Meta     [][2]string   `json:"meta,omitempty"`
	Tags     [][2]string   `json:"tags,omitempty"`
	Props    propsRecord   `json:"props"`
	ETag     string        `json:"etag"`
	Modified time.Time     `json:"modified"`
	Created  time.Time     `json:"created"`
	Lease    *leaseRecord  `json:"lease,omitempty"`
	Copy     *copyRecord   `json:"copy,omitempty"`
	Tier     *tierRecord   `json:"tier,omitempty"`
	Page     *pageRecord   `json:"page,omitempty"`
}

// tierRecord is a block blob's tier as stored (tiering); absent when
// the tier is inferred.
type tierRecord struct {
	Tier     string    `json:"tier"`
	Changed  time.Time `json:"changed"`
	To       string    `json:"to,omitempty"`
	Done     time.Time `json:"done,omitzero"`
	Priority string    `json:"priority,omitempty"`
}

type blockRecord struct {
	ID  []byte `json:"id"`
	Off int    `json:"off"`
	Len int    `json:"len"`
}

type propsRecord struct {
	ContentType        string `json:"contentType,omitempty"`
	ContentEncoding    string `json:"contentEncoding,omitempty"`
	ContentLanguage    string `json:"contentLanguage,omitempty"`
	ContentDisposition string `json:"contentDisposition,omitempty"`
	CacheControl       string `json:"cacheControl,omitempty"`
	ContentMD5         []byte `json:"contentMD5,omitempty"`
}

func (b *blob) record() blobRecord {
	r := blobRecord{Kind: b.kind, Size: len(b.data), File: b.file, Appended: b.appended, Sealed: b.sealed,
		Meta: metaRecord(b.meta), ETag: b.etag, Modified: b.modified, Created: b.created,
		Props: propsRecord{ContentType: b.props.contentType, ContentEncoding: b.props.contentEncoding,
			ContentLanguage: b.props.contentLanguage, ContentDisposition: b.props.contentDisposition,
			CacheControl: b.props.cacheControl, ContentMD5: b.props.contentMD5},
		Lease: b.lease.record(), Page: b.pageRecord()}
	if len(b.tags) > 0 {
		r.Tags = metaRecord(metadata(b.tags))
	}
	if t := b.tiering; t != (tiering{}) {
		r.Tier = &tierRecord{Tier: t.tier, Changed: t.changed, To: t.to, Done: t.done, Priority: t.priority}
	}
	if b.copy != (copyInfo{}) {
		r.Copy = &copyRecord{ID: b.copy.id, Source: b.copy.source, Status: b.copy.status,
			Progress: b.copy.progress, Completed: b.copy.completed}
	}
	for _, bl := range b.blocks {
		r.Blocks = append(r.Blocks, blockRecord{ID: []byte(bl.id), Off: bl.off, Len: bl.len})
	}
	return r
}

func (r blobRecord) blob(data []byte) *blob {
	b := &blob{kind: r.Kind, data: data, file: r.File, appended: r.Appended, sealed: r.Sealed, meta: fromMetaRecord(r.Meta),
		etag: r.ETag, modified: r.Modified, created: r.Created,
		props: contentProps{contentType: r.Props.ContentType, contentEncoding: r.Props.ContentEncoding,
			contentLanguage: r.Props.ContentLanguage, contentDisposition: r.Props.ContentDisposition,
			cacheControl: r.Props.CacheControl, contentMD5: r.Props.ContentMD5},
		lease: r.Lease.lease(), tags: tagSet(fromMetaRecord(r.Tags)), page: r.Page.state()}
	if t := r.Tier; t != nil {
		b.tiering = tiering{tier: t.Tier, changed: t.Changed, to: t.To, done: t.Done, priority: t.Priority}
	}
	if c := r.Copy; c != nil {
		b.copy = copyInfo{id: c.ID, source: c.Source, status: c.Status, progress: c.Progress, completed: c.Completed}
	}
	for _, bl := range r.Blocks {
		b.blocks = append(b.blocks, block{id: string(bl.ID), off: bl.Off, len: bl.Len})
	}
	return b
}

// snapshotRecord is a snapshot as stored: the blob it is of, its time,
// and the blob as it was then, with its content in Data when Blob.File
// is empty.
type snapshotRecord struct {
	Name string     `json:"name"`
	At   string     `json:"at"`
	Blob blobRecord `json:"blob"`
	Data []byte     `json:"data,omitempty"`
}

// snapshotKey is the key of blob name's snapshot at in bucketSnapshots;
// the times have one length and sort as they follow each other.
func snapshotKey(name, at string) []byte {
	return append(nameKey(name, len(at)), at...)
}

// stagingRecord is a blob's uncommitted block list as stored; the
// blocks' bytes are in bucketBlocks.
type stagingRecord struct {
	Order    [][]byte  `json:"order"`
	ETag     string    `json:"etag"`
	Modified time.Time `json:"modified"`
}

func metaRecord(md metadata) [][2]string {
	out := make([][2]string, len(md))
	for i, p := range md {
		out[i] = [2]string{p.name, p.value}
	}
	return out
}

func fromMetaRecord(r [][2]string) metadata {
	var md metadata
	for _, p := range r {
		md = append(md, metaPair{p[0], p[1]})
	}
	return md
}

// nameKey is the prefix of a blob's keys in bucketData and bucketBlocks:
// the name's length, then the name, so that no blob's prefix begins
// another's.
func nameKey(name string, extra int) []byte {
	k := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(name)+extra), uint64(len(name)))
	return append(k, name...)
}

// Open returns the Blob service of cfg: with cfg.Location, the state kept
// there, loaded back, and every change written through to it; else an
// empty service in memory, as New. Close releases the location.
func Open(cfg Config) (*Service, error) {
	s := New(cfg)
	if cfg.Location == "" {
		return s, nil
	}
	db, err := disk.Open(cfg.Location, disk.BlobsFile)
	if err != nil {
		return nil, err
	}
	files := filepath.Join(cfg.Location, disk.BlobDataDir)
	if err := os.MkdirAll(files, 0o755); err != nil {
		db.Close()
		return nil, fmt.Errorf("emulator: blobs in %s: %w", cfg.Location, err)
	}
	if err := s.load(db, files); err != nil {
		db.Close()
		return nil, fmt.Errorf("emulator: blobs in %s: %w", cfg.Location, err)
	}
	s.store = &store{db: db, group: disk.NewGroup(db), files: files}
	return s, nil
}

// Close commits what was submitted and closes the location's database. It
// does nothing for a service in memory.
func (s *Service) Close() error {
	if s.store == nil {
		return nil
	}
	s.store.group.Close()
	return s.store.db.Close()
}

// load reads the database into the service, maps the content files the
// records name and removes the others (written for a record a crash kept
// from being committed, or left by a delete a crash cut short).
func (s *Service) load(db *bolt.DB, files string) error {
	named := map[string]bool{}
	var last int64
	seen := func(etag string) {
		if t, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(etag, `"0x`), `"`), 16, 64); err == nil {
			last = max(last, t)
		}
	}
	err := db.Update(func(tx *bolt.Tx) error {
		sb, err := tx.CreateBucketIfNotExists(bucketService)
		if err != nil {
			return err
		}
		if v := sb.Get(keyProperties); v != nil {
			p, e := svcprops.Parse(v)
			if e != nil {
				return fmt.Errorf("the service's properties: %s", e.Message)
			}
			s.props.Merge(p)
		}
		cs, err := tx.CreateBucketIfNotExists(bucketContainers)
		if err != nil {
			return err
		}
		return cs.ForEachBucket(func(name []byte) error {
			cb := cs.Bucket(name)
			var rec containerRecord
			if err := json.Unmarshal(cb.Get(keyContainer), &rec); err != nil {
				return fmt.Errorf("container %s: %w", name, err)
			}
			c := rec.container(string(name))
			seen(c.etag)
			for _, b := range containerBuckets {
				if _, err := cb.CreateBucketIfNotExists(b); err != nil {
					return fmt.Errorf("container %s: %w", name, err)
				}
			}
			err := cb.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
				var r blobRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("container %s, blob %s: %w", name, k, err)
				}
				var content []byte
				switch {
				case r.File != "":
					content, err = mapFile(filepath.Join(files, r.File), r.Size)
					named[r.File] = true
				case r.Size > 0:
					content, err = readPieces(cb.Bucket(bucketData).Cursor(), string(k), r.Size)
				}
				if err != nil {
					return fmt.Errorf("container %s, blob %s: %w", name, k, err)
				}
				b := r.blob(content)
				if b.kind == pageBlob {
					if b.page.pages, err = loadPages(cb.Bucket(bucketPages), nameKey(string(k), 0), b.page.size); err != nil {
						return fmt.Errorf("container %s, blob %s: %w", name, k, err)
					}
				}
				c.blobs[string(k)] = b
				c.names = append(c.names, string(k))
				seen(r.ETag)
				return nil
			})
			if err != nil {
				return err
			}
			blocks := cb.Bucket(bucketBlocks)
			err = cb.Bucket(bucketStaged).ForEach(func(k, v []byte) error {
				var r stagingRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("container %s, blob %s: %w", name, k, err)
				}
				st := &staging{blocks: map[string][]byte{}, etag: r.ETag, modified: r.Modified}
				for _, id := range r.Order {
					d := blocks.Get(append(nameKey(string(k), len(id)), id...))
					if d == nil {
						return fmt.Errorf("container %s, blob %s: a staged block is missing", name, k)
					}
					st.order = append(st.order, string(id))
					st.blocks[string(id)] = bytes.Clone(d)
				}
				c.staged[string(k)] = st
				seen(r.ETag)
				return nil
			})
			if err != nil {
				return err
			}
			err = cb.Bucket(bucketSnapshots).ForEach(func(k, v []byte) error {
				var r snapshotRecord
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("container %s, snapshot %q: %w", name, k, err)
				}
				b := c.blobs[r.Name]
				if b == nil {
					return nil // never written so; its file goes as unnamed
				}
				content := r.Data
				if r.Blob.File != "" {
					content, err = mapFile(filepath.Join(files, r.Blob.File), r.Blob.Size)
					if err != nil {
						return fmt.Errorf("container %s, blob %s, snapshot %s: %w", name, r.Name, r.At, err)
					}
					named[r.Blob.File] = true
				}
				sb := r.Blob.blob(content)
				if sb.kind == pageBlob {
					if sb.page.pages, err = loadPages(cb.Bucket(bucketSnapshotPages), snapshotKey(r.Name, r.At), sb.page.size); err != nil {
						return fmt.Errorf("container %s, blob %s, snapshot %s: %w", name, r.Name, r.At, err)
					}
				}
				// Keys sort by blob, then by time: each blob's snapshots
				// come oldest first, as the service keeps them.
				b.snapshots = append(b.snapshots, snapshot{at: r.At, b: sb})
				return nil
			})
			if err != nil {
				return err
			}
			s.containers[c.name] = c
			s.names = append(s.names, c.name)
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := removeUnnamed(files, named); err != nil {
		return err
	}
	// Buckets list in key order, which is name order: names stay sorted.
	if !slices.IsSorted(s.names) {
		slices.Sort(s.names)
	}
	// ETags keep rising across the restart.
	s.clock.last = last
	return nil
}

// pieceKey is the key of the piece of blob name's content at offset off.
func pieceKey(name string, off int) []byte {
	return binary.BigEndian.AppendUint64(nameKey(name, 8), uint64(off))
}

// readPieces reads blob name's content, size bytes, from its pieces.
func readPieces(c *bolt.Cursor, name string, size int) ([]byte, error) {
	prefix := nameKey(name, 0)
	out := make([]byte, 0, size)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if int(binary.BigEndian.Uint64(k[len(prefix):])) != len(out) {
			return nil, fmt.Errorf("its content has a gap at %d", len(out))
		}
		out = append(out, v...)
	}
	if len(out) != size {
		return nil, fmt.Errorf("its content holds %d bytes, its record %d", len(out), size)
	}
	return out, nil
}

// write is a change submitted to the location: its commit, the content
// file it has written before (nil when none), and the files the commit
// leaves unnamed, removed once it is on disk.
type write struct {
	p      *disk.Pending
	file   *fileWrite
	remove []string // set by the commit, read once it is done
	after  func()   // run once the commit is on disk, when set
}

// commit submits fn to the location, or returns nil for a service in
// memory. The caller holds the lock that orders the change in memory; the
// request's answer waits for the commit (held) once that lock is released.
// fn is given w, whose remove it sets.
func (s *Service) commit(f *fileWrite, fn func(tx *bolt.Tx, w *write) error) *write {
	if s.store == nil {
		return nil
	}
	w := &write{file: f}
	w.p = s.store.group.Submit(func(tx *bolt.Tx) error {
		w.remove = nil
		if f != nil {
			// The content is on disk before the record that names it.
			if err := f.do(); err != nil {
				return err
			}
		}
		return fn(tx, w)
	})
	return w
}

// wait writes w's content file, if it has one and the commit has not
// written it yet, waits for the commit, and removes the files it left
// unnamed (one left by a crash goes at the next Open).
func (w *write) wait() error {
	if w.file != nil {
		w.file.do()
	}
	if err := w.p.Wait(); err != nil {
		return err
	}
	for _, f := range w.remove {
		os.Remove(f)
	}
	if w.after != nil {
		w.after()
	}
	return nil
}

// held holds the answer to a request that changed something (one whose
// handler set request.pending before it answered) until the change is
// committed: the handler answers under its container's lock, the content
// is written and the commit waited for after the lock is released, so that
// writers to one container share an fsync. A change that could not be
// written is answered 500 InternalError (the change stays in memory).
// Answers of requests that changed nothing pass straight through.
type held struct {
	http.ResponseWriter
	q      *request
	status int // the status held, 0 when none is
	body   []byte
}

// WriteHeader holds status when the request has a commit pending.
func (h *held) WriteHeader(status int) {
	if h.q.pending == nil || h.status != 0 {
		h.ResponseWriter.WriteHeader(status)
		return
	}
	h.status = status
}

// Write holds what the answer's body holds, while its status is held.
func (h *held) Write(p []byte) (int, error) {
	if h.status == 0 {
		return h.ResponseWriter.Write(p)
	}
	h.body = append(h.body, p...)
	return len(p), nil
}

// finish waits for the request's commit and sends what was held. It runs
// once the handler has returned and released its locks.
func (h *held) finish() {
	if h.q.pending == nil {
		return
	}
	err := h.q.pending.wait()
	if h.status == 0 {
		return // answered with an error, not held
	}
	if err != nil {
		hd := h.ResponseWriter.Header()
		for k := range hd {
			delete(hd, k)
		}
		writeError(h.ResponseWriter, h.q.r, answer.InternalError())
		return
	}
	h.ResponseWriter.WriteHeader(h.status)
	h.ResponseWriter.Write(h.body)
}

// containerBucket returns the bucket of the container named name, or nil
// when the container was deleted: a write that reached the container in
// memory just before its delete is committed after it, to nothing.
func containerBucket(tx *bolt.Tx, name string) *bolt.Bucket {
	return tx.Bucket(bucketContainers).Bucket([]byte(name))
}

// saveContainer writes c's record, creating its buckets when create is
// set. c (or, for a new one, the service) is locked.
func (s *Service) saveContainer(c *container, create bool) *write {
	if s.store == nil {
		return nil
	}
	rec, err := json.Marshal(c.record())
	name := c.name
	return s.commit(nil, func(tx *bolt.Tx, w *write) error {
		if err != nil {
			return err
		}
		if create {
			cs := tx.Bucket(bucketContainers)
			if cs.Bucket([]byte(name)) != nil {
				if err := s.dropBucket(cs, name, w); err != nil {
					return err
				}
			}
			cb, err := cs.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			for _, b := range containerBuckets {
				if _, err := cb.CreateBucket(b); err != nil {
					return err
				}
			}
		}
		cb := containerBucket(tx, name)
		if cb == nil {
			return nil
		}
		return cb.Put(keyContainer, rec)
	})
}

// dropContainer deletes the container named name and all it holds.
func (s *Service) dropContainer(name string) *write {
	return s.commit(nil, func(tx *bolt.Tx, w *write) error {
		cs := tx.Bucket(bucketContainers)
		if cs.Bucket([]byte(name)) == nil {
			return nil
		}
		return s.dropBucket(cs, name, w)
	})
}

// dropBucket deletes the bucket of container name, noting its blobs'
// files for removal.
func (s *Service) dropBucket(cs *bolt.Bucket, name string, w *write) error {
	cb := cs.Bucket([]byte(name))
	for _, b := range [][]byte{bucketBlobs, bucketSnapshots} {
		err := cb.Bucket(b).ForEach(func(_, v []byte) error {
			if f := recordFile(v); f != "" {
				w.remove = append(w.remove, filepath.Join(s.store.files, f))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return cs.DeleteBucket([]byte(name))
}

// recordFile is the content file a stored blob record or snapshot
// record names.
func recordFile(v []byte) string {
	var r struct {
		File string `json:"file"`
		Blob struct {
			File string `json:"file"`
		} `json:"blob"`
	}
	if json.Unmarshal(v, &r) != nil {
		return ""
	}
	return r.File + r.Blob.File
}

// content says what a write of a blob's record does to its content.
type content struct {
	// replace: the content becomes the blob's data, in a new file (and
	// its uncommitted blocks go, as a commit drops them).
	replace bool
	// appended, when not nil, is written at offset off of the blob's
	// file.
	appended []byte
	off      int
	// dropSnapshots: the blob's snapshots go (a delete of the blob
	// drops them too).
	dropSnapshots bool
	// pages are the page blob's segments (their indices) the write
	// changed; a replace writes them all (pagepersist.go).
	pages []int64
}

// saveBlob writes the record of blob name of c, b (nil: the blob is
// deleted, with its content and its uncommitted blocks), and its content
// as ct says; it chooses where b's content is kept (b.file). c is locked.
func (s *Service) saveBlob(c *container, name string, b *blob, ct content) *write {
	if s.store == nil {
		return nil
	}
	var f *fileWrite
	// What goes in bucketData: all of it (inline), or a piece at off;
	// drop: the pieces already there go (the content is replaced, or
	// moves to a file).
	var inline, piece []byte
	var off int
	drop := b == nil || ct.replace
	switch {
	case b == nil:
	case ct.replace && len(b.data) > inlineMax:
		b.file = newFileName()
		f = &fileWrite{dir: s.store.files, name: b.file, data: b.data, create: true}
	case ct.replace:
		b.file, inline = "", b.data
	case ct.appended == nil:
	case b.file != "":
		f = &fileWrite{dir: s.store.files, name: b.file, off: int64(ct.off), data: ct.appended}
	case len(b.data) > inlineMax:
		// The append blob outgrows the database: all of it to a file.
		b.file, drop = newFileName(), true
		f = &fileWrite{dir: s.store.files, name: b.file, data: b.data, create: true}
	default:
		piece, off = ct.appended, ct.off
	}
	var rec []byte
	var err error
	var puts []pagePut
	if b != nil {
		rec, err = json.Marshal(b.record())
		if b.kind == pageBlob {
			puts = pagePuts(nameKey(name, 0), b.page.pages, ct.pages, ct.replace)
		}
	}
	cname := c.name
	w := s.commit(f, func(tx *bolt.Tx, w *write) error {
		if err != nil {
			return err
		}
		cb := containerBucket(tx, cname)
		if cb == nil {
			return nil
		}
		data := cb.Bucket(bucketData)
		if drop {
			if err := deletePrefix(data, nameKey(name, 0)); err != nil {
				return err
			}
		}
		if b == nil || ct.replace {
			if old := recordFile(cb.Bucket(bucketBlobs).Get([]byte(name))); old != "" {
				w.remove = append(w.remove, filepath.Join(s.store.files, old))
			}
			if err := dropStaged(cb, name); err != nil {
				return err
			}
			if err := deletePrefix(cb.Bucket(bucketPages), nameKey(name, 0)); err != nil {
				return err
			}
		}
		if err := applyPagePuts(cb.Bucket(bucketPages), puts); err != nil {
			return err
		}
		if b == nil || ct.dropSnapshots {
			if err := s.dropSnapshots(cb, name, "", w); err != nil {
				return err
			}
		}
		if b == nil {
			return cb.Bucket(bucketBlobs).Delete([]byte(name))
		}
		if len(inline) > 0 {
			if err := data.Put(pieceKey(name, 0), inline); err != nil {
				return err
			}
		}
		if piece != nil {
			if err := data.Put(pieceKey(name, off), piece); err != nil {
				return err
			}
		}
		return cb.Bucket(bucketBlobs).Put([]byte(name), rec)
	})
	if f != nil && f.create && b.kind == blockBlob {
		w.after = func() { s.mapped(c, name, b, f.name) }
	}
	return w
}

// mapped swaps the content block blob b holds in memory for a mapping of
// its file, once the file is on disk, if b is still blob name of c: memory
// then holds a large blob's bytes as the operating system's cache, as for
// one loaded at Open. Readers keep the slices they copied out. On any
// failure b keeps its bytes. (Not for append blobs: the file may be
// growing meanwhile.)
func (s *Service) mapped(c *container, name string, b *blob, file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted || c.blobs[name] != b || b.file != file {
		return
	}
	m, err := mapFile(filepath.Join(s.store.files, file), len(b.data))
	if err == nil {
		b.data = m
	}
}

// saveBlock writes the uncommitted block id of blob name of c and the
// blob's list of them, st. c is locked.
func (s *Service) saveBlock(c *container, name string, st *staging, id string, data []byte) *write {
	if s.store == nil {
		return nil
	}
	r := stagingRecord{ETag: st.etag, Modified: st.modified}
	for _, o := range st.order {
		r.Order = append(r.Order, []byte(o))
	}
	rec, err := json.Marshal(r)
	cname := c.name
	return s.commit(nil, func(tx *bolt.Tx, _ *write) error {
		if err != nil {
			return err
		}
		cb := containerBucket(tx, cname)
		if cb == nil {
			return nil
		}
		if err := cb.Bucket(bucketBlocks).Put(append(nameKey(name, len(id)), id...), data); err != nil {
			return err
		}
		return cb.Bucket(bucketStaged).Put([]byte(name), rec)
	})
}

// dropStaged deletes the uncommitted blocks of blob name.
func dropStaged(cb *bolt.Bucket, name string) error {
	if cb.Bucket(bucketStaged).Get([]byte(name)) == nil {
		return nil
	}
	if err := deletePrefix(cb.Bucket(bucketBlocks), nameKey(name, 0)); err != nil {
		return err
	}
	return cb.Bucket(bucketStaged).Delete([]byte(name))
}

// deletePrefix deletes the keys of b that begin with prefix (a nameKey:
// no other blob's keys begin with it, uvarints being prefix-free).
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	// Seek again after each delete: a cursor's Next after Delete may skip.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// saveSnapshot writes snapshot at of blob name of c, sb, with a content
// of its own (a file when it is larger than inlineMax). c is locked.
func (s *Service) saveSnapshot(c *container, name, at string, sb *blob) *write {
	if s.store == nil {
		return nil
	}
	var f *fileWrite
	r := snapshotRecord{Name: name, At: at}
	sb.file = ""
	if len(sb.data) > inlineMax {
		sb.file = newFileName()
		f = &fileWrite{dir: s.store.files, name: sb.file, data: sb.data, create: true}
	} else {
		r.Data = sb.data
	}
	r.Blob = sb.record()
	rec, err := json.Marshal(r)
	var puts []pagePut
	if sb.kind == pageBlob {
		puts = pagePuts(snapshotKey(name, at), sb.page.pages, nil, true)
	}
	cname := c.name
	return s.commit(f, func(tx *bolt.Tx, _ *write) error {
		if err != nil {
			return err
		}
		cb := containerBucket(tx, cname)
		if cb == nil || cb.Bucket(bucketBlobs).Get([]byte(name)) == nil {
			return nil // the container or the blob went first: the file goes at the next Open
		}
		if err := applyPagePuts(cb.Bucket(bucketSnapshotPages), puts); err != nil {
			return err
		}
		return cb.Bucket(bucketSnapshots).Put(snapshotKey(name, at), rec)
	})
}

// deleteSnapshotRecord deletes snapshot at of blob name of c. c is
// locked.
func (s *Service) deleteSnapshotRecord(c *container, name, at string) *write {
	if s.store == nil {
		return nil
	}
	cname := c.name
	return s.commit(nil, func(tx *bolt.Tx, w *write) error {
		cb := containerBucket(tx, cname)
		if cb == nil {
			return nil
		}
		return s.dropSnapshots(cb, name, at, w)
	})
}

// dropSnapshots deletes blob name's snapshot at, or all its snapshots
// when at is empty, noting their files for removal.
func (s *Service) dropSnapshots(cb *bolt.Bucket, name, at string, w *write) error {
	b := cb.Bucket(bucketSnapshots)
	prefix := nameKey(name, 0)
	if at != "" {
		prefix = snapshotKey(name, at)
	}
	for k, v := b.Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = b.Cursor().Seek(prefix) {
		if f := recordFile(v); f != "" {
			w.remove = append(w.remove, filepath.Join(s.store.files, f))
		}
		if err := b.Delete(bytes.Clone(k)); err != nil {
			return err
		}
	}
	return deletePrefix(cb.Bucket(bucketSnapshotPages), prefix)
}

// saveProperties writes the service's properties. s.mu is held.
func (s *Service) saveProperties() *write {
	if s.store == nil {
		return nil
	}
	v, err := xml.Marshal(&s.props)
	return s.commit(nil, func(tx *bolt.Tx, _ *write) error {
		if err != nil {
			return err
		}
		return tx.Bucket(bucketService).Put(keyProperties, v)
	})
}

package tables

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
	"github.com/tablekit/tablekit/entity"
)

// The database's layout (one bbolt file, disk.TablesFile):
//
//   - bucket "service": "profile" (the key order the file was written
//     in: "storage" or "cosmos") and "properties" (Set Table Service
//     Properties' XML);
//   - bucket "tables": a table's key (tableKey) -> its id, creation
//     time, name as created and ACL (appendTableMeta);
//   - bucket "e" + the table's id (8 bytes): its entities, key
//     (appendKey) -> Timestamp and properties (appendValue).
//
// A table's entities are in a bucket of their own, named by an id
// rather than the name, so that deleting a table drops its bucket and a
// table created again under the same name starts empty, whatever
// requests to the old one are still in flight.
var (
	bucketService = []byte("service")
	bucketTables  = []byte("tables")
	keyProfile    = []byte("profile")
	keyProperties = []byte("properties")
)

// scanChunk is how many entities a query reads in one read transaction
// before it ends it and seeks again: bbolt grows its memory map only
// when no read transaction is open, so a long scan must not hold one
// while writers wait.
const scanChunk = 2048

// fillPercent is how full bbolt fills a page it splits: loads write
// keys mostly in order (BulkWrite, a partition's transactions), where
// bbolt's default (half) would leave every page half empty.
const fillPercent = 0.9

// diskStore keeps a Service's tables in a bbolt database. Reads run in
// read transactions of their own; every write goes through group, which
// applies the writes waiting for it in one transaction and commits them
// with one fsync (disk.Group: group commit, as the Queue and Blob
// services commit theirs): a write is answered only once its commit is
// on disk, and many writers share the cost of each sync.
type diskStore struct {
	db     *bolt.DB
	cosmos bool
	group  *disk.Group

	tableMu sync.Mutex // serializes table creations, deletions and ACL changes
}

// submit applies fn in the next commit and returns once that commit is
// durable (or has failed). fn may run more than once (disk.Group runs
// each write of a failed group again on its own): it sets what it
// reports afresh each time.
func (d *diskStore) submit(fn func(tx *bolt.Tx) error) error {
	return d.group.Submit(fn).Wait()
}

// close stops taking writes, waits for the last commit and closes the
// database (after any read transaction still open).
func (d *diskStore) close() error {
	d.group.Close()
	return d.db.Close()
}

// Open returns a Table service that keeps its tables in db (a location's
// disk.TablesFile), with the tables db already holds. Close closes db.
func Open(cfg Config, db *bolt.DB) (*Service, error) {
	s := New(cfg)
	profile := []byte("storage")
	if cfg.Cosmos {
		profile = []byte("cosmos")
	}
	path := db.Path()
	err := db.Update(func(tx *bolt.Tx) error {
		svc, err := tx.CreateBucketIfNotExists(bucketService)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketTables); err != nil {
			return err
		}
		switch p := svc.Get(keyProfile); {
		case p == nil:
			return svc.Put(keyProfile, profile)
		case !bytes.Equal(p, profile):
			return fmt.Errorf("its tables were written with the %s profile, and this emulator runs the %s profile (Cosmos on or off): use another location or reset it", p, profile)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("emulator: location %s: %w", path, err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		if p := tx.Bucket(bucketService).Get(keyProperties); p != nil {
			if err := xml.Unmarshal(p, &s.props); err != nil {
				return fmt.Errorf("the service properties: %w", err)
			}
		}
		return tx.Bucket(bucketTables).ForEach(func(k, v []byte) error {
			t, err := decodeTableMeta(v)
			if err != nil {
				return fmt.Errorf("table %q: %w", k, err)
			}
			if t.id == 0 || tx.Bucket(entityBucket(t.id)) == nil {
				return fmt.Errorf("table %q: its entities' bucket is missing", k)
			}
			s.tables[string(k)] = t
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("emulator: location %s: %w", path, err)
	}
	s.d = &diskStore{db: db, cosmos: cfg.Cosmos, group: disk.NewGroup(db)}
	return s, nil
}

// Close ends a service that Open returned: later writes fail, the last
// commit completes and the database is closed. It does nothing to a
// service that New returned.
func (s *Service) Close() error {
	if s.d == nil {
		return nil
	}
	return s.d.close()
}

// entityBucket is the name of the bucket of table id's entities.
func entityBucket(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{'e'}, id)
}

// appendTableMeta encodes a table's record: id, creation time (Unix
// nanoseconds), name, and the ACL (a flag, then the XML).
func appendTableMeta(b []byte, t *table) []byte {
	b = binary.BigEndian.AppendUint64(b, t.id)
	b = binary.BigEndian.AppendUint64(b, uint64(t.created.UnixNano()))
	b = appendBytes(b, []byte(t.name))
	if t.acl == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	return append(b, t.acl...)
}

func decodeTableMeta(v []byte) (*table, error) {
	d := decoder{b: v}
	t := &table{}
	t.id = d.u64()
	t.created = time.Unix(0, int64(d.u64()))
	t.name = string(d.bytes())
	switch d.byte() {
	case 0:
	case 1:
		t.acl = bytes.Clone(d.b)
		d.b = nil
	default:
		d.bad = true
	}
	if d.bad || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return t, nil
}

var errCorrupt = errors.New("a record cannot be read (the file is damaged)")

// createTableDisk stores a new table called name under key k, durably,
// and returns it; nil means the name is taken.
func (s *Service) createTableDisk(k, name string) (*table, error) {
	s.d.tableMu.Lock()
	defer s.d.tableMu.Unlock()
	if s.lookup(name) != nil {
		return nil, nil
	}
	t := &table{name: name, created: s.cfg.Now()}
	err := s.d.submit(func(tx *bolt.Tx) error {
		tb := tx.Bucket(bucketTables)
		id, err := tb.NextSequence()
		if err != nil {
			return err
		}
		t.id = id
		if _, err := tx.CreateBucket(entityBucket(id)); err != nil {
			return err
		}
		return tb.Put([]byte(k), appendTableMeta(nil, t))
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tables[k] = t
	s.mu.Unlock()
	return t, nil
}

// deleteTableDisk removes the table stored under key k with its
// entities, durably; nil means there is none.
func (s *Service) deleteTableDisk(k string) (*table, error) {
	s.d.tableMu.Lock()
	defer s.d.tableMu.Unlock()
	s.mu.RLock()
	t := s.tables[k]
	s.mu.RUnlock()
	if t == nil {
		return nil, nil
	}
	err := s.d.submit(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketTables).Delete([]byte(k)); err != nil {
			return err
		}
		return tx.DeleteBucket(entityBucket(t.id))
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.tables, k)
	s.mu.Unlock()
	return t, nil
}

// setACLDisk stores t's ACL, durably, if t is still a table.
func (s *Service) setACLDisk(t *table, acl []byte) error {
	s.d.tableMu.Lock()
	defer s.d.tableMu.Unlock()
	k := s.tableKey(t.name)
	if s.lookup(t.name) != t {
		return errGone
	}
	meta := &table{name: t.name, created: t.created, id: t.id, acl: acl}
	err := s.d.submit(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTables).Put([]byte(k), appendTableMeta(nil, meta))
	})
	if err == nil {
		t.mu.Lock()
		t.acl = acl
		t.mu.Unlock()
	}
	return err
}

var errGone = errors.New("table deleted")

// setPropertiesDisk applies p to the service properties (setProperties)
// and stores the result, durably.
func (s *Service) setPropertiesDisk(p *svcprops.Properties) error {
	s.d.tableMu.Lock()
	defer s.d.tableMu.Unlock()
	s.setProperties(p)
	s.mu.RLock()
	doc, err := xml.Marshal(&s.props)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	return s.d.submit(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketService).Put(keyProperties, doc)
	})
}

// writeDisk applies ops to t's entities as one transaction, durable when
// it returns: all of them, or, when the operation at index i is refused
// (ae), none; i is -1 when the disk failed (ae is then 500). rows are the rows stored (nil for a delete), all written
// at ts.
func (s *Service) writeDisk(t *table, ops []writeOp) (rows []*row, ts int64, i int, ae *answer.Error) {
	rows = make([]*row, len(ops))
	keys := make([][]byte, len(ops))
	err := s.d.submit(func(tx *bolt.Tx) error {
		i, ae = 0, nil // afresh: the write may run again (submit)
		b := tx.Bucket(entityBucket(t.id))
		if b == nil {
			i, ae = 0, errTableNotFound
			return nil
		}
		b.FillPercent = fillPercent
		for j, w := range ops {
			k := s.key(w.e.PartitionKey, w.e.RowKey)
			keys[j] = appendKey(nil, k, s.cfg.Cosmos)
			v := b.Get(keys[j])
			var old *row
			if v != nil && (w.kind == opDelete || w.conditional || w.merge) {
				var err error
				if old, err = decodeRow(keys[j], v, s.cfg.Cosmos); err != nil {
					return err
				}
			}
			r, e := s.decide(w, k, old, v != nil)
			if e != nil {
				i, ae = j, e
				return nil
			}
			rows[j] = r
		}
		ts = s.clock.now()
		for j, w := range ops {
			if w.kind == opDelete {
				if err := b.Delete(keys[j]); err != nil {
					return err
				}
				continue
			}
			rows[j].ts = ts
			if err := b.Put(keys[j], appendValue(nil, rows[j])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, -1, answer.InternalError()
	}
	if ae != nil {
		return nil, 0, i, ae
	}
	return rows, ts, 0, nil
}

// getDisk reads the entity (pk, rk) of t. gone means t is deleted.
func (s *Service) getDisk(t *table, pk, rk string) (r *row, found, gone bool, err error) {
	err = s.d.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(entityBucket(t.id))
		if b == nil {
			gone = true
			return nil
		}
		k := appendKey(nil, s.key(pk, rk), s.cfg.Cosmos)
		v := b.Get(k)
		if v == nil {
			return nil
		}
		var err error
		r, err = decodeRow(k, v, s.cfg.Cosmos)
		found = err == nil
		return err
	})
	return r, found, gone, err
}

// ascendDisk calls visit with t's rows from start on, in the index's
// order, until visit returns false or the rows end. It reads them in
// read transactions of at most scanChunk rows. gone means t is deleted.
func (s *Service) ascendDisk(t *table, start *row, visit func(*row) bool) (gone bool, err error) {
	seek := appendKey(nil, start, s.cfg.Cosmos)
	resumed, atStart := false, true
	for {
		more := false
		err = s.d.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(entityBucket(t.id))
			if b == nil {
				gone = true
				return nil
			}
			c := b.Cursor()
			k, v := c.Seek(seek)
			if resumed && k != nil && bytes.Equal(k, seek) {
				k, v = c.Next()
			}
			for n := 0; k != nil; k, v = c.Next() {
				r, err := decodeRow(k, v, s.cfg.Cosmos)
				if err != nil {
					return err
				}
				// The encoded start is at or below the first row at or
				// after start (a start key built from a continuation or
				// a bound may hold characters no stored key holds):
				// rows below it are skipped.
				if atStart {
					if s.less(r, start) {
						continue
					}
					atStart = false
				}
				if !visit(r) {
					return nil
				}
				if n++; n == scanChunk {
					seek, resumed, more = bytes.Clone(k), true, true
					return nil
				}
			}
			return nil
		})
		if err != nil || gone || !more {
			return gone, err
		}
	}
}

// putDisk stores es in t as insert-or-replace would (the benchmarks'
// loader), in one commit.
func (s *Service) putDisk(t *table, es []entity.Entity) error {
	return s.d.submit(func(tx *bolt.Tx) error {
		b := tx.Bucket(entityBucket(t.id))
		if b == nil {
			return errGone
		}
		b.FillPercent = fillPercent
		for _, e := range es {
			r := s.key(e.PartitionKey, e.RowKey)
			r.props = propsOf(e)
			r.ts = s.clock.now()
			if err := b.Put(appendKey(nil, r, s.cfg.Cosmos), appendValue(nil, r)); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendKey encodes r's keys so that bbolt's byte order is the
// service's order (lessStorage, or lessCosmos with cosmos): on Cosmos DB
// the partition hash first (4 bytes, big-endian), then the PartitionKey
// in UTF-16 big-endian, the code unit 0x0000, and the RowKey in UTF-16
// big-endian. Keys hold no control character (azrules.CheckKey), so
// 0x0000 ends a PartitionKey below any of its longer extensions, as
// keys.Compare orders them.
func appendKey(b []byte, r *row, cosmos bool) []byte {
	if cosmos {
		b = binary.BigEndian.AppendUint32(b, r.h)
	}
	b = appendUTF16(b, r.pk)
	b = append(b, 0, 0)
	return appendUTF16(b, r.rk)
}

// appendUTF16 appends s in UTF-16 big-endian (invalid UTF-8 as U+FFFD,
// as keys.Compare reads it).
func appendUTF16(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, 0, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			b = append(b, byte(hi>>8), byte(hi), byte(lo>>8), byte(lo))
			continue
		}
		b = append(b, byte(r>>8), byte(r))
	}
	return b
}

// decodeUTF16 reads what appendUTF16 wrote.
func decodeUTF16(b []byte) string {
	ascii := true
	for i := 0; i < len(b); i += 2 {
		if b[i] != 0 || b[i+1] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	out := make([]byte, 0, len(b)/2)
	if ascii {
		for i := 1; i < len(b); i += 2 {
			out = append(out, b[i])
		}
		return string(out)
	}
	for i := 0; i+1 < len(b); i += 2 {
		r := rune(b[i])<<8 | rune(b[i+1])
		if utf16.IsSurrogate(r) && i+3 < len(b) {
			if r2 := rune(b[i+2])<<8 | rune(b[i+3]); utf16.DecodeRune(r, r2) != utf8.RuneError {
				r = utf16.DecodeRune(r, r2)
				i += 2
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}

// The kinds of a stored property value.
const (
	kindString byte = iota + 1
	kindInt32
	kindInt64
	kindDouble
	kindBool
	kindDateTime
	kindGUID
	kindBinary
)

// appendValue encodes a row's Timestamp and properties: ts (8 bytes),
// the property count, then each property's name, kind and value (strings
// and binaries with their length; integers as zigzag varints; a double's
// 8 bytes; a DateTime's Unix seconds and nanoseconds; a GUID's 16 bytes).
func appendValue(b []byte, r *row) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(r.ts))
	b = binary.AppendUvarint(b, uint64(len(r.props)))
	for _, p := range r.props {
		b = appendBytes(b, []byte(p.name))
		switch x := p.v.V.(type) {
		case string:
			b = append(b, kindString)
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case int32:
			b = append(b, kindInt32)
			b = binary.AppendVarint(b, int64(x))
		case int64:
			b = append(b, kindInt64)
			b = binary.AppendVarint(b, x)
		case float64:
			b = append(b, kindDouble)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		case bool:
			b = append(b, kindBool)
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case time.Time:
			b = append(b, kindDateTime)
			b = binary.AppendVarint(b, x.Unix())
			b = binary.AppendUvarint(b, uint64(x.Nanosecond()))
		case entity.GUID:
			b = append(b, kindGUID)
			b = append(b, x[:]...)
		case []byte:
			b = append(b, kindBinary)
			b = appendBytes(b, x)
		default:
			// entity's decoder builds values with its constructors only;
			// a value of another Go type is stored as its text.
			b = append(b, kindString)
			b = appendBytes(b, fmt.Append(nil, x))
		}
	}
	return b
}

func appendBytes(b, x []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(x)))
	return append(b, x...)
}

// decodeRow reads the row stored at key k with value v (both copied:
// they are valid only in their transaction).
func decodeRow(k, v []byte, cosmos bool) (*row, error) {
	r := &row{}
	if cosmos {
		if len(k) < 4 {
			return nil, errCorrupt
		}
		r.h = binary.BigEndian.Uint32(k)
		k = k[4:]
	}
	sep := -1
	for i := 0; i+1 < len(k); i += 2 {
		if k[i] == 0 && k[i+1] == 0 {
			sep = i
			break
		}
	}
	if sep < 0 || len(k)%2 != 0 {
		return nil, errCorrupt
	}
	r.pk, r.rk = decodeUTF16(k[:sep]), decodeUTF16(k[sep+2:])
	d := decoder{b: v}
	r.ts = int64(d.u64())
	n := d.uvarint()
	if n > uint64(len(v)) {
		return nil, errCorrupt
	}
	r.props = make([]prop, n)
	for i := range r.props {
		p := &r.props[i]
		p.name = string(d.bytes())
		switch d.byte() {
		case kindString:
			p.v = entity.String(string(d.bytes()))
		case kindInt32:
			p.v = entity.Int32(int32(d.varint()))
		case kindInt64:
			p.v = entity.Int64(d.varint())
		case kindDouble:
			p.v = entity.Double(math.Float64frombits(d.u64le()))
		case kindBool:
			p.v = entity.Bool(d.byte() == 1)
		case kindDateTime:
			sec := d.varint()
			p.v = entity.Value{Type: entity.EdmDateTime, V: time.Unix(sec, int64(d.uvarint())).UTC()}
		case kindGUID:
			var g entity.GUID
			copy(g[:], d.take(16))
			p.v = entity.Guid(g)
		case kindBinary:
			p.v = entity.Binary(bytes.Clone(d.bytes()))
		default:
			d.bad = true
		}
		if d.bad {
			return nil, errCorrupt
		}
	}
	if d.bad || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return r, nil
}

// decoder reads a record; bad is set, and zero values returned, once it
// runs short or finds a malformed number.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.bad = true
		d.b = nil
		return make([]byte, max(n, 0))
	}
	x := d.b[:n]
	d.b = d.b[n:]
	return x
}

func (d *decoder) byte() byte { return d.take(1)[0] }

func (d *decoder) u64() uint64 { return binary.BigEndian.Uint64(d.take(8)) }

func (d *decoder) u64le() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

// bytes reads a length and that many bytes.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		d.b = nil
		return nil
	}
	return d.take(int(n))
}

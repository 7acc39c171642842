package tables

import (
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// row is one stored entity. Its properties are kept typed (for filters
// and the three JSON formats) and sorted by name; its ETag and Timestamp
// are both formed from ts, the time of its last write.
type row struct {
	pk, rk string
	h      uint32 // the Cosmos profile's partition order: a hash of pk
	ts     int64  // Unix nanoseconds, a multiple of 100
	props  []prop
}

type prop struct {
	name string
	v    entity.Value
}

// get returns the named property for filters and $select, the keys and
// Timestamp included.
func (r *row) get(name string) (entity.Value, bool) {
	switch name {
	case "PartitionKey":
		return entity.String(r.pk), true
	case "RowKey":
		return entity.String(r.rk), true
	case "Timestamp":
		return entity.DateTime(time.Unix(0, r.ts)), true
	}
	i := sort.Search(len(r.props), func(i int) bool { return r.props[i].name >= name })
	if i < len(r.props) && r.props[i].name == name {
		return r.props[i].v, true
	}
	return entity.Value{}, false
}

// filterValue is get as keys.Filter.Match reads it.
func (r *row) filterValue(name string) (keys.Value, bool) {
	switch name {
	case "PartitionKey":
		return keys.StringValue(r.pk), true
	case "RowKey":
		return keys.StringValue(r.rk), true
	case "Timestamp":
		return keys.DateTimeValue(time.Unix(0, r.ts).UTC()), true
	}
	v, ok := r.get(name)
	if !ok {
		return keys.Value{}, false
	}
	return keyValue(v), true
}

func keyValue(v entity.Value) keys.Value {
	switch x := v.V.(type) {
	case string:
		return keys.StringValue(x)
	case int32:
		return keys.Int32Value(x)
	case int64:
		return keys.Int64Value(x)
	case float64:
		return keys.DoubleValue(x)
	case bool:
		return keys.BoolValue(x)
	case time.Time:
		return keys.DateTimeValue(x)
	case entity.GUID:
		return keys.GuidValue(x)
	case []byte:
		return keys.BinaryValue(x)
	}
	return keys.Value{}
}

// propsOf returns e's properties sorted by name.
func propsOf(e entity.Entity) []prop {
	ps := make([]prop, 0, len(e.Properties))
	for n, v := range e.Properties {
		ps = append(ps, prop{n, v})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	return ps
}

// merged returns old's properties overwritten and extended by upd's.
func merged(old, upd []prop) []prop {
	out := make([]prop, 0, len(old)+len(upd))
	i, j := 0, 0
	for i < len(old) || j < len(upd) {
		switch {
		case j == len(upd) || i < len(old) && old[i].name < upd[j].name:
			out = append(out, old[i])
			i++
		case i == len(old) || upd[j].name < old[i].name:
			out = append(out, upd[j])
			j++
		default:
			out = append(out, upd[j])
			i++
			j++
		}
	}
	return out
}

// asEntity returns r as an entity.Entity (properties shared), for the
// limit checks of a merge.
func (r *row) asEntity() entity.Entity {
	e := entity.Entity{PartitionKey: r.pk, RowKey: r.rk, Properties: make(map[string]entity.Value, len(r.props))}
	for _, p := range r.props {
		e.Properties[p.name] = p.v
	}
	return e
}

// table is one table: its entities in an ordered index. Readers share
// mu; writers hold it alone for the few microseconds of a write.
type table struct {
	name string // as created
	mu   sync.RWMutex
	rows *btree.BTreeG[*row]
	// gone is set, under mu, when the table is deleted: a request that
	// found the table before holds a pointer to a table that is no more.
	gone bool
	acl  []byte // Set Table ACL's XML; nil: none set
	// created is when the table was created: Azure's NextTableName
	// token carries it.
	created time.Time
	// id names the bucket of the table's entities when the service keeps
	// them on disk (rows is nil then); 0 in memory.
	id uint64
}

// btreeDegree is the index's node size: 32 keeps nodes within a few
// cache lines of pointers and the tree shallow (4 levels for 1,000,000
// entities).
const btreeDegree = 32

func newTable(name string, cosmos bool, created time.Time) *table {
	less := lessStorage
	if cosmos {
		less = lessCosmos
	}
	return &table{name: name, rows: btree.NewG(btreeDegree, less), created: created}
}

// lessStorage is Azure Table storage's order: PartitionKey, then RowKey,
// both by UTF-16 code units.
func lessStorage(a, b *row) bool {
	if c := keys.Compare(a.pk, b.pk); c != 0 {
		return c < 0
	}
	return keys.Compare(a.rk, b.rk) < 0
}

// lessCosmos is the Cosmos DB profile's order: partitions in the order
// of a hash of their key (not sorted, as Cosmos DB returns them), rows
// by RowKey inside a partition.
func lessCosmos(a, b *row) bool {
	if a.h != b.h {
		return a.h < b.h
	}
	return lessStorage(a, b)
}

func partitionHash(pk string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return h.Sum32()
}

// key returns a row holding only keys, to look up or start a scan at.
func (s *Service) key(pk, rk string) *row {
	r := &row{pk: pk, rk: rk}
	if s.cfg.Cosmos {
		r.h = partitionHash(pk)
	}
	return r
}

// tableKey is the name a table is found by: case-insensitive on Azure
// Table storage, as written on Cosmos DB.
func (s *Service) tableKey(name string) string {
	if s.cfg.Cosmos {
		return name
	}
	return strings.ToLower(name)
}

// lookup returns the table called name, or nil.
func (s *Service) lookup(name string) *table {
	s.mu.RLock()
	t := s.tables[s.tableKey(name)]
	s.mu.RUnlock()
	return t
}

// clock hands out write times: UTC, 100 ns resolution (the service's
// DateTime precision), strictly increasing, so every write of an entity
// gets a new ETag.
type clock struct {
	read func() time.Time // Config.Now
	mu   sync.Mutex
	last int64
}

func (c *clock) now() int64 {
	t := c.read().UnixNano() / 100 * 100
	c.mu.Lock()
	if t <= c.last {
		t = c.last + 100
	}
	c.last = t
	c.mu.Unlock()
	return t
}

// etag is the ETag the service forms from a write time:
// W/"datetime'2024-01-01T00%3A00%3A00.1234567Z'".
func etag(ts int64) string {
	b := make([]byte, 0, 56)
	b = appendETag(b, ts)
	return string(b)
}

func appendETag(b []byte, ts int64) []byte {
	b = append(b, `W/"datetime'`...)
	b = appendTime(b, time.Unix(0, ts), "%3A")
	return append(b, `'"`...)
}

// appendTime appends ts as the service writes times: .NET's
// yyyy-MM-ddTHH:mm:ss.FFFFFFFZ, up to 7 fractional digits with trailing
// zeros dropped (and the point when the fraction is zero), as real
// sessions recorded against Azure show in Timestamps and ETags
// (2024-02-26T20:27:43.491042Z). Each ':' is written as colon (%3A in an
// ETag). It runs twice for every entity of a page, so it is not
// time.Format.
func appendTime(b []byte, t time.Time, colon string) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, colon...)
	b = appendDigits(b, mi, 2)
	b = append(b, colon...)
	b = appendDigits(b, s, 2)
	if f := t.Nanosecond() / 100; f != 0 {
		width := 7
		for f%10 == 0 {
			f /= 10
			width--
		}
		b = append(b, '.')
		b = appendDigits(b, f, width)
	}
	return append(b, 'Z')
}

// appendDigits appends n (0 <= n) in width decimal digits, zero-padded.
func appendDigits(b []byte, n, width int) []byte {
	var d [10]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// timeLayout is the service's DateTime text: 7 fractional digits.
const timeLayout = "2006-01-02T15:04:05.0000000Z"

package tablecopy

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// Canonical is the line an entity's checksum is computed over: its keys
// and properties in the Table service's JSON format (properties sorted by
// name, every typed value annotated), without ETag and Timestamp, which
// the service sets on every write. Two entities are identical when their
// canonical lines are.
func Canonical(e entity.Entity) ([]byte, error) {
	e.ETag = ""
	e.Timestamp = time.Time{}
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("entity (PartitionKey %q, RowKey %q): %w", e.PartitionKey, e.RowKey, err)
	}
	return b, nil
}

// EntityHash is the first 8 bytes, big-endian, of the SHA-256 of the
// entity's Canonical line.
func EntityHash(e entity.Entity) (uint64, error) {
	b, err := Canonical(e)
	if err != nil {
		return 0, err
	}
	return lineHash(b), nil
}

func lineHash(canonical []byte) uint64 {
	h := sha256.Sum256(canonical)
	return binary.BigEndian.Uint64(h[:8])
}

// Sum is an order-independent checksum of a set of entities: how many,
// and the sum modulo 2^64 of their EntityHash. A sum (not an exclusive
// or) so that an entity counted twice changes it.
type Sum struct {
	Count int64
	Hash  uint64
}

// Add counts one entity of hash h.
func (s *Sum) Add(h uint64) { s.Count++; s.Hash += h }

// Merge adds the entities of o.
func (s *Sum) Merge(o Sum) { s.Count += o.Count; s.Hash += o.Hash }

// String is "N entities, checksum HEX".
func (s Sum) String() string { return fmt.Sprintf("%d entities, checksum %s", s.Count, hex64(s.Hash)) }

func hex64(h uint64) string { return fmt.Sprintf("%016x", h) }

func parseHex64(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("checksum %q: want 16 hexadecimal digits", s)
	}
	return strconv.ParseUint(s, 16, 64)
}

// Key is an entity's keys.
type Key struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// String shows the keys quoted: ("Sales", "000152").
func (k Key) String() string { return fmt.Sprintf("(%q, %q)", k.PartitionKey, k.RowKey) }

// Compare orders keys as the service does: PartitionKey, then RowKey, by
// UTF-16 code units.
func (k Key) Compare(o Key) int {
	if c := keys.Compare(k.PartitionKey, o.PartitionKey); c != 0 {
		return c
	}
	return keys.Compare(k.RowKey, o.RowKey)
}

// mapKey is a key as a map key: control characters are not allowed in
// keys, so NUL separates the two.
func mapKey(pk, rk string) string { return pk + "\x00" + rk }

func splitMapKey(k string) Key {
	pk, rk, _ := strings.Cut(k, "\x00")
	return Key{pk, rk}
}

// state is a table's expected content: each key's EntityHash.
type state map[string]uint64

// sum is the Sum of every entity of s.
func (s state) sum() Sum {
	var t Sum
	for _, h := range s {
		t.Add(h)
	}
	return t
}

// writeKeyList writes s as gzip JSON lines ["PK","RK","HASH"] in key
// order.
func writeKeyList(w io.Writer, s state) error {
	ks := make([]string, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int { return splitMapKey(a).Compare(splitMapKey(b)) })
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriterSize(zw, 64<<10)
	for _, k := range ks {
		key := splitMapKey(k)
		b, _ := json.Marshal([]string{key.PartitionKey, key.RowKey, hex64(s[k])})
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// readKeyList reads what writeKeyList wrote (the hash may be omitted:
// deleted-key lists), calling fn for each line.
func readKeyList(r io.Reader, fn func(k Key, h uint64) error) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 16<<10)
	line := 0
	for sc.Scan() {
		line++
		var f []string
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil || len(f) < 2 || len(f) > 3 {
			return fmt.Errorf("line %d: want [\"PK\",\"RK\",\"HASH\"]", line)
		}
		var h uint64
		if len(f) == 3 {
			if h, err = parseHex64(f[2]); err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
		}
		if err := fn(Key{f[0], f[1]}, h); err != nil {
			return err
		}
	}
	return sc.Err()
}

// writeDeleted writes keys as gzip JSON lines ["PK","RK"] in key order.
func writeDeleted(w io.Writer, ks []Key) error {
	slices.SortFunc(ks, Key.Compare)
	zw := gzip.NewWriter(w)
	bw := bufio.NewWriter(zw)
	for _, k := range ks {
		b, _ := json.Marshal([]string{k.PartitionKey, k.RowKey})
		bw.Write(b)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

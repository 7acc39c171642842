package tables

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
)

// The stored key's byte order is the service's order (keys.Compare by
// UTF-16 code units, PartitionKey first; the partition hash first on
// Cosmos DB), and the keys and values read back as written.
func TestDiskKeyOrderAndValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'b', ' ', '~', 'é', 0x7ff, 0xd7ff, 0xe000, 0xfffd, 0x10000, 0x1f600, 0x10ffff}
	key := func() string {
		rs := make([]rune, rng.IntN(4))
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(rs)
	}
	for _, cosmos := range []bool{false, true} {
		s := New(Config{Cosmos: cosmos})
		for range 20000 {
			a, b := s.key(key(), key()), s.key(key(), key())
			ka, kb := appendKey(nil, a, cosmos), appendKey(nil, b, cosmos)
			if got, want := bytes.Compare(ka, kb) < 0, s.less(a, b); got != want {
				t.Fatalf("cosmos %v: (%q, %q) < (%q, %q): stored keys say %v, the service's order %v", cosmos, a.pk, a.rk, b.pk, b.rk, got, want)
			}
			r, err := decodeRow(ka, appendValue(nil, a), cosmos)
			if err != nil || r.pk != a.pk || r.rk != a.rk || r.h != a.h {
				t.Fatalf("(%q, %q) read back as (%q, %q), %v", a.pk, a.rk, r.pk, r.rk, err)
			}
		}
	}
	in := &row{pk: "p", rk: "r", ts: time.Now().UnixNano() / 100 * 100, props: []prop{
		{"B", entity.Bool(true)},
		{"Bin", entity.Binary([]byte{0, 1, 255})},
		{"D", entity.Double(math.Inf(-1))},
		{"Early", entity.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC))},
		{"Empty", entity.String("")},
		{"G", entity.Guid(entity.GUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})},
		{"I", entity.Int32(math.MinInt32)},
		{"L", entity.Int64(math.MaxInt64)},
		{"Late", entity.DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC))},
		{"S", entity.String("caf\u00e9 \U0001f600")},
	}}
	k := appendKey(nil, in, false)
	out, err := decodeRow(k, appendValue(nil, in), false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("read back\n%+v\nwritten\n%+v", out, in)
	}
	v := appendValue(nil, in)
	for n := range len(v) {
		if _, err := decodeRow(k, v[:n], false); err == nil {
			t.Fatalf("a value cut to %d of its %d bytes was read without error", n, len(v))
		}
	}
}

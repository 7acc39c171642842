package entity_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/entity"
)

type fuzzRow struct {
	PartitionKey, RowKey string
	ETag                 string
	Timestamp            time.Time
	S                    string
	I32                  int32
	I64                  int64
	U64                  uint64
	F                    float64
	B                    bool
	T                    time.Time
	G                    entity.GUID
	Bin                  []byte
	P                    *string
	J                    []string `table:",json"`
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(serviceRow))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","S":"\ud83d\ude00","I32":-1,"I64":"9223372036854775807","F":"NaN","T":"2024-01-01T00:00:00.1234567Z"}`))
	f.Add([]byte(`{"Bin@odata.type":"Edm.Binary","Bin":"AAE=","G":"0f8fad5b-d9cb-469f-a165-70867728950e","J":"[\"a\"]","P":null}`))
	f.Add([]byte(`{"x":[[[{"y":{}}]]],"F":1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r fuzzRow
		errStruct := entity.Unmarshal(data, &r)
		var e entity.Entity
		errBag := e.UnmarshalJSON(data)
		if errBag == nil {
			// A bag that decoded must survive its own round trip when
			// it is writable.
			if b, err := e.MarshalJSON(); err == nil {
				var e2 entity.Entity
				if err := e2.UnmarshalJSON(b); err != nil {
					t.Fatalf("re-decoding %s: %v", b, err)
				}
			}
		}
		_ = errStruct
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("p", "r", "s", int32(1), int64(2), uint64(3), 1.5, true, int64(0), []byte{1}, "x", true, "a")
	f.Add("", "", "😀\"\\\x01", int32(math.MinInt32), int64(math.MinInt64), uint64(math.MaxInt64), math.Inf(-1), false, int64(1e18), []byte{}, "", false, "")
	f.Fuzz(func(t *testing.T, pk, rk, s string, i32 int32, i64 int64, u64 uint64, fl float64, b bool, ticks int64, bin []byte, p string, hasP bool, j string) {
		in := fuzzRow{PartitionKey: pk, RowKey: rk, S: s, I32: i32, I64: i64, U64: u64, F: fl, B: b, Bin: bin, J: []string{j}}
		if ticks != 0 {
			in.T = time.Unix(0, 0).UTC().Add(time.Duration(ticks%(math.MaxInt64/100)) * 100)
		}
		copy(in.G[:], bin)
		if hasP {
			in.P = &p
		}
		data, err := entity.Marshal(in)
		if err != nil {
			return // a limit or key rule; checked by the table-driven tests
		}
		var out fuzzRow
		if err := entity.Unmarshal(data, &out); err != nil {
			t.Fatalf("Unmarshal(Marshal(x)) failed: %v\n%s", err, data)
		}
		want := in
		if math.IsNaN(fl) && math.IsNaN(out.F) {
			out.F = want.F
		}
		if !utf8.ValidString(j) {
			// encoding/json replaces invalid UTF-8 inside the json property.
			want.J, out.J = nil, nil
		}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("round trip changed the row\n got %#v\nwant %#v\nwire %s", out, want, data)
		}
	})
}

// FuzzPageReader decodes a page of two rows, alternating, with one
// PageReader (its member hints, annotation skips and string arena at
// work) and checks each row against the row decoded alone: the same
// value, or, when a row alone fails, no panic.
func FuzzPageReader(f *testing.F) {
	f.Add([]byte(serviceRow), []byte(serviceRow))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","S":"a\"b","F@odata.type":"Edm.Double","F":4.5,"T@odata.type":"Edm.DateTime","T":"2024-01-01T00:00:00.1234567Z"}`),
		[]byte(`{"PartitionKey":"p","RowKey":"s","S":"","F@odata.type":"Edm.Double","F":"NaN","T@odata.type":"Edm.DateTime","T":"2024-02-30T00:00:00.1234567Z"}`))
	f.Add([]byte(`{"PartitionKey":"p","X@odata.type":"Edm.String","F":-0.0}`), []byte(`{"PartitionKey":"p","X@odata.type":"Edm.String"5,"F":1}`))
	c, err := entity.CodecOf(reflect.TypeOf(fuzzRow{}), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		rows := [][]byte{a, b, a, b, a}
		var want []fuzzRow
		alone := true
		for _, row := range rows {
			var v fuzzRow
			if err := c.Unmarshal(row, &v); err != nil {
				alone = false
				break
			}
			want = append(want, v)
		}
		r := entity.NewPageReader(pageOf(rows))
		var got []fuzzRow
		for r.Next() {
			var v fuzzRow
			if err := r.Decode(c, &v); err != nil {
				if alone {
					t.Fatalf("row %d: %v, but it decodes alone", len(got), err)
				}
				break
			}
			got = append(got, v)
		}
		if !alone {
			return
		}
		if r.Err() != nil || len(got) != len(rows) {
			t.Fatalf("%d rows, %v; every row decodes alone", len(got), r.Err())
		}
		for i := range got {
			if math.IsNaN(got[i].F) && math.IsNaN(want[i].F) {
				got[i].F, want[i].F = 0, 0
			}
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("row %d: page reader %+v, alone %+v", i, got[i], want[i])
			}
		}
	})
}

// An entity decodes the same by a codec that learned its member names from
// another entity (Unmarshal's hints) as by a new codec.
func FuzzUnmarshalLearned(f *testing.F) {
	f.Add([]byte(serviceRow), []byte(serviceRow))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","S":"a\"b","F@odata.type":"Edm.Double","F":4.5}`),
		[]byte(`{"RowKey":"s","PartitionKey":"p","F@odata.type":"Edm.Double","F":"NaN","S":""}`))
	f.Add([]byte(`{"PartitionKey":"p","X@odata.type":"Edm.String","F":-0.0}`), []byte(`{"PartitionKey":"p","X@odata.type":"Edm.String"5,"F":1}`))
	codec := func(t *testing.T) *entity.Codec {
		c, err := entity.CodecOf(reflect.TypeOf(fuzzRow{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		learned := codec(t)
		var v fuzzRow
		for range 2 {
			if learned.Unmarshal(a, &v) != nil {
				return
			}
		}
		var got, want fuzzRow
		gerr := learned.Unmarshal(b, &got)
		werr := codec(t).Unmarshal(b, &want)
		if (gerr != nil) != (werr != nil) {
			t.Fatalf("after %q: %v, alone %v", a, gerr, werr)
		}
		if math.IsNaN(got.F) && math.IsNaN(want.F) {
			got.F, want.F = 0, 0
		}
		if gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q: %+v, alone %+v", a, got, want)
		}
	})
}

// A page's strings are scanned and copied into the reader's arenas in one
// pass when they hold no escape and fit in the arena's room; the others
// go the general way. Rows whose strings run across arena boundaries, of
// every length around the arena's limits, with escapes and control
// characters placed anywhere, decode from a page as they do alone.
func TestPageReaderStringsAcrossArenas(t *testing.T) {
	c, err := entity.CodecOf(reflect.TypeOf(fuzzRow{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "é", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "/", "'", "%3A", "0123456789"}
	str := func() string {
		var b strings.Builder
		switch rng.IntN(4) {
		case 0: // short
			for range rng.IntN(12) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		case 1: // around the arena's limit for a string
			for range 500 + rng.IntN(24) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		default:
			for range rng.IntN(80) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
		}
		return b.String()
	}
	for round := range 200 {
		var rows [][]byte
		for i := range 60 {
			row := `{"odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","PartitionKey":"` + str() + `","RowKey":"` + strconv.Itoa(i) + str() +
				`","S":"` + str() + `","I32":1}`
			if rng.IntN(50) == 0 {
				row = `{"PartitionKey":"p","RowKey":"r","S":"bad` + "\x01" + `"}` // a control character: an error alone and in a page
			}
			rows = append(rows, []byte(row))
		}
		r := entity.NewPageReader(pageOf(rows))
		i := 0
		for ; r.Next(); i++ {
			var got, want fuzzRow
			errGot, errWant := r.Decode(c, &got), c.Unmarshal(rows[i], &want)
			if (errGot != nil) != (errWant != nil) {
				t.Fatalf("round %d row %d: page reader %v, alone %v", round, i, errGot, errWant)
			}
			if errGot != nil {
				break
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d row %d: page reader %+v, alone %+v", round, i, got, want)
			}
		}
	}
}

// pageOf is a query answer whose value array holds rows.
func pageOf(rows [][]byte) []byte {
	body := []byte(`{"value":[`)
	for i, row := range rows {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, row...)
	}
	return append(body, "]}"...)
}

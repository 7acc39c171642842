package entity_test

import (
	"bytes"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

type uuid [16]byte

// celsius has its own stored form: an Int32 of tenths of a degree.
type celsius float64

func (c celsius) MarshalProperty() (entity.Value, error) {
	return entity.Int32(int32(math.Round(float64(c) * 10))), nil
}

func (c *celsius) UnmarshalProperty(v entity.Value) error {
	n, ok := v.V.(int32)
	if !ok {
		return errors.New("want Int32")
	}
	*c = celsius(float64(n) / 10)
	return nil
}

type Address struct {
	Street string
	Zip    int
}

type All struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time

	S    string
	B    bool
	I8   int8
	I16  int16
	I32  int32
	I    int
	I64  int64
	U8   uint8
	U16  uint16
	U32  uint32
	U64  uint64
	F32  float32
	F64  float64
	T    time.Time
	G    entity.GUID
	U    uuid
	Bin  []byte
	PS   *string
	PI   *int64
	PT   *time.Time
	IP   netip.Addr
	Addr Address  `table:",json"`
	Tags []string `table:"Labels,json"`
	Temp celsius
	M    map[string]string `table:",json,omitempty"`
	Skip string            `table:"-"`
}

func ptr[T any](v T) *T { return &v }

func roundTrip[T any](t *testing.T, in T) T {
	t.Helper()
	b, err := entity.Marshal(&in)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var out T
	if err := entity.Unmarshal(b, &out); err != nil {
		t.Fatalf("Unmarshal %s: %v", b, err)
	}
	return out
}

func TestRoundTripEveryType(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 58, 123456700, time.UTC)
	cases := []All{
		{PartitionKey: "p", RowKey: "zero"},
		{
			PartitionKey: "p", RowKey: "max",
			S: "héllo \"quoted\" \\ \n\t\u0001 😀 \u2028", B: true,
			I8: math.MaxInt8, I16: math.MaxInt16, I32: math.MaxInt32, I: math.MaxInt, I64: math.MaxInt64,
			U8: math.MaxUint8, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxInt64,
			F32: math.MaxFloat32, F64: math.MaxFloat64,
			T: at, G: entity.NewGUID(), U: uuid{1, 2, 3, 255}, Bin: []byte{0, 1, 2, 255},
			PS: ptr(""), PI: ptr(int64(math.MinInt64)), PT: ptr(at.Add(100)),
			IP: netip.MustParseAddr("2001:db8::1"), Addr: Address{"Main St", 12345}, Tags: []string{"a", "b"},
			Temp: 21.5, M: map[string]string{"k": "v"},
		},
		{
			PartitionKey: "p", RowKey: "min",
			I8: math.MinInt8, I16: math.MinInt16, I32: math.MinInt32, I: math.MinInt, I64: math.MinInt64,
			F32: -math.SmallestNonzeroFloat32, F64: math.SmallestNonzeroFloat64,
			T: time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), Bin: []byte{}, Tags: []string{},
			Temp: -3.2,
		},
		{PartitionKey: "p", RowKey: "float", F64: 3.0, F32: 0.1, T: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)},
	}
	for _, in := range cases {
		t.Run(in.RowKey, func(t *testing.T) {
			out := roundTrip(t, in)
			want := in
			want.Skip = ""
			if !reflect.DeepEqual(out, want) {
				t.Errorf("round trip changed the entity\n got %#v\nwant %#v", out, want)
			}
		})
	}
}

func TestRoundTripSpecialDoubles(t *testing.T) {
	type D struct {
		PartitionKey, RowKey string
		F                    float64
		G                    float32
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 3, 1e21, 1e-7, 0.1, -2.5e-300} {
		out := roundTrip(t, D{"p", "r", f, float32(f)})
		if !(out.F == f || math.IsNaN(f) && math.IsNaN(out.F)) || math.Signbit(out.F) != math.Signbit(f) {
			t.Errorf("float64 %v came back as %v", f, out.F)
		}
		if g := float32(f); !(out.G == g || math.IsNaN(f) && math.IsNaN(float64(out.G))) {
			t.Errorf("float32 %v came back as %v", g, out.G)
		}
	}
}

func TestTimePrecision(t *testing.T) {
	type E struct {
		PartitionKey, RowKey string
		T                    time.Time
	}
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 3600))
	for _, ns := range []int{0, 100, 200, 999999900, 123456789} {
		in := base.Add(time.Duration(ns))
		out := roundTrip(t, E{"p", "r", in})
		want := in.UTC().Truncate(100)
		if !out.T.Equal(want) || out.T.Location() != time.UTC {
			t.Errorf("%v came back as %v, want %v (UTC, 100 ns)", in, out.T, want)
		}
	}
	// The zero time is "unset": absent on the wire, zero again on read.
	b, err := entity.Marshal(E{PartitionKey: "p", RowKey: "r"})
	if err != nil || bytes.Contains(b, []byte(`"T"`)) {
		t.Errorf("zero time: %s, %v; want T absent", b, err)
	}
}

func TestNilVersusEmpty(t *testing.T) {
	type E struct {
		PartitionKey, RowKey string
		Bin                  []byte
		List                 []int `table:",json"`
		P                    *int32
	}
	out := roundTrip(t, E{PartitionKey: "p", RowKey: "r"})
	if out.Bin != nil || out.List != nil || out.P != nil {
		t.Errorf("nil values came back non-nil: %#v", out)
	}
	out = roundTrip(t, E{"p", "r", []byte{}, []int{}, ptr(int32(0))})
	if out.Bin == nil || len(out.Bin) != 0 || out.List == nil || len(out.List) != 0 || out.P == nil || *out.P != 0 {
		t.Errorf("empty values came back as %#v", out)
	}
}

func TestGoldenWireFormat(t *testing.T) {
	type Golden struct {
		PartitionKey string
		RowKey       string `table:"RowKey"`
		ETag         string
		Timestamp    time.Time
		Name         string
		Age          int32
		Big          int64
		Ratio        float64
		Whole        float64
		NaN          float64
		Active       bool
		Born         time.Time
		ID           entity.GUID
		Blob         []byte
		Nick         *string
		Note         string `table:"Comment,omitempty"`
	}
	g, _ := entity.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	v := Golden{
		PartitionKey: "dept", RowKey: "emp/1"[0:3] + "1", ETag: "W/x", Timestamp: time.Now(),
		Name: "Ann", Age: 42, Big: 1 << 40, Ratio: 0.25, Whole: 3, NaN: math.NaN(), Active: true,
		Born: time.Date(1990, 5, 6, 7, 8, 9, 1234500, time.UTC), ID: g, Blob: []byte("hi"),
	}
	want := `{"PartitionKey":"dept","RowKey":"emp1","Name":"Ann","Age":42,` +
		`"Big@odata.type":"Edm.Int64","Big":"1099511627776",` +
		`"Ratio@odata.type":"Edm.Double","Ratio":0.25,` +
		`"Whole@odata.type":"Edm.Double","Whole":3.0,` +
		`"NaN@odata.type":"Edm.Double","NaN":"NaN","Active":true,` +
		`"Born@odata.type":"Edm.DateTime","Born":"1990-05-06T07:08:09.0012345Z",` +
		`"ID@odata.type":"Edm.Guid","ID":"0f8fad5b-d9cb-469f-a165-70867728950e",` +
		`"Blob@odata.type":"Edm.Binary","Blob":"aGk="}`
	b, err := entity.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("wire format\n got %s\nwant %s", b, want)
	}
}

// serviceRow is a row as the service returns it with full metadata.
const serviceRow = `{"odata.metadata":"https://acct.table.core.windows.net/$metadata#T/@Element",
 "odata.type":"acct.T","odata.id":"https://acct.table.core.windows.net/T(PartitionKey='p',RowKey='r')",
 "odata.etag":"W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"","odata.editLink":"T(PartitionKey='p',RowKey='r')",
 "PartitionKey":"p","RowKey":"r","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-02T03:04:05.1234567Z",
 "Small":7,"Whole@odata.type":"Edm.Double","Whole":3.0,"Three":3,"Unknown":{"a":[1,2,{"b":null}]},
 "Big@odata.type":"Edm.Int64","Big":"-9223372036854775808","Esc":"a\u00e9\ud83d\ude00\/\"","Nul":null}`

func TestDecodeByDestinationType(t *testing.T) {
	type Dest struct {
		PartitionKey, RowKey string
		ETag                 string
		Timestamp            time.Time
		Small                int64   // an Int32 on the wire
		Whole                float64 // a Double 3.0
		Three                float64 // an Int32 3
		Big                  int64
		Esc                  string
		Nul                  *string
	}
	var d Dest
	if err := entity.Unmarshal([]byte(serviceRow), &d); err != nil {
		t.Fatal(err)
	}
	want := Dest{
		PartitionKey: "p", RowKey: "r", ETag: `W/"datetime'2024-01-02T03%3A04%3A05.1234567Z'"`,
		Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 123456700, time.UTC),
		Small:     7, Whole: 3, Three: 3, Big: math.MinInt64, Esc: "aé😀/\"",
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got  %#v\nwant %#v", d, want)
	}
}

func TestDecodeMismatchNamesField(t *testing.T) {
	type Small struct {
		PartitionKey, RowKey string
		N                    int32
	}
	type Str struct {
		PartitionKey, RowKey string
		N                    string
	}
	cases := []struct {
		row  string
		into any
		want string
	}{
		{`{"N@odata.type":"Edm.Int64","N":"1099511627776"}`, &Small{}, "entity_test.Small.N"},
		{`{"N":3.5}`, &Small{}, "Small.N"},
		{`{"N":"x"}`, &Small{}, "Small.N"},
		{`{"N":true}`, &Small{}, "Small.N"},
		{`{"N":5}`, &Str{}, "Str.N"},
	}
	for _, c := range cases {
		err := entity.Unmarshal([]byte(c.row), c.into)
		if !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an ErrInvalidEntity naming %s", c.row, err, c.want)
		}
	}
	var s Small
	if err := entity.Unmarshal([]byte(`{"N":3.0}`), &s); err != nil || s.N != 3 {
		t.Errorf("3.0 into int32: %v, %d", err, s.N)
	}
}

func TestUnmarshalResetsAndIgnoresUnknown(t *testing.T) {
	type E struct {
		PartitionKey, RowKey string
		A, B                 string
	}
	e := E{A: "old", B: "old"}
	if err := entity.Unmarshal([]byte(`{"A":"new","C":"ignored"}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.A != "new" || e.B != "" {
		t.Errorf("got %#v, want A=new and B reset", e)
	}
}

func TestMalformedJSON(t *testing.T) {
	type E struct{ PartitionKey, RowKey, A string }
	for _, row := range []string{``, `{`, `{"A"}`, `{"A":}`, `{"A":"x",}`, `{"A":"x"} x`, `{"A":"\x"}`, `{"A":"\ud83d"`,
		`{"A":tru}`, `{"A":01}`, `{"A":-}`, `{"A":1.}`, `{"A":[1,2}`, `[]`, "{\"A\":\"\x01\"}"} {
		var e E
		if err := entity.Unmarshal([]byte(row), &e); !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("%q: got %v, want ErrInvalidEntity", row, err)
		}
	}
}

func TestCodecBuildErrors(t *testing.T) {
	type NoPK struct{ RowKey string }
	type BadOpt struct {
		PartitionKey, RowKey string
		A                    string `table:",omitempti"`
	}
	type BadType struct {
		PartitionKey, RowKey string
		Ch                   chan int
	}
	type BadName struct {
		PartitionKey, RowKey string
		A                    string `table:"1abc"`
	}
	type Reserved struct {
		PartitionKey, RowKey string
		A                    string `table:"odata.etag"`
	}
	type Inner1 struct{ X string }
	type Inner2 struct{ X string }
	type Conflict struct {
		PartitionKey, RowKey string
		Inner1
		Inner2
	}
	type TwoPK struct {
		PartitionKey string
		Other        string `table:",pk"`
		RowKey       string
	}
	type Long struct {
		PartitionKey, RowKey string
		A                    string `table:"A234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456"`
	}
	cases := []struct {
		v    any
		want string
	}{
		{NoPK{}, "no PartitionKey"},
		{BadOpt{}, `BadOpt.A: unknown option "omitempti"`},
		{BadType{}, "BadType.Ch: unsupported type chan int"},
		{BadName{}, "BadName.A: invalid property name"},
		{Reserved{}, "Reserved.A: invalid property name"},
		{Conflict{}, "Conflict.Inner1.X: conflicts with Inner2.X"},
		{TwoPK{}, "conflicts"},
		{Long{}, "at most 255"},
	}
	for _, c := range cases {
		_, err := entity.CodecOf(reflect.TypeOf(c.v), nil)
		if !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T: got %v, want error containing %q", c.v, err, c.want)
		}
	}
}

type Meta struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
}

type withMeta struct {
	Meta
	Name string
	*Extra
}

type Extra struct{ Note string }

func TestEmbeddedStructs(t *testing.T) {
	c, err := entity.CodecOf(reflect.TypeOf(withMeta{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := withMeta{Meta: Meta{PartitionKey: "p", RowKey: "r", ETag: "e"}, Name: "n", Extra: &Extra{"x"}}
	b, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"p","RowKey":"r","Name":"n","Note":"x"}`; string(b) != want {
		t.Errorf("got %s want %s", b, want)
	}
	var out withMeta
	if err := c.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	in.ETag = ""
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %#v want %#v", out, in)
	}
	if pk, rk := c.Keys(in); pk != "p" || rk != "r" {
		t.Errorf("Keys = %q %q", pk, rk)
	}
	if got := strings.Join(c.Select(), ","); got != "PartitionKey,RowKey,Timestamp,Name,Note" {
		t.Errorf("Select = %s", got)
	}
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	c.SetMeta(&out, `W/"1"`, ts)
	if !c.HasETag() || c.ETag(&out) != `W/"1"` || !out.Timestamp.Equal(ts) {
		t.Errorf("SetMeta/ETag: %#v", out.Meta)
	}
	// A nil embedded pointer leaves its properties absent.
	b, _ = c.Marshal(withMeta{Meta: Meta{PartitionKey: "p", RowKey: "r"}})
	if bytes.Contains(b, []byte("Note")) {
		t.Errorf("nil embedded pointer wrote %s", b)
	}
}

func TestMarshalTypeChecks(t *testing.T) {
	c, _ := entity.CodecOf(reflect.TypeOf(Meta{}), nil)
	for _, v := range []any{nil, (*Meta)(nil), withMeta{}, 3} {
		if _, err := c.Marshal(v); !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("Marshal(%#v): %v", v, err)
		}
	}
	if err := c.Unmarshal([]byte(`{}`), Meta{}); !errors.Is(err, entity.ErrInvalidEntity) {
		t.Errorf("Unmarshal into a non-pointer: %v", err)
	}
}

func TestUint64Overflow(t *testing.T) {
	type E struct {
		PartitionKey, RowKey string
		U                    uint64
	}
	_, err := entity.Marshal(E{"p", "r", math.MaxInt64 + 1})
	if !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), "E.U") {
		t.Errorf("got %v", err)
	}
	var e E
	if err := entity.Unmarshal([]byte(`{"U@odata.type":"Edm.Int64","U":"-1"}`), &e); err == nil {
		t.Error("-1 into uint64 decoded")
	}
}

func TestLimits(t *testing.T) {
	type S struct {
		PartitionKey, RowKey string
		S                    string
		B                    []byte
	}
	bmp := strings.Repeat("a", entity.MaxStringUnits)
	astral := strings.Repeat("😀", entity.MaxStringUnits/2) // 2 units each
	cases := []struct {
		name string
		v    S
		rule string // "" = must pass
		key  bool
	}{
		{"string at limit", S{PartitionKey: "p", RowKey: "r", S: bmp}, "", false},
		{"string one over", S{PartitionKey: "p", RowKey: "r", S: bmp + "a"}, "string length", false},
		{"astral at limit", S{PartitionKey: "p", RowKey: "r", S: astral}, "", false},
		{"astral one over", S{PartitionKey: "p", RowKey: "r", S: astral + "a"}, "string length", false},
		{"invalid utf8", S{PartitionKey: "p", RowKey: "r", S: "\xff"}, "string encoding", false},
		{"binary at limit", S{PartitionKey: "p", RowKey: "r", B: make([]byte, entity.MaxBinarySize)}, "", false},
		{"binary one over", S{PartitionKey: "p", RowKey: "r", B: make([]byte, entity.MaxBinarySize+1)}, "binary size", false},
		{"key at limit", S{PartitionKey: strings.Repeat("k", 512), RowKey: "r"}, "", false},
		{"key one over", S{PartitionKey: strings.Repeat("k", 513), RowKey: "r"}, "1 KiB", true},
		{"key slash", S{PartitionKey: "p", RowKey: "a/b"}, "not allowed", true},
		{"key control", S{PartitionKey: "p\x7f", RowKey: "r"}, "control", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := entity.Marshal(c.v)
			if c.rule == "" {
				if err != nil {
					t.Fatalf("want success, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("got %v, want rule %q", err, c.rule)
			}
			if c.key != errors.Is(err, keys.ErrInvalidKey) || c.key == errors.Is(err, entity.ErrInvalidEntity) {
				t.Errorf("%v: wrong sentinel", err)
			}
		})
	}
}

func bag(n int, value func(i int) entity.Value) entity.Entity {
	e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{}}
	for i := 0; i < n; i++ {
		e.Properties["P"+strconv.Itoa(1000+i)] = value(i)
	}
	return e
}

func TestPropertyCountLimit(t *testing.T) {
	small := func(int) entity.Value { return entity.Int32(1) }
	if _, err := bag(252, small).MarshalJSON(); err != nil {
		t.Errorf("252 properties: %v", err)
	}
	if _, err := bag(253, small).MarshalJSON(); !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), "property count") {
		t.Errorf("253 properties: %v", err)
	}
}

func TestEntitySizeLimit(t *testing.T) {
	// Size formula: 4 + 2*(1+1) [keys] + 34 [Timestamp] + per property
	// 8 + 2*5 [name "P1xxx"] + 4 + len [binary] = 46 + n*(22+len).
	// 16 properties of 65,514 bytes: 46 + 16*65536 = 1,048,622 > 1 MiB;
	// sized so that the total is exactly 1 MiB, then one byte more.
	const n = 16
	fixed := 4 + 4 + 34
	per := (entity.MaxEntitySize - fixed) / n // bytes per property incl. overhead
	last := (entity.MaxEntitySize - fixed) - per*(n-1)
	mk := func(extra int) entity.Entity {
		return bag(n, func(i int) entity.Value {
			size := per
			if i == n-1 {
				size = last + extra
			}
			return entity.Binary(make([]byte, size-22))
		})
	}
	if _, err := mk(0).MarshalJSON(); err != nil {
		t.Errorf("exactly 1 MiB: %v", err)
	}
	if _, err := mk(1).MarshalJSON(); !errors.Is(err, entity.ErrInvalidEntity) || !strings.Contains(err.Error(), "entity size") {
		t.Errorf("1 MiB + 1: %v", err)
	}
}

func TestPropertyNames(t *testing.T) {
	ok := []string{"a", "_x", "Größe", "名前", "a1_b", strings.Repeat("n", 255)}
	bad := []string{"", "1a", "a-b", "a.b", "a b", "odata.type", "PartitionKey", "RowKey", "Timestamp", strings.Repeat("n", 256), "a@b"}
	for _, name := range ok {
		e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{name: entity.Bool(true)}}
		if _, err := e.MarshalJSON(); err != nil {
			t.Errorf("%q rejected: %v", name, err)
		}
	}
	for _, name := range bad {
		e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{name: entity.Bool(true)}}
		if _, err := e.MarshalJSON(); !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("%q accepted: %v", name, err)
		}
	}
}

func TestDateTimeRange(t *testing.T) {
	type E struct {
		PartitionKey, RowKey string
		T                    time.Time
	}
	if _, err := entity.Marshal(E{"p", "r", time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC)}); err == nil || !strings.Contains(err.Error(), "DateTime range") {
		t.Errorf("1600: %v", err)
	}
}

func TestGUID(t *testing.T) {
	g := entity.NewGUID()
	p, err := entity.ParseGUID(strings.ToUpper(g.String()))
	if err != nil || p != g {
		t.Fatalf("ParseGUID(String()) = %v, %v", p, err)
	}
	if g[6]>>4 != 4 {
		t.Errorf("not a version 4 GUID: %v", g)
	}
	for _, s := range []string{"", "0f8fad5b-d9cb-469f-a165-70867728950", "0f8fad5bxd9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-469f-a165-70867728950g",
		"g0f8fad5-d9cb-469f-a165-70867728950e", "0f8fad5b-d9cb-469f-a165-7086772895 e", "0f8fad5b-d9cb-469f-a1:5-70867728950e", "0f8fad5b-d9cb-469f-a165-70867728950\x00"} {
		if _, err := entity.ParseGUID(s); err == nil {
			t.Errorf("ParseGUID(%q) succeeded", s)
		}
	}
	var u entity.GUID
	if err := u.UnmarshalText([]byte(g.String())); err != nil || u != g {
		t.Errorf("UnmarshalText: %v", err)
	}
}

// DataSize counts what an entity holds, not what it encodes to: the
// bytes of its strings and byte slices, 16 per element of other slices
// and maps, 16 per field; a nil pointer counts nothing. An
// EntityMarshaler's size is unknown without encoding it.
func TestDataSize(t *testing.T) {
	type row struct {
		PartitionKey, RowKey string
		Name                 string
		Photo                []byte
		Tags                 []string `table:",json"`
		Note                 *string
		Count                int64
	}
	c, err := entity.CodecOf(reflect.TypeFor[row](), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := row{PartitionKey: "pk", RowKey: "rk1", Name: strings.Repeat("x", 1000), Photo: make([]byte, 500), Tags: []string{"a", "b"}}
	n, ok := c.DataSize(&r)
	// 6 fields present (Note is nil): 6*16, plus 2+3+1000+500 bytes, plus 2 tags at 16.
	if want := 6*16 + 2 + 3 + 1000 + 500 + 2*16; !ok || n != want {
		t.Errorf("DataSize = %d, %v; want %d, true", n, ok, want)
	}
	note := strings.Repeat("y", 100)
	r.Note = &note
	if n2, _ := c.DataSize(r); n2 != n+16+100 {
		t.Errorf("DataSize with a 100-byte *string = %d, want %d", n2, n+16+100)
	}
	// By pointer, fields are read at their offsets; by value (not
	// addressable), through reflect: the same size, for string kinds of
	// every length and the other fast kinds.
	type kinds struct {
		PartitionKey, RowKey string
		S                    string
		W                    widthName
		E                    string `table:",omitempty"`
		B                    bool
		I                    int8
		U                    uint64
		F                    float32
		T                    time.Time
	}
	kc, err := entity.CodecOf(reflect.TypeFor[kinds](), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		k := kinds{PartitionKey: "p", RowKey: strconv.Itoa(i), S: strings.Repeat("s", i*7), W: widthName(strings.Repeat("w", i%5)), B: i%2 == 0, I: int8(i), U: uint64(i), F: float32(i), T: time.Unix(int64(i), 0)}
		byPtr, ok1 := kc.DataSize(&k)
		byVal, ok2 := kc.DataSize(k)
		if byPtr != byVal || !ok1 || !ok2 || byPtr != 10*16+1+len(strconv.Itoa(i))+i*7+i%5 {
			t.Fatalf("DataSize of %+v: by pointer %d, %v; by value %d, %v", k, byPtr, ok1, byVal, ok2)
		}
	}
	if _, ok := c.DataSize(struct{}{}); ok {
		t.Error("DataSize of another type reported ok")
	}
	hc, err := entity.CodecOf(reflect.TypeFor[hooked](), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hc.DataSize(&hooked{}); ok {
		t.Error("DataSize of an EntityMarshaler reported ok")
	}
}

type widthName string

type widths struct {
	PartitionKey, RowKey string
	Meta2
	*Extra
	I8  int8
	I16 int16
	I32 int32
	I   int
	U8  uint8
	U16 uint16
	U32 uint32
	F32 float32
	F64 float64
	B   bool
	N   widthName
	T   time.Time
}

type Meta2 struct{ Inner int16 }

// Every width of number decodes exactly at its limits, and one past them
// is a typed error naming the field, whether the row is unmarshalled
// alone or read from a page (the two decode paths share these rules).
func TestDecodeWidthsAndOverflow(t *testing.T) {
	c, err := entity.CodecOf(reflect.TypeOf(widths{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"PartitionKey":"p","RowKey":"r","Inner":-32768,"Note":"n","I8":-128,"I16":32767,"I32":-2147483648,"I@odata.type":"Edm.Int64","I":"9223372036854775807",` +
		`"U8":255,"U16":65535,"U32@odata.type":"Edm.Int64","U32":"4294967295","F32":3.4028234663852886e+38,"F64":-1.5,"B":true,"N":"named","T@odata.type":"Edm.DateTime","T":"2024-02-29T23:59:59.1234567Z"}`
	want := widths{PartitionKey: "p", RowKey: "r", Meta2: Meta2{-32768}, Extra: &Extra{"n"}, I8: -128, I16: 32767, I32: -2147483648, I: 9223372036854775807,
		U8: 255, U16: 65535, U32: 4294967295, F32: math.MaxFloat32, F64: -1.5, B: true, N: "named", T: time.Date(2024, 2, 29, 23, 59, 59, 123456700, time.UTC)}
	decode := map[string]func(string) (widths, error){
		"Unmarshal": func(s string) (widths, error) {
			var v widths
			err := c.Unmarshal([]byte(s), &v)
			return v, err
		},
		"PageReader": func(s string) (widths, error) {
			var v widths
			r := entity.NewPageReader([]byte(`{"value":[` + s + `]}`))
			if !r.Next() {
				return v, r.Err()
			}
			err := r.Decode(c, &v)
			return v, err
		},
	}
	for name, dec := range decode {
		got, err := dec(ok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
		for field, bad := range map[string]string{
			"I8": `"I8":-129`, "I16": `"I16":32768`, "I32": `"I32":2147483648`, "U8": `"U8":256`, "U16": `"U16":-1`,
			"U32": `"U32":"4294967296"`, "F32": `"F32":3.5e+38`, "Inner": `"Inner":40000`, "B": `"B":"yes"`, "N": `"N":3`,
		} {
			_, err := dec(`{"PartitionKey":"p","RowKey":"r",` + bad + `}`)
			var ee *entity.Error
			if !errors.As(err, &ee) || !errors.Is(err, entity.ErrInvalidEntity) || !strings.HasSuffix(ee.Field, field) {
				t.Errorf("%s of %s: got %v, want an *entity.Error for field %s", name, bad, err, field)
			}
		}
	}
}

// DateTime values decode to the instant time.Parse gives, and impossible
// dates (February 29 of a common year, April 31) are refused.
func TestDecodeDateTimeMatchesTimeParse(t *testing.T) {
	c, err := entity.CodecOf(reflect.TypeOf(struct {
		PartitionKey, RowKey string
		T                    time.Time
	}{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	decode := func(s string) (time.Time, error) {
		var v struct {
			PartitionKey, RowKey string
			T                    time.Time
		}
		err := c.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","T@odata.type":"Edm.DateTime","T":"`+s+`"}`), &v)
		return v.T, err
	}
	day := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	for day.Year() < 2500 {
		for _, clock := range []string{"T00:00:00Z", "T23:59:59.9999999Z", "T12:34:56.5Z"} {
			s := day.Format("2006-01-02") + clock
			want, _ := time.Parse(time.RFC3339Nano, s)
			got, err := decode(s)
			if err != nil || !got.Equal(want) || got.Location() != time.UTC {
				t.Fatalf("%s: got %v, %v; want %v", s, got, err, want)
			}
		}
		day = day.AddDate(0, 0, 13)
	}
	for _, s := range []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z", "2000-02-29T00:00:00Z", "2024-02-29T00:00:00Z"} {
		want, _ := time.Parse(time.RFC3339Nano, s)
		if got, err := decode(s); err != nil || !got.Equal(want) {
			t.Errorf("%s: got %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-00T00:00:00Z"} {
		if _, err := decode(s); err == nil {
			t.Errorf("%s decoded without error", s)
		}
	}
}

// Every byte is refused where a GUID's hex digit belongs, but the 22 hex
// digits of both cases.
func TestGUIDDigits(t *testing.T) {
	const good = "0f8fad5b-d9cb-469f-a165-70867728950e"
	for _, pos := range []int{0, 7, 9, 14, 19, 24, 35} {
		for c := range 256 {
			b := []byte(good)
			b[pos] = byte(c)
			_, err := entity.ParseGUID(string(b))
			isHex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
			if (err == nil) != isHex {
				t.Fatalf("ParseGUID with %q at %d: %v", byte(c), pos, err)
			}
		}
	}
}

package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The entity codec on a service: what it writes is stored as the EDM types
// it means and reads back exactly. (In package entity's tests, importing
// tools/testenv made go test compile the emulator and everything between
// it and entity a second time, against entity's internal tests.)

// codecAll has a field of every kind the codec writes.
type codecAll struct {
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
	U    codecUUID
	Bin  []byte
	PS   *string
	PI   *int64
	PT   *time.Time
	IP   netip.Addr
	Addr codecAddress `table:",json"`
	Tags []string     `table:"Labels,json"`
	Temp codecCelsius
	M    map[string]string `table:",json,omitempty"`
	Skip string            `table:"-"`
}

type codecAddress struct {
	Street string
	Zip    int
}

type codecUUID [16]byte

// codecCelsius has its own stored form: an Int32 of tenths of a degree.
type codecCelsius float64

func (c codecCelsius) MarshalProperty() (entity.Value, error) {
	return entity.Int32(int32(math.Round(float64(c) * 10))), nil
}

func (c *codecCelsius) UnmarshalProperty(v entity.Value) error {
	n, ok := v.V.(int32)
	if !ok {
		return errors.New("want Int32")
	}
	*c = codecCelsius(float64(n) / 10)
	return nil
}

// The guide's mixed partition: a department and its employees, in two
// versions.
type regDepartment struct {
	PartitionKey   string
	RowKey         string
	DepartmentName string
	EmployeeCount  int32
}

type regEmployeeV1 struct {
	PartitionKey, RowKey string
	FirstName, LastName  string
	Age                  int32
}

type regEmployee struct {
	PartitionKey, RowKey string
	FirstName, LastName  string
	Age                  int32
	Email                string
}

func newCodecRegistry(t *testing.T) *entity.Registry {
	t.Helper()
	r := entity.NewRegistry(nil)
	for _, reg := range []struct {
		k entity.Kind
		v any
	}{
		{entity.Kind{Name: "Department"}, regDepartment{}},
		{entity.Kind{Name: "Employee", Version: 1}, regEmployeeV1{}},
		{entity.Kind{Name: "Employee", Version: 2}, regEmployee{}},
	} {
		if err := r.Register(reg.k, reg.v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func ptrTo[T any](v T) *T { return &v }

func storedRow(t *testing.T, ctx context.Context, tbl *aztables.Client, pk, rk string) []byte {
	t.Helper()
	return storedRowAs(t, ctx, tbl, pk, rk, aztables.MetadataFormatMinimal)
}

func storedRowAs(t *testing.T, ctx context.Context, tbl *aztables.Client, pk, rk string, format aztables.MetadataFormat) []byte {
	t.Helper()
	resp, err := tbl.GetEntity(ctx, pk, rk, &aztables.GetEntityOptions{Format: &format})
	if err != nil {
		t.Fatalf("GetEntity: %v", err)
	}
	return resp.Value
}

// Every Go type written by the codec reads back exactly, by point read and
// by query.
func TestAzuriteCodecRoundTrip(t *testing.T) {
	ctx := context.Background()
	tbl := testenv.Table(t, testenv.Account(t))
	at := time.Date(2024, 2, 29, 23, 59, 58, 123456700, time.UTC)
	rows := []codecAll{
		{PartitionKey: "p", RowKey: "zero"},
		{
			PartitionKey: "p", RowKey: "max",
			S: "héllo \"q\" \\ \n 😀", B: true,
			I8: math.MaxInt8, I16: math.MaxInt16, I32: math.MaxInt32, I: math.MaxInt, I64: math.MaxInt64,
			U8: math.MaxUint8, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxInt64,
			F32: math.MaxFloat32, F64: 3.0, T: at, G: entity.NewGUID(), U: codecUUID{1, 2, 3}, Bin: []byte{0, 255},
			PS: ptrTo(""), PI: ptrTo(int64(math.MinInt64)), PT: ptrTo(at.Add(100)),
			IP: netip.MustParseAddr("10.0.0.1"), Addr: codecAddress{"Main", 1}, Tags: []string{}, Temp: 21.5,
		},
		{
			PartitionKey: "p", RowKey: "min",
			I8: math.MinInt8, I16: math.MinInt16, I32: math.MinInt32, I: math.MinInt, I64: math.MinInt64,
			F64: math.NaN(), F32: float32(math.Inf(-1)), T: time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC), Bin: []byte{},
			S: stringOfUnits(entity.MaxStringUnits),
		},
		{PartitionKey: "p", RowKey: "inf", F64: math.Inf(1), F32: 0.1},
	}
	c, err := entity.CodecOf(reflect.TypeOf(codecAll{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range rows {
		b, err := c.Marshal(&in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.AddEntity(ctx, b, nil); err != nil {
			t.Fatalf("AddEntity %s: %v", in.RowKey, err)
		}
	}
	check := func(how string, got, want codecAll) {
		t.Helper()
		if got.ETag == "" || got.Timestamp.IsZero() {
			t.Errorf("%s %s: no ETag/Timestamp: %q %v", how, want.RowKey, got.ETag, got.Timestamp)
		}
		got.ETag, got.Timestamp = "", time.Time{}
		if math.IsNaN(want.F64) && math.IsNaN(got.F64) {
			got.F64, want.F64 = 0, 0 // NaN != NaN
		}
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := 0; i < gv.NumField(); i++ {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("%s %s: field %s = %#v, want %#v", how, want.RowKey, gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
	}
	for _, in := range rows {
		var out codecAll
		if err := c.Unmarshal(storedRow(t, ctx, tbl, in.PartitionKey, in.RowKey), &out); err != nil {
			t.Fatal(err)
		}
		check("GetEntity", out, in)
	}
	pager := tbl.NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: ptrTo(joinSelect(c.Select()))})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range page.Entities {
			var out codecAll
			if err := c.Unmarshal(row, &out); err != nil {
				t.Fatal(err)
			}
			for _, in := range rows {
				if in.RowKey == out.RowKey {
					check("ListEntities", out, in)
					n++
				}
			}
		}
	}
	if n != len(rows) {
		t.Errorf("listed %d rows, want %d", n, len(rows))
	}
}

func stringOfUnits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

func joinSelect(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ","
		}
		s += n
	}
	return s
}

// The stored types are the exact EDM types: 3.0 stays a Double, max Int64
// is exact, times keep 100 ns.
func TestAzuriteStoredTypes(t *testing.T) {
	ctx := context.Background()
	tbl := testenv.Table(t, testenv.Account(t))
	type Typed struct {
		PartitionKey, RowKey string
		D                    float64
		Max                  int64
		Min                  int64
		T                    time.Time
	}
	in := Typed{"p", "r", 3.0, math.MaxInt64, math.MinInt64, time.Date(2024, 1, 2, 3, 4, 5, 999999900, time.UTC)}
	b, err := entity.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEntity(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	// The service writes a Double without @odata.type even in full
	// metadata (Azure: 3.0 and 5.0 unannotated, azure-sdk-for-python's
	// recorded test_get_entity_full_metadata, which emulator's
	// TestReplay replays; Azurite and the emulator alike), and aztables
	// hands the body on re-marshalled (3.0 becomes 3). So a property bag
	// (which has no destination type) reads it as the service would type
	// that JSON: Int32. A float64 field reads it as 3.0 (below).
	raw := storedRowAs(t, ctx, tbl, "p", "r", aztables.MetadataFormatFull)
	var bag entity.Entity
	if err := bag.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]entity.Value{
		"D": entity.Int32(3), "Max": entity.Int64(math.MaxInt64), "Min": entity.Int64(math.MinInt64),
		"T": entity.DateTime(in.T),
	}
	if !reflect.DeepEqual(bag.Properties, want) {
		t.Errorf("stored %s\n got %#v\nwant %#v", raw, bag.Properties, want)
	}
	// A float64 field reads it back as 3.0 and the bag's MarshalJSON is
	// accepted by the service as it stands.
	var out Typed
	if err := entity.Unmarshal(storedRow(t, ctx, tbl, "p", "r"), &out); err != nil || out.D != 3.0 || out.Max != math.MaxInt64 || !out.T.Equal(in.T) {
		t.Errorf("Unmarshal: %#v, %v", out, err)
	}
	bag.RowKey, bag.ETag, bag.Timestamp = "r2", "", time.Time{}
	b2, err := bag.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEntity(ctx, b2, nil); err != nil {
		t.Fatalf("AddEntity of a bag: %v", err)
	}
	var bag2 entity.Entity
	if err := bag2.UnmarshalJSON(storedRowAs(t, ctx, tbl, "p", "r2", aztables.MetadataFormatFull)); err != nil || !reflect.DeepEqual(bag2.Properties, want) {
		t.Errorf("bag round trip: %#v, %v", bag2.Properties, err)
	}
}

// Rows written by the raw SDK (EDMEntity) decode with the codec.
func TestAzuriteReadsSDKWrites(t *testing.T) {
	ctx := context.Background()
	tbl := testenv.Table(t, testenv.Account(t))
	g := entity.NewGUID()
	when := time.Date(2023, 6, 7, 8, 9, 10, 123456700, time.UTC)
	src := aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: "p", RowKey: "sdk"},
		Properties: map[string]any{
			"Name":  "Ann 😀",
			"Age":   int32(41),
			"Big":   aztables.EDMInt64(math.MaxInt64),
			"Ratio": 2.5,
			"On":    true,
			"When":  aztables.EDMDateTime(when),
			"ID":    aztables.EDMGUID(g.String()),
			"Blob":  aztables.EDMBinary([]byte{1, 2, 3}),
		},
	}
	b, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEntity(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	type Dest struct {
		PartitionKey, RowKey string
		ETag                 string
		Timestamp            time.Time
		Name                 string
		Age                  int64 // Int32 on the wire
		Big                  int64
		Ratio                float64
		On                   bool
		When                 time.Time
		ID                   entity.GUID
		Blob                 []byte
	}
	var d Dest
	if err := entity.Unmarshal(storedRow(t, ctx, tbl, "p", "sdk"), &d); err != nil {
		t.Fatal(err)
	}
	if d.ETag == "" || d.Timestamp.IsZero() {
		t.Errorf("metadata not decoded: %#v", d)
	}
	d.ETag, d.Timestamp = "", time.Time{}
	want := Dest{PartitionKey: "p", RowKey: "sdk", Name: "Ann 😀", Age: 41, Big: math.MaxInt64, Ratio: 2.5, On: true, When: when, ID: g, Blob: []byte{1, 2, 3}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got  %#v\nwant %#v", d, want)
	}
}

// A mixed partition written through the registry resolves row by row from
// a real query page.
func TestAzuriteRegistryMixedPartition(t *testing.T) {
	ctx := context.Background()
	tbl := testenv.Table(t, testenv.Account(t))
	r := newCodecRegistry(t)
	for _, v := range []any{
		regDepartment{"Sales", "Department", "Sales", 2},
		regEmployeeV1{"Sales", "000123", "Ann", "Lee", 34},
		regEmployee{"Sales", "000124", "Bo", "Ng", 41, "bo@contoso.com"},
	} {
		b, err := r.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.AddEntity(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	pager := tbl.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: ptrTo("PartitionKey eq 'Sales'")})
	var got []any
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := r.ResolveAll(page.Entities)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vs...)
	}
	if len(got) != 3 {
		t.Fatalf("%d rows", len(got))
	}
	// RowKey order: 000123, 000124, Department.
	if e, ok := got[0].(*regEmployeeV1); !ok || e.Age != 34 {
		t.Errorf("row 0: %#v", got[0])
	}
	if e, ok := got[1].(*regEmployee); !ok || e.Email != "bo@contoso.com" {
		t.Errorf("row 1: %#v", got[1])
	}
	if d, ok := got[2].(*regDepartment); !ok || d.EmployeeCount != 2 {
		t.Errorf("row 2: %#v", got[2])
	}
}

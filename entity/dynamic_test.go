package entity_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
)

func TestEntityRoundTripsEveryEDMType(t *testing.T) {
	in := entity.Entity{
		PartitionKey: "p", RowKey: "r", ETag: `W/"datetime'x'"`,
		Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC),
		Properties: map[string]entity.Value{
			"S":      entity.String("😀"),
			"I32":    entity.Int32(math.MinInt32),
			"I64":    entity.Int64(math.MaxInt64),
			"Small":  entity.Int64(1), // Int64 stays Int64 although it fits an Int32
			"D":      entity.Double(3),
			"NaN":    entity.Double(math.NaN()),
			"Inf":    entity.Double(math.Inf(-1)),
			"B":      entity.Bool(false),
			"T":      entity.DateTime(time.Date(2000, 1, 1, 0, 0, 0, 100, time.UTC)),
			"G":      entity.Guid(entity.NewGUID()),
			"Bin":    entity.Binary(nil),
			"Str123": entity.String("123"),
		},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out entity.Entity
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	nan := out.Properties["NaN"]
	if nan.Type != entity.EdmDouble || !math.IsNaN(nan.V.(float64)) {
		t.Errorf("NaN came back as %#v", nan)
	}
	delete(in.Properties, "NaN")
	delete(out.Properties, "NaN")
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip through %s\n got %#v\nwant %#v", b, out, in)
	}
}

func TestEntityInfersUnannotatedTypes(t *testing.T) {
	var e entity.Entity
	row := `{"PartitionKey":"p","RowKey":"r","s":"x","i":7,"big":4294967296,"d":2.5,"d2":1e3,"b":true,"n":null,"odata.etag":"e","odata.type":"x.T"}`
	if err := e.UnmarshalJSON([]byte(row)); err != nil {
		t.Fatal(err)
	}
	want := map[string]entity.Value{
		"s": entity.String("x"), "i": entity.Int32(7), "big": entity.Int64(1 << 32),
		"d": entity.Double(2.5), "d2": entity.Double(1000), "b": entity.Bool(true),
	}
	if !reflect.DeepEqual(e.Properties, want) || e.ETag != "e" {
		t.Errorf("got %#v", e)
	}
	// Annotations may follow their values.
	if err := e.UnmarshalJSON([]byte(`{"x":"5","x@odata.type":"Edm.Int64"}`)); err != nil || e.Properties["x"] != entity.Int64(5) {
		t.Errorf("trailing annotation: %v %#v", err, e.Properties)
	}
	for _, bad := range []string{`{"x":[1]}`, `{"x":"a","x@odata.type":"Edm.Int32"}`, `{"x":"a","x@odata.type":"Edm.Foo"}`, `{"x":"zz","x@odata.type":"Edm.Guid"}`} {
		if err := e.UnmarshalJSON([]byte(bad)); !errors.Is(err, entity.ErrInvalidEntity) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestEntityThroughCodec(t *testing.T) {
	c, err := entity.CodecOf(reflect.TypeOf(entity.Entity{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := entity.Entity{PartitionKey: "p", RowKey: "r", ETag: "ignored"}
	e.Set("A", entity.Int64(5))
	b, err := c.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int64","A":"5"}`; string(b) != want {
		t.Errorf("got %s", b)
	}
	var out entity.Entity
	if err := c.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","odata.etag":"E","A@odata.type":"Edm.Int64","A":"5"}`), &out); err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Get("A"); v != entity.Int64(5) || c.ETag(&out) != "E" {
		t.Errorf("got %#v", out)
	}
	if pk, rk := c.Keys(e); pk != "p" || rk != "r" {
		t.Errorf("Keys: %q %q", pk, rk)
	}
	e.Set("bad", entity.Value{Type: entity.EdmInt32, V: "x"})
	if _, err := c.Marshal(e); !errors.Is(err, entity.ErrInvalidEntity) {
		t.Errorf("mistyped value: %v", err)
	}
}

// Versioned is written through the whole-entity hook: its property layout
// is its own business.
type Versioned struct {
	PK, RK string
	Parts  []string
}

func (v Versioned) MarshalEntity() (entity.Entity, error) {
	e := entity.Entity{PartitionKey: v.PK, RowKey: v.RK}
	for i, p := range v.Parts {
		e.Set("Part"+string(rune('A'+i)), entity.String(p))
	}
	return e, nil
}

func (v *Versioned) UnmarshalEntity(e entity.Entity) error {
	v.PK, v.RK = e.PartitionKey, e.RowKey
	for i := 0; ; i++ {
		p, ok := e.Get("Part" + string(rune('A'+i)))
		if !ok {
			return nil
		}
		v.Parts = append(v.Parts, p.V.(string))
	}
}

func TestWholeEntityHook(t *testing.T) {
	in := Versioned{"p", "r", []string{"x", "y"}}
	b, err := entity.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"PartitionKey":"p","RowKey":"r","PartA":"x","PartB":"y"}`; string(b) != want {
		t.Errorf("got %s", b)
	}
	var out Versioned
	if err := entity.Unmarshal(b, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Errorf("got %#v, %v", out, err)
	}
	c, _ := entity.CodecOf(reflect.TypeOf(in), nil)
	if pk, rk := c.Keys(in); pk != "p" || rk != "r" {
		t.Errorf("Keys through the hook: %q %q", pk, rk)
	}
}

package entity_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

func row(props map[string]entity.Value) entity.Entity {
	return entity.Entity{PartitionKey: "p", RowKey: "r", Properties: props}
}

func manyProps(n int, v entity.Value) map[string]entity.Value {
	m := make(map[string]entity.Value, n)
	for i := range n {
		m["P"+strconv.Itoa(i)] = v
	}
	return m
}

// Validate is the check every write runs: for each entity it fails exactly
// when MarshalJSON (and a Codec's Marshal of an EntityMarshaler) fails, with
// the same error, naming the property.
func TestValidateIsTheWriteCheck(t *testing.T) {
	big := strings.Repeat("y", 30_000)
	for _, c := range []struct {
		name  string
		e     entity.Entity
		field string // "" for a valid entity
		rule  string
		key   bool
	}{
		{"valid", row(map[string]entity.Value{"A": entity.Int32(1), "B": entity.String("x")}), "", "", false},
		{"empty keys", entity.Entity{}, "", "", false},
		{"252 properties", row(manyProps(252, entity.Int32(1))), "", "", false},
		{"253 properties", row(manyProps(253, entity.Int32(1))), "", "253 custom properties", false},
		{"32768 units", row(map[string]entity.Value{"S": entity.String(strings.Repeat("a", 32768))}), "", "", false},
		{"32769 units", row(map[string]entity.Value{"S": entity.String(strings.Repeat("a", 32769))}), "S", "32769 UTF-16 code units", false},
		{"astral pairs count twice", row(map[string]entity.Value{"S": entity.String(strings.Repeat("\U0001F600", 16385))}), "S", "32770 UTF-16 code units", false},
		{"40,000 characters", row(map[string]entity.Value{"Big": entity.String(strings.Repeat("x", 40_000))}), "Big", "40000 UTF-16", false},
		{"invalid UTF-8", row(map[string]entity.Value{"S": entity.String("a\xffb")}), "S", "UTF-8", false},
		{"binary 64 KiB", row(map[string]entity.Value{"B": entity.Binary(make([]byte, 65536))}), "", "", false},
		{"binary over 64 KiB", row(map[string]entity.Value{"B": entity.Binary(make([]byte, 65537))}), "B", "65537 bytes", false},
		{"over 1 MiB", row(manyProps(40, entity.String(big))), "", "1 MiB", false},
		{"bad name", row(map[string]entity.Value{"bad name": entity.Int32(1)}), "bad name", "invalid property name", false},
		{"digit first", row(map[string]entity.Value{"1a": entity.Int32(1)}), "1a", "invalid property name", false},
		{"system name", row(map[string]entity.Value{"Timestamp": entity.Int32(1)}), "Timestamp", "invalid property name", false},
		{"name of 256", row(map[string]entity.Value{strings.Repeat("n", 256): entity.Int32(1)}), strings.Repeat("n", 256), "invalid property name", false},
		{"name of 255", row(map[string]entity.Value{strings.Repeat("n", 255): entity.Int32(1)}), "", "", false},
		{"wrong Go type", row(map[string]entity.Value{"A": {Type: entity.EdmInt64, V: 3}}), "A", "Edm.Int64 value holds a Go int", false},
		{"unknown type", row(map[string]entity.Value{"A": {Type: "Edm.Decimal", V: "1"}}), "A", "unknown EDM type", false},
		{"DateTime range", row(map[string]entity.Value{"T": entity.DateTime(time.Date(1600, 12, 31, 0, 0, 0, 0, time.UTC))}), "T", "DateTime", false},
		{"bad PartitionKey", entity.Entity{PartitionKey: "a/b"}, "PartitionKey", "invalid key", true},
		{"bad RowKey", entity.Entity{RowKey: strings.Repeat("k", 513)}, "RowKey", "invalid key", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.e.Validate()
			_, merr := c.e.MarshalJSON()
			_, cerr := entity.Marshal(hooked{c.e})
			if c.rule == "" {
				if err != nil || merr != nil || cerr != nil {
					t.Fatalf("Validate = %v, MarshalJSON = %v, Marshal = %v; want nil", err, merr, cerr)
				}
				return
			}
			if err == nil || merr == nil || err.Error() != merr.Error() {
				t.Fatalf("Validate = %v, MarshalJSON = %v; want the same error", err, merr)
			}
			if cerr == nil || !strings.HasSuffix(cerr.Error(), strings.TrimPrefix(err.Error(), "entity: ")) {
				t.Fatalf("Marshal = %v, want the error of Validate (%v)", cerr, err)
			}
			var ee *entity.Error
			if !errors.As(err, &ee) || ee.Field != c.field || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("Validate = %v, want an *entity.Error naming %q with %q", err, c.field, c.rule)
			}
			if c.key != errors.Is(err, keys.ErrInvalidKey) || !c.key && !errors.Is(err, entity.ErrInvalidEntity) {
				t.Fatalf("Validate = %v: wraps ErrInvalidKey %v, ErrInvalidEntity %v", err, errors.Is(err, keys.ErrInvalidKey), errors.Is(err, entity.ErrInvalidEntity))
			}
		})
	}
}

// hooked is written through the whole-entity hook, as any struct that
// implements EntityMarshaler is.
type hooked struct{ e entity.Entity }

func (h hooked) MarshalEntity() (entity.Entity, error) { return h.e, nil }

func TestValidatePropertyName(t *testing.T) {
	for name, ok := range map[string]bool{
		"A": true, "_x": true, "Émile": true, "a1": true, strings.Repeat("n", 255): true,
		"": false, "bad name": false, "1a": false, "a-b": false, "a.b": false, "PartitionKey": false, "RowKey": false,
		"Timestamp": false, strings.Repeat("n", 256): false, "a\xff": false,
	} {
		err := entity.ValidatePropertyName(name)
		if (err == nil) != ok {
			t.Errorf("ValidatePropertyName(%.20q) = %v, want ok=%v", name, err, ok)
		}
		var ee *entity.Error
		if err != nil && (!errors.Is(err, entity.ErrInvalidEntity) || !errors.As(err, &ee) || ee.Field != name) {
			t.Errorf("ValidatePropertyName(%.20q) = %v, want an *entity.Error naming it", name, err)
		}
	}
}

func TestParseEntity(t *testing.T) {
	e, err := entity.ParseEntity([]byte(`{"odata.metadata":"m","odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r",` +
		`"Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-01-01T00:00:00Z","PartitionKey@odata.type":"Edm.String",` +
		`"Big@odata.type":"Edm.Int64","Big":"9007199254740993","Three":3.0,"Four":4,"Null":null,` +
		`"When":"2012-03-04T05:06:07.1234567Z","When@odata.type":"Edm.DateTime"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]entity.Value{
		"Big":   entity.Int64(9007199254740993),
		"Three": entity.Double(3),
		"Four":  entity.Int32(4),
		"When":  entity.DateTime(time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC)),
	}
	if e.PartitionKey != "p" || e.RowKey != "r" || e.ETag != "" || !e.Timestamp.IsZero() || len(e.Properties) != len(want) {
		t.Fatalf("ParseEntity = %+v", e)
	}
	for k, w := range want {
		if !e.Properties[k].Equal(w) {
			t.Errorf("%s = %#v, want %#v", k, e.Properties[k], w)
		}
	}
	for name, c := range map[string]struct{ in, rule string }{
		"no RowKey":      {`{"PartitionKey":"p"}`, "needs PartitionKey and RowKey"},
		"no keys":        {`{"A":1}`, "needs PartitionKey and RowKey"},
		"numeric key":    {`{"PartitionKey":1,"RowKey":"r"}`, "want a JSON string"},
		"not an object":  {`[1]`, "cannot decode"},
		"trailing":       {`{"PartitionKey":"p","RowKey":"r"} x`, "cannot decode"},
		"bad annotation": {`{"PartitionKey":"p","RowKey":"r","A@odata.type":"Edm.Int32","A":"x"}`, "A"},
		"bad name":       {`{"PartitionKey":"p","RowKey":"r","bad name":1}`, "bad name"},
		"253 properties": {func() string {
			var b strings.Builder
			b.WriteString(`{"PartitionKey":"p","RowKey":"r"`)
			for i := range 253 {
				b.WriteString(`,"P` + strconv.Itoa(i) + `":1`)
			}
			return b.String() + "}"
		}(), "253 custom properties"},
		"bad key": {`{"PartitionKey":"a#b","RowKey":"r"}`, "PartitionKey"},
	} {
		_, err := entity.ParseEntity([]byte(c.in))
		if !errors.Is(err, entity.ErrInvalidEntity) && !errors.Is(err, keys.ErrInvalidKey) || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: ParseEntity = %v, want an error naming %q", name, err, c.rule)
		}
	}
}

func TestValueEqual(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 100, time.UTC)
	g := entity.NewGUID()
	for _, c := range []struct {
		a, b entity.Value
		eq   bool
	}{
		{entity.String("a"), entity.String("a"), true},
		{entity.String("a"), entity.String("b"), false},
		{entity.Int32(1), entity.Int64(1), false},
		{entity.Int64(1 << 60), entity.Int64(1 << 60), true},
		{entity.Double(3), entity.Double(3.0), true},
		{entity.Double(math.NaN()), entity.Double(math.NaN()), true},
		{entity.Double(0), entity.Double(math.Copysign(0, -1)), false},
		{entity.Double(math.Inf(1)), entity.Double(math.Inf(1)), true},
		{entity.DateTime(now), entity.DateTime(now.In(time.FixedZone("x", 3600))), true},
		{entity.DateTime(now), entity.DateTime(now.Add(100)), false},
		{entity.Guid(g), entity.Guid(g), true},
		{entity.Guid(g), entity.Guid(entity.GUID{}), false},
		{entity.Binary([]byte{1, 2}), entity.Binary([]byte{1, 2}), true},
		{entity.Binary(nil), entity.Binary([]byte{}), true},
		{entity.Binary([]byte{1}), entity.Binary([]byte{2}), false},
		{entity.Bool(true), entity.Bool(true), true},
		{entity.Value{Type: entity.EdmBinary, V: []int{1}}, entity.Value{Type: entity.EdmBinary, V: []int{1}}, false},
		{entity.Value{Type: entity.EdmString, V: []byte("a")}, entity.String("a"), false},
	} {
		if got := c.a.Equal(c.b); got != c.eq {
			t.Errorf("%#v.Equal(%#v) = %v, want %v", c.a, c.b, got, c.eq)
		}
		if got := c.b.Equal(c.a); got != c.eq {
			t.Errorf("%#v.Equal(%#v) = %v, want %v", c.b, c.a, got, c.eq)
		}
	}
}

func TestValueAppendJSON(t *testing.T) {
	g, _ := entity.ParseGUID("c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f")
	for _, c := range []struct {
		v    entity.Value
		want string
	}{
		{entity.String(`a"b`), `"a\"b"`},
		{entity.Int32(-3), `-3`},
		{entity.Int64(9007199254740993), `"9007199254740993"`},
		{entity.Double(3), `3.0`},
		{entity.Double(math.NaN()), `"NaN"`},
		{entity.Double(math.Inf(-1)), `"-Infinity"`},
		{entity.Bool(false), `false`},
		{entity.DateTime(time.Date(2012, 3, 4, 5, 6, 7, 123456789, time.UTC)), `"2012-03-04T05:06:07.1234567Z"`},
		{entity.Guid(g), `"c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f"`},
		{entity.Binary([]byte{0, 1, 2, 3, 4}), `"AAECAwQ="`},
	} {
		got, err := c.v.AppendJSON([]byte("x"))
		if err != nil || string(got) != "x"+c.want {
			t.Errorf("%#v.AppendJSON = %s, %v; want x%s", c.v, got, err, c.want)
		}
	}
	for _, v := range []entity.Value{{Type: entity.EdmInt32, V: int64(1)}, {Type: "Edm.Decimal", V: "1"}, entity.String(strings.Repeat("a", 32769))} {
		if got, err := v.AppendJSON(nil); !errors.Is(err, entity.ErrInvalidEntity) || len(got) != 0 {
			t.Errorf("%.40v.AppendJSON = %q, %v; want an ErrInvalidEntity and nothing appended", v, got, err)
		}
	}
}

func TestValueText(t *testing.T) {
	g, _ := entity.ParseGUID("c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f")
	for _, c := range []struct {
		v    entity.Value
		want string
		ok   bool
	}{
		{entity.String(`a"b\u00e9`), `a"b\u00e9`, true},
		{entity.Int64(9007199254740993), "9007199254740993", true},
		{entity.DateTime(time.Date(2012, 3, 4, 5, 6, 7, 123456789, time.UTC)), "2012-03-04T05:06:07.1234567Z", true},
		{entity.Guid(g), "c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f", true},
		{entity.Binary([]byte{0, 1, 2, 3, 4}), "AAECAwQ=", true},
		{entity.Double(math.Inf(1)), "Infinity", true},
		{entity.Double(3), "", false},
		{entity.Int32(7), "", false},
		{entity.Bool(true), "", false},
		{entity.Value{Type: entity.EdmInt64, V: "12"}, "", false},
	} {
		if got, ok := c.v.Text(); got != c.want || ok != c.ok {
			t.Errorf("%#v.Text() = %q, %v; want %q, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParseEntity: ParseEntity never panics, and what it accepts marshals
// and parses back to an equal entity.
func FuzzParseEntity(f *testing.F) {
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","A":1,"B@odata.type":"Edm.Int64","B":"12","C":3.0,"D":"NaN","D@odata.type":"Edm.Double"}`))
	f.Add([]byte(`{"PartitionKey":"","RowKey":"","G@odata.type":"Edm.Guid","G":"c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f","X":"AAE=","X@odata.type":"Edm.Binary"}`))
	f.Add([]byte(`{"PartitionKey":"p","RowKey":"r","bad name":1,"T":"2012-03-04T05:06:07.1234567Z","T@odata.type":"Edm.DateTime"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := entity.ParseEntity(data)
		if err != nil {
			return
		}
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("ParseEntity accepted %s but MarshalJSON fails: %v", data, err)
		}
		back, err := entity.ParseEntity(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if back.PartitionKey != e.PartitionKey || back.RowKey != e.RowKey || len(back.Properties) != len(e.Properties) {
			t.Fatalf("round trip of %s: %+v, want %+v", data, back, e)
		}
		for k, v := range e.Properties {
			if !back.Properties[k].Equal(v) {
				t.Fatalf("round trip of %s: %s = %#v, want %#v", data, k, back.Properties[k], v)
			}
		}
	})
}

package keys

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

type litKind uint8

const (
	litString litKind = iota + 1
	litBool
	litInt32
	litInt64
	litDouble
	litDateTime
	litGuid
	litBinary
)

func (k litKind) String() string {
	switch k {
	case litString:
		return "Edm.String"
	case litBool:
		return "Edm.Boolean"
	case litInt32:
		return "Edm.Int32"
	case litInt64:
		return "Edm.Int64"
	case litDouble:
		return "Edm.Double"
	case litDateTime:
		return "Edm.DateTime"
	case litGuid:
		return "Edm.Guid"
	case litBinary:
		return "Edm.Binary"
	}
	return "unknown"
}

// literal is a typed value; only the field of its kind is set. b is owned
// by the literal (copied in) and never modified.
type literal struct {
	kind litKind
	s    string
	bo   bool
	i    int64
	f    float64
	t    time.Time
	g    [16]byte
	b    []byte
}

func (l literal) equal(m literal) bool {
	return l.kind == m.kind && l.s == m.s && l.bo == m.bo && l.i == m.i && l.f == m.f &&
		l.t.Equal(m.t) && l.g == m.g && bytes.Equal(l.b, m.b)
}

// dateTimeLayout is the service's DateTime text: UTC, 7 fractional digits.
const dateTimeLayout = "2006-01-02T15:04:05.0000000Z"

func (l literal) write(b *strings.Builder) {
	switch l.kind {
	case litString:
		b.WriteByte('\'')
		b.WriteString(strings.ReplaceAll(l.s, "'", "''"))
		b.WriteByte('\'')
	case litBool:
		b.WriteString(strconv.FormatBool(l.bo))
	case litInt32:
		b.WriteString(strconv.FormatInt(l.i, 10))
	case litInt64:
		b.WriteString(strconv.FormatInt(l.i, 10))
		b.WriteByte('L')
	case litDouble:
		b.WriteString(formatDouble(l.f))
	case litDateTime:
		b.WriteString("datetime'")
		b.WriteString(l.t.Format(dateTimeLayout))
		b.WriteByte('\'')
	case litGuid:
		b.WriteString("guid'")
		b.WriteString(formatGUID(l.g))
		b.WriteByte('\'')
	case litBinary:
		b.WriteString("X'")
		b.WriteString(hex.EncodeToString(l.b))
		b.WriteByte('\'')
	}
}

// formatDouble writes f as digits with a decimal point and no exponent
// ("3.0", "-0.5", "100000000000000000000.0"), the only double form both the
// service and Azurite read as Edm.Double; it parses back to the same bits.
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func formatGUID(g [16]byte) string {
	h := hex.EncodeToString(g[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var timeType = reflect.TypeFor[time.Time]()

// literalOf maps a Go value to its OData literal by the value's type
// (kind, for named types): see the package documentation.
func literalOf(prop string, v any) (literal, error) {
	if v == nil {
		return literal{}, filterErr(prop, "nil value: the service cannot filter on null")
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return literal{}, filterErr(prop, fmt.Sprintf("nil %s: the service cannot filter on null", rv.Type()))
		}
		rv = rv.Elem()
	}
	if rv.Type() == timeType || rv.Type().ConvertibleTo(timeType) && rv.Kind() == reflect.Struct {
		return timeLiteral(prop, rv.Convert(timeType).Interface().(time.Time))
	}
	switch rv.Kind() {
	case reflect.String:
		return literal{kind: litString, s: rv.String()}, nil
	case reflect.Bool:
		return literal{kind: litBool, bo: rv.Bool()}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		n := rv.Int()
		if n < math.MinInt32 || n > math.MaxInt32 {
			return literal{}, filterErr(prop, fmt.Sprintf("%s value %d does not fit in Edm.Int32; use int64 for Edm.Int64", rv.Type(), n))
		}
		return literal{kind: litInt32, i: n}, nil
	case reflect.Int64:
		return literal{kind: litInt64, i: rv.Int()}, nil
	case reflect.Uint8, reflect.Uint16:
		return literal{kind: litInt32, i: int64(rv.Uint())}, nil
	case reflect.Uint32, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		n := rv.Uint()
		if n > math.MaxInt64 {
			return literal{}, filterErr(prop, fmt.Sprintf("%s value %d does not fit in Edm.Int64", rv.Type(), n))
		}
		return literal{kind: litInt64, i: int64(n)}, nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return literal{}, filterErr(prop, fmt.Sprintf("%v cannot be written as a filter literal", f))
		}
		return literal{kind: litDouble, f: f}, nil
	case reflect.Array:
		if rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
			var g [16]byte
			reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
			return literal{kind: litGuid, g: g}, nil
		}
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return literal{kind: litBinary, b: bytes.Clone(rv.Bytes())}, nil
		}
	}
	return literal{}, filterErr(prop, fmt.Sprintf("values of type %T have no Table service literal", v))
}

func timeLiteral(prop string, t time.Time) (literal, error) {
	t = t.UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return literal{}, filterErr(prop, fmt.Sprintf("time %v is outside the service's DateTime range (years 1 to 9999)", t))
	}
	return literal{kind: litDateTime, t: t.Truncate(100 * time.Nanosecond)}, nil
}

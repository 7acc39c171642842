package entity

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/keys"
)

// extraProp is a property added by the caller (the Registry's
// discriminator), counted against the limits like any other.
type extraProp struct {
	name  string
	value string
}

// encoder carries the running totals of one entity.
type encoder struct {
	c     *Codec
	typ   reflect.Type // for errors; nil for a dynamic Entity
	size  int
	count int
}

func (c *Codec) structValue(v any, op string) (reflect.Value, error) {
	if v == nil {
		return reflect.Value{}, errType(c.p.typ, "", op+" of nil")
	}
	rv := reflect.ValueOf(v)
	if rv.Type() == c.p.typ {
		return rv, nil
	}
	if rv.Kind() == reflect.Pointer && rv.Type().Elem() == c.p.typ {
		if rv.IsNil() {
			return reflect.Value{}, errType(c.p.typ, "", op+" of a nil *"+c.p.typ.String())
		}
		return rv.Elem(), nil
	}
	return reflect.Value{}, errType(c.p.typ, "", op+" of a "+rv.Type().String()+" with the codec of "+c.p.typ.String())
}

// addressable returns an addressable copy of rv when methods with pointer
// receivers must be called on its fields.
func addressable(rv reflect.Value) reflect.Value {
	if rv.CanAddr() {
		return rv
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	return cp
}

// fieldOf returns the field at idx, or ok=false when an embedded pointer
// on the way is nil.
func fieldOf(rv reflect.Value, idx []int) (reflect.Value, bool) {
	if len(idx) == 1 {
		return rv.Field(idx[0]), true
	}
	for i, x := range idx {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return reflect.Value{}, false
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv, true
}

func (c *Codec) appendStruct(dst []byte, rv reflect.Value, extra *extraProp) ([]byte, error) {
	p := c.p
	if p.hookM {
		var m EntityMarshaler
		if p.hookMPtr {
			m = addressable(rv).Addr().Interface().(EntityMarshaler)
		} else {
			m = rv.Interface().(EntityMarshaler)
		}
		e, err := m.MarshalEntity()
		if err != nil {
			return dst, errCause(p.typ, "", "MarshalEntity failed", err)
		}
		return c.appendEntity(dst, &e, p.typ, extra)
	}
	if p.needAddr {
		rv = addressable(rv)
	}
	start := len(dst)
	pkv, _ := fieldOf(rv, p.pk.index)
	rkv, _ := fieldOf(rv, p.rk.index)
	en := encoder{c: c, typ: p.typ}
	dst, err := en.appendKeys(dst, pkv.String(), rkv.String())
	if err != nil {
		return dst[:start], err
	}
	for _, f := range p.fields {
		fv, ok := fieldOf(rv, f.index)
		if !ok {
			continue
		}
		if dst, err = en.appendField(dst, f, fv); err != nil {
			return dst[:start], err
		}
	}
	if extra != nil {
		if dst, err = en.appendExtra(dst, extra); err != nil {
			return dst[:start], err
		}
	}
	if err := en.finish(); err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

func (en *encoder) appendKeys(dst []byte, pk, rk string) ([]byte, error) {
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return dst, &Error{Type: en.typ, Field: "PartitionKey", Rule: "invalid key", Err: keys.ErrInvalidKey, Cause: err}
	}
	if err := keys.ValidateKey("RowKey", rk); err != nil {
		return dst, &Error{Type: en.typ, Field: "RowKey", Rule: "invalid key", Err: keys.ErrInvalidKey, Cause: err}
	}
	dst = append(dst, `{"PartitionKey":`...)
	dst, pku, _ := appendString(dst, pk)
	dst = append(dst, `,"RowKey":`...)
	dst, rku, _ := appendString(dst, rk)
	en.size = 4 + 2*pku + 2*rku + timestampSize
	return dst, nil
}

func (en *encoder) appendExtra(dst []byte, x *extraProp) ([]byte, error) {
	dst = append(dst, ',')
	dst = strconv.AppendQuote(dst, x.name)
	dst = append(dst, ':')
	dst, units, _ := appendString(dst, x.value)
	en.count++
	en.size += 8 + 2*azrules.UTF16Len(x.name) + 4 + 2*units
	return dst, nil
}

func (en *encoder) finish() error {
	if en.count > MaxProperties {
		return errType(en.typ, "", "has "+strconv.Itoa(en.count)+" custom properties; the Table service allows at most 252 (rule: property count); "+
			"patterns.WideEntities stores an entity of more across several")
	}
	if en.size > MaxEntitySize {
		return errType(en.typ, "", "is "+strconv.Itoa(en.size)+" bytes by the service's size formula; the limit is 1 MiB (1048576 bytes) (rule: entity size); "+
			"keep its largest values in blobs: []byte fields tagged `table:\"Name,blob\"` of a type stored with patterns.LargeEntities")
	}
	return nil
}

func (en *encoder) fail(f *field, rule string, cause error) error {
	return &Error{Type: en.typ, Field: f.goName, Rule: rule, Err: ErrInvalidEntity, Cause: cause}
}

// appendField appends `,` and the property (with its annotation), or
// nothing when the value is absent.
func (en *encoder) appendField(dst []byte, f *field, fv reflect.Value) ([]byte, error) {
	if f.ptr {
		if fv.IsNil() {
			return dst, nil
		}
		fv = fv.Elem()
	}
	if f.omitEmpty && fv.IsZero() {
		return dst, nil
	}
	if f.encrypt {
		return en.appendEncrypted(dst, f, fv)
	}
	var err error
	vsize := 0
	start := len(dst)
	switch f.kind {
	case kString:
		if dst, vsize, err = en.appendStringField(dst, f, fv.String()); err != nil {
			return dst, err
		}
	case kBool:
		dst = append(dst, ',')
		dst = append(dst, f.key...)
		dst = strconv.AppendBool(dst, fv.Bool())
		vsize = 1
	case kInt:
		dst = append(dst, ',')
		if f.edm == EdmInt32 {
			dst = append(dst, f.key...)
			dst = strconv.AppendInt(dst, fv.Int(), 10)
			vsize = 4
		} else {
			dst = append(dst, f.ann...)
			dst = append(dst, f.key...)
			dst = append(dst, '"')
			dst = strconv.AppendInt(dst, fv.Int(), 10)
			dst = append(dst, '"')
			vsize = 8
		}
	case kUint:
		u := fv.Uint()
		dst = append(dst, ',')
		if f.edm == EdmInt32 {
			dst = append(dst, f.key...)
			dst = strconv.AppendUint(dst, u, 10)
			vsize = 4
		} else {
			if u > math.MaxInt64 {
				return dst[:start], en.fail(f, strconv.FormatUint(u, 10)+" overflows Edm.Int64 (rule: Int64 range)", nil)
			}
			dst = append(dst, f.ann...)
			dst = append(dst, f.key...)
			dst = append(dst, '"')
			dst = strconv.AppendUint(dst, u, 10)
			dst = append(dst, '"')
			vsize = 8
		}
	case kFloat:
		dst = append(dst, ',')
		dst = append(dst, f.ann...)
		dst = append(dst, f.key...)
		dst = appendDouble(dst, fv.Float())
		vsize = 8
	case kTime:
		t := *fv.Addr().Interface().(*time.Time) // addressable: see plan.needAddr
		if t.IsZero() {
			return dst, nil // the zero time is "unset": stored as absent
		}
		if err := checkTime(t); err != nil {
			return dst, en.fail(f, err.Error(), nil)
		}
		dst = append(dst, ',')
		dst = append(dst, f.ann...)
		dst = append(dst, f.key...)
		dst = append(dst, '"')
		dst = appendTime(dst, t)
		dst = append(dst, '"')
		vsize = 8
	case kGUID:
		var g [16]byte
		for i := range g {
			g[i] = byte(fv.Index(i).Uint())
		}
		dst = append(dst, ',')
		dst = append(dst, f.ann...)
		dst = append(dst, f.key...)
		dst = append(dst, '"')
		dst = appendGUID(dst, &g)
		dst = append(dst, '"')
		vsize = 16
	case kBinary:
		if fv.IsNil() {
			return dst, nil // nil is absent; an empty slice is stored empty
		}
		b := fv.Bytes()
		if len(b) > MaxBinarySize {
			return dst, en.fail(f, strconv.Itoa(len(b))+" bytes; Binary values are at most 65536 bytes (rule: binary size)"+blobWayOut(f.name), nil)
		}
		dst = append(dst, ',')
		dst = append(dst, f.ann...)
		dst = append(dst, f.key...)
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, b)
		dst = append(dst, '"')
		vsize = 4 + len(b)
	case kText:
		var m encoding.TextMarshaler
		if f.addr {
			m = fv.Addr().Interface().(encoding.TextMarshaler)
		} else {
			m = fv.Interface().(encoding.TextMarshaler)
		}
		text, err := m.MarshalText()
		if err != nil {
			return dst, en.fail(f, "MarshalText failed", err)
		}
		if dst, vsize, err = en.appendStringField(dst, f, string(text)); err != nil {
			return dst, err
		}
	case kJSON:
		switch fv.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			if fv.IsNil() {
				return dst, nil
			}
		}
		text, err := json.Marshal(fv.Interface())
		if err != nil {
			return dst, en.fail(f, "encoding/json failed", err)
		}
		if dst, vsize, err = en.appendStringField(dst, f, string(text)); err != nil {
			return dst, err
		}
	case kHook:
		var m PropertyMarshaler
		if f.addr {
			m = fv.Addr().Interface().(PropertyMarshaler)
		} else {
			m = fv.Interface().(PropertyMarshaler)
		}
		v, err := m.MarshalProperty()
		if err != nil {
			return dst, en.fail(f, "MarshalProperty failed", err)
		}
		if v.Type == "" {
			return dst, nil
		}
		dst = append(dst, ',')
		dst, vsize, err = appendValue(dst, f.name, v)
		if err != nil {
			return dst[:start], en.fail(f, err.Error(), nil)
		}
	}
	en.count++
	en.size += f.nameSize + vsize
	return dst, nil
}

// appendStringField appends `,` and f's property holding s as an
// Edm.String (which needs no annotation), and returns the value's size as
// the entity's size counts it; on a refusal dst is as it was.
func (en *encoder) appendStringField(dst []byte, f *field, s string) ([]byte, int, error) {
	start := len(dst)
	dst = append(dst, ',')
	dst = append(dst, f.key...)
	dst, units, ok := appendString(dst, s)
	if err := checkString(units, ok); err != nil {
		if ok {
			return dst[:start], 0, en.fail(f, err.Error()+blobWayOut(f.name), nil)
		}
		return dst[:start], 0, en.fail(f, err.Error(), nil)
	}
	return dst, 4 + 2*units, nil
}

// blobWayOut is what a refusal of a value too long for a property adds:
// tablekit's way to store it, for the property name (a placeholder when
// empty).
func blobWayOut(name string) string {
	if name == "" {
		name = "Name"
	}
	return "; a longer value goes in a blob: a []byte field tagged `table:\"" + name + ",blob\"` of a type stored with patterns.LargeEntities"
}

func checkString(units int, ok bool) error {
	if !ok {
		return errRule("string is not valid UTF-8 (rule: string encoding)")
	}
	if units > MaxStringUnits {
		return errRule(strconv.Itoa(units) + " UTF-16 code units; String values are at most 32768 (rule: string length)")
	}
	return nil
}

func checkTime(t time.Time) error {
	if y := t.UTC().Year(); y < 1601 || y > 9999 {
		return errRule("DateTime " + t.UTC().Format(time.RFC3339) + " is outside the service's range 1601-01-01 to 9999-12-31 (rule: DateTime range)")
	}
	return nil
}

// appendValue appends a dynamic value, annotated, as property name.
// It returns the value's size by the size formula.
func appendValue(dst []byte, name string, v Value) ([]byte, int, error) {
	if err := v.check(); err != nil {
		return dst, 0, err
	}
	if v.Type != EdmString && v.Type != EdmInt32 && v.Type != EdmBoolean {
		dst = strconv.AppendQuote(dst, name+"@odata.type")
		dst = append(dst, ':', '"')
		dst = append(dst, v.Type...)
		dst = append(dst, '"', ',')
	}
	dst = strconv.AppendQuote(dst, name)
	dst = append(dst, ':')
	return appendBareValue(dst, v)
}

// appendBareValue appends v's JSON value only.
func appendBareValue(dst []byte, v Value) ([]byte, int, error) {
	size := edmSize(v.Type)
	switch x := v.V.(type) {
	case string:
		var units int
		var ok bool
		dst, units, ok = appendString(dst, x)
		if err := checkString(units, ok); err != nil {
			if ok {
				err = errRule(err.Error() + blobWayOut(""))
			}
			return dst, 0, err
		}
		size = 4 + 2*units
	case int32:
		dst = strconv.AppendInt(dst, int64(x), 10)
	case int64:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, x, 10)
		dst = append(dst, '"')
	case float64:
		dst = appendDouble(dst, x)
	case bool:
		dst = strconv.AppendBool(dst, x)
	case time.Time:
		if err := checkTime(x); err != nil {
			return dst, 0, err
		}
		dst = append(dst, '"')
		dst = appendTime(dst, x)
		dst = append(dst, '"')
	case GUID:
		dst = append(dst, '"')
		dst = appendGUID(dst, (*[16]byte)(&x))
		dst = append(dst, '"')
	case []byte:
		if len(x) > MaxBinarySize {
			return dst, 0, errRule(strconv.Itoa(len(x)) + " bytes; Binary values are at most 65536 bytes (rule: binary size)" + blobWayOut(""))
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		dst = append(dst, '"')
		size = 4 + len(x)
	}
	return dst, size, nil
}

// appendEntity writes a dynamic Entity (or what a whole-entity hook
// returned), properties sorted by name so the output is deterministic.
func (c *Codec) appendEntity(dst []byte, e *Entity, typ reflect.Type, extra *extraProp) ([]byte, error) {
	start := len(dst)
	en := encoder{c: c, typ: typ}
	dst, err := en.appendKeys(dst, e.PartitionKey, e.RowKey)
	if err != nil {
		return dst[:start], err
	}
	names := make([]string, 0, len(e.Properties))
	for name := range e.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := checkPropertyName(name); err != nil {
			return dst[:start], &Error{Type: typ, Field: name, Rule: "invalid property name", Err: ErrInvalidEntity, Cause: err}
		}
		if extra != nil && name == extra.name {
			continue
		}
		v := e.Properties[name]
		dst = append(dst, ',')
		var size int
		dst, size, err = appendValue(dst, name, v)
		if err != nil {
			return dst[:start], &Error{Type: typ, Field: name, Rule: err.Error(), Err: ErrInvalidEntity}
		}
		en.count++
		en.size += 8 + 2*azrules.UTF16Len(name) + size
	}
	if extra != nil {
		if dst, err = en.appendExtra(dst, extra); err != nil {
			return dst[:start], err
		}
	}
	if err := en.finish(); err != nil {
		return dst[:start], err
	}
	return append(dst, '}'), nil
}

// appendString appends s as a JSON string and returns its length in UTF-16
// code units, and ok=false if s is not valid UTF-8.
func appendString(dst []byte, s string) ([]byte, int, bool) {
	return appendStringWords(dst, s, true)
}

// appendStringWords is appendString; words skips eight plain bytes at a
// time (tests compare it with the byte-by-byte loop, words false).
func appendStringWords(dst []byte, s string, words bool) ([]byte, int, bool) {
	dst = append(dst, '"')
	units := 0
	ok := true
	last := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while they are printable ASCII other
		// than '"' and '\\': one UTF-16 unit each, copied as they are.
		for words && i+8 <= len(s) {
			w := load64(s, i)
			if w&msb != 0 || special(w) != 0 {
				break
			}
			i += 8
			units += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			units++
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[last:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			last = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			ok = false
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"'), units, ok
}

// load64 is s[i:i+8] as a little-endian word (the compiler makes it one
// load).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// appendDouble writes a Double as the service does: a JSON number, or the
// strings "NaN", "Infinity" and "-Infinity". Integral values keep a ".0"
// so that the text alone already reads as a Double.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, fmt, -1, 64)
	if fmt == 'e' {
		return dst
	}
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// appendTime writes t in UTC as yyyy-mm-ddThh:mm:ss.fffffffZ: seven
// fractional digits, the service's 100 ns precision (finer digits are
// truncated).
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	ticks := t.Nanosecond() / 100
	dst = append(dst,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-',
		byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':',
		byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.')
	var frac [7]byte
	for i := 6; i >= 0; i-- {
		frac[i] = byte('0' + ticks%10)
		ticks /= 10
	}
	dst = append(dst, frac[:]...)
	return append(dst, 'Z')
}

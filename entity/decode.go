package entity

import (
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// decoder holds the state of one Unmarshal, or of the rows of one
// PageReader (which reuses its buffers from row to row).
type decoder struct {
	c       *Codec
	s       scanner
	scratch []byte
	annName []byte // the last `X@odata.type` annotation seen, for hooks
	annType EDMType

	// arena holds the bytes of the string fields a PageReader decodes:
	// each string is a piece of it, and later strings go after the last
	// one, never over it, so the strings of many rows share one
	// allocation of arenaSize bytes (see setString).
	arena []byte
	base  unsafe.Pointer // the address of the struct decoded, for fast fields

	// hints are the member names of the previous object, in order, with
	// what each resolved to: the rows of a page repeat their members in
	// the same order, so a name is matched by one comparison instead of
	// a map lookup. hintCodec is the codec they were resolved by.
	hints     []memberHint
	hintCodec *Codec
	once      bool // one object only: no arena; hints only as learn says
	// learn: once decodes an object whose hints become the codec's (the
	// decoder owns d.hints); without it, once only reads hints, the
	// codec's, which are shared.
	learn bool
}

// reset keeps the decoder's buffers and member names, and drops the rest.
func (d *decoder) reset() decoder {
	// The arena keeps its length: the strings already handed out are
	// still in use.
	return decoder{scratch: d.scratch[:0], annName: d.annName[:0], arena: d.arena, hints: d.hints, hintCodec: d.hintCodec}
}

// memberHint is how one member name of an object resolved.
type memberHint struct {
	name string
	key  string // name + `":`, the text after the member's opening quote up to its value
	// member is, for an ignored member whose value was a string (the
	// annotations of a T without property hooks), the whole member after
	// its opening quote through the value's closing quote, as the object
	// the hint was made from had it: a row with the same text there skips
	// the member with one comparison.
	member string
	f      *field // the field it decodes into; nil when ann or ignored
	ann    bool   // an `X@odata.type` annotation the decoder reads
	// A key of at most 16 bytes is compared as two little-endian words:
	// the text's words masked by m0, m1 equal k0, k1 (short is false
	// for a longer key).
	k0, k1, m0, m1 uint64
	short          bool
}

// setKey sets h's name and key, and the words a short key is compared by.
func (h *memberHint) setKey(name []byte) {
	h.name, h.key = string(name), string(name)+`":`
	h.k0, h.k1, h.m0, h.m1, h.short = 0, 0, 0, 0, len(h.key) <= 16
	if h.short {
		var buf, mask [16]byte
		copy(buf[:], h.key)
		for i := range len(h.key) {
			mask[i] = 0xff
		}
		h.k0, h.k1 = binary.LittleEndian.Uint64(buf[:]), binary.LittleEndian.Uint64(buf[8:])
		h.m0, h.m1 = binary.LittleEndian.Uint64(mask[:]), binary.LittleEndian.Uint64(mask[8:])
	}
}

func (d *decoder) syntax(err error) error {
	return &Error{Type: d.c.p.typ, Rule: "cannot decode the entity", Err: ErrInvalidEntity, Cause: err}
}

func (c *Codec) decodeStruct(data []byte, rv reflect.Value) error {
	d := decoder{c: c, s: scanner{b: data}, once: true}
	if h := c.hints.Load(); h != nil {
		d.hints, d.hintCodec = *h, c
	} else if c.unmarsh1.Swap(true) {
		d.learn = true
	}
	if err := d.object(rv); err != nil {
		return err
	}
	if err := d.s.end(); err != nil {
		return d.syntax(err)
	}
	if d.learn && len(d.hints) > 0 {
		h := d.hints[:len(d.hints):len(d.hints)]
		c.hints.CompareAndSwap(nil, &h)
	}
	return nil
}

// object decodes the JSON object at the scanner's position into rv and
// leaves the scanner just after it.
func (d *decoder) object(rv reflect.Value) error {
	if d.hintCodec != d.c {
		d.hints, d.hintCodec = d.hints[:0], d.c
	}
	// An annotation belongs to its own object's property: a row without
	// one must not see the previous row's.
	d.annName = d.annName[:0]
	return d.members(rv)
}

// The arena of a PageReader's strings: a string of up to arenaMaxString
// bytes goes into the current arena of arenaSize bytes, a longer one gets
// an allocation of its own. A page's strings then cost one allocation per
// arenaSize bytes instead of one per row, and a string a caller keeps
// keeps at most arenaSize bytes of other strings alive.
const (
	arenaSize      = 4 << 10
	arenaMaxString = 512
)

// setString sets *dst to the JSON string raw (its text between the
// quotes, unescaped when esc).
func (d *decoder) setString(dst *string, raw []byte, esc bool) {
	switch {
	case len(raw) == 0:
		*dst = ""
		return
	case d.once || len(raw) > arenaMaxString:
		*dst = string(d.str(raw, esc))
		return
	}
	if cap(d.arena)-len(d.arena) < len(raw) {
		d.arena = make([]byte, 0, arenaSize)
	}
	off := len(d.arena)
	if esc {
		// Unescaped text is never longer than its escaped form, so it
		// fits; if it did not, append would move to a new array and the
		// strings already set would keep the old one.
		d.arena = unescape(d.arena, raw)
	} else {
		d.arena = append(d.arena, raw...)
	}
	// The bytes at off and after are never written again: later strings
	// are appended after them.
	*dst = unsafe.String(unsafe.SliceData(d.arena[off:]), len(d.arena)-off)
}

// resolve is what the member name key of an object decodes into: a field
// of T (the system properties included), an annotation, or nothing.
func (d *decoder) resolve(key []byte) memberHint {
	p := d.c.p
	if f := p.byName[string(key)]; f != nil {
		return memberHint{f: f}
	}
	switch string(key) {
	case "PartitionKey":
		return memberHint{f: p.pk}
	case "RowKey":
		return memberHint{f: p.rk}
	case "Timestamp":
		return memberHint{f: p.ts}
	case "odata.etag":
		return memberHint{f: p.etag}
	}
	const suffix = "@odata.type"
	return memberHint{ann: p.propHooks && len(key) > len(suffix) && string(key[len(key)-len(suffix):]) == suffix}
}

// hint resolves the j-th member name of the object, by the previous
// object's j-th name when they are the same.
func (d *decoder) hint(j int, key []byte, esc bool) memberHint {
	if !esc && j < len(d.hints) && d.hints[j].name == string(key) {
		return d.hints[j]
	}
	h := d.resolve(key)
	if !esc && (!d.once || d.learn) {
		if j < len(d.hints) {
			h.setKey(key)
			d.hints[j] = h
		} else if j == len(d.hints) && j < maxHints {
			h.setKey(key)
			d.hints = append(d.hints, h)
		}
	}
	return h
}

// hinted consumes the member at the scanner (its opening quote is at the
// scanner's position) when it starts as the previous object's j-th did:
// its name and colon (hit), or, for an ignored member with the same text,
// the whole member (skip).
func (d *decoder) hinted(j int) (h *memberHint, hit, skip bool) {
	if j >= len(d.hints) {
		return nil, false, false
	}
	h = &d.hints[j]
	b := d.s.b[d.s.i+1:]
	if m := h.member; m != "" && len(b) >= len(m) && string(b[:len(m)]) == m {
		d.s.i += 1 + len(m)
		return h, true, true
	}
	if h.short && len(b) >= 16 {
		if binary.LittleEndian.Uint64(b)&h.m0 == h.k0 && binary.LittleEndian.Uint64(b[8:])&h.m1 == h.k1 {
			d.s.i += 1 + len(h.key)
			return h, true, false
		}
		return nil, false, false
	}
	if k := h.key; len(b) >= len(k) && string(b[:len(k)]) == k {
		d.s.i += 1 + len(k)
		return h, true, false
	}
	return nil, false, false
}

// maxHints bounds the member names remembered (an entity has at most 255
// properties, each with an annotation, plus the system ones).
const maxHints = 520

// maxMemberHint bounds the text of an ignored member remembered whole
// (an annotation such as `"Salary@odata.type":"Edm.Int64"` is 32 bytes).
const maxMemberHint = 128

func (d *decoder) members(rv reflect.Value) error {
	d.base = nil
	if rv.CanAddr() {
		d.base = rv.Addr().UnsafePointer()
	}
	defer func() { d.base = nil }()
	s := &d.s
	if err := s.expect('{'); err != nil {
		return d.syntax(err)
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	// missed holds the hint of a name the previous row did not have at
	// the same place; h points to it or into d.hints (a hint is some
	// hundred bytes: not copied per member).
	var missed memberHint
	for j := 0; ; j++ {
		if s.peek() != '"' {
			return d.syntax(s.fail("want a property name"))
		}
		start := s.i
		var key []byte // the name, when it was scanned (h.name holds a hinted one)
		h, hit, skip := d.hinted(j)
		if !hit {
			// Not the previous row's name here, its closing quote and the
			// colon (a hinted name holds no quote or backslash), nor the
			// previous row's whole member, ignored.
			k, kesc, err := s.str()
			if err != nil {
				return d.syntax(err)
			}
			if kesc {
				k = unescape(nil, k)
			}
			missed = d.hint(j, k, kesc)
			key, h = k, &missed
			if err := s.expect(':'); err != nil {
				return d.syntax(err)
			}
		}
		if !skip && h.f != nil && h.f.fast && d.base != nil {
			switch h.f.kind {
			case kTime:
				skip = d.canonicalTimeAt(h.f)
			case kString:
				skip = !d.once && d.stringAt((*string)(unsafe.Add(d.base, h.f.offset)))
			}
		}
		if !skip {
			kind, raw, esc, err := s.value()
			if err != nil {
				return d.syntax(err)
			}
			switch {
			case h.f != nil:
				if err := d.field(h.f, rv, kind, raw, esc); err != nil {
					return err
				}
			case h.ann:
				if kind == jString {
					const suffix = "@odata.type"
					if key != nil {
						d.annName = append(d.annName[:0], key[:len(key)-len(suffix)]...)
					} else {
						d.annName = append(d.annName[:0], h.name[:len(h.name)-len(suffix)]...)
					}
					d.annType = edmTypeOf(raw)
				}
			case kind == jString && key != nil && (!d.once || d.learn) && s.i-start <= maxMemberHint && j < len(d.hints) && d.hints[j].name == string(key) && d.hints[j].member == "":
				// An ignored member whose hint was just made: remember
				// its text (once per hint, not per row).
				d.hints[j].member = string(s.b[start+1 : s.i])
			}
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return d.syntax(s.fail("want ',' or '}'"))
		}
	}
}

// canonicalTimeAt decodes the DateTime at the scanner into the fast
// field f when it is a string in the service's form (which holds neither
// a quote nor a backslash, so scanning it as a string first would find
// nothing), and consumes it; false leaves the scanner where it was.
func (d *decoder) canonicalTimeAt(f *field) bool {
	b, i := d.s.b, d.s.i
	if i+29 >= len(b) || b[i] != '"' || b[i+29] != '"' {
		return false
	}
	t, ok := canonicalTime(b[i+1 : i+29])
	if !ok {
		return false
	}
	*(*time.Time)(unsafe.Add(d.base, f.offset)) = t
	d.s.i = i + 30
	return true
}

// stringAt decodes the string at the scanner into the fast field *p,
// scanning it and copying it into the arena in one pass, eight bytes at
// a time, when it is a string with no escape that fits in the arena's
// room (and in arenaMaxString), and consumes it; false leaves the
// scanner where it was, for setString. Bytes past the string's end may
// be written in the arena's room: no string holds them yet.
func (d *decoder) stringAt(p *string) bool {
	b, i := d.s.b, d.s.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	i++
	off := len(d.arena)
	dst := d.arena[off:cap(d.arena)]
	n := 0
	for i+8 <= len(b) && n+8 <= len(dst) {
		w := binary.LittleEndian.Uint64(b[i:])
		binary.LittleEndian.PutUint64(dst[n:], w)
		if m := special(w); m != 0 {
			k := bits.TrailingZeros64(m) >> 3
			i, n = i+k, n+k
			goto end
		}
		i, n = i+8, n+8
	}
	for ; i < len(b) && n < len(dst); i, n = i+1, n+1 {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		dst[n] = c
	}
end:
	if i >= len(b) || b[i] != '"' || n > arenaMaxString {
		return false // an escape, a control character, no room, or long
	}
	if n == 0 {
		*p = ""
	} else {
		d.arena = d.arena[:off+n]
		*p = unsafe.String(&d.arena[off], n)
	}
	d.s.i = i + 1
	return true
}

// edmTypeOf is the EDM type named by an annotation's value, without an
// allocation for the types the service knows.
func edmTypeOf(raw []byte) EDMType {
	for _, t := range [...]EDMType{EdmInt64, EdmDateTime, EdmDouble, EdmGuid, EdmBinary, EdmString, EdmInt32, EdmBoolean} {
		if string(t) == string(raw) {
			return t
		}
	}
	return EDMType(raw)
}

func fieldAlloc(rv reflect.Value, idx []int) reflect.Value {
	if len(idx) == 1 {
		return rv.Field(idx[0])
	}
	for i, x := range idx {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv
}

func (d *decoder) fail(f *field, rule string, cause error) error {
	return &Error{Type: d.c.p.typ, Field: f.goName, Rule: rule, Err: ErrInvalidEntity, Cause: cause}
}

// str returns the decoded bytes of a string value; they are valid until the
// next call.
func (d *decoder) str(raw []byte, esc bool) []byte {
	if !esc {
		return raw
	}
	d.scratch = unescape(d.scratch[:0], raw)
	return d.scratch
}

func (d *decoder) field(f *field, rv reflect.Value, kind byte, raw []byte, esc bool) error {
	if kind == jNull {
		return nil // absent: the field keeps its zero value
	}
	if f.fast && d.base != nil {
		return d.fastValue(f, unsafe.Add(d.base, f.offset), kind, raw, esc)
	}
	fv := fieldAlloc(rv, f.index)
	if f.ptr {
		nv := reflect.New(f.elem)
		if err := d.value(f, nv.Elem(), kind, raw, esc); err != nil {
			return err
		}
		fv.Set(nv)
		return nil
	}
	return d.value(f, fv, kind, raw, esc)
}

// fastValue is value for a fast field, written at p: the same checks and
// errors, without reflect.
func (d *decoder) fastValue(f *field, p unsafe.Pointer, kind byte, raw []byte, esc bool) error {
	switch f.kind {
	case kString:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		d.setString((*string)(p), raw, esc)
	case kBool:
		if kind != jTrue && kind != jFalse {
			return d.mismatch(f, kind)
		}
		*(*bool)(p) = kind == jTrue
	case kInt, kUint:
		n, err := d.integer(f, kind, raw, esc)
		if err != nil {
			return err
		}
		if f.kind == kInt && f.bits < 64 && (n < -1<<(f.bits-1) || n > 1<<(f.bits-1)-1) ||
			f.kind == kUint && (n < 0 || f.bits < 64 && uint64(n) > 1<<f.bits-1) {
			return d.overflow(f, n)
		}
		// Two's complement: the low bits are the value for either kind.
		switch f.bits {
		case 8:
			*(*uint8)(p) = uint8(n)
		case 16:
			*(*uint16)(p) = uint16(n)
		case 32:
			*(*uint32)(p) = uint32(n)
		default:
			*(*uint64)(p) = uint64(n)
		}
	case kFloat:
		x, err := parseDouble(kind, d.str(raw, esc))
		if err != nil {
			return d.fail(f, "cannot decode into "+f.elem.String(), err)
		}
		if f.bits == 32 {
			if !math.IsInf(x, 0) && math.Abs(x) > math.MaxFloat32 {
				return d.fail(f, "value "+strconv.FormatFloat(x, 'g', -1, 64)+" overflows float32", nil)
			}
			*(*float32)(p) = float32(x)
		} else {
			*(*float64)(p) = x
		}
	case kTime:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		t, err := parseTime(d.str(raw, esc))
		if err != nil {
			return d.fail(f, "cannot decode DateTime", err)
		}
		*(*time.Time)(p) = t
	}
	return nil
}

// integer is the value of an integer field's JSON number or string.
func (d *decoder) integer(f *field, kind byte, raw []byte, esc bool) (int64, error) {
	if kind != jNumber && kind != jString {
		return 0, d.mismatch(f, kind)
	}
	text := d.str(raw, esc)
	n, err := parseInt(text)
	if err != nil {
		return 0, d.fail(f, "cannot decode "+strconv.Quote(string(text))+" into "+f.elem.String(), err)
	}
	return n, nil
}

func (d *decoder) overflow(f *field, n int64) error {
	return d.fail(f, "value "+strconv.FormatInt(n, 10)+" overflows "+f.elem.String(), nil)
}

func kindName(kind byte) string {
	switch kind {
	case jString:
		return "a JSON string"
	case jNumber:
		return "a JSON number"
	case jTrue, jFalse:
		return "a JSON boolean"
	case jObject:
		return "a JSON object"
	case jArray:
		return "a JSON array"
	}
	return "JSON null"
}

func (d *decoder) mismatch(f *field, kind byte) error {
	return d.fail(f, "cannot decode "+kindName(kind)+" into "+f.elem.String(), nil)
}

// value decodes into fv (addressable, of type f.elem) by the field's kind:
// the destination decides, the wire is evidence.
func (d *decoder) value(f *field, fv reflect.Value, kind byte, raw []byte, esc bool) error {
	if f.encrypt {
		return d.encrypted(f, fv, kind, raw, esc)
	}
	switch f.kind {
	case kString, kBool, kInt, kUint, kFloat, kTime:
		// Fields, pointer targets and decrypted values are all
		// addressable.
		if !fv.CanAddr() {
			return d.fail(f, "cannot decode into an unaddressable value", nil)
		}
		return d.fastValue(f, fv.Addr().UnsafePointer(), kind, raw, esc)
	case kGUID:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		var g GUID
		if !parseGUIDBytes(&g, d.str(raw, esc)) {
			return d.fail(f, "cannot decode Guid", errGUIDSyntax)
		}
		if fv.CanAddr() {
			*(*[16]byte)(fv.Addr().UnsafePointer()) = g // kGUID is a [16]byte kind
		} else {
			for i := range g {
				fv.Index(i).SetUint(uint64(g[i]))
			}
		}
	case kBinary:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		b, err := base64.StdEncoding.AppendDecode(make([]byte, 0, base64.StdEncoding.DecodedLen(len(raw))), d.str(raw, esc))
		if err != nil {
			return d.fail(f, "cannot decode Binary (base64)", err)
		}
		fv.SetBytes(b)
	case kText:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		if err := fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(d.str(raw, esc)); err != nil {
			return d.fail(f, "UnmarshalText failed", err)
		}
	case kJSON:
		if kind != jString {
			return d.mismatch(f, kind)
		}
		if err := json.Unmarshal(d.str(raw, esc), fv.Addr().Interface()); err != nil {
			return d.fail(f, "cannot decode the JSON text of the property", err)
		}
	case kHook:
		ann := EDMType("")
		if string(d.annName) == f.name {
			ann = d.annType
		}
		v, err := wireValue(ann, kind, raw, esc)
		if err != nil {
			return d.fail(f, "cannot decode the property", err)
		}
		if err := fv.Addr().Interface().(PropertyUnmarshaler).UnmarshalProperty(v); err != nil {
			return d.fail(f, "UnmarshalProperty failed", err)
		}
	}
	return nil
}

func (d *decoder) encrypted(f *field, fv reflect.Value, kind byte, raw []byte, esc bool) error {
	if kind != jString {
		return d.mismatch(f, kind)
	}
	sealed, err := base64.StdEncoding.AppendDecode(nil, d.str(raw, esc))
	if err != nil {
		return d.fail(f, "cannot decode the encrypted value (base64)", err)
	}
	edm, text, err := d.c.open(f.name, sealed)
	if err != nil {
		return &Error{Type: d.c.p.typ, Field: f.goName, Rule: "cannot decrypt", Err: ErrDecrypt, Cause: err}
	}
	inner := scanner{b: text}
	kind, raw, esc, err = inner.value()
	if err == nil {
		err = inner.end()
	}
	if err != nil {
		return d.fail(f, "cannot decode the decrypted value", err)
	}
	plain := *f
	plain.encrypt = false
	saved := d.annName
	d.annName, d.annType = []byte(f.name), edm
	err = d.value(&plain, fv, kind, raw, esc)
	d.annName = saved[:0]
	return err
}

var errNotInteger = errors.New("not an integer")

// parseInt parses a decimal integer. A number written with a fraction or
// exponent is accepted when its value is integral (3.0 -> 3).
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errNotInteger
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i = 1
		if len(b) == 1 {
			return 0, errNotInteger
		}
	}
	var n uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return parseIntegral(b)
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, strconv.ErrRange
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, strconv.ErrRange
		}
		return -int64(n), nil
	}
	if n > math.MaxInt64 {
		return 0, strconv.ErrRange
	}
	return int64(n), nil
}

func parseIntegral(b []byte) (int64, error) {
	s := scanner{b: b}
	if raw, err := s.number(); err != nil || len(raw) != len(b) {
		return 0, errNotInteger
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil || x != math.Trunc(x) {
		return 0, errNotInteger
	}
	if x < -(1<<63) || x >= 1<<63 {
		return 0, strconv.ErrRange
	}
	return int64(x), nil
}

var errNotDouble = errors.New("not a Double")

// parseDouble parses a Double: a JSON number, or one of the strings the
// service writes for special values ("NaN", "Infinity", "-Infinity").
func parseDouble(kind byte, b []byte) (float64, error) {
	switch kind {
	case jNumber:
	case jString:
		switch string(b) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity", "INF":
			return math.Inf(1), nil
		case "-Infinity", "-INF":
			return math.Inf(-1), nil
		}
		s := scanner{b: b}
		if raw, err := s.number(); err != nil || len(raw) != len(b) {
			return 0, errNotDouble
		}
	default:
		return 0, errNotDouble
	}
	if len(b) == 0 {
		return 0, errNotDouble
	}
	if x, ok := exactDecimal(b); ok {
		return x, nil
	}
	// The text was validated as a JSON number; parse it in place.
	x, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil {
		return 0, errors.New("number " + string(b) + " is out of the range of a Double")
	}
	return x, nil
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactDecimal parses a JSON number of the form -?digits(.digits)? with
// at most 15 digits, the form most Doubles travel in: its digits make an
// integer below 2^53 and the divisor is a power of ten a float64 holds
// exactly, so one division, correctly rounded by IEEE 754, gives what
// strconv.ParseFloat gives. Anything else (an exponent, more digits) is
// not ok, for strconv.
func exactDecimal(b []byte) (float64, bool) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i = 1
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return 0, false
	}
	var m uint64
	digits, frac := 0, -1 // frac: digits after the point, -1 before it
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac == 0 {
		return 0, false
	}
	x := float64(m)
	if frac > 0 {
		x /= pow10[frac]
	}
	if neg {
		x = -x
	}
	return x, true
}

var errTimeSyntax = errors.New("want yyyy-mm-ddThh:mm:ss[.fffffff]Z")

// parseTime parses an Edm.DateTime: RFC 3339 with up to 7 (or more,
// truncated to 100 ns) fractional digits, returned in UTC.
func parseTime(b []byte) (time.Time, error) {
	if t, ok := canonicalTime(b); ok {
		return t, nil
	}
	return parseTimeGeneral(b)
}

// parseTimeGeneral is parseTime for any text.
func parseTimeGeneral(b []byte) (time.Time, error) {
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	if len(b) >= 20 && b[4] == '-' && b[7] == '-' && (b[10] == 'T' || b[10] == 't') && b[13] == ':' && b[16] == ':' && (b[len(b)-1] == 'Z' || b[len(b)-1] == 'z') {
		y, mo, dd := num(b[0:4]), num(b[5:7]), num(b[8:10])
		h, mi, s := num(b[11:13]), num(b[14:16]), num(b[17:19])
		ns := 0
		rest := b[19 : len(b)-1]
		ok := y >= 0 && mo >= 1 && mo <= 12 && dd >= 1 && h >= 0 && h < 24 && mi >= 0 && mi < 60 && s >= 0 && s < 60
		if len(rest) > 0 {
			if rest[0] != '.' || len(rest) == 1 {
				ok = false
			}
			for i, c := range rest[min(1, len(rest)):] {
				if c < '0' || c > '9' {
					ok = false
					break
				}
				if i < 9 {
					ns = ns*10 + int(c-'0')
				}
			}
			for i := len(rest) - 1; i < 9; i++ {
				ns *= 10
			}
		}
		if ok && dd <= daysIn(mo, y) {
			sec := (daysFromCivil(y, mo, dd)*24+int64(h))*3600 + int64(mi)*60 + int64(s)
			return time.Unix(sec, int64(ns)).UTC(), nil
		}
		return time.Time{}, errTimeSyntax
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, errTimeSyntax
	}
	return t.UTC(), nil
}

// canonicalTime parses the form the service writes every DateTime in,
// yyyy-mm-ddThh:mm:ss.fffffffZ, without loops: ok is false for any other
// text (parseTime's general path then decides). A byte c is '0' to '9'
// exactly when uint(c-'0')+6, c-'0' wrapping as a byte, is below 16: one
// OR collects them all.
func canonicalTime(b []byte) (time.Time, bool) {
	if len(b) != 28 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[27] != 'Z' {
		return time.Time{}, false
	}
	var bad uint
	dig := func(c byte) int {
		d := uint(c - '0') // a byte: below '0' wraps to 208 and above
		bad |= d + 6
		return int(d)
	}
	y := dig(b[0])*1000 + dig(b[1])*100 + dig(b[2])*10 + dig(b[3])
	mo := dig(b[5])*10 + dig(b[6])
	dd := dig(b[8])*10 + dig(b[9])
	h := dig(b[11])*10 + dig(b[12])
	mi := dig(b[14])*10 + dig(b[15])
	s := dig(b[17])*10 + dig(b[18])
	f := dig(b[20])*1000000 + dig(b[21])*100000 + dig(b[22])*10000 + dig(b[23])*1000 + dig(b[24])*100 + dig(b[25])*10 + dig(b[26])
	if bad >= 16 || mo < 1 || mo > 12 || dd < 1 || dd > daysIn(mo, y) || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, false
	}
	sec := (daysFromCivil(y, mo, dd)*24+int64(h))*3600 + int64(mi)*60 + int64(s)
	return time.Unix(sec, int64(f)*100).UTC(), true
}

// daysIn is the number of days of month mo (1 to 12) of year y.
func daysIn(mo, y int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-mo-d in the
// proleptic Gregorian calendar (0 <= y <= 9999, 1 <= mo <= 12), without
// time.Date's generality: H. Hinnant's days_from_civil in unsigned
// arithmetic (the year counted from 400 BC, so that it never goes below
// zero), with the day of the year a month starts on from a table.
func daysFromCivil(y, mo, d int) int64 {
	yy := uint(y) + 400
	if mo <= 2 {
		yy--
	}
	era := yy / 400
	yoe := yy - era*400
	doe := yoe*365 + yoe/4 - yoe/100 + marchDays[mo&15] + uint(d) - 1
	return int64(era)*146097 + int64(doe) - 719468 - 146097
}

// marchDays is the day of a year starting on March 1 that month mo
// starts on (1 to 12; the rest unused).
var marchDays = [16]uint{1: 306, 2: 337, 3: 0, 4: 31, 5: 61, 6: 92, 7: 122, 8: 153, 9: 184, 10: 214, 11: 245, 12: 275}

// wireValue types a JSON value: by its annotation when there is one, else
// as the service does (string -> String, integer -> Int32 or Int64 when it
// does not fit, other numbers -> Double, true/false -> Boolean).
func wireValue(ann EDMType, kind byte, raw []byte, esc bool) (Value, error) {
	text := raw
	if esc {
		text = unescape(nil, raw)
	}
	bad := func() (Value, error) {
		if ann == "" {
			return Value{}, errors.New("unsupported value: " + kindName(kind))
		}
		return Value{}, errors.New("cannot read " + kindName(kind) + " as " + string(ann))
	}
	switch ann {
	case "":
		switch kind {
		case jString:
			return String(string(text)), nil
		case jTrue, jFalse:
			return Bool(kind == jTrue), nil
		case jNumber:
			integral := true
			for _, c := range text {
				if c == '.' || c == 'e' || c == 'E' {
					integral = false
				}
			}
			if integral {
				if n, err := parseInt(text); err == nil {
					if n >= math.MinInt32 && n <= math.MaxInt32 {
						return Int32(int32(n)), nil
					}
					return Int64(n), nil
				}
			}
			x, err := parseDouble(kind, text)
			if err != nil {
				return Value{}, err
			}
			return Double(x), nil
		}
		return bad()
	case EdmString:
		if kind != jString {
			return bad()
		}
		return String(string(text)), nil
	case EdmBoolean:
		if kind != jTrue && kind != jFalse {
			return bad()
		}
		return Bool(kind == jTrue), nil
	case EdmInt32, EdmInt64:
		if kind != jNumber && kind != jString {
			return bad()
		}
		n, err := parseInt(text)
		if err != nil {
			return Value{}, err
		}
		if ann == EdmInt64 {
			return Int64(n), nil
		}
		if n < math.MinInt32 || n > math.MaxInt32 {
			return Value{}, errors.New("value " + strconv.FormatInt(n, 10) + " overflows Edm.Int32")
		}
		return Int32(int32(n)), nil
	case EdmDouble:
		x, err := parseDouble(kind, text)
		if err != nil {
			return Value{}, err
		}
		return Double(x), nil
	case EdmDateTime:
		if kind != jString {
			return bad()
		}
		t, err := parseTime(text)
		if err != nil {
			return Value{}, err
		}
		return Value{EdmDateTime, t}, nil
	case EdmGuid:
		if kind != jString {
			return bad()
		}
		var g GUID
		if !parseGUIDBytes(&g, text) {
			return Value{}, errGUIDSyntax
		}
		return Guid(g), nil
	case EdmBinary:
		if kind != jString {
			return bad()
		}
		b, err := base64.StdEncoding.AppendDecode([]byte{}, text)
		if err != nil {
			return Value{}, err
		}
		return Value{EdmBinary, b}, nil
	}
	return Value{}, errors.New("unknown annotation " + strconv.Quote(string(ann)))
}

package keys

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Template builds and parses compound keys of one fixed shape from the
// fields of a struct type T. It serves the guide's compound key pattern:
// with
//
//	type Review struct { ID int; Year int }
//	t, err := keys.NewTemplate[Review]("empid_{ID:6}_{Year}")
//
// t.Key(Review{ID: 123, Year: 2012}) is "empid_000123_2012" and t.Parse of
// that key gives the Review back.
//
// The pattern is a compound key (see Compound) whose parts are each either
// literal text or one placeholder: {Field} or, for integer fields,
// {Field:width}. Field names an exported field of T (promoted fields
// included) of a string, signed or unsigned integer kind. Strings are
// escaped as Compound parts; integers with a width are written by PadInt or
// PadUint (and a value too wide for it is an error, since it would sort out
// of order); integers without one in plain decimal. Literal parts are
// matched exactly by Parse.
//
// A Template is immutable and safe for concurrent use.
type Template[T any] struct {
	c    Compound
	src  string
	segs []tmplSeg
}

type tmplSeg struct {
	lit   string // for literal parts (field == "")
	field string
	index []int
	kind  reflect.Kind
	width int // 0: unpadded
}

// NewTemplate parses pattern for T with the default separator '_'. Errors
// (a malformed placeholder, an unknown or unsupported field) wrap
// ErrInvalidKey and name the field.
func NewTemplate[T any](pattern string) (*Template[T], error) {
	return NewTemplateWith[T](Compound{}, pattern)
}

// NewTemplateWith is NewTemplate with the separator of c.
func NewTemplateWith[T any](c Compound, pattern string) (*Template[T], error) {
	typ := reflect.TypeFor[T]()
	bad := func(rule string) error { return &KeyError{Key: "key template " + strconv.Quote(pattern), Rule: rule} }
	if typ.Kind() != reflect.Struct {
		return nil, bad(fmt.Sprintf("type %v is not a struct", typ))
	}
	t := &Template[T]{c: c, src: pattern}
	for _, part := range strings.Split(pattern, string(c.Separator())) {
		if !strings.ContainsAny(part, "{}") {
			t.segs = append(t.segs, tmplSeg{lit: part})
			continue
		}
		if len(part) < 3 || part[0] != '{' || part[len(part)-1] != '}' || strings.ContainsAny(part[1:len(part)-1], "{}") {
			return nil, bad(fmt.Sprintf("part %q must be literal text or exactly one {Field} or {Field:width}", part))
		}
		name, w, hasWidth := strings.Cut(part[1:len(part)-1], ":")
		sf, ok := typ.FieldByName(name)
		if !ok || !sf.IsExported() {
			return nil, bad(fmt.Sprintf("%v has no exported field %s", typ, name))
		}
		seg := tmplSeg{field: name, index: sf.Index, kind: sf.Type.Kind()}
		isInt, isUint := intKind(seg.kind), uintKind(seg.kind)
		if !isInt && !isUint && seg.kind != reflect.String {
			return nil, bad(fmt.Sprintf("field %s has type %v; want a string or integer kind", name, sf.Type))
		}
		if hasWidth {
			n, err := strconv.Atoi(w)
			if err != nil || n < 1 || n > 20 {
				return nil, bad(fmt.Sprintf("field %s: width %q is not a number from 1 to 20", name, w))
			}
			if !isInt && !isUint {
				return nil, bad(fmt.Sprintf("field %s: only integer fields take a width", name))
			}
			seg.width = n
		}
		t.segs = append(t.segs, seg)
	}
	return t, nil
}

func intKind(k reflect.Kind) bool {
	return k == reflect.Int || k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64
}

func uintKind(k reflect.Kind) bool {
	return k == reflect.Uint || k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64 || k == reflect.Uintptr
}

// String returns the pattern.
func (t *Template[T]) String() string { return t.src }

// Parts returns the number of parts a key of this template has.
func (t *Template[T]) Parts() int { return len(t.segs) }

// Key builds the key of v. It returns an error wrapping ErrInvalidKey when
// an integer does not fit its width or the key is not a valid key (see
// ValidateKey).
func (t *Template[T]) Key(v T) (string, error) {
	s, err := t.build(v, len(t.segs))
	if err != nil {
		return "", err
	}
	if err := ValidateKey("key from template "+strconv.Quote(t.src), s); err != nil {
		return "", err
	}
	return s, nil
}

// Prefix returns the encoding of the first n parts of v's key followed by
// the separator: every key of this template whose first n parts are v's
// starts with it, so RK().Prefix(prefix) selects them. With the guide's
// "empid_{ID:6}_{Year}", Prefix(Review{ID: 123}, 2) is "empid_000123_",
// all the reviews of employee 123. n must be from 1 to Parts()-1.
func (t *Template[T]) Prefix(v T, n int) (string, error) {
	if n < 1 || n >= len(t.segs) {
		return "", &KeyError{Key: "key template " + strconv.Quote(t.src), Rule: fmt.Sprintf("prefix of %d parts: want 1 to %d", n, len(t.segs)-1)}
	}
	s, err := t.build(v, n)
	if err != nil {
		return "", err
	}
	return s + string(t.c.Separator()), nil
}

func (t *Template[T]) build(v T, n int) (string, error) {
	rv := reflect.ValueOf(&v).Elem()
	parts := make([]string, 0, n)
	for _, seg := range t.segs[:n] {
		if seg.field == "" {
			parts = append(parts, seg.lit)
			continue
		}
		f, err := rv.FieldByIndexErr(seg.index)
		if err != nil {
			return "", &KeyError{Key: "key template " + strconv.Quote(t.src), Rule: fmt.Sprintf("field %s: %v", seg.field, err)}
		}
		var s string
		switch {
		case seg.kind == reflect.String:
			s = f.String()
		case intKind(seg.kind) && seg.width > 0:
			s = PadInt(f.Int(), seg.width)
			if len(strings.TrimPrefix(s, "-")) != seg.width {
				return "", &KeyError{Key: "key template " + strconv.Quote(t.src), Rule: fmt.Sprintf("field %s: %d does not fit in %d digits", seg.field, f.Int(), seg.width)}
			}
		case intKind(seg.kind):
			s = strconv.FormatInt(f.Int(), 10)
		case seg.width > 0:
			s = PadUint(f.Uint(), seg.width)
			if len(s) != seg.width {
				return "", &KeyError{Key: "key template " + strconv.Quote(t.src), Rule: fmt.Sprintf("field %s: %d does not fit in %d digits", seg.field, f.Uint(), seg.width)}
			}
		default:
			s = strconv.FormatUint(f.Uint(), 10)
		}
		parts = append(parts, s)
	}
	return t.c.Join(parts...), nil
}

// Parse reads a key built by Key back into a T. It returns an error
// wrapping ErrInvalidKey, naming the part, when the key does not have the
// template's shape: a different number of parts, a literal that differs,
// a number that is not written as Key writes it or does not fit the field.
func (t *Template[T]) Parse(key string) (T, error) {
	var v T
	parts, err := t.c.SplitN(key, len(t.segs))
	if err != nil {
		return v, err
	}
	rv := reflect.ValueOf(&v).Elem()
	for i, seg := range t.segs {
		p := parts[i]
		bad := func(rule string) (T, error) {
			var zero T
			return zero, &KeyError{Key: "key " + strconv.Quote(key), Rule: fmt.Sprintf("part %d (%s): %s", i, t.segName(i), rule)}
		}
		if seg.field == "" {
			if p != seg.lit {
				return bad(fmt.Sprintf("%q is not %q", p, seg.lit))
			}
			continue
		}
		f, err := rv.FieldByIndexErr(seg.index)
		if err != nil {
			return bad(err.Error())
		}
		switch {
		case seg.kind == reflect.String:
			f.SetString(p)
		case intKind(seg.kind):
			var n int64
			var err error
			if seg.width > 0 {
				n, err = ParsePadInt(p)
				if err == nil && PadInt(n, seg.width) != p {
					err = fmt.Errorf("not %d digits", seg.width)
				}
			} else {
				n, err = strconv.ParseInt(p, 10, 64)
				if err == nil && strconv.FormatInt(n, 10) != p {
					err = fmt.Errorf("not canonical decimal")
				}
			}
			if err != nil {
				return bad(fmt.Sprintf("%q is not a number as Key writes it: %v", p, err))
			}
			if f.OverflowInt(n) {
				return bad(fmt.Sprintf("%d overflows %v", n, f.Type()))
			}
			f.SetInt(n)
		default:
			var n uint64
			var err error
			if seg.width > 0 {
				n, err = ParsePadUint(p)
				if err == nil && len(p) != seg.width {
					err = fmt.Errorf("not %d digits", seg.width)
				}
			} else {
				n, err = strconv.ParseUint(p, 10, 64)
				if err == nil && strconv.FormatUint(n, 10) != p {
					err = fmt.Errorf("not canonical decimal")
				}
			}
			if err != nil {
				return bad(fmt.Sprintf("%q is not a number as Key writes it: %v", p, err))
			}
			if f.OverflowUint(n) {
				return bad(fmt.Sprintf("%d overflows %v", n, f.Type()))
			}
			f.SetUint(n)
		}
	}
	return v, nil
}

func (t *Template[T]) segName(i int) string {
	if t.segs[i].field == "" {
		return "literal"
	}
	return t.segs[i].field
}

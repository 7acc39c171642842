package consistency

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// decodeKnown decodes the JSON value data into v (a pointer to a struct)
// and reports true when data is one valid JSON value whose keys all name
// fields of v, recursively: what a json.Decoder with DisallowUnknownFields
// accepts, decoded as it decodes it. It is the worker's decoding of every
// envelope and every step's arguments, costing one json.Unmarshal and a
// scan of the keys instead of a Decoder's buffer and copy per value. On
// false the caller decides with its Decoder, as before: a syntax or type
// error, a key naming no field, a key with an escape or a type the scan
// does not model get the same verdicts and errors. v is left as
// json.Unmarshal left it: decoding the same value again over it gives
// what the Decoder alone gives (Unmarshal changes nothing on a syntax
// error, and values the caller set in v before are kept, as a Decoder
// keeps them).
func decodeKnown(data []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	f := fieldsOf(rv.Type().Elem())
	if f == nil {
		return false
	}
	if json.Unmarshal(data, v) != nil {
		return false
	}
	known, ok := f.knownKeys(data, skipSpace(data, 0))
	return known && ok
}

// structFields are the JSON names of a struct's fields, and of the fields
// of the structs its fields hold (directly, through a pointer, or as the
// elements of a slice), for the unknown-field scan.
type structFields struct {
	names []string
	sub   []*structFields // per name; nil when the value is not scanned
}

var fieldsCache sync.Map // reflect.Type -> *structFields (nil: not modelled)

// fieldsOf returns the fields of struct type t, or nil when the scan does
// not model t: embedded fields (encoding/json's promotion rules) and types
// that decode themselves.
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(*structFields)
	}
	f, ok := buildFields(t, 0)
	if !ok {
		f = nil
	}
	fieldsCache.Store(t, f)
	return f
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t are decoded by their own
// method (json.RawMessage, UpsertMode): their content is not scanned.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

func buildFields(t reflect.Type, depth int) (*structFields, bool) {
	if t.Kind() != reflect.Struct || depth > 4 || decodesItself(t) {
		return nil, false
	}
	f := &structFields{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			if n, _, _ := strings.Cut(tag, ","); n != "" {
				name = n
			}
		}
		var sub *structFields
		ft := sf.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
			if decodesItself(ft) {
				break
			}
			if ft.Kind() == reflect.Map {
				// The structs a map holds are not scanned.
				if e := ft.Elem(); e.Kind() == reflect.Struct || e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice || e.Kind() == reflect.Array || e.Kind() == reflect.Map {
					return nil, false
				}
				break
			}
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !decodesItself(ft) {
			s, ok := buildFields(ft, depth+1)
			if !ok {
				return nil, false
			}
			sub = s
		}
		f.names = append(f.names, name)
		f.sub = append(f.sub, sub)
	}
	return f, true
}

// knownKeys reports whether every key of the JSON value at data[i:]
// (valid JSON) names a field, recursively; ok is false when the scan
// cannot tell (a key with an escape).
func (f *structFields) knownKeys(data []byte, i int) (known, ok bool) {
	switch {
	case i >= len(data):
		return true, true
	case data[i] == '[':
		// The elements of a slice of structs.
		i = skipSpace(data, i+1)
		for i < len(data) && data[i] != ']' {
			if known, ok := f.knownKeys(data, i); !known || !ok {
				return known, ok
			}
			i = skipSpace(data, skipValue(data, i))
			if i < len(data) && data[i] == ',' {
				i = skipSpace(data, i+1)
			}
		}
		return true, true
	case data[i] != '{':
		return true, true // null
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		end := i + 1
		for end < len(data) && data[end] != '"' {
			if data[end] == '\\' {
				return false, false
			}
			end++
		}
		key := data[i+1 : end]
		field := -1
		for j, n := range f.names {
			if string(key) == n {
				field = j
				break
			}
		}
		if field < 0 {
			for j, n := range f.names {
				if bytes.EqualFold(key, []byte(n)) {
					field = j
					break
				}
			}
		}
		if field < 0 {
			return false, true
		}
		i = skipSpace(data, end+1)
		i = skipSpace(data, i+1) // ':'
		if sub := f.sub[field]; sub != nil {
			if known, ok := sub.knownKeys(data, i); !known || !ok {
				return known, ok
			}
		}
		i = skipSpace(data, skipValue(data, i))
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the valid JSON value at data[i:].
func skipValue(data []byte, i int) int {
	depth := 0
	for i < len(data) {
		switch c := data[i]; c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i > 0 && (data[i-1] == '"' || data[i-1] == '}' || data[i-1] == ']') {
			return i
		}
	}
	return i
}

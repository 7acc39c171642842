package entity

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// DefaultKindProperty is the discriminator property a Registry uses unless
// told otherwise, as in the guide's "Work with heterogeneous entity types".
const DefaultKindProperty = "EntityType"

// Kind names an entity kind and its version, stored in the discriminator
// property as "Name.vN" ("Employee.v2"); version 0 is stored as the bare
// name ("Employee"), which also reads rows written without a version. The
// guide: "consider including a version number in the entity type value".
type Kind struct {
	Name    string
	Version int
}

// String returns the stored form of k.
func (k Kind) String() string {
	if k.Version == 0 {
		return k.Name
	}
	return k.Name + ".v" + strconv.Itoa(k.Version)
}

// ParseKind parses the stored form of a kind.
func ParseKind(s string) (Kind, error) {
	name, ver := s, 0
	if i := strings.LastIndex(s, ".v"); i > 0 {
		n, err := strconv.Atoi(s[i+2:])
		if err == nil && n > 0 && s[i+2] != '+' && s[i+2] != '0' {
			name, ver = s[:i], n
		}
	}
	if name == "" || strings.ContainsAny(name, ".") {
		return Kind{}, &Error{Field: s, Rule: "an entity kind is a name without dots, optionally followed by .vN (N >= 1)", Err: ErrInvalidEntity}
	}
	return Kind{name, ver}, nil
}

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Property is the discriminator property; "" means "EntityType".
	Property string
	// Codec is passed to the codecs of the registered types.
	Codec *Options
	// DecodeUnknown makes Resolve return an *Entity for rows whose kind is
	// not registered (or that have no discriminator) instead of an error
	// wrapping ErrUnknownKind.
	DecodeUnknown bool
}

// Registry maps the kinds of a heterogeneous table (several entity types
// in one table, often in one partition) to Go types, writes the
// discriminator property with each entity and resolves each row of a mixed
// query to its Go type: the legacy SDK's EntityResolver, typed.
//
// Register every kind before the registry is used; registration and use
// may not overlap.
type Registry struct {
	prop    string
	opts    *Options
	unknown bool

	mu     sync.RWMutex
	kinds  map[Kind]*Codec
	byType map[reflect.Type]Kind // the kind written for each type: its highest version
}

// NewRegistry returns an empty Registry; opts may be nil.
func NewRegistry(opts *RegistryOptions) *Registry {
	r := &Registry{prop: DefaultKindProperty, kinds: map[Kind]*Codec{}, byType: map[reflect.Type]Kind{}}
	if opts != nil {
		if opts.Property != "" {
			r.prop = opts.Property
		}
		r.opts = opts.Codec
		r.unknown = opts.DecodeUnknown
	}
	return r
}

// Property returns the discriminator property name.
func (r *Registry) Property() string { return r.prop }

// Register maps kind k to the struct type of prototype (a T or *T; only its
// type is used). One type may serve several versions of a kind (a newer
// struct reading older rows); it is written with the highest of them.
// The type must not have a property named like the discriminator.
func (r *Registry) Register(k Kind, prototype any) error {
	if _, err := ParseKind(k.String()); err != nil || k.Version < 0 {
		return &Error{Field: k.String(), Rule: "invalid kind", Err: ErrInvalidEntity}
	}
	if err := checkPropertyName(r.prop); err != nil {
		return &Error{Field: r.prop, Rule: "invalid discriminator property", Err: ErrInvalidEntity, Cause: err}
	}
	c, err := CodecOf(reflect.TypeOf(prototype), r.opts)
	if err != nil {
		return err
	}
	if _, clash := c.p.byName[r.prop]; clash {
		return errType(c.p.typ, c.p.byName[r.prop].goName, "is stored as "+r.prop+", the registry's discriminator property")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, dup := r.kinds[k]; dup && old.p.typ != c.p.typ {
		return errType(c.p.typ, "", "kind "+k.String()+" is already registered for "+old.p.typ.String())
	}
	r.kinds[k] = c
	if cur, ok := r.byType[c.p.typ]; !ok || (cur.Name == k.Name && k.Version > cur.Version) {
		r.byType[c.p.typ] = k
	}
	return nil
}

// KindOf returns the kind v (a registered T or *T) is written as.
func (r *Registry) KindOf(v any) (Kind, bool) {
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r.mu.RLock()
	k, ok := r.byType[t]
	r.mu.RUnlock()
	return k, ok
}

// Codec returns the codec of a registered kind.
func (r *Registry) Codec(k Kind) (*Codec, bool) {
	r.mu.RLock()
	c, ok := r.kinds[k]
	r.mu.RUnlock()
	return c, ok
}

// Marshal returns the entity JSON of v (a registered T or *T) with the
// discriminator property set to its kind. Limits count the discriminator.
func (r *Registry) Marshal(v any) ([]byte, error) { return r.AppendMarshal(nil, v) }

// AppendMarshal is Marshal appending to dst.
func (r *Registry) AppendMarshal(dst []byte, v any) ([]byte, error) {
	k, ok := r.KindOf(v)
	if !ok {
		return dst, &Error{Type: reflect.TypeOf(v), Rule: "type is not registered", Err: ErrUnknownKind}
	}
	c, _ := r.Codec(k)
	rv, err := c.structValue(v, "Marshal")
	if err != nil {
		return dst, err
	}
	return c.appendStruct(dst, rv, &extraProp{name: r.prop, value: k.String()})
}

// KindOfRow reads the discriminator of one row without decoding the rest.
// ok is false when the row has none.
func (r *Registry) KindOfRow(data []byte) (k Kind, ok bool, err error) {
	s := scanner{b: data}
	if err := s.expect('{'); err != nil {
		return Kind{}, false, &Error{Rule: "cannot decode the entity", Err: ErrInvalidEntity, Cause: err}
	}
	if s.peek() == '}' {
		return Kind{}, false, nil
	}
	for {
		if s.peek() != '"' {
			return Kind{}, false, &Error{Rule: "cannot decode the entity", Err: ErrInvalidEntity, Cause: s.fail("want a property name")}
		}
		key, kesc, err := s.str()
		if err == nil {
			err = s.expect(':')
		}
		var kind byte
		var raw []byte
		var esc bool
		if err == nil {
			kind, raw, esc, err = s.value()
		}
		if err != nil {
			return Kind{}, false, &Error{Rule: "cannot decode the entity", Err: ErrInvalidEntity, Cause: err}
		}
		if kesc {
			key = unescape(nil, key)
		}
		if string(key) == r.prop {
			if kind != jString {
				return Kind{}, false, &Error{Field: r.prop, Rule: "the discriminator is " + kindName(kind) + ", want a string", Err: ErrInvalidEntity}
			}
			if esc {
				raw = unescape(nil, raw)
			}
			k, err := ParseKind(string(raw))
			if err != nil {
				return Kind{}, false, err
			}
			return k, true, nil
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			return Kind{}, false, nil
		default:
			return Kind{}, false, &Error{Rule: "cannot decode the entity", Err: ErrInvalidEntity, Cause: s.fail("want ',' or '}'")}
		}
	}
}

// Resolve decodes one row into a new value of its registered type and
// returns a pointer to it (*Employee, *Department, ...), ready for a type
// switch. A row of an unregistered kind is an error wrapping ErrUnknownKind,
// or an *Entity with RegistryOptions.DecodeUnknown.
func (r *Registry) Resolve(data []byte) (any, error) {
	k, ok, err := r.KindOfRow(data)
	if err != nil {
		return nil, err
	}
	var c *Codec
	if ok {
		c, ok = r.Codec(k)
	}
	if !ok {
		if r.unknown {
			e := new(Entity)
			if err := e.UnmarshalJSON(data); err != nil {
				return nil, err
			}
			return e, nil
		}
		if k.Name == "" {
			return nil, &Error{Field: r.prop, Rule: "the row has no discriminator property", Err: ErrUnknownKind}
		}
		return nil, &Error{Field: r.prop, Rule: "kind " + strconv.Quote(k.String()) + " is not registered", Err: ErrUnknownKind}
	}
	v := reflect.New(c.p.typ)
	if err := c.Unmarshal(data, v.Interface()); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// ResolveAll resolves every row of a page (as the SDK's list pager returns
// them: one JSON object per row). The error names the failing row's index.
func (r *Registry) ResolveAll(rows [][]byte) ([]any, error) {
	out := make([]any, 0, len(rows))
	for i, row := range rows {
		v, err := r.Resolve(row)
		if err != nil {
			return out, &RowError{Index: i, Err: err}
		}
		out = append(out, v)
	}
	return out, nil
}

// ResolvePage resolves the rows of a query response body,
// {"value":[{...},{...}]} (other top-level members are ignored).
func (r *Registry) ResolvePage(body []byte) ([]any, error) {
	rows, err := splitPage(body)
	if err != nil {
		return nil, err
	}
	return r.ResolveAll(rows)
}

// RowError reports which row of a page failed to decode.
type RowError struct {
	Index int
	Err   error
}

func (e *RowError) Error() string {
	return "entity: row " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Unwrap returns the row's error.
func (e *RowError) Unwrap() error { return e.Err }

// splitPage returns the rows of a query response body
// {"value":[{...},...]}; each row aliases body.
func splitPage(body []byte) ([][]byte, error) {
	var rows [][]byte
	r := NewPageReader(body)
	for r.Next() {
		row, err := r.Raw()
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

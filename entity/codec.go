package entity

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"
)

// Options configure a Codec. The zero value (or nil) is valid.
type Options struct {
	// Keys supplies the keys of fields tagged `encrypt`. With nil Keys,
	// marshaling or unmarshaling such a field is an error.
	Keys KeyProvider
}

// Codec reads and writes one struct type as Table entities. Build it with
// CodecOf; it is safe for concurrent use.
type Codec struct {
	p    *plan
	keys KeyProvider

	// hints are the member names of an entity Unmarshal decoded, learned
	// by its second call and never written again (decoders read them, and
	// copy nothing): the entities of a table mostly repeat one order of
	// members, so the next ones are matched by comparisons instead of map
	// lookups. A codec used once (the package's Unmarshal) learns none.
	hints    atomic.Pointer[[]memberHint]
	unmarsh1 atomic.Bool // Unmarshal has been called
}

// CodecOf returns the codec of struct type t (or of the struct a pointer
// type points to), bound to opts. The type's plan is built once per type
// and cached. Bad tags, unknown tag options, conflicting embedded fields,
// unsupported field types and invalid property names are reported here,
// naming the type and field; the error wraps ErrInvalidEntity.
func CodecOf(t reflect.Type, opts *Options) (*Codec, error) {
	if t == nil {
		return nil, errType(nil, "", "CodecOf(nil)")
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p, err := planOf(t)
	if err != nil {
		return nil, err
	}
	c := &Codec{p: p}
	if opts != nil {
		c.keys = opts.Keys
	}
	return c, nil
}

// Type returns the struct type of the codec.
func (c *Codec) Type() reflect.Type { return c.p.typ }

// Marshal returns the entity JSON of v (a T or *T): PartitionKey, RowKey
// and every property, with `@odata.type` annotations for Int64, Double,
// DateTime, Guid and Binary values. ETag and Timestamp are not written.
// Every limit of the Table service is checked first; errors wrap
// ErrInvalidEntity or keys.ErrInvalidKey and name the field and rule.
func (c *Codec) Marshal(v any) ([]byte, error) {
	return c.AppendMarshal(make([]byte, 0, 64+48*len(c.p.fields)), v)
}

// AppendMarshal is Marshal appending to dst. On error dst is returned
// unchanged (its length; the bytes past it may have been written).
func (c *Codec) AppendMarshal(dst []byte, v any) ([]byte, error) {
	rv, err := c.structValue(v, "Marshal")
	if err != nil {
		return dst, err
	}
	return c.appendStruct(dst, rv, nil)
}

// Unmarshal decodes one entity as the service returns it (minimal or full
// metadata) into v, a *T. *v is reset to its zero value first; properties
// absent from data (or null) leave their fields zero, properties T does not
// have are ignored. odata.etag goes to T's ETag field and Timestamp to its
// Timestamp field. Values decode by the field's Go type: an Int32 on the
// wire fills an int64 field, 3 fills a float64, and a value that does not
// fit (2^40 into an int32) is an error naming the field.
func (c *Codec) Unmarshal(data []byte, v any) error {
	rv, err := c.target(v, "Unmarshal")
	if err != nil {
		return err
	}
	if c.p.hookU {
		return c.unmarshalHook(data, rv)
	}
	return c.decodeStruct(data, rv)
}

// target checks that v is a non-nil *T and returns *v, reset to its zero
// value.
func (c *Codec) target(v any, method string) (reflect.Value, error) {
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Pointer || rv.Type().Elem() != c.p.typ || rv.IsNil() {
		return reflect.Value{}, errType(c.p.typ, "", method+" needs a non-nil *"+c.p.typ.String())
	}
	rv = rv.Elem()
	rv.SetZero()
	return rv, nil
}

// unmarshalHook decodes data for a T that implements EntityUnmarshaler.
func (c *Codec) unmarshalHook(data []byte, rv reflect.Value) error {
	e, err := decodeEntity(data, c.p.typ)
	if err != nil {
		return err
	}
	if err := rv.Addr().Interface().(EntityUnmarshaler).UnmarshalEntity(e); err != nil {
		return errCause(c.p.typ, "", "UnmarshalEntity failed", err)
	}
	return nil
}

// Keys returns the PartitionKey and RowKey of v (a T or *T); "" for both
// when v is not of the codec's type.
func (c *Codec) Keys(v any) (pk, rk string) {
	rv, err := c.structValue(v, "Keys")
	if err != nil {
		return "", ""
	}
	if c.p.pk == nil || c.p.rk == nil {
		if c.p.hookM {
			var m EntityMarshaler
			if c.p.hookMPtr {
				m = addressable(rv).Addr().Interface().(EntityMarshaler)
			} else {
				m = rv.Interface().(EntityMarshaler)
			}
			if e, err := m.MarshalEntity(); err == nil {
				return e.PartitionKey, e.RowKey
			}
		}
		return "", ""
	}
	pkv, _ := fieldOf(rv, c.p.pk.index)
	rkv, _ := fieldOf(rv, c.p.rk.index)
	return pkv.String(), rkv.String()
}

// DataSize estimates the memory v (a T or *T) holds: the length of its
// string and byte-slice fields, the elements of its slices and maps at 16
// bytes each, and 16 bytes for any other field. It encodes nothing, so it
// costs a fraction of Marshal; BulkWriteSeq bounds the entities it holds
// with it before they are encoded. ok is false when the size cannot be
// known without encoding: v is not of the codec's type, or T implements
// EntityMarshaler.
func (c *Codec) DataSize(v any) (n int, ok bool) {
	rv, err := c.structValue(v, "DataSize")
	if err != nil || c.p.hookM {
		return 0, false
	}
	if c.p.sizeFast && rv.CanAddr() {
		base := rv.Addr().UnsafePointer()
		n = c.p.sizeFixed
		for _, off := range c.p.sizeStrings {
			n += len(*(*string)(unsafe.Add(base, off)))
		}
		return n, true
	}
	for _, f := range [2]*field{c.p.pk, c.p.rk} {
		if f != nil {
			if fv, ok := fieldOf(rv, f.index); ok {
				n += 16 + fv.Len()
			}
		}
	}
	var base unsafe.Pointer // the struct's address, for fast fields
	if rv.CanAddr() {
		base = rv.Addr().UnsafePointer()
	}
	for _, f := range c.p.fields {
		if f.fast && base != nil {
			// Reached without a pointer: present; only a string adds its
			// length. (A bulk write sizes every entity: reflect's Field
			// was most of this.)
			n += 16
			if f.kind == kString {
				n += len(*(*string)(unsafe.Add(base, f.offset)))
			}
			continue
		}
		fv, ok := fieldOf(rv, f.index)
		if ok && f.ptr {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		n += 16
		if !ok {
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			n += fv.Len()
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Uint8 {
				n += fv.Len()
			} else {
				n += 16 * fv.Len()
			}
		case reflect.Map:
			n += 16 * fv.Len()
		}
	}
	return n, true
}

// HasETag reports whether T has an ETag field.
func (c *Codec) HasETag() bool { return c.p.etag != nil }

// ETag returns v's ETag field: "" when T has none or it is empty.
func (c *Codec) ETag(v any) string {
	if c.p.etag == nil {
		return ""
	}
	rv, err := c.structValue(v, "ETag")
	if err != nil {
		return ""
	}
	f, ok := fieldOf(rv, c.p.etag.index)
	if !ok {
		return ""
	}
	return f.String()
}

// SetMeta writes etag and ts into v's (a *T) ETag and Timestamp fields, when
// T has them; a zero ts leaves the Timestamp field as it is.
func (c *Codec) SetMeta(v any, etag string, ts time.Time) {
	rv := reflect.ValueOf(v)
	if v == nil || rv.Kind() != reflect.Pointer || rv.Type().Elem() != c.p.typ || rv.IsNil() {
		return
	}
	rv = rv.Elem()
	if c.p.etag != nil {
		fieldAlloc(rv, c.p.etag.index).SetString(etag)
	}
	if c.p.ts != nil && !ts.IsZero() {
		fieldAlloc(rv, c.p.ts.index).Set(reflect.ValueOf(ts))
	}
}

// Select returns the property names for a $select of T: PartitionKey,
// RowKey, Timestamp and every property of T. The slice is shared: do not
// modify it.
func (c *Codec) Select() []string { return c.p.selectList }

// PropertyType returns the EDM type T's property name is stored as, or ""
// when no field has that name or the type is chosen at run time (a
// PropertyMarshaler) or hidden (an encrypted field, stored as Binary).
// A typed repository writes its filters' literals in these types
// (keys.Filter.Retype).
func (c *Codec) PropertyType(name string) EDMType {
	f := c.p.byName[name]
	if f == nil || f.kind == kHook || f.encrypt {
		return ""
	}
	if f.edm == "" {
		return EdmString
	}
	return f.edm
}

// Encrypted reports whether T has fields tagged `encrypt`. Merges of such
// entities must be refused: the stored entity may hold values sealed under
// other keys, and a merge cannot re-seal what it does not send (the guide,
// "Encrypt table data").
func (c *Codec) Encrypted() bool { return c.p.encrypted }

// Marshal returns the entity JSON of v (a struct or pointer to struct) with
// a codec built with nil Options.
func Marshal(v any) ([]byte, error) {
	if v == nil {
		return nil, errType(nil, "", "Marshal(nil)")
	}
	c, err := CodecOf(reflect.TypeOf(v), nil)
	if err != nil {
		return nil, err
	}
	return c.Marshal(v)
}

// Unmarshal decodes an entity into v (a pointer to a struct) with a codec
// built with nil Options.
func Unmarshal(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return errType(t, "", "Unmarshal needs a pointer to a struct")
	}
	c, err := CodecOf(t, nil)
	if err != nil {
		return err
	}
	return c.Unmarshal(data, v)
}

// BlobField is a field tagged with the blob option (`table:"Items,blob"`):
// a top-level []byte field whose value a repository keeps in a blob, with
// the blob's name in the property Property. The codec neither writes nor
// reads it; patterns.Model and patterns.LargeEntities keep it.
type BlobField struct {
	GoName   string // the Go field
	Index    int    // the field's index in the struct
	Property string // the property that holds the blob's name
}

// BlobFields returns the type's fields tagged with the blob option, in
// declaration order.
func (c *Codec) BlobFields() []BlobField { return append([]BlobField(nil), c.p.blobs...) }

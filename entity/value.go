package entity

import (
	"fmt"
	"time"
)

// EDMType names an Entity Data Model type of the Table service, as written
// in `@odata.type` annotations.
type EDMType string

// The EDM types the Table service stores.
const (
	EdmString   EDMType = "Edm.String"
	EdmInt32    EDMType = "Edm.Int32"
	EdmInt64    EDMType = "Edm.Int64"
	EdmDouble   EDMType = "Edm.Double"
	EdmBoolean  EDMType = "Edm.Boolean"
	EdmDateTime EDMType = "Edm.DateTime"
	EdmGuid     EDMType = "Edm.Guid"
	EdmBinary   EDMType = "Edm.Binary"
)

func (t EDMType) valid() bool {
	switch t {
	case EdmString, EdmInt32, EdmInt64, EdmDouble, EdmBoolean, EdmDateTime, EdmGuid, EdmBinary:
		return true
	}
	return false
}

// Value is one property value with its exact EDM type. V holds, by Type:
// EdmString string, EdmInt32 int32, EdmInt64 int64, EdmDouble float64,
// EdmBoolean bool, EdmDateTime time.Time (UTC, 100 ns precision),
// EdmGuid GUID, EdmBinary []byte. Build values with the constructors
// (String, Int32, ...) so V always has the Go type its Type requires.
type Value struct {
	Type EDMType
	V    any
}

// String returns an Edm.String value.
func String(s string) Value { return Value{EdmString, s} }

// Int32 returns an Edm.Int32 value.
func Int32(n int32) Value { return Value{EdmInt32, n} }

// Int64 returns an Edm.Int64 value.
func Int64(n int64) Value { return Value{EdmInt64, n} }

// Double returns an Edm.Double value (NaN and ±Inf included).
func Double(f float64) Value { return Value{EdmDouble, f} }

// Bool returns an Edm.Boolean value.
func Bool(b bool) Value { return Value{EdmBoolean, b} }

// DateTime returns an Edm.DateTime value: t in UTC, truncated to the
// service's 100 ns precision.
func DateTime(t time.Time) Value { return Value{EdmDateTime, t.UTC().Truncate(100)} }

// Guid returns an Edm.Guid value.
func Guid(g GUID) Value { return Value{EdmGuid, g} }

// Binary returns an Edm.Binary value. A nil slice is stored as an empty one.
func Binary(b []byte) Value {
	if b == nil {
		b = []byte{}
	}
	return Value{EdmBinary, b}
}

// check reports whether V has the Go type that Type requires.
func (v Value) check() error {
	ok := false
	switch v.Type {
	case EdmString:
		_, ok = v.V.(string)
	case EdmInt32:
		_, ok = v.V.(int32)
	case EdmInt64:
		_, ok = v.V.(int64)
	case EdmDouble:
		_, ok = v.V.(float64)
	case EdmBoolean:
		_, ok = v.V.(bool)
	case EdmDateTime:
		_, ok = v.V.(time.Time)
	case EdmGuid:
		_, ok = v.V.(GUID)
	case EdmBinary:
		_, ok = v.V.([]byte)
	default:
		return fmt.Errorf("unknown EDM type %q", string(v.Type))
	}
	if !ok {
		return fmt.Errorf("%s value holds a Go %T", v.Type, v.V)
	}
	return nil
}

// Entity is a dynamic property bag: a row read or written without a Go
// struct, with every property's EDM type kept exactly. It marshals to and
// from the Table service's JSON with MarshalJSON/UnmarshalJSON, and a
// Codec of type Entity reads and writes it like any struct.
//
// A property that arrives without an `@odata.type` annotation is typed as
// the service types it: a JSON string is an Edm.String, an integer an
// Edm.Int32 (an Edm.Int64 if it does not fit), any other number an
// Edm.Double, true/false an Edm.Boolean. JSON null properties are dropped.
type Entity struct {
	PartitionKey string
	RowKey       string
	ETag         string    // odata.etag; read only
	Timestamp    time.Time // set by the service; read only
	Properties   map[string]Value
}

// MarshalEntity implements EntityMarshaler.
func (e Entity) MarshalEntity() (Entity, error) { return e, nil }

// UnmarshalEntity implements EntityUnmarshaler.
func (e *Entity) UnmarshalEntity(src Entity) error {
	*e = src
	return nil
}

// PropertyMarshaler is implemented by field types that choose their own
// stored value. MarshalProperty returns the value with its EDM type; a Value
// with an empty Type means "store nothing" (the property is absent).
type PropertyMarshaler interface {
	MarshalProperty() (Value, error)
}

// PropertyUnmarshaler is implemented by (pointers to) field types that
// decode their own stored value. UnmarshalProperty receives the value typed
// by its `@odata.type` annotation or, without one, as the service types it.
type PropertyUnmarshaler interface {
	UnmarshalProperty(Value) error
}

// EntityMarshaler is the whole-entity hook: a type implementing it is
// written as the Entity it returns (limits are still checked).
type EntityMarshaler interface {
	MarshalEntity() (Entity, error)
}

// EntityUnmarshaler is the whole-entity hook for reads: the row is decoded
// into an Entity, which is handed to UnmarshalEntity.
type EntityUnmarshaler interface {
	UnmarshalEntity(Entity) error
}

package entity

import (
	"bytes"
	"encoding/json"
	"math"
	"sync"
	"time"
)

// Validate checks e against every rule the Table service applies to an
// entity that is written: PartitionKey and RowKey (keys.ValidateKey),
// property names (ValidatePropertyName), values whose Go type matches
// their EDM type, String (MaxStringUnits) and Binary (MaxBinarySize)
// sizes, the DateTime range, the number of properties (MaxProperties) and
// the entity's size (MaxEntitySize). ETag and Timestamp are not checked
// (the service sets them).
//
// It runs the code that MarshalJSON and a Codec's Marshal run before every
// write, so an entity that passes Validate marshals, and one that does not
// fails with the same error. Errors are *Error values wrapping
// ErrInvalidEntity (keys.ErrInvalidKey for a key) and naming the property.
func (e Entity) Validate() error {
	bp := validateBufs.Get().(*[]byte)
	var c Codec
	b, err := c.appendEntity((*bp)[:0], &e, nil, nil)
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		validateBufs.Put(bp)
	}
	return err
}

// maxPooledBuf bounds the buffers Validate keeps for reuse: a buffer grown
// by a near-1 MiB entity is left to the garbage collector.
const maxPooledBuf = 64 << 10

var validateBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// ValidatePropertyName checks a custom property name against the Table
// service's rules: a C# identifier of 1 to MaxPropertyNameLength
// characters, counted as UTF-16 code units, that is not PartitionKey,
// RowKey or Timestamp. It is the check
// Validate and Marshal apply to every property. The error is an *Error
// wrapping ErrInvalidEntity, naming the property.
func ValidatePropertyName(name string) error {
	if err := checkPropertyName(name); err != nil {
		return &Error{Field: name, Rule: "invalid property name", Err: ErrInvalidEntity, Cause: err}
	}
	return nil
}

// ParseEntity decodes the JSON of one entity to be written that comes from
// outside the program (a queue message, a file), and checks it: it reads
// data as UnmarshalJSON does (every `@odata.type` annotation kept, values
// without one typed as the service types them), requires PartitionKey and
// RowKey to be present, drops the service's metadata (odata.* and
// Timestamp), then runs Validate. Errors are *Error values wrapping
// ErrInvalidEntity (keys.ErrInvalidKey for a key).
func ParseEntity(data []byte) (Entity, error) {
	var hasPK, hasRK bool
	e, err := decodeEntityInto(data, nil, &hasPK, &hasRK)
	if err != nil {
		return Entity{}, err
	}
	if !hasPK || !hasRK {
		return Entity{}, &Error{Rule: "an entity to write needs PartitionKey and RowKey (JSON strings)", Err: ErrInvalidEntity}
	}
	e.ETag, e.Timestamp = "", time.Time{}
	if err := e.Validate(); err != nil {
		return Entity{}, err
	}
	return e, nil
}

// Equal reports whether v and w hold the same EDM value: the same Type and
// the same value. DateTimes compare as instants, Binary values by content,
// Doubles by their bits except that every NaN equals every NaN (0 and -0
// differ, as their stored texts do). A value whose V is not one of the Go
// types of Value equals nothing.
func (v Value) Equal(w Value) bool {
	if v.Type != w.Type {
		return false
	}
	switch x := v.V.(type) {
	case []byte:
		y, ok := w.V.([]byte)
		return ok && bytes.Equal(x, y)
	case time.Time:
		y, ok := w.V.(time.Time)
		return ok && x.Equal(y)
	case float64:
		y, ok := w.V.(float64)
		return ok && (math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y))
	case string, int32, int64, bool, GUID:
		return v.V == w.V
	}
	return false
}

// AppendJSON appends v's JSON value as the Table service's JSON carries it,
// without the annotation: a String or a DateTime (seven fractional
// digits), Guid, Binary (base64) or Int64 as a JSON string, an Int32 or a
// Double as a number (a Double keeps a fraction, "3.0"; NaN and ±Inf are
// the strings "NaN", "Infinity", "-Infinity"), a Boolean as true or false.
// It fails, as Marshal would, when V does not have the Go type of Type or
// the value breaks a limit.
func (v Value) AppendJSON(dst []byte) ([]byte, error) {
	if err := v.check(); err != nil {
		return dst, &Error{Rule: err.Error(), Err: ErrInvalidEntity}
	}
	b, _, err := appendBareValue(dst, v)
	if err != nil {
		return dst, &Error{Rule: err.Error(), Err: ErrInvalidEntity}
	}
	return b, nil
}

// Text returns the text of v when the Table service's JSON carries it as a
// string: a String, and also an Int64, DateTime, Guid or Binary (and a
// Double NaN or ±Infinity) as their wire text, as AppendJSON writes them.
// ok is false for a value carried as a number or a boolean, and for one
// AppendJSON refuses (other than a String, returned as it is).
func (v Value) Text() (s string, ok bool) {
	if s, ok := v.V.(string); ok && v.Type == EdmString {
		return s, true
	}
	b, err := v.AppendJSON(nil)
	if err != nil || len(b) == 0 || b[0] != '"' {
		return "", false
	}
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

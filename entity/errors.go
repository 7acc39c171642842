package entity

import (
	"errors"
	"reflect"
	"strings"
)

// ErrInvalidEntity is the sentinel that every entity error wraps: a struct
// type the codec cannot map, a value that breaks one of the Table service's
// limits, or a row that does not decode into the destination type. The root
// package re-exports it as tablekit.ErrInvalidEntity.
var ErrInvalidEntity = errors.New("invalid entity")

// ErrDecrypt is wrapped (besides ErrInvalidEntity) by the error returned
// when an encrypted property cannot be opened: its key id is unknown to the
// KeyProvider, or the ciphertext was changed (tamper detection).
var ErrDecrypt = errors.New("cannot decrypt property")

// ErrUnknownKind is wrapped by the Registry when a row's discriminator names
// a kind that was not registered.
var ErrUnknownKind = errors.New("unknown entity kind")

// Error describes a problem with an entity type, one of its fields or a
// value. It wraps ErrInvalidEntity (or keys.ErrInvalidKey for a bad
// PartitionKey/RowKey) and, when there is one, the underlying cause.
type Error struct {
	Type  reflect.Type // the Go type, nil for a dynamic Entity
	Field string       // the Go field (for struct types) or property name, "" for the whole entity
	Rule  string       // what is wrong, in words
	Err   error        // the sentinel: ErrInvalidEntity, keys.ErrInvalidKey, ErrDecrypt, ErrUnknownKind
	Cause error        // the underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("entity: ")
	if e.Type != nil {
		b.WriteString(e.Type.String())
		if e.Field != "" {
			b.WriteByte('.')
		}
	}
	if e.Field != "" {
		b.WriteString(e.Field)
	}
	if e.Type != nil || e.Field != "" {
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause, so errors.Is and errors.As see
// both.
func (e *Error) Unwrap() []error {
	errs := []error{e.Err}
	if e.Err == ErrDecrypt || e.Err == ErrUnknownKind {
		errs = append(errs, ErrInvalidEntity)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

func errType(t reflect.Type, field, rule string) error {
	return &Error{Type: t, Field: field, Rule: rule, Err: ErrInvalidEntity}
}

func errCause(t reflect.Type, field, rule string, cause error) error {
	return &Error{Type: t, Field: field, Rule: rule, Err: ErrInvalidEntity, Cause: cause}
}

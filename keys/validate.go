package keys

import (
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/azrules"
)

// ErrInvalidArgument is the sentinel of an argument refused before any
// request is sent: it never comes from the service (an HTTP 400 is
// tablekit.ErrBadRequest). ErrInvalidKey, ErrInvalidName and
// ErrInvalidFilter unwrap to it, so one errors.Is tells "my input was
// bad". The root package re-exports it as tablekit.ErrInvalidArgument.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrInvalidKey is the sentinel every key validation error wraps; it
// unwraps to ErrInvalidArgument. The root package re-exports it as
// tablekit.ErrInvalidKey.
var ErrInvalidKey = NewArgumentSentinel("invalid key")

// ErrInvalidName is the sentinel for invalid table, queue, container and
// blob names; it unwraps to ErrInvalidArgument. The root package
// re-exports it as tablekit.ErrInvalidName.
var ErrInvalidName = NewArgumentSentinel("invalid name")

// NewArgumentSentinel returns a new sentinel error with text msg for one
// kind of invalid argument: errors.Is matches it by identity, and it
// unwraps to ErrInvalidArgument. tablekit's packages declare their
// specific sentinels (ErrInvalidKey, tablekit.ErrInvalidTransaction, ...)
// with it.
func NewArgumentSentinel(msg string) error { return &argumentSentinel{msg} }

type argumentSentinel struct{ msg string }

func (e *argumentSentinel) Error() string { return e.msg }
func (e *argumentSentinel) Unwrap() error { return ErrInvalidArgument }

// MaxKeyBytes is the size limit of a PartitionKey or RowKey: 1 KiB
// (azrules.MaxKeyBytes, where its evidence is). The service stores keys as
// UTF-16, so this is 512 UTF-16 code units (a character outside the Basic
// Multilingual Plane counts twice).
const MaxKeyBytes = azrules.MaxKeyBytes

// MaxKeyUnits is MaxKeyBytes expressed in UTF-16 code units.
const MaxKeyUnits = azrules.MaxKeyUnits

// KeyError describes why a PartitionKey or RowKey is not accepted by the
// Table service. It wraps ErrInvalidKey.
type KeyError struct {
	Key  string // "PartitionKey" or "RowKey" (or the caller's name for it)
	Rule string // the rule that was broken, in words
}

func (e *KeyError) Error() string { return "tablekit: invalid " + e.Key + ": " + e.Rule }

// Unwrap makes errors.Is(err, ErrInvalidKey) true.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// ValidateKey checks a PartitionKey or RowKey value against the rules of the
// Table service data model (azrules.CheckKey): valid UTF-8, at most 512
// UTF-16 code units (1 KiB), and none of '/', '\\', '#', '?' or the control
// characters U+0000-U+001F and U+007F-U+009F. The empty string is a valid
// key. name ("PartitionKey", "RowKey") only labels the error.
func ValidateKey(name, k string) error {
	if err := azrules.CheckKey(k); err != nil {
		return &KeyError{Key: name, Rule: err.Error()}
	}
	return nil
}

// NameError describes why a table, queue, container or blob name is
// invalid. It wraps ErrInvalidName.
type NameError struct {
	Kind string // "table", "queue", "container" or "blob"
	Name string
	Rule string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("tablekit: invalid %s name %q: %s", e.Kind, e.Name, e.Rule)
}

// Unwrap makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Unwrap() error { return ErrInvalidName }

// ValidateTableName checks a table name against the service's rules
// (azrules.CheckTableName): 3 to 63 characters, ASCII letters and digits
// only, starting with a letter, and not the reserved name "tables" (in any
// case).
func ValidateTableName(name string) error {
	return nameErr("table", name, azrules.CheckTableName(name))
}

// ValidateQueueName checks a queue name (azrules.CheckQueueName): 3 to 63
// characters, lowercase letters, digits and single hyphens, starting and
// ending with a letter or digit.
func ValidateQueueName(name string) error {
	return nameErr("queue", name, azrules.CheckQueueName(name))
}

// ValidateContainerName checks a blob container name
// (azrules.CheckContainerName); the rules are those of queue names.
func ValidateContainerName(name string) error {
	return nameErr("container", name, azrules.CheckContainerName(name))
}

// MaxBlobNameLength is the longest blob name, in UTF-16 code units
// (azrules.MaxBlobNameUnits, where its evidence is).
const MaxBlobNameLength = azrules.MaxBlobNameUnits

// ValidateBlobName checks a blob name before it is put in a request URL
// (azrules.CheckBlobName): 1 to 1,024 UTF-16 code units of valid UTF-8,
// at most 254 '/'-separated segments, no segment "." or ".." (path
// traversal; Data Lake Storage refuses them too), no trailing '/', and
// none of '\\' (which some clients turn into '/'), '?', '#' (reserved in
// URLs) or the control characters U+0000-U+001F and U+007F-U+009F. Empty segments ("a//b") are
// accepted, as by the service. The error is a *NameError of kind "blob"
// wrapping ErrInvalidName.
func ValidateBlobName(name string) error { return nameErr("blob", name, azrules.CheckBlobName(name)) }

// nameErr wraps a broken name rule in a *NameError; nil stays nil.
func nameErr(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &NameError{Kind: kind, Name: name, Rule: err.Error()}
}

package keys

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
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

// MaxKeyBytes is the size limit of a PartitionKey or RowKey: 1 KiB. The
// service stores keys as UTF-16, so this is 512 UTF-16 code units (what
// Azure and Azurite both enforce; a character outside the Basic
// Multilingual Plane counts twice).
const MaxKeyBytes = 1024

// MaxKeyUnits is MaxKeyBytes expressed in UTF-16 code units.
const MaxKeyUnits = MaxKeyBytes / 2

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
// Table service data model: valid UTF-8, at most 512 UTF-16 code units
// (1 KiB), and none of '/', '\\', '#', '?' or the control characters
// U+0000-U+001F and U+007F-U+009F. The empty string is a valid key.
// name ("PartitionKey", "RowKey") only labels the error.
func ValidateKey(name, k string) error {
	if len(k) <= MaxKeyUnits && plainKey(k) {
		return nil
	}
	return validateKey(name, k)
}

// plainKey reports whether every byte of k is ASCII allowed in a key
// (one UTF-16 unit each): most keys are, and then one table lookup a
// byte decides, instead of validating UTF-8 and decoding runes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if !plainKeyByte[k[i]] {
			return false
		}
	}
	return true
}

// plainKeyByte marks the ASCII bytes allowed in keys: not a control
// character (U+0000-U+001F, U+007F), nor / \ # ?.
var plainKeyByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '/' && c != '\\' && c != '#' && c != '?'
	}
	return t
}()

// validateKey is ValidateKey's general path: any key, and the error that
// names the first rule broken.
func validateKey(name, k string) error {
	if !utf8.ValidString(k) {
		return &KeyError{Key: name, Rule: "not valid UTF-8"}
	}
	units := 0
	for i, r := range k {
		switch {
		case r == '/' || r == '\\' || r == '#' || r == '?':
			return &KeyError{Key: name, Rule: fmt.Sprintf("character %q at byte %d is not allowed in keys (/ \\ # ?)", r, i)}
		case r <= 0x1f || (r >= 0x7f && r <= 0x9f):
			return &KeyError{Key: name, Rule: fmt.Sprintf("control character U+%04X at byte %d is not allowed in keys", r, i)}
		}
		units += utf16.RuneLen(r)
	}
	if units > MaxKeyUnits {
		return &KeyError{Key: name, Rule: fmt.Sprintf("%d UTF-16 code units exceeds the 1 KiB limit (%d units)", units, MaxKeyUnits)}
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

// ValidateTableName checks a table name against the service's rules:
// 3 to 63 characters, ASCII letters and digits only, starting with a
// letter, and not the reserved name "tables" (in any case).
func ValidateTableName(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return &NameError{Kind: "table", Name: name, Rule: "must be 3 to 63 characters long"}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		isLetter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		isDigit := c >= '0' && c <= '9'
		if i == 0 && !isLetter {
			return &NameError{Kind: "table", Name: name, Rule: "must start with a letter"}
		}
		if !isLetter && !isDigit {
			return &NameError{Kind: "table", Name: name, Rule: fmt.Sprintf("character %q at %d: only letters and digits are allowed", c, i)}
		}
	}
	if len(name) == 6 && (name[0]|0x20) == 't' && equalFold(name, "tables") {
		return &NameError{Kind: "table", Name: name, Rule: `"tables" is reserved`}
	}
	return nil
}

// ValidateQueueName checks a queue name: 3 to 63 characters, lowercase
// letters, digits and single hyphens, starting and ending with a letter or
// digit.
func ValidateQueueName(name string) error { return validateDNSName("queue", name) }

// ValidateContainerName checks a blob container name; the rules are those of
// queue names.
func ValidateContainerName(name string) error { return validateDNSName("container", name) }

// MaxBlobNameLength is the longest blob name, in characters.
const MaxBlobNameLength = 1024

// maxBlobSegments is the most '/'-separated segments a blob name may have.
const maxBlobSegments = 254

// ValidateBlobName checks a blob name before it is put in a request URL:
// 1 to 1,024 characters of valid UTF-8, at most 254 '/'-separated
// segments, no segment "." or ".." (path traversal; Data Lake Storage
// refuses them too), no trailing '/', and none of '\\' (which some
// clients turn into '/'), '?', '#' (reserved in URLs) or the control
// characters U+0000-U+001F and U+007F-U+009F. Empty segments ("a//b") are
// accepted, as by the service. The error is a *NameError of kind "blob"
// wrapping ErrInvalidName.
func ValidateBlobName(name string) error {
	fail := func(rule string) error { return &NameError{Kind: "blob", Name: name, Rule: rule} }
	if name == "" {
		return fail("must not be empty")
	}
	if !utf8.ValidString(name) {
		return fail("not valid UTF-8")
	}
	if n := utf8.RuneCountInString(name); n > MaxBlobNameLength {
		return fail(fmt.Sprintf("%d characters exceeds the limit of %d", n, MaxBlobNameLength))
	}
	segments, start := 1, 0
	for i, r := range name {
		switch {
		case r == '\\' || r == '?' || r == '#':
			return fail(fmt.Sprintf("character %q at byte %d is not allowed in blob names (\\ ? #)", r, i))
		case r <= 0x1f || (r >= 0x7f && r <= 0x9f):
			return fail(fmt.Sprintf("control character U+%04X at byte %d is not allowed in blob names", r, i))
		case r == '/':
			if seg := name[start:i]; seg == "." || seg == ".." {
				return fail(fmt.Sprintf("segment %q at byte %d: . and .. segments are not allowed", seg, start))
			}
			segments++
			start = i + 1
		}
	}
	if seg := name[start:]; seg == "." || seg == ".." {
		return fail(fmt.Sprintf("segment %q at byte %d: . and .. segments are not allowed", seg, start))
	}
	if start == len(name) {
		return fail("must not end with '/'")
	}
	if segments > maxBlobSegments {
		return fail(fmt.Sprintf("%d segments exceeds the limit of %d", segments, maxBlobSegments))
	}
	return nil
}

func validateDNSName(kind, name string) error {
	if len(name) < 3 || len(name) > 63 {
		return &NameError{Kind: kind, Name: name, Rule: "must be 3 to 63 characters long"}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'):
		case c == '-':
			if i == 0 || i == len(name)-1 {
				return &NameError{Kind: kind, Name: name, Rule: "must start and end with a letter or digit"}
			}
			if name[i-1] == '-' {
				return &NameError{Kind: kind, Name: name, Rule: "consecutive hyphens are not allowed"}
			}
		default:
			return &NameError{Kind: kind, Name: name, Rule: fmt.Sprintf("character %q at %d: only lowercase letters, digits and hyphens are allowed", c, i)}
		}
	}
	return nil
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

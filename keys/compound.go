package keys

import (
	"fmt"
	"strings"
)

// DefaultSeparator is the separator of the zero Compound, the one the guide
// uses in keys such as "empid_000123_2012".
const DefaultSeparator = '_'

// Compound joins the parts of a compound key with a separator and splits
// them back. It serves the guide's compound key pattern ("Use compound
// RowKey values to enable a client to look up related data with a single
// point query") and the advice to "use a suitable separator character that
// makes it easy to parse the RowKey value".
//
// # Escaping
//
// The escape character is the character right after the separator (for
// '_' it is '`'). Inside a part, the separator is written as escape+separator
// and the escape as escape+escape; nothing else changes, so keys stay
// readable ("empid_000123_2012"). Split undoes this and reports a key that
// could not have been produced by Join.
//
// # Order
//
// The encoding preserves the order of the parts' characters and an escaped
// character always starts with a character above the separator, so for two
// tuples whose first differing parts differ at some character, the keys
// sort like the tuples. The one case the service's string order cannot
// follow is a part that is a proper prefix of the other part at the same
// position, where the longer part continues with a character below the
// separator (for '_' that includes digits and upper-case letters: ("a", "x")
// sorts after ("a0", "x")). Fixed-width parts (PadInt, PadUint, TimeKey,
// InvertedTicks) never hit this case; choosing ' ' as separator (escape '!')
// removes it for every valid key, because no key character sorts below ' '.
//
// The zero value uses DefaultSeparator. Compound values are immutable and
// safe for concurrent use.
type Compound struct {
	sep byte
}

// NewCompound returns a Compound with the given separator. The separator
// and its escape (sep+1) must be printable ASCII characters allowed in keys
// (not '/', '\\', '#', '?' or a control character); '.', '>', '"', '[' and
// '~' are refused because their successor is not.
func NewCompound(sep byte) (Compound, error) {
	for _, c := range []byte{sep, sep + 1} {
		if c < 0x20 || c >= 0x7f || c == '/' || c == '\\' || c == '#' || c == '?' {
			return Compound{}, &KeyError{Key: "compound key separator", Rule: fmt.Sprintf("separator %q needs itself and its escape %q to be printable ASCII allowed in keys", sep, sep+1)}
		}
	}
	return Compound{sep: sep}, nil
}

// Separator returns the separator character.
func (c Compound) Separator() byte {
	if c.sep == 0 {
		return DefaultSeparator
	}
	return c.sep
}

// Escape returns the escape character (the separator's successor).
func (c Compound) Escape() byte { return c.Separator() + 1 }

// Join encodes parts into one key. Join of no parts is "", which Split
// reads back as one empty part. Join does not validate the result as a
// key; use ValidateKey for that.
func (c Compound) Join(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(c.Separator())
		}
		c.appendPart(&b, p)
	}
	return b.String()
}

// Part returns the encoding of a single part (the part with its separator
// and escape characters escaped), for building key prefixes by hand.
func (c Compound) Part(p string) string {
	var b strings.Builder
	c.appendPart(&b, p)
	return b.String()
}

func (c Compound) appendPart(b *strings.Builder, p string) {
	sep, esc := c.Separator(), c.Escape()
	for i := 0; i < len(p); i++ {
		if p[i] == sep || p[i] == esc {
			b.WriteByte(esc)
		}
		b.WriteByte(p[i])
	}
}

// Split decodes a key produced by Join into its parts. It returns an error
// wrapping ErrInvalidKey when an escape character is not followed by the
// separator or the escape.
func (c Compound) Split(key string) ([]string, error) {
	sep, esc := c.Separator(), c.Escape()
	var parts []string
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case sep:
			parts = append(parts, b.String())
			b.Reset()
		case esc:
			if i+1 >= len(key) || (key[i+1] != sep && key[i+1] != esc) {
				return nil, &KeyError{Key: "compound key", Rule: fmt.Sprintf("escape %q at byte %d must be followed by %q or %q", esc, i, sep, esc)}
			}
			i++
			b.WriteByte(key[i])
		default:
			b.WriteByte(key[i])
		}
	}
	return append(parts, b.String()), nil
}

// SplitN is Split that also requires exactly n parts.
func (c Compound) SplitN(key string, n int) ([]string, error) {
	parts, err := c.Split(key)
	if err != nil {
		return nil, err
	}
	if len(parts) != n {
		return nil, &KeyError{Key: "compound key", Rule: fmt.Sprintf("has %d parts, want %d", len(parts), n)}
	}
	return parts, nil
}

// Join encodes parts with the default separator '_'; see Compound.
func Join(parts ...string) string { return Compound{}.Join(parts...) }

// Split decodes a key made by Join; see Compound.Split.
func Split(key string) ([]string, error) { return Compound{}.Split(key) }

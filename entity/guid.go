package entity

import (
	"crypto/rand"
	"errors"
)

// GUID is an Edm.Guid value. Its bytes are in the order of the textual
// form (RFC 9562 / RFC 4122 network order, as github.com/google/uuid uses),
// so any [16]byte-based UUID type converts to and from it directly. Struct
// fields of type GUID, or of any other type whose underlying type is
// [16]byte, are stored as Edm.Guid.
type GUID [16]byte

// NewGUID returns a random (version 4) GUID.
func NewGUID() GUID {
	var g GUID
	_, _ = rand.Read(g[:]) // crypto/rand.Read never fails on supported platforms
	g[6] = g[6]&0x0f | 0x40
	g[8] = g[8]&0x3f | 0x80
	return g
}

var errGUIDSyntax = errors.New("a GUID is 32 hexadecimal digits in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")

// ParseGUID parses the 36-character form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
// (either case).
func ParseGUID(s string) (GUID, error) {
	var g GUID
	if !parseGUIDBytes(&g, []byte(s)) {
		return GUID{}, errGUIDSyntax
	}
	return g, nil
}

// String returns the lowercase 36-character form.
func (g GUID) String() string { return string(appendGUID(nil, (*[16]byte)(&g))) }

// IsZero reports whether g is the all-zero GUID.
func (g GUID) IsZero() bool { return g == GUID{} }

// MarshalText implements encoding.TextMarshaler.
func (g GUID) MarshalText() ([]byte, error) { return appendGUID(nil, (*[16]byte)(&g)), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (g *GUID) UnmarshalText(b []byte) error {
	if !parseGUIDBytes(g, b) {
		return errGUIDSyntax
	}
	return nil
}

const hexDigits = "0123456789abcdef"

func appendGUID(dst []byte, g *[16]byte) []byte {
	for i, c := range g {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0x0f])
	}
	return dst
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func parseGUIDBytes(g *GUID, s []byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	j := 0
	for i := 0; i < 16; i++ {
		if j == 8 || j == 13 || j == 18 || j == 23 {
			j++
		}
		hi, ok1 := unhex(s[j])
		lo, ok2 := unhex(s[j+1])
		if !ok1 || !ok2 {
			return false
		}
		g[i] = hi<<4 | lo
		j += 2
	}
	return true
}

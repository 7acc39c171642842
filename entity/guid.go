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
	v := hexValues[c]
	return v, v != 0xff
}

// hexValues is each byte's value as a hex digit, 0xff for the others.
var hexValues = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
		t[c-'a'+'A'] = byte(c-'a') + 10
	}
	return t
}()

// guidDigits are the positions of a GUID's 32 hex digits in its
// 36-character text form.
var guidDigits = [32]uint8{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35}

func parseGUIDBytes(g *GUID, s []byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	bad := byte(0)
	for i := range 16 {
		hi, lo := hexValues[s[guidDigits[2*i]]], hexValues[s[guidDigits[2*i+1]]]
		bad |= hi | lo
		g[i] = hi<<4 | lo
	}
	return bad&0xf0 == 0 // a non-digit is 0xff
}

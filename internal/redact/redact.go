// Package redact removes credentials from text: the value of every SAS
// signature (sig=..., also URL-escaped as sig%3D... inside another URL),
// and the values of AccountKey= and SharedAccessSignature= settings of a
// connection string. The root package's Redact is this package's Redact;
// the errors of package errs and the account's pipeline policies run
// everything they print through it.
package redact

import "strings"

// Redact returns s with credentials replaced by REDACTED (see the package
// documentation). Names are matched in any case; the rest of s is kept,
// so a redacted URL still says which resource it names.
func Redact(s string) string {
	var b strings.Builder
	for {
		i, m := nextSecret(s)
		if i < 0 {
			if b.Len() == 0 {
				return s
			}
			b.WriteString(s)
			return b.String()
		}
		start := i + len(m.name)
		end := start + m.valueLen(s[start:])
		b.WriteString(s[:start])
		if end > start {
			b.WriteString("REDACTED")
		}
		s = s[end:]
	}
}

// Error returns err, or when its text holds a credential, an error
// printing that text redacted and unwrapping to err.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := Redact(msg); r != msg {
		return &redactedError{msg: r, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// secretMarker is a name whose value is a credential.
type secretMarker struct {
	name string // lower case, with its '=' (or "%3d")
	// inQuery: the value ends at '&' (or "%26" when escaped); otherwise
	// it runs to the end of the connection-string setting.
	inQuery, escaped bool
}

var secretMarkers = []secretMarker{
	{name: "sig=", inQuery: true},
	{name: "sig%3d", inQuery: true, escaped: true},
	{name: "accountkey="},
	{name: "sharedaccesssignature="},
}

// nextSecret finds the first marker in s, ignoring ASCII case.
func nextSecret(s string) (int, secretMarker) {
	for i := 0; i < len(s); i++ {
		for _, m := range secretMarkers {
			if len(s)-i >= len(m.name) && asciiEqualFold(s[i:i+len(m.name)], m.name) {
				return i, m
			}
		}
	}
	return -1, secretMarker{}
}

// valueLen is the length of the value at the start of v. A value ends at
// white space, a quote, a backslash (an escape in JSON or Go syntax), an
// angle bracket, ';' or ',', and a query value also at '&' and '#'.
func (m secretMarker) valueLen(v string) int {
	for j := 0; j < len(v); j++ {
		switch c := v[j]; {
		case c <= ' ' || c == 0x7f, c == '"', c == '\'', c == '\\', c == '<', c == '>', c == ';', c == ',':
			return j
		case m.inQuery && (c == '&' || c == '#'):
			return j
		case m.escaped && c == '%' && len(v)-j >= 3 && asciiEqualFold(v[j:j+3], "%26"):
			return j
		}
	}
	return len(v)
}

func asciiEqualFold(a, lower string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

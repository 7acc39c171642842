package entity

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON value kinds returned by scanner.value.
const (
	jString = '"'
	jNumber = '0'
	jTrue   = 't'
	jFalse  = 'f'
	jNull   = 'n'
	jObject = '{'
	jArray  = '['
)

// maxDepth bounds the nesting of skipped values.
const maxDepth = 1000

// scanner reads the flat JSON object of one entity without building any
// intermediate tree. It validates what it reads; strings come back raw
// (between the quotes) with a flag telling whether they hold escapes.
type scanner struct {
	b []byte
	i int
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return "malformed JSON at offset " + strconv.Itoa(e.off) + ": " + e.msg
}

func (s *scanner) fail(msg string) error { return &syntaxError{s.i, msg} }

func (s *scanner) ws() {
	// The service writes no white space: one comparison in the common
	// case, the loop only when there is some.
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.wsLoop()
}

func (s *scanner) wsLoop() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// expect skips white space and consumes c.
func (s *scanner) expect(c byte) error {
	s.ws()
	if s.i >= len(s.b) {
		return s.fail("unexpected end, want " + strconv.QuoteRune(rune(c)))
	}
	if s.b[s.i] != c {
		return s.fail("found " + strconv.QuoteRune(rune(s.b[s.i])) + ", want " + strconv.QuoteRune(rune(c)))
	}
	s.i++
	return nil
}

// peek skips white space and returns the next byte (0 at the end).
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		if c := s.b[s.i]; c > ' ' {
			return c
		}
	}
	s.wsLoop()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Masks of the eight-bytes-at-a-time string scan.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special returns a mask whose lowest set bit (if any) is the high bit of
// the first byte of x (little-endian) that is '"', '\\' or a control
// character; bytes above it may be flagged falsely (borrows), so only the
// lowest bit counts.
func special(x uint64) uint64 {
	q := x ^ (lsb * '"')
	e := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (e-lsb)&^e | (x-lsb*0x20)&^x) & msb
}

// str reads a string; s.b[s.i] must be '"'. Runs of ordinary bytes are
// skipped eight at a time.
func (s *scanner) str() (raw []byte, esc bool, err error) {
	s.i++
	start := s.i
	b := s.b
	i := s.i
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
		}
		if i >= len(b) {
			s.i = len(b)
			return nil, false, s.fail("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return b[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.i = i
				return nil, false, s.fail("unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+5 >= len(b) {
					s.i = i
					return nil, false, s.fail("short \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if _, ok := unhex(h); !ok {
						s.i = i
						return nil, false, s.fail("bad \\u escape")
					}
				}
				i += 6
			default:
				s.i = i
				return nil, false, s.fail("bad escape")
			}
		default:
			s.i = i
			return nil, false, s.fail("control character in string")
		}
	}
}

// value reads one value of any kind. Objects and arrays are skipped and
// returned whole.
func (s *scanner) value() (kind byte, raw []byte, esc bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return 0, nil, false, s.fail("unexpected end, want a value")
	}
	start := s.i
	switch c := s.b[s.i]; c {
	case '"':
		raw, esc, err = s.str()
		return jString, raw, esc, err
	case 't':
		return jTrue, nil, false, s.literal("true")
	case 'f':
		return jFalse, nil, false, s.literal("false")
	case 'n':
		return jNull, nil, false, s.literal("null")
	case '{', '[':
		if err := s.skip(0); err != nil {
			return 0, nil, false, err
		}
		return c, s.b[start:s.i], false, nil
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			raw, err = s.number()
			return jNumber, raw, false, err
		}
		return 0, nil, false, s.fail("unexpected " + strconv.QuoteRune(rune(c)))
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return s.fail("bad literal, want " + lit)
	}
	s.i += len(lit)
	return nil
}

// number reads a number following the JSON grammar.
func (s *scanner) number() ([]byte, error) {
	b, i := s.b, s.i
	start := i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		s.i = i
		return nil, s.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			s.i = i
			return nil, s.fail("bad number fraction")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			s.i = i
			return nil, s.fail("bad number exponent")
		}
	}
	s.i = i
	return b[start:i], nil
}

// skip skips an object or array.
func (s *scanner) skip(depth int) error {
	if depth >= maxDepth {
		return s.fail("nested too deeply")
	}
	open := s.b[s.i]
	s.i++
	if open == '{' {
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if s.peek() != '"' {
				return s.fail("want an object key")
			}
			if _, _, err := s.str(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skipValue(depth); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return s.fail("want ',' or '}'")
			}
		}
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.skipValue(depth); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail("want ',' or ']'")
		}
	}
}

func (s *scanner) skipValue(depth int) error {
	if c := s.peek(); c == '{' || c == '[' {
		return s.skip(depth + 1)
	}
	_, _, _, err := s.value()
	return err
}

// end checks that only white space follows.
func (s *scanner) end() error {
	// Not peek: a NUL byte in the data would read as the end.
	if s.ws(); s.i < len(s.b) {
		return s.fail("data after the object")
	}
	return nil
}

// unescape appends the decoded form of a raw JSON string (already
// validated by str). A lone surrogate becomes U+FFFD, as encoding/json does.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := len(raw)
			if k := bytes.IndexByte(raw[i+1:], '\\'); k >= 0 {
				j = i + 1 + k
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = hex4(raw[i+2 : i+6])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		h, _ := unhex(c)
		r = r<<4 | rune(h)
	}
	return r
}

package entity

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// appendStringByByte is appendString as it was before it skipped eight
// plain bytes at a time: one byte (or rune) per step.
func appendStringByByte(dst []byte, s string) ([]byte, int, bool) {
	dst = append(dst, '"')
	units := 0
	ok := true
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			units++
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[last:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			last = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			ok = false
		}
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"'), units, ok
}

// appendString writes, counts and validates what the byte-by-byte loop
// does, for strings of every length with special bytes (quotes,
// backslashes, control characters, multi-byte and invalid UTF-8) at every
// place around the eight-byte words.
func TestAppendStringMatchesByteByByte(t *testing.T) {
	specials := []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "😀", "\xff", "\xe2\x82", " ", "~"}
	cases := []string{"", "a", "abcdefgh", "abcdefghi", "emp_100001", "junc42@contoso.com"}
	for n := range 20 {
		for _, sp := range specials {
			for at := 0; at <= n; at++ {
				plain := strings.Repeat("x", n)
				cases = append(cases, plain[:at]+sp+plain[at:])
			}
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			if rng.IntN(8) == 0 {
				b.WriteString(specials[rng.IntN(len(specials))])
			} else {
				b.WriteByte(byte(0x20 + rng.IntN(0x5f)))
			}
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		check(t, s)
	}
}

func check(t *testing.T, s string) {
	t.Helper()
	got, gu, gok := appendString([]byte("x"), s)
	want, wu, wok := appendStringByByte([]byte("x"), s)
	if string(got) != string(want) || gu != wu || gok != wok {
		t.Fatalf("appendString(%q) = %q, %d, %v; byte by byte %q, %d, %v", s, got, gu, gok, want, wu, wok)
	}
	if gok != utf8.ValidString(s) {
		t.Fatalf("appendString(%q): ok %v", s, gok)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("junc42@contoso.com")
	f.Add("a\"b\\c\x01dé😀\xff")
	f.Fuzz(check)
}

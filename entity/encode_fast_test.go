package entity

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

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
	want, wu, wok := appendStringWords([]byte("x"), s, false)
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

package azrules

import "unicode/utf8"

// UTF16Len is the length of s in UTF-16 code units, the unit the Table
// service counts keys, property names and strings in, and the Blob
// service counts blob names in: a character outside the Basic
// Multilingual Plane counts two. A byte that is not valid UTF-8 counts
// one. It is never more than len(s), so a string of at most n bytes needs
// no counting against a limit of n units.
func UTF16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

package keys

import "unicode/utf8"

// Compare orders two keys as the Table service does: by ordinal UTF-16
// code units (.NET's String.CompareOrdinal; Azurite compares the same way).
// It returns -1, 0 or +1. It differs from Go's byte-wise string order for
// characters U+E000..U+FFFF, which sort above every supplementary
// character (U+10000 and up) in UTF-16 and below them in UTF-8. Invalid
// UTF-8 is read as U+FFFD. It allocates nothing.
func Compare(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if unitOrder(ra) < unitOrder(rb) {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// unitOrder maps a rune to a number that sorts as its UTF-16 encoding
// does: below U+D800 a rune is its own unit; a supplementary rune starts
// with a surrogate (U+D800..U+DBFF), above U+D7FF and below U+E000, in
// code point order among themselves.
func unitOrder(r rune) int32 {
	switch {
	case r < 0xD800:
		return r
	case r >= 0x10000:
		return 0xD800 + (r - 0x10000)
	}
	return r + 0x100000 // U+E000..U+FFFF (a lone surrogate decodes as U+FFFD)
}

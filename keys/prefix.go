package keys

import "unicode/utf16"

// PrefixRange returns the bounds of the keys that start with prefix: a key
// k starts with prefix exactly when lo <= k and k < hi, so
// "RowKey ge lo and RowKey lt hi" (Key.Prefix) selects them. It serves the
// guide's range queries, such as its "RowKey ge 'email_a' and RowKey lt
// 'email_b'" for e-mail addresses starting with "a".
//
// lo is prefix. hi is the smallest string above every key with that prefix,
// computed in the order the Table service compares keys: ordinal order of
// UTF-16 code units (.NET's String.CompareOrdinal; Azurite compares the
// same way). So the last UTF-16 unit is incremented, skipping the
// surrogate block: after U+D7FF comes U+10000 (a surrogate pair), after
// U+10FFFF comes U+E000, and a trailing U+FFFF is dropped and the unit
// before it incremented instead ("a\uffff" gives hi "b"). Note that in
// UTF-16 order U+E000..U+FFFF sort above every supplementary character,
// unlike in Go's byte-wise string order.
//
// When no string is above every key with the prefix (the empty prefix, or
// a prefix made only of U+FFFF), hi is "" and means "no upper bound": use
// only "ge lo". Invalid UTF-8 in prefix is read as U+FFFD.
func PrefixRange(prefix string) (lo, hi string) {
	u := utf16.Encode([]rune(prefix))
	for len(u) > 0 {
		last := u[len(u)-1]
		switch {
		case last == 0xFFFF:
			u = u[:len(u)-1]
			continue
		case last == 0xDFFF && len(u) >= 2: // U+xxxFFFF in a pair: carry into the high surrogate
			h := u[len(u)-2]
			u = u[:len(u)-2]
			if h == 0xDBFF { // after U+10FFFF
				u = append(u, 0xE000)
			} else {
				u = append(u, h+1, 0xDC00)
			}
		case last == 0xD7FF: // next unit would be a lone high surrogate
			u = append(u[:len(u)-1], 0xD800, 0xDC00)
		default:
			u = append(u[:len(u)-1], last+1)
		}
		return prefix, string(utf16.Decode(u))
	}
	return prefix, ""
}

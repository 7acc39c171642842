package patterns

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// position is a point in a table's key order, (PartitionKey, RowKey)
// compared as the service compares keys (keys.Compare). The zero position
// is the start of the table: ("", "") is at or before every key.
type position struct {
	PK string `json:"p,omitempty"`
	RK string `json:"r,omitempty"`
	// PartEnd is the point after every row of partition PK (RK unused).
	PartEnd bool `json:"e,omitempty"`
	// End is the point after every key of the table.
	End bool `json:"x,omitempty"`
}

func keyAt(pk, rk string) position { return position{PK: pk, RK: rk} }

// cmpPos orders positions; a key k is in [lo, hi) when cmpPos(lo, k) <= 0
// and cmpPos(k, hi) < 0.
func cmpPos(a, b position) int {
	switch {
	case a.End && b.End:
		return 0
	case a.End:
		return 1
	case b.End:
		return -1
	}
	if c := keys.Compare(a.PK, b.PK); c != 0 {
		return c
	}
	switch {
	case a.PartEnd && b.PartEnd:
		return 0
	case a.PartEnd:
		return 1
	case b.PartEnd:
		return -1
	}
	return keys.Compare(a.RK, b.RK)
}

// boundsFilter is the filter selecting the keys in [lo, hi), in one of the
// two shapes the service serves as a range: rows of one partition
// ("PartitionKey eq p and RowKey ge a and RowKey lt b") or whole
// partitions ("PartitionKey ge a and PartitionKey lt b"). The scan only
// makes ranges of those shapes; any other (a tampered token) is refused.
func boundsFilter(lo, hi position) (keys.Filter, error) {
	if lo.End {
		return keys.Filter{}, fmt.Errorf("%w: a scan range starts at the end of the table", tablekit.ErrInvalidToken)
	}
	if !hi.End && !lo.PartEnd && lo.PK == hi.PK {
		// One partition, rows from lo.RK to hi.RK (or the partition's end).
		fs := []keys.Filter{keys.PK().Eq(lo.PK)}
		if lo.RK != "" {
			fs = append(fs, keys.RK().Ge(lo.RK))
		}
		if !hi.PartEnd {
			fs = append(fs, keys.RK().Lt(hi.RK))
		}
		return keys.And(fs...), nil
	}
	if lo.RK != "" || (!hi.End && !hi.PartEnd && hi.RK != "") {
		return keys.Filter{}, fmt.Errorf("%w: a scan range spans partitions from or to the middle of one", tablekit.ErrInvalidToken)
	}
	var fs []keys.Filter
	switch {
	case lo.PartEnd:
		fs = append(fs, keys.PK().Gt(lo.PK))
	case lo.PK != "":
		fs = append(fs, keys.PK().Ge(lo.PK))
	}
	switch {
	case hi.End:
	case hi.PartEnd:
		fs = append(fs, keys.PK().Le(hi.PK))
	default:
		fs = append(fs, keys.PK().Lt(hi.PK))
	}
	if len(fs) == 0 {
		return keys.Filter{}, nil
	}
	return keys.And(fs...), nil
}

// rowPosition reads the keys of one row of a query page.
func rowPosition(raw []byte) (position, error) {
	var k struct{ PartitionKey, RowKey *string }
	if err := json.Unmarshal(raw, &k); err != nil || k.PartitionKey == nil || k.RowKey == nil {
		return position{}, fmt.Errorf("tablekit: scan: a row without its keys (PartitionKey and RowKey must be selected)")
	}
	return keyAt(*k.PartitionKey, *k.RowKey), nil
}

// Key-space arithmetic for split points. A key is read as a fraction in
// base 65536 whose digits are its UTF-16 code units; a split point is a
// string strictly between two keys, preferably near the middle of the
// keys that exist there, which probes then turn into an existing key.

// midKey returns a string m with lo < m < hi in the service's order, or
// false when there is none worth probing. hi == "" with open set means no
// upper bound. Where hi leaves a digit free (the tail after the first
// difference), the digit is taken halfway to the end of lo's digit's
// class (tailTop): keys are mostly ASCII digits and letters, and a probe
// that finds nothing narrows the bound anyway.
func midKey(lo, hi string, open bool) (string, bool) {
	a := utf16.Encode([]rune(lo))
	var b []uint16
	if !open {
		b = utf16.Encode([]rune(hi))
	}
	out := make([]uint16, 0, len(a)+2)
	i := 0
	// The common prefix.
	for !open && i < len(a) && i < len(b) && a[i] == b[i] {
		out = append(out, a[i])
		i++
	}
	if !open && i == len(b) {
		return "", false // hi is a prefix of lo, or equal: nothing between
	}
	// At the first difference: a digit strictly between a[i] and b[i]
	// when there is room; otherwise keep a[i] and go on in the tail,
	// where any continuation of lo's prefix stays below hi.
	digit := func(j int) int {
		if j < len(a) {
			return int(a[j])
		}
		return -1
	}
	if !open {
		d, e := digit(i), int(b[i])
		if e-d >= 2 {
			m := (d + e) / 2
			if m < 0x20 {
				m = 0x20
			}
			if m > d && m < e {
				return finishKey(append(out, uint16(m)), lo, hi, open)
			}
		}
		if i >= len(a) {
			// lo is a prefix of hi and b[i] <= 1 above nothing: only
			// strings starting with lo + (units below b[i]) fit.
			return "", false
		}
		out = append(out, a[i])
		i++
	}
	// The tail: lo's digits from i on, with no upper bound.
	for ; i <= len(a) && i < 64; i++ {
		d := digit(i)
		top := tailTop(d)
		m := (d + top) / 2
		if m < 0x20 {
			m = 0x20
		}
		if m > d && m <= 0xFFFF {
			return finishKey(append(out, uint16(m)), lo, hi, open)
		}
		out = append(out, uint16(d))
	}
	return "", false
}

// tailTop is the digit a free position of a split point aims below, by
// the class of lo's digit there: keys of decimal digits, of lower-case or
// upper-case letters mostly continue in their class (padded numbers,
// hex, names); other ASCII stays ASCII. Too narrow a guess only gives a
// point nearer lo; too wide a one would find no key at all.
func tailTop(d int) int {
	switch {
	case d >= '0' && d <= '9':
		return '9' + 1
	case d >= 'a' && d <= 'z':
		return 'z' + 1
	case d >= 'A' && d <= 'Z':
		return 'Z' + 1
	case d < 0x7F:
		return 0x7F
	}
	return 0xFFFF + 1
}

// finishKey turns units into a string, replacing a lone surrogate (which
// UTF-8 cannot carry) with U+D7FF, and checks that the result is still
// strictly between lo and hi.
func finishKey(units []uint16, lo, hi string, open bool) (string, bool) {
	for i, u := range units {
		if u >= 0xD800 && u <= 0xDFFF {
			paired := u <= 0xDBFF && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] <= 0xDFFF
			after := u >= 0xDC00 && i > 0 && units[i-1] >= 0xD800 && units[i-1] <= 0xDBFF
			if !paired && !after {
				units = append(units[:i], 0xD7FF)
				break
			}
		}
	}
	m := string(utf16.Decode(units))
	if keys.Compare(m, lo) <= 0 || (!open && keys.Compare(m, hi) >= 0) {
		return "", false
	}
	return m, true
}

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
// upper bound. Its digits are taken from the narrowest alphabet that
// holds lo's and hi's units after their common prefix (keyAlphabets: decimal, hex, letters,
// alphanumeric, ASCII, any): at the first difference, the digit halfway
// between theirs; in the tail that hi leaves free, the digit halfway from
// lo's to the end of the alphabet. Keys mostly keep to one alphabet, and
// a probe that finds nothing narrows the bound anyway.
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
	al := alphabetOf(a[i:], b[min(i, len(b)):])
	if !open && i == len(b) {
		return "", false // hi is a prefix of lo, or equal: nothing between
	}
	// At the first difference: a digit strictly between a[i] and b[i]
	// when there is room; otherwise keep a[i] and go on in the tail,
	// where any continuation of lo's prefix stays below hi.
	rank := func(j int) int { // -1 past lo's end
		if j < len(a) {
			return al.rank(a[j])
		}
		return -1
	}
	if !open {
		d, e := rank(i), al.rank(b[i])
		if e-d >= 2 {
			m := int(al.unit((d + e) / 2))
			if m < 0x20 {
				m = 0x20
			}
			if (i >= len(a) || m > int(a[i])) && m < int(b[i]) {
				return finishKey(append(out, uint16(m)), lo, hi, open)
			}
		}
		if i >= len(a) {
			// lo is a prefix of hi and b[i] is its alphabet's first
			// digit: nothing in the alphabet fits.
			return "", false
		}
		out = append(out, a[i])
		i++
	}
	// The tail: lo's digits from i on, with no upper bound.
	for ; i <= len(a) && i < 64; i++ {
		d := rank(i)
		if m := (d + al.size) / 2; m > d && m < al.size {
			u := max(al.unit(m), 0x20)
			if i >= len(a) || u > a[i] {
				return finishKey(append(out, u), lo, hi, open)
			}
		}
		if i < len(a) {
			out = append(out, a[i])
		}
	}
	return "", false
}

// alphabetOf is the narrowest of keyAlphabets that holds every unit of
// the keys.
func alphabetOf(ks ...[]uint16) keyAlphabet {
	for _, al := range keyAlphabets {
		fits := true
		for _, k := range ks {
			for _, u := range k {
				if al.rank(u) < 0 {
					fits = false
					break
				}
			}
		}
		if fits {
			return al
		}
	}
	return keyAlphabets[len(keyAlphabets)-1]
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

// pagesLeft estimates how many pages a range has left before stop, from
// its last page, whose keys went from first to last.
func pagesLeft(first, last, stop position) (float64, bool) {
	return pagesBetween(first, last, last, stop)
}

// pagesBetween estimates how many pages hold the keys from lo to stop,
// from a page whose keys went from first to last: the key space from lo
// to stop over the space that page covered, reading keys as numbers
// (keyValues). It cannot tell (false) when the keys are not of one kind:
// a page across partitions measures PartitionKeys, so lo and stop must
// be partitions' starts; a page within one partition measures its
// RowKeys, so lo and stop must lie in it.
func pagesBetween(first, last, lo, stop position) (float64, bool) {
	var ks [4]string
	switch {
	case stop.End || stop.PartEnd || lo.End || lo.PartEnd:
		return 0, false
	case first.PK != last.PK:
		ks = [4]string{first.PK, last.PK, lo.PK, stop.PK}
	case lo.PK == last.PK && stop.PK == last.PK:
		ks = [4]string{first.RK, last.RK, lo.RK, stop.RK}
	default:
		return 0, false
	}
	v := keyValues(ks[:])
	covered := v[1] - v[0]
	if covered <= 0 {
		return 0, false
	}
	return max(v[3]-v[2], 0) / covered, true
}

// keyValues reads keys as numbers after their common prefix: the digits
// are the UTF-16 units of the narrowest alphabet that holds all of them
// there (keyAlphabets: decimal, hex, letters, alphanumeric, ASCII, any),
// the end of a key its lowest digit. It is an estimate: keys need not
// fill their alphabet evenly.
func keyValues(ks []string) []float64 {
	u := make([][]uint16, len(ks))
	for i, k := range ks {
		u[i] = utf16.Encode([]rune(k))
	}
	p := 0 // the common prefix
	for ; ; p++ {
		same := true
		for _, k := range u {
			if p >= len(k) || k[p] != u[0][p] {
				same = false
				break
			}
		}
		if !same {
			break
		}
	}
	const places = 8
	tails := make([][]uint16, len(u))
	for i, k := range u {
		tails[i] = k[min(p, len(k)):min(p+places, len(k))]
	}
	alpha := alphabetOf(tails...)
	v := make([]float64, len(u))
	for i, t := range tails {
		scale := 1.0
		for _, d := range t {
			scale /= float64(alpha.size)
			v[i] += float64(alpha.rank(d)) * scale
		}
	}
	return v
}

// keyAlphabet is a set of UTF-16 units, as ranges in order.
type keyAlphabet struct {
	ranges [][2]uint16 // inclusive, ascending
	size   int
}

// unit is the unit at place r of the alphabet (0 <= r < size).
func (al keyAlphabet) unit(r int) uint16 {
	for _, rg := range al.ranges {
		if n := int(rg[1]-rg[0]) + 1; r < n {
			return rg[0] + uint16(r)
		} else {
			r -= n
		}
	}
	return al.ranges[len(al.ranges)-1][1]
}

// top is the unit after the alphabet's last.
func (al keyAlphabet) top() int { return int(al.ranges[len(al.ranges)-1][1]) + 1 }

// rank is u's place in the alphabet, -1 when it is not in it.
func (al keyAlphabet) rank(u uint16) int {
	r := 0
	for _, rg := range al.ranges {
		if u >= rg[0] && u <= rg[1] {
			return r + int(u-rg[0])
		}
		r += int(rg[1]-rg[0]) + 1
	}
	return -1
}

func alphabet(ranges ...[2]uint16) keyAlphabet {
	al := keyAlphabet{ranges: ranges}
	for _, rg := range ranges {
		al.size += int(rg[1]-rg[0]) + 1
	}
	return al
}

// keyAlphabets are the alphabets keySpan tries, narrowest first.
var keyAlphabets = []keyAlphabet{
	alphabet([2]uint16{'0', '9'}),
	alphabet([2]uint16{'0', '9'}, [2]uint16{'a', 'f'}),
	alphabet([2]uint16{'0', '9'}, [2]uint16{'A', 'F'}),
	alphabet([2]uint16{'a', 'z'}),
	alphabet([2]uint16{'A', 'Z'}),
	alphabet([2]uint16{'0', '9'}, [2]uint16{'a', 'z'}),
	alphabet([2]uint16{'0', '9'}, [2]uint16{'A', 'Z'}, [2]uint16{'a', 'z'}),
	alphabet([2]uint16{0x20, 0x7E}),
	alphabet([2]uint16{0, 0xFFFF}),
}

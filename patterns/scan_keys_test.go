package patterns

import (
	"fmt"
	"math"
	"testing"
)

// pagesLeft is what keeps a scan from spending a split search on a range
// about to end: its estimate must be near the truth on the key shapes
// users have (padded numbers, hex, names), and must not claim to know
// when it cannot.
func TestPagesLeft(t *testing.T) {
	t.Parallel()
	num := func(i int) string { return fmt.Sprintf("user-0000000000000000-%08d", i) }
	hex := func(i uint32) string { return fmt.Sprintf("%08x", i) }
	cases := []struct {
		name              string
		first, last, stop position
		want              float64 // 0 with known false
		known             bool
	}{
		{"padded numbers in one partition, 32 pages left",
			keyAt("hot", num(17000)), keyAt("hot", num(17999)), keyAt("hot", num(50000)), 32, true},
		{"padded numbers, under a page left",
			keyAt("hot", num(17000)), keyAt("hot", num(17999)), keyAt("hot", num(18500)), 0.5, true},
		{"hex partitions, 15 pages left",
			keyAt(hex(0x10000000), "0"), keyAt(hex(0x1fffffff), "9"), keyAt(hex(0xfffffff0), ""), 14, true},
		{"hex partitions across the digit-letter boundary",
			keyAt(hex(0x90000000), "0"), keyAt(hex(0x9fffffff), "9"), keyAt(hex(0xb0000000), ""), 1, true},
		{"names",
			keyAt("adams", "1"), keyAt("baker", "1"), keyAt("zimmer", ""), 24, true},
		{"stop at the table's end", keyAt("a", "1"), keyAt("b", "1"), position{End: true}, 0, false},
		{"a page in one partition, stop in a later one", keyAt("p", "1"), keyAt("p", "9"), keyAt("q", ""), 0, false},
		{"stop at a partition's end", keyAt("p", "1"), keyAt("p", "9"), position{PK: "p", PartEnd: true}, 0, false},
		{"one key a page", keyAt("p", "5"), keyAt("p", "5"), keyAt("p", "9"), 0, false},
	}
	// A range a split made, measured by its parent's last page.
	if got, ok := pagesBetween(keyAt("hot", num(17000)), keyAt("hot", num(17999)), keyAt("hot", num(30000)), keyAt("hot", num(31000))); !ok || math.Abs(got-1) > 0.5 {
		t.Errorf("pagesBetween for a range of a page = %.2f, %v; want about 1", got, ok)
	}
	if _, ok := pagesBetween(keyAt("hot", num(17000)), keyAt("hot", num(17999)), keyAt("p", ""), keyAt("q", "")); ok {
		t.Errorf("pagesBetween measured partitions by a page of RowKeys")
	}
	for _, c := range cases {
		got, known := pagesLeft(c.first, c.last, c.stop)
		if known != c.known {
			t.Errorf("%s: known = %v, want %v (estimate %v)", c.name, known, c.known, got)
			continue
		}
		// The class arithmetic is an estimate: within a third, or within
		// half a page of a small answer.
		if known && math.Abs(got-c.want) > max(c.want/3, 0.5) {
			t.Errorf("%s: pagesLeft = %.2f, want about %v", c.name, got, c.want)
		}
	}
}

package keys_test

import (
	"cmp"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/tablekit/tablekit/keys"
)

// compareKeys is the service's key order (ordinal UTF-16 code units).
func compareKeys(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func sign(c int) int { return cmp.Compare(c, 0) }

func TestPadIntOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200_000; i++ {
		w := 1 + r.Intn(19)
		limit := int64(1)
		for range w {
			if limit > (1<<63-1)/10 {
				limit = 1<<63 - 1
				break
			}
			limit *= 10
		}
		gen := func() int64 {
			switch r.Intn(4) {
			case 0: // around zero, within the width
				return (int64(r.Intn(21)) - 10) % limit
			case 1:
				return -(limit - 1) + int64(r.Intn(3))
			default:
				n := r.Int63n(limit)
				if r.Intn(2) == 0 {
					n = -n
				}
				return n
			}
		}
		a, b := gen(), gen()
		sa, sb := keys.PadInt(a, w), keys.PadInt(b, w)
		if sign(strings.Compare(sa, sb)) != cmp.Compare(a, b) {
			t.Fatalf("width %d: PadInt(%d) = %q, PadInt(%d) = %q: string order differs from numeric order", w, a, sa, b, sb)
		}
		if pa, err := keys.ParsePadInt(sa); err != nil || pa != a {
			t.Fatalf("ParsePadInt(%q) = %d, %v; want %d", sa, pa, err, a)
		}
	}
	for i := 0; i < 100_000; i++ { // the whole int64 range at width 19
		a, b := int64(r.Uint64()), int64(r.Uint64())
		if sign(strings.Compare(keys.PadInt(a, 19), keys.PadInt(b, 19))) != cmp.Compare(a, b) {
			t.Fatalf("PadInt(%d, 19) and PadInt(%d, 19) out of order", a, b)
		}
		ua, ub := r.Uint64(), r.Uint64()>>r.Intn(64)
		if sign(strings.Compare(keys.PadUint(ua, 20), keys.PadUint(ub, 20))) != cmp.Compare(ua, ub) {
			t.Fatalf("PadUint(%d, 20) and PadUint(%d, 20) out of order", ua, ub)
		}
	}
}

func TestTicksOrder(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	gen := func() time.Time {
		if r.Intn(4) == 0 { // close together
			return time.Date(2014, 8, 22, 0, 50, 32, r.Intn(1000)*100, time.UTC)
		}
		return keys.TimeFromTicks(r.Int63n(keys.MaxTicks + 1))
	}
	for i := 0; i < 100_000; i++ {
		a, b := gen(), gen()
		want := a.Compare(b)
		if got := sign(strings.Compare(keys.InvertedTicks(a), keys.InvertedTicks(b))); got != -want {
			t.Fatalf("InvertedTicks(%v) vs (%v): %d, want reversed %d", a, b, got, -want)
		}
		if got := sign(strings.Compare(keys.TimeKey(a), keys.TimeKey(b))); got != want {
			t.Fatalf("TimeKey(%v) vs (%v): %d, want %d", a, b, got, want)
		}
		if back, err := keys.ParseInvertedTicks(keys.InvertedTicks(a)); err != nil || !back.Equal(a) {
			t.Fatalf("ParseInvertedTicks round trip of %v = %v, %v", a, back, err)
		}
	}
}

// randPart draws a part from alphabet, short enough to share prefixes often.
func randPart(r *rand.Rand, alphabet []rune) string {
	n := r.Intn(4)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(rs)
}

func TestCompoundOrder(t *testing.T) {
	tests := []struct {
		name     string
		sep      byte
		alphabet []rune
	}{
		// With ' ' as separator every valid key character sorts above it, so
		// any parts keep their order.
		{"space separator, any characters", ' ', []rune{' ', '!', '"', '0', 'A', '_', '`', 'a', '~', 'é', '\ud7ff', '\ue000', '\uffff', '\U00010000', '\U0010ffff'}},
		// With '_' the order holds for parts whose characters are not below
		// '_' (and for fixed-width parts, tested below).
		{"underscore separator", '_', []rune{'_', '`', 'a', 'b', 'z', '~', 'é', '\uffff', '\U00010000'}},
	}
	r := rand.New(rand.NewSource(3))
	for _, tt := range tests {
		c, err := keys.NewCompound(tt.sep)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100_000; i++ {
			a := []string{randPart(r, tt.alphabet), randPart(r, tt.alphabet), randPart(r, tt.alphabet)}
			b := []string{randPart(r, tt.alphabet), randPart(r, tt.alphabet), randPart(r, tt.alphabet)}
			if r.Intn(2) == 0 {
				b[0] = a[0]
			}
			want := slices.CompareFunc(a, b, compareKeys)
			ka, kb := c.Join(a...), c.Join(b...)
			if got := sign(compareKeys(ka, kb)); got != sign(want) {
				t.Fatalf("%s: %q -> %q, %q -> %q: key order %d, part order %d", tt.name, a, ka, b, kb, got, want)
			}
		}
	}
	// Fixed-width parts with any separator: the guide's empid_000123_2012.
	for i := 0; i < 100_000; i++ {
		a := [2]int64{r.Int63n(2_000_000) - 1_000_000, r.Int63n(3000)}
		b := [2]int64{r.Int63n(2_000_000) - 1_000_000, r.Int63n(3000)}
		if r.Intn(2) == 0 {
			b[0] = a[0]
		}
		ka := keys.Join("empid", keys.PadInt(a[0], 7), keys.PadInt(a[1], 4))
		kb := keys.Join("empid", keys.PadInt(b[0], 7), keys.PadInt(b[1], 4))
		want := cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		if got := sign(strings.Compare(ka, kb)); got != want {
			t.Fatalf("%v -> %q, %v -> %q: key order %d, want %d", a, ka, b, kb, got, want)
		}
	}
}

// TestCompareIsTheServiceOrder checks Compare against the UTF-16 encoding
// on random keys mixing ASCII, BMP characters on both sides of the
// surrogate block, supplementary characters and shared prefixes.
func TestCompareIsTheServiceOrder(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	alphabet := []rune{'a', 'b', 'Z', '0', '~', 0xE9, 0x4E2D, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF}
	gen := func() string {
		var b strings.Builder
		for range r.Intn(6) {
			b.WriteRune(alphabet[r.Intn(len(alphabet))])
		}
		return b.String()
	}
	for range 100_000 {
		a, b := gen(), gen()
		if r.Intn(4) == 0 {
			b = a + b
		}
		if got, want := keys.Compare(a, b), sign(compareKeys(a, b)); got != want {
			t.Fatalf("Compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

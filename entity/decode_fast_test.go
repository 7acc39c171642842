package entity

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exactDecimal, when it answers, answers what strconv.ParseFloat does,
// bit for bit; what it cannot do exactly it leaves to strconv.
func TestExactDecimalMatchesStrconv(t *testing.T) {
	cases := []string{"0", "-0", "0.0", "-0.0", "4.5", "97.25", "-1", "123456789012345", "-123456789012345",
		"1234567890123456", "0.1", "0.3", "1.000000000000001", "0.000000000000001", "99999999999999.9",
		"00012.50", "1e5", "1E-5", "1.5e3", "", "-", ".", "1.", ".5", "1..2", "--1", "1-", "+1", "0x10", "1_0", "١"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteByte('-')
		}
		n := 1 + rng.IntN(18)
		point := rng.IntN(n + 1)
		for i := range n {
			if i == point && i > 0 {
				b.WriteByte('.')
			}
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		x, ok := exactDecimal([]byte(c))
		if !ok {
			continue
		}
		want, err := strconv.ParseFloat(c, 64)
		if err != nil {
			t.Fatalf("exactDecimal(%q) = %v, strconv fails: %v", c, x, err)
		}
		if math.Float64bits(x) != math.Float64bits(want) {
			t.Fatalf("exactDecimal(%q) = %v (%#x), strconv %v (%#x)", c, x, math.Float64bits(x), want, math.Float64bits(want))
		}
	}
	for _, c := range []string{"", "-", ".", "1.", ".5", "-.5", "1e5", "1234567890123456", "1..2", "+1"} {
		if x, ok := exactDecimal([]byte(c)); ok {
			t.Errorf("exactDecimal(%q) = %v, ok; want it left to strconv", c, x)
		}
	}
}

// parseTime's loop-free path for the service's form gives what the
// general path gives (and time.Parse) on every valid instant, and leaves
// everything else to it: a bad digit at every position, impossible dates
// and times.
func TestCanonicalTimeMatchesTimeParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var texts []string
	for range 50000 {
		sec := rng.Int64N(253402300800) - 62135596800 // years 0001 to 9999
		tm := time.Unix(sec, rng.Int64N(1e7)*100).UTC()
		texts = append(texts, tm.Format("2006-01-02T15:04:05.0000000Z"))
	}
	texts = append(texts, "0000-01-01T00:00:00.0000000Z", "9999-12-31T23:59:59.9999999Z",
		"2024-02-29T00:00:00.0000000Z", "2023-02-29T00:00:00.0000000Z", "1900-02-29T00:00:00.0000000Z",
		"2000-02-29T00:00:00.0000000Z", "2024-04-31T00:00:00.0000000Z", "2024-13-01T00:00:00.0000000Z",
		"2024-00-01T00:00:00.0000000Z", "2024-01-00T00:00:00.0000000Z", "2024-01-01T24:00:00.0000000Z",
		"2024-01-01T23:60:00.0000000Z", "2024-01-01T23:59:60.0000000Z",
		"2024-01-01T00:00:00.0000000+", "2024-01-01T00:00:00,0000000Z")
	base := "2024-06-15T12:34:56.1234567Z"
	for i := range len(base) {
		for c := range 256 {
			b := []byte(base)
			b[i] = byte(c)
			texts = append(texts, string(b))
		}
	}
	for _, s := range texts {
		got, err := parseTime([]byte(s))
		want, werr := parseTimeGeneral([]byte(s))
		if (err == nil) != (werr == nil) || err == nil && (!got.Equal(want) || got.Location() != time.UTC) {
			t.Fatalf("parseTime(%q) = %v, %v; the general path %v, %v", s, got, err, want, werr)
		}
		if ct, ok := canonicalTime([]byte(s)); ok {
			if tp, err := time.Parse(time.RFC3339Nano, s); err != nil || !ct.Equal(tp) {
				t.Fatalf("canonicalTime(%q) = %v, time.Parse %v, %v", s, ct, tp, err)
			}
		}
	}
	// Lower-case t and z, which time.Parse refuses, are read as ever (by
	// the general path).
	lower, err := parseTime([]byte("2024-01-01t02:03:04.0000005z"))
	if want := time.Date(2024, 1, 1, 2, 3, 4, 500, time.UTC); err != nil || !lower.Equal(want) {
		t.Errorf("lower-case t and z: %v, %v; want %v", lower, err, want)
	}
}

// daysFromCivil counts the days time.Date counts, for every date of the
// years 0 to 9999.
func TestDaysFromCivilMatchesTimeDate(t *testing.T) {
	for y := 0; y <= 9999; y++ {
		for mo := 1; mo <= 12; mo++ {
			for d := 1; d <= daysIn(mo, y); d++ {
				want := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
				if got := daysFromCivil(y, mo, d); got != want {
					t.Fatalf("daysFromCivil(%d, %d, %d) = %d, want %d", y, mo, d, got, want)
				}
			}
		}
	}
}

package keys_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/tablekit/tablekit/keys"
)

func TestPadInt(t *testing.T) {
	tests := []struct {
		n     int64
		width int
		want  string
	}{
		{223, 6, "000223"},
		{0, 3, "000"},
		{-1, 3, "-999"},
		{-999, 3, "-001"},
		{-5, 1, "-5"},
		{1234, 2, "1234"},
		{-1234, 2, "-8766"}, // too wide: written with 4 digits
		{5, 0, "5"},
		{9223372036854775807, 19, "9223372036854775807"},
		{-9223372036854775808, 19, "-0776627963145224192"},
		{-9223372036854775808, 25, "-9999990776627963145224192"},
	}
	for _, tt := range tests {
		got := keys.PadInt(tt.n, tt.width)
		if got != tt.want {
			t.Errorf("PadInt(%d, %d) = %q, want %q", tt.n, tt.width, got, tt.want)
		}
		back, err := keys.ParsePadInt(got)
		if err != nil || back != tt.n {
			t.Errorf("ParsePadInt(%q) = %d, %v; want %d", got, back, err, tt.n)
		}
	}
	if got := keys.PadUint(18446744073709551615, 20); got != "18446744073709551615" {
		t.Errorf("PadUint(max) = %q", got)
	}
	if got := keys.PadUint(7, 3); got != "007" {
		t.Errorf("PadUint(7, 3) = %q", got)
	}
	for _, bad := range []string{"", "-", "+1", " 1", "1a", "-000", "--1", "9223372036854775808", "-0000000000000000000001", "-1" + strings.Repeat("0", 19)} {
		if n, err := keys.ParsePadInt(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParsePadInt(%q) = %d, %v; want ErrInvalidKey", bad, n, err)
		}
	}
	for _, bad := range []string{"", "-1", "1.0", "18446744073709551616"} {
		if n, err := keys.ParsePadUint(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParsePadUint(%q) = %d, %v; want ErrInvalidKey", bad, n, err)
		}
	}
}

// netTicks computes DateTime.Ticks from the calendar, independently of
// Ticks: days since 0001-01-01 in the proleptic Gregorian calendar.
func netTicks(y, mo, d, h, mi, s int) int64 {
	cum := []int{0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}
	days := int64(365*(y-1) + (y-1)/4 - (y-1)/100 + (y-1)/400 + cum[mo-1] + d - 1)
	leap := y%4 == 0 && (y%100 != 0 || y%400 == 0)
	if leap && mo > 2 {
		days++
	}
	return days*864_000_000_000 + int64(h*3600+mi*60+s)*10_000_000
}

func TestInvertedTicksMatchesDotNet(t *testing.T) {
	const dateTimeMaxValueTicks = 3155378975999999999
	instants := [][6]int{
		{2014, 8, 22, 0, 50, 32}, // the guide's tables
		{1, 1, 1, 0, 0, 0},
		{1970, 1, 1, 0, 0, 0},
		{2000, 2, 29, 23, 59, 59},
		{2024, 12, 31, 12, 0, 0},
		{9999, 12, 31, 23, 59, 59},
	}
	for _, in := range instants {
		tm := time.Date(in[0], time.Month(in[1]), in[2], in[3], in[4], in[5], 0, time.UTC)
		ticks := netTicks(in[0], in[1], in[2], in[3], in[4], in[5])
		if got := keys.Ticks(tm); got != ticks {
			t.Errorf("Ticks(%v) = %d, want %d", tm, got, ticks)
		}
		want := strconv.FormatInt(dateTimeMaxValueTicks-ticks, 10)
		want = strings.Repeat("0", 19-len(want)) + want // {0:D19}
		if got := keys.InvertedTicks(tm); got != want {
			t.Errorf("InvertedTicks(%v) = %q, want %q", tm, got, want)
		}
		back, err := keys.ParseInvertedTicks(want)
		if err != nil || !back.Equal(tm) || back.Location() != time.UTC {
			t.Errorf("ParseInvertedTicks(%q) = %v, %v; want %v", want, back, err, tm)
		}
		tk := keys.TimeKey(tm)
		if back, err := keys.ParseTimeKey(tk); err != nil || !back.Equal(tm) || len(tk) != 19 {
			t.Errorf("TimeKey round trip of %v: %q -> %v, %v", tm, tk, back, err)
		}
	}
	// A value computed once with .NET's formula, as a fixed point.
	if got := keys.InvertedTicks(time.Date(2014, 8, 22, 0, 50, 32, 0, time.UTC)); got != "2519936321679999999" {
		t.Errorf("InvertedTicks(2014-08-22T00:50:32Z) = %s", got)
	}
	// Zones and sub-tick precision.
	est := time.FixedZone("EST", -5*3600)
	a := time.Date(2014, 8, 21, 19, 50, 32, 123456789, est)
	b := time.Date(2014, 8, 22, 0, 50, 32, 123456700, time.UTC)
	if keys.InvertedTicks(a) != keys.InvertedTicks(b) {
		t.Errorf("InvertedTicks depends on the zone or on nanoseconds below 100")
	}
	if back, _ := keys.ParseInvertedTicks(keys.InvertedTicks(a)); !back.Equal(b) {
		t.Errorf("round trip with 100 ns = %v, want %v", back, b)
	}
	// Clamping outside DateTime's range.
	if got := keys.Ticks(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)); got != 0 {
		t.Errorf("Ticks(year 0) = %d, want 0", got)
	}
	if got := keys.Ticks(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); got != keys.MaxTicks {
		t.Errorf("Ticks(year 10000) = %d, want MaxTicks", got)
	}
	for _, bad := range []string{"", "123", "25199363216799999990", "251993632167999999x", "9999999999999999999", "-519936321679999999"} {
		if _, err := keys.ParseInvertedTicks(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParseInvertedTicks(%q) error = %v", bad, err)
		}
		if _, err := keys.ParseTimeKey(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParseTimeKey(%q) error = %v", bad, err)
		}
	}
}

// utf16Less is the service's key order: ordinal UTF-16 code units.
func utf16Less(a, b string) bool {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))) < 0
}

func TestPrefixRange(t *testing.T) {
	tests := []struct{ prefix, hi string }{
		{"", ""},
		{"email_a", "email_b"},
		{"empid_000123", "empid_000124"},
		{"a\uffff", "b"},
		{"\uffff\uffff", ""},
		{"a\ud7ff", "a\U00010000"},
		{"a\U00010000", "a\U00010001"},
		{"a\U0001ffff", "a\U00020000"},
		{"a\U0010ffff", "a\ue000"},
		{"a\U0010ffff\uffff", "a\ue000"},
		{"日本", "日\u672d"},
		{"z", "{"},
	}
	for _, tt := range tests {
		lo, hi := keys.PrefixRange(tt.prefix)
		if lo != tt.prefix || hi != tt.hi {
			t.Errorf("PrefixRange(%+q) = %+q, %+q; want %+q", tt.prefix, lo, hi, tt.hi)
		}
	}
	// Every key with the prefix is in [lo, hi) and no probe without it is.
	probes := []string{"", "a", "b", "a\uffff", "a\uffffz", "a\U0010ffff", "a\U0010ffffq", "a\ue000", "a\ud7ff", "a\ud7ffx",
		"a\U00010000", "a\U00010000\U00010000", "a\U00020000", "b\U00010000", "日本", "日本x", "日\u672d", "日\u672dx", "\uffff", "\uffff\uffff", "\uffff\uffff\uffff"}
	for _, tt := range tests {
		lo, hi := keys.PrefixRange(tt.prefix)
		for _, k := range probes {
			in := !utf16Less(k, lo) && (hi == "" || utf16Less(k, hi))
			if in != strings.HasPrefix(k, tt.prefix) {
				t.Errorf("PrefixRange(%+q): key %+q in range = %v, has prefix = %v", tt.prefix, k, in, !in)
			}
		}
	}
}

func TestBucket(t *testing.T) {
	// FNV-1a 32 reference values: "" -> 0x811c9dc5, "a" -> 0xe40c292c,
	// "foobar" -> 0xbf9cf968; after fmix32: 0xab3e7c0b, 0x1a80b1b3, 0x0c0da6dc.
	tests := []struct {
		key  string
		n    int
		want int
	}{
		{"", 1000, 0xab3e7c0b % 1000},
		{"a", 16, 0x1a80b1b3 % 16},
		{"foobar", 10, 0x0c0da6dc % 10},
		{"anything", 1, 0},
		{"anything", 0, 0},
		{"anything", -3, 0},
	}
	for _, tt := range tests {
		if got := keys.Bucket(tt.key, tt.n); got != tt.want {
			t.Errorf("Bucket(%q, %d) = %d, want %d", tt.key, tt.n, got, tt.want)
		}
	}
	if got := keys.BucketKey("Sales", 7, 16); got != "Sales_07" {
		t.Errorf("BucketKey = %q", got)
	}
	if got := keys.BucketKey("R_D", 3, 10); got != "R`_D_3" {
		t.Errorf("BucketKey escaping = %q", got)
	}
	all := keys.BucketKeys("Sales", 12)
	if len(all) != 12 || all[0] != "Sales_00" || all[11] != "Sales_11" || !slices.IsSorted(all) {
		t.Errorf("BucketKeys = %q", all)
	}
	if got := keys.BucketedKey("Sales", "a", 16); got != "Sales_03" { // 0x1a80b1b3 % 16 == 3
		t.Errorf("BucketedKey = %q", got)
	}
	// Keys that differ only in trailing digits spread over a power-of-two
	// count of buckets (plain FNV-1a put 120 such keys in 2 of 8).
	seen := map[int]int{}
	for i := 0; i < 120; i++ {
		seen[keys.Bucket(keys.TimeKey(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))+"_"+keys.PadInt(int64(i), 6), 8)]++
	}
	for b := 0; b < 8; b++ {
		if seen[b] < 5 {
			t.Errorf("bucket %d of 8 got %d of 120 sequential keys: %v", b, seen[b], seen)
		}
	}
	if got := keys.BucketKeys("x", 0); len(got) != 1 || got[0] != "x_0" {
		t.Errorf("BucketKeys(x, 0) = %q", got)
	}
	// Spread: 10000 keys over 16 buckets, none empty or above twice the mean.
	counts := make([]int, 16)
	for i := range 10000 {
		counts[keys.Bucket("emp"+strconv.Itoa(i), 16)]++
	}
	for b, c := range counts {
		if c == 0 || c > 2*10000/16 {
			t.Errorf("bucket %d got %d of 10000 keys", b, c)
		}
	}
}

func TestPeriodTables(t *testing.T) {
	at := time.Date(2014, 8, 22, 0, 50, 32, 0, time.FixedZone("X", 3600)) // 2014-08-21T23:50:32Z
	tests := []struct {
		p     keys.Period
		want  string
		start time.Time
	}{
		{keys.Hour, "logs2014082123", time.Date(2014, 8, 21, 23, 0, 0, 0, time.UTC)},
		{keys.Day, "logs20140821", time.Date(2014, 8, 21, 0, 0, 0, 0, time.UTC)},
		{keys.Month, "logs201408", time.Date(2014, 8, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		name, err := keys.PeriodTable("logs", tt.p, at)
		if err != nil || name != tt.want {
			t.Errorf("PeriodTable(logs, %v) = %q, %v; want %q", tt.p, name, err, tt.want)
			continue
		}
		if err := keys.ValidateTableName(name); err != nil {
			t.Errorf("%q is not a valid table name: %v", name, err)
		}
		back, err := keys.ParsePeriodTable("logs", tt.p, name)
		if err != nil || !back.Equal(tt.start) {
			t.Errorf("ParsePeriodTable(%q) = %v, %v; want %v", name, back, err, tt.start)
		}
	}
	for _, bad := range []struct {
		prefix string
		p      keys.Period
	}{{"", keys.Day}, {"1logs", keys.Day}, {"log-s", keys.Day}, {"a" + strings.Repeat("b", 56), keys.Day}, {"logs", keys.Period(9)}} {
		if _, err := keys.PeriodTable(bad.prefix, bad.p, at); !errors.Is(err, keys.ErrInvalidName) {
			t.Errorf("PeriodTable(%q, %v) error = %v, want ErrInvalidName", bad.prefix, bad.p, err)
		}
	}
	if _, err := keys.PeriodTable("logs", keys.Day, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, keys.ErrInvalidName) {
		t.Errorf("PeriodTable year 10000: %v", err)
	}
	for _, bad := range []string{"logs20140832", "logs2014082", "logz20140822", "logs201408221", "logs2014o822", "logs"} {
		if _, err := keys.ParsePeriodTable("logs", keys.Day, bad); !errors.Is(err, keys.ErrInvalidName) {
			t.Errorf("ParsePeriodTable(%q) error = %v", bad, err)
		}
	}
	names, err := keys.PeriodTables("logs", keys.Day, time.Date(2014, 2, 27, 12, 0, 0, 0, time.UTC), time.Date(2014, 3, 2, 0, 0, 0, 0, time.UTC))
	want := []string{"logs20140227", "logs20140228", "logs20140301", "logs20140302"}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("PeriodTables = %q, %v; want %q", names, err, want)
	}
	if _, err := keys.PeriodTables("logs", keys.Hour, time.Now(), time.Now().Add(-time.Hour)); !errors.Is(err, keys.ErrInvalidName) {
		t.Errorf("PeriodTables reversed: %v", err)
	}
	if keys.Day.String() != "day" || keys.Period(0).String() != "Period(0)" {
		t.Errorf("Period.String: %q %q", keys.Day, keys.Period(0))
	}
}

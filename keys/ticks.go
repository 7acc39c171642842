package keys

import (
	"fmt"
	"strconv"
	"time"
)

// MaxTicks is .NET's DateTime.MaxValue.Ticks: 9999-12-31T23:59:59.9999999
// in 100-nanosecond ticks since 0001-01-01T00:00:00.
const MaxTicks int64 = 3155378975999999999

// unixEpochTicks is the tick count of 1970-01-01T00:00:00Z.
const unixEpochTicks int64 = 621355968000000000

const ticksPerSecond = 10_000_000

var (
	minTickTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTickTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// Ticks returns t as .NET DateTime ticks: 100-nanosecond intervals since
// 0001-01-01T00:00:00 UTC (DateTime.Ticks of t converted to UTC). Nanoseconds
// below 100 are dropped. Times outside DateTime's range are clamped to 0
// (DateTime.MinValue) and MaxTicks (DateTime.MaxValue), as DateTime cannot
// represent them. It serves the guide's log tail pattern.
func Ticks(t time.Time) int64 {
	if t.Before(minTickTime) {
		return 0
	}
	if t.After(maxTickTime) {
		return MaxTicks
	}
	return t.Unix()*ticksPerSecond + int64(t.Nanosecond()/100) + unixEpochTicks
}

// TimeFromTicks is the inverse of Ticks: the UTC time of a .NET tick count.
// Counts outside [0, MaxTicks] are clamped into it.
func TimeFromTicks(ticks int64) time.Time {
	ticks = min(max(ticks, 0), MaxTicks)
	ticks -= unixEpochTicks
	sec, rem := ticks/ticksPerSecond, ticks%ticksPerSecond
	if rem < 0 {
		sec, rem = sec-1, rem+ticksPerSecond
	}
	return time.Unix(sec, rem*100).UTC()
}

// InvertedTicks returns the guide's log tail RowKey for t, exactly what its
// C# snippet produces:
//
//	string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks)
//
// that is MaxTicks - Ticks(t) as 19 zero-padded digits. Later times give
// smaller keys, so a partition lists its newest entities first ("Retrieve
// the n entities most recently added to a partition by using a RowKey value
// that sorts in reverse date and time order"), and rows written by .NET
// services interleave with rows written by Go services.
func InvertedTicks(t time.Time) string {
	return PadUint(uint64(MaxTicks-Ticks(t)), 19)
}

// ParseInvertedTicks is the inverse of InvertedTicks, the guide's
// new DateTime(DateTime.MaxValue.Ticks - Int64.Parse(invertedTicks)); the
// result is in UTC with 100 ns resolution. The input must be exactly 19
// digits no greater than MaxTicks; errors wrap ErrInvalidKey.
func ParseInvertedTicks(s string) (time.Time, error) {
	v, err := parseTicks19("inverted ticks", s)
	if err != nil {
		return time.Time{}, err
	}
	return TimeFromTicks(MaxTicks - v), nil
}

// TimeKey is the ascending counterpart of InvertedTicks: Ticks(t) as 19
// zero-padded digits (C#: t.Ticks.ToString("D19")), so keys sort oldest
// first. Use it for RowKeys read in time order and for bounds of time
// ranges ("RowKey ge TimeKey(from) and RowKey lt TimeKey(to)").
func TimeKey(t time.Time) string {
	return PadUint(uint64(Ticks(t)), 19)
}

// ParseTimeKey is the inverse of TimeKey. The input must be exactly 19
// digits no greater than MaxTicks; errors wrap ErrInvalidKey.
func ParseTimeKey(s string) (time.Time, error) {
	v, err := parseTicks19("time key", s)
	if err != nil {
		return time.Time{}, err
	}
	return TimeFromTicks(v), nil
}

func parseTicks19(what, s string) (int64, error) {
	if len(s) != 19 || !allDigits(s) {
		return 0, &KeyError{Key: what, Rule: fmt.Sprintf("%q is not 19 decimal digits", s)}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > MaxTicks {
		return 0, &KeyError{Key: what, Rule: fmt.Sprintf("%q exceeds DateTime.MaxValue.Ticks (%d)", s, MaxTicks)}
	}
	return v, nil
}

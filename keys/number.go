package keys

import (
	"fmt"
	"strconv"
	"strings"
)

// PadUint writes n in decimal, left-padded with zeros to width digits, so
// that string order equals numeric order. It serves the guide's advice
// "Padding numeric values in the RowKey (for example, the employee ID
// 000223) enables correct sorting and filtering based on upper and lower
// bounds". PadUint(223, 6) is "000223". A width below 1 counts as 1; 20
// digits hold every uint64. A number wider than width is written in full
// (digits are never cut off), so it still parses back but sorts out of
// order with narrower ones: pick a width for the largest value you store.
func PadUint(n uint64, width int) string {
	d := strconv.FormatUint(n, 10)
	if len(d) >= width {
		return d
	}
	return strings.Repeat("0", width-len(d)) + d
}

// PadInt is PadUint for signed numbers, order-preserving for negative
// numbers too. Non-negative numbers are written as PadUint writes them (so
// PadInt(223, 6) is the guide's "000223"); a negative n is written as '-'
// followed by the width-digit ten's complement 10^width + n, so that
// PadInt(-1, 3) is "-999" and PadInt(-999, 3) is "-001". '-' sorts below
// every digit, and a larger complement means a larger (closer to zero)
// number, so string order equals numeric order for every n with |n| below
// 10^width. 19 digits hold every int64. As with PadUint, a number too wide
// for width is written with as many digits as it needs: it parses back but
// sorts out of order.
func PadInt(n int64, width int) string {
	if n >= 0 {
		return PadUint(uint64(n), width)
	}
	m := uint64(-(n + 1)) + 1 // |n| without overflowing on math.MinInt64
	return "-" + tensComplement(PadUint(m, width))
}

// tensComplement returns 10^len(d) - d as len(d) digits, for a digit
// string d that is not all zeros.
func tensComplement(d string) string {
	b := []byte(d)
	for i := range b {
		b[i] = '9' - b[i] + '0'
	}
	for i := len(b) - 1; i >= 0; i-- { // add one
		if b[i] < '9' {
			b[i]++
			break
		}
		b[i] = '0'
	}
	return string(b)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParsePadUint parses a string written by PadUint (any number of leading
// zeros). Errors wrap ErrInvalidKey.
func ParsePadUint(s string) (uint64, error) {
	if !allDigits(s) {
		return 0, &KeyError{Key: "padded number", Rule: fmt.Sprintf("%q is not a string of decimal digits", s)}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, &KeyError{Key: "padded number", Rule: fmt.Sprintf("%q does not fit in a uint64", s)}
	}
	return n, nil
}

// ParsePadInt parses a string written by PadInt with any width (the width
// of a negative number is the count of its digits). Errors wrap
// ErrInvalidKey.
func ParsePadInt(s string) (int64, error) {
	if !strings.HasPrefix(s, "-") {
		u, err := ParsePadUint(s)
		if err != nil {
			return 0, err
		}
		if u > 1<<63-1 {
			return 0, &KeyError{Key: "padded number", Rule: fmt.Sprintf("%q does not fit in an int64", s)}
		}
		return int64(u), nil
	}
	d := s[1:]
	if !allDigits(d) || strings.Trim(d, "0") == "" {
		return 0, &KeyError{Key: "padded number", Rule: fmt.Sprintf("%q is not '-' followed by a non-zero ten's complement", s)}
	}
	m, err := strconv.ParseUint(strings.TrimLeft(tensComplement(d), "0"), 10, 64)
	if err != nil || m > 1<<63 {
		return 0, &KeyError{Key: "padded number", Rule: fmt.Sprintf("%q does not fit in an int64", s)}
	}
	return -int64(m-1) - 1, nil
}

// Package tkerr writes tablekit's error messages so that "tablekit:"
// starts them once. tablekit's own errors (the sentinels, *FilterError,
// key and name errors) start with it, so that each reads whole when
// returned alone; a caller that wraps one to say what it was doing
// ("tablekit: query Orders: ...") leaves the wrapped one's prefix out.
package tkerr

import (
	"fmt"
	"strings"
)

// Prefix starts every error message tablekit writes.
const Prefix = "tablekit: "

// Errorf is fmt.Errorf, except that when format starts with Prefix an
// error argument whose message starts with Prefix too is written without
// it. The errors it wraps (%w) are unchanged for errors.Is and errors.As.
func Errorf(format string, args ...any) error {
	if !strings.HasPrefix(format, Prefix) {
		return fmt.Errorf(format, args...)
	}
	args = append([]any(nil), args...)
	for i, a := range args {
		if e, ok := a.(error); ok && e != nil && strings.HasPrefix(e.Error(), Prefix) {
			args[i] = unprefixed{e}
		}
	}
	return fmt.Errorf(format, args...)
}

// unprefixed is an error whose message is shown without Prefix.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), Prefix) }
func (u unprefixed) Unwrap() error { return u.err }

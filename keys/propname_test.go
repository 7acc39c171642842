package keys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

// A filter's property name is limited as the service limits it: 255 UTF-16
// code units, so a character outside the Basic Multilingual Plane counts
// twice.
func TestFilterPropertyNameLengthCountsUTF16Units(t *testing.T) {
	const astral = "\U0001D400" // a letter, two UTF-16 code units
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("é", 255), true},
		{strings.Repeat("é", 256), false},
		{strings.Repeat(astral, 127) + "a", true},
		{strings.Repeat(astral, 128), false},
		{strings.Repeat(astral, 200), false},
	} {
		_, err := keys.Prop(c.name).Eq(int32(1)).Build()
		if (err == nil) != c.ok {
			t.Errorf("Prop(%d runes).Eq(1).Build() = %v, want ok=%v", len([]rune(c.name)), err, c.ok)
		}
		if err != nil && !errors.Is(err, keys.ErrInvalidFilter) {
			t.Errorf("Prop(%d runes): %v does not wrap ErrInvalidFilter", len([]rune(c.name)), err)
		}
	}
}

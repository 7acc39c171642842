package keys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestValidateBlobName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"tx/0123abcd.json", true},
		{"poison/q-1/8d3c.txt", true},
		{"Tbl/p/r/Photo.0123", true},
		{"Tbl//r/Photo.0123", true}, // an empty PartitionKey
		{"a.b/c..d/...", true},
		{"ends.", true},
		{"é/ü/\U0001F600 x", true},
		{strings.Repeat("n", 1024), true},
		{strings.Repeat("é", 1024), true}, // characters, not bytes
		{strings.Repeat("a/", 253) + "a", true},
		{"", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a/../b", false},
		{"a/./b", false},
		{"a/..", false},
		{"../../x?comp=list", false},
		{"x?comp=list", false},
		{"a#b", false},
		{`a\b`, false},
		{`..\..\x`, false},
		{"dir/", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\u0085b", false},
		{"a\xffb", false},
		{strings.Repeat("n", 1025), false},
		{strings.Repeat("a/", 254) + "a", false},
	} {
		err := keys.ValidateBlobName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateBlobName(%.40q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		var ne *keys.NameError
		if err != nil && (!errors.Is(err, keys.ErrInvalidName) || !errors.As(err, &ne) || ne.Kind != "blob" || ne.Name != tt.name) {
			t.Errorf("ValidateBlobName(%.40q) = %v, want a *NameError of kind blob wrapping ErrInvalidName", tt.name, err)
		}
	}
}

func FuzzValidateBlobName(f *testing.F) {
	for _, s := range []string{"a", "../x", "a/./b", "x?y", "a//b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if keys.ValidateBlobName(name) != nil {
			return
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q accepted with a %q segment", name, seg)
			}
		}
		if strings.ContainsAny(name, "?#\\") || strings.HasSuffix(name, "/") {
			t.Fatalf("%q accepted", name)
		}
	})
}

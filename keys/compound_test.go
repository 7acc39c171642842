package keys_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestJoinSplit(t *testing.T) {
	tests := []struct {
		parts []string
		key   string
	}{
		{[]string{"empid", "000123", "2012"}, "empid_000123_2012"},
		{[]string{"email", "jonesj@contoso.com"}, "email_jonesj@contoso.com"},
		{[]string{"a_b", "c"}, "a`_b_c"},
		{[]string{"a`b", "c"}, "a``b_c"},
		{[]string{"_", "`"}, "`__``"},
		{[]string{"", ""}, "_"},
		{[]string{"x"}, "x"},
		{[]string{""}, ""},
		{[]string{"日本", "\U0001F600"}, "日本_\U0001F600"},
	}
	for _, tt := range tests {
		if got := keys.Join(tt.parts...); got != tt.key {
			t.Errorf("Join(%q) = %q, want %q", tt.parts, got, tt.key)
		}
		got, err := keys.Split(tt.key)
		if err != nil || !reflect.DeepEqual(got, tt.parts) {
			t.Errorf("Split(%q) = %q, %v; want %q", tt.key, got, err, tt.parts)
		}
	}
}

func TestSplitMalformed(t *testing.T) {
	for _, key := range []string{"a`", "a`b", "`x_y", "ab_c`"} {
		_, err := keys.Split(key)
		var ke *keys.KeyError
		if !errors.Is(err, keys.ErrInvalidKey) || !errors.As(err, &ke) {
			t.Errorf("Split(%q) error = %v, want a *KeyError wrapping ErrInvalidKey", key, err)
		}
	}
	if _, err := (keys.Compound{}).SplitN("a_b_c", 2); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("SplitN with 3 parts, want 2: error = %v", err)
	}
	if p, err := (keys.Compound{}).SplitN("a_b", 2); err != nil || len(p) != 2 {
		t.Errorf("SplitN(a_b, 2) = %q, %v", p, err)
	}
}

func TestNewCompound(t *testing.T) {
	for _, sep := range []byte{' ', '-', '|', ':', '_', '!'} {
		c, err := keys.NewCompound(sep)
		if err != nil {
			t.Errorf("NewCompound(%q): %v", sep, err)
			continue
		}
		parts := []string{"a" + string(sep) + "b", string(sep + 1), "", "z"}
		got, err := c.Split(c.Join(parts...))
		if err != nil || !reflect.DeepEqual(got, parts) {
			t.Errorf("sep %q: round trip of %q = %q, %v", sep, parts, got, err)
		}
		if err := keys.ValidateKey("RowKey", c.Join(parts...)); err != nil {
			t.Errorf("sep %q: joined key is not valid: %v", sep, err)
		}
	}
	for _, sep := range []byte{'.', '>', '"', '[', '~', '/', '#', '?', '\\', 0x1f, 0x80, 0} {
		if _, err := keys.NewCompound(sep); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("NewCompound(%q) error = %v, want ErrInvalidKey", sep, err)
		}
	}
}

type review struct {
	ID   int
	Year uint16
}

type tmplAll struct {
	Dept  string
	N     int64
	U     uint32
	Small int8
	embedded
}

type embedded struct{ Tag string }

func TestTemplate(t *testing.T) {
	tm, err := keys.NewTemplate[review]("empid_{ID:6}_{Year}")
	if err != nil {
		t.Fatal(err)
	}
	k, err := tm.Key(review{ID: 123, Year: 2012})
	if err != nil || k != "empid_000123_2012" {
		t.Fatalf("Key = %q, %v; want the guide's empid_000123_2012", k, err)
	}
	r, err := tm.Parse("empid_000123_2012")
	if err != nil || r != (review{ID: 123, Year: 2012}) {
		t.Fatalf("Parse = %+v, %v", r, err)
	}
	p, err := tm.Prefix(review{ID: 123}, 2)
	if err != nil || p != "empid_000123_" {
		t.Fatalf("Prefix = %q, %v", p, err)
	}
	if _, err := tm.Key(review{ID: 1234567}); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Key with ID too wide for 6 digits: error = %v", err)
	}
	if _, err := tm.Prefix(review{}, 3); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Prefix of all parts: error = %v", err)
	}
	for _, bad := range []string{
		"empid_000123",        // too few parts
		"empid_000123_2012_x", // too many
		"empld_000123_2012",   // literal differs
		"empid_00123_2012",    // width
		"empid_+00123_2012",   // not digits
		"empid_000123_02012",  // unpadded field not canonical
		"empid_000123_70000",  // overflows uint16
		"empid_000123_-1",     // negative into uint
		"empid_0001`3_2012",   // malformed escape
	} {
		if _, err := tm.Parse(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("Parse(%q) error = %v, want ErrInvalidKey", bad, err)
		}
	}

	all, err := keys.NewTemplate[tmplAll]("{Dept}_{N:4}_{U:3}_{Small}_{Tag}_x")
	if err != nil {
		t.Fatal(err)
	}
	v := tmplAll{Dept: "R_D`x", N: -12, U: 7, Small: -5, embedded: embedded{Tag: "t"}}
	k, err = all.Key(v)
	if err != nil || k != "R`_D``x_-9988_007_-5_t_x" {
		t.Fatalf("Key = %q, %v", k, err)
	}
	back, err := all.Parse(k)
	if err != nil || back != v {
		t.Fatalf("Parse(%q) = %+v, %v; want %+v", k, back, err, v)
	}
	if _, err := all.Key(tmplAll{Dept: "a/b"}); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Key with '/' in a part: error = %v, want ErrInvalidKey", err)
	}
	if _, err := all.Parse("a_0001_007_128_t_x"); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Parse of 128 into int8: error = %v", err)
	}
}

func TestTemplateErrors(t *testing.T) {
	type bad struct {
		F      float64
		S      string
		hidden int
	}
	for _, pattern := range []string{
		"{Missing}", "{hidden}", "{F}", "{S:3}", "x{S}", "{S}x", "{S", "{{S}}", "{S:0}", "{S:abc}",
	} {
		_, err := keys.NewTemplate[bad](pattern)
		if !errors.Is(err, keys.ErrInvalidKey) || !strings.Contains(err.Error(), pattern) {
			t.Errorf("NewTemplate(%q) error = %v, want ErrInvalidKey naming the pattern", pattern, err)
		}
	}
	if _, err := keys.NewTemplate[int]("{X}"); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("NewTemplate[int] error = %v", err)
	}
}

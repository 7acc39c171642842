package keys_test

import (
	"math"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func FuzzCompoundRoundTrip(f *testing.F) {
	f.Add("empid", "000123", "2012", byte('_'))
	f.Add("a_b", "c`d", "``__", byte('_'))
	f.Add("", "", "", byte(' '))
	f.Add("日本", "\U0001F600", "x y!", byte('-'))
	f.Fuzz(func(t *testing.T, a, b, c string, sep byte) {
		cp, err := keys.NewCompound(sep)
		if err != nil {
			cp = keys.Compound{}
		}
		parts := []string{a, b, c}
		key := cp.Join(parts...)
		got, err := cp.Split(key)
		if err != nil || !slices.Equal(got, parts) {
			t.Fatalf("Split(Join(%q)) = %q, %v", parts, got, err)
		}
		// Any key Split accepts is the Join of what it returns.
		if ps, err := cp.Split(a); err == nil && cp.Join(ps...) != a {
			t.Fatalf("Join(Split(%q)) = %q", a, cp.Join(ps...))
		}
	})
}

func FuzzFilterEscaping(f *testing.F) {
	f.Add("LastName", "O'Brien", int64(10), 3.0, []byte{0x0a}, int32(1))
	f.Add("x", "') or (PartitionKey ne '", int64(-1), -0.5, []byte{}, int32(-1))
	f.Add("_", "\uffff", int64(math.MinInt64), 1e300, []byte(nil), int32(0))
	f.Fuzz(func(t *testing.T, name, s string, i int64, fl float64, b []byte, i32 int32) {
		built := keys.And(
			keys.PK().Eq(s),
			keys.RK().Prefix(s),
			keys.Or(keys.Prop(name).Eq(s), keys.Not(keys.Prop(name).Ne(i))),
			keys.Prop("I32").Ge(i32),
			keys.Prop("F").Le(fl),
			keys.Prop("B").Eq(b),
		)
		text, err := built.Build()
		if err != nil {
			return // invalid name, invalid UTF-8, NaN or infinities
		}
		parsed, err := keys.ParseFilter(text)
		if err != nil {
			t.Fatalf("ParseFilter(Build()) of %q: %v", text, err)
		}
		if !parsed.Equal(built) {
			t.Fatalf("ParseFilter(%q) is a different tree: %q", text, parsed.String())
		}
		if again := parsed.String(); again != text {
			t.Fatalf("rebuilt text %q != %q", again, text)
		}
		if pk, ok := parsed.PartitionKey(); !ok || pk != s {
			t.Fatalf("PartitionKey of %q = %q, %v", text, pk, ok)
		}
	})
}

func FuzzParseFilter(f *testing.F) {
	for _, g := range guideFilters {
		f.Add(g.text)
	}
	f.Add("not (A eq X'0a') or B eq guid'01234567-89ab-cdef-0123-456789abcdef'")
	f.Add("A eq datetime'2014-08-22T00:50:32.0000000Z' and B eq 10L and C eq 1.5")
	f.Add("PartitionKey eq 'a")
	f.Add("Active and not (Done) or false")
	f.Add("A eq 3D or B le -2.5e-3d and C ne 10l")
	f.Add("5 lt Amount or A eq B")
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := keys.ParseFilter(s)
		if err != nil {
			return
		}
		text, err := flt.Build()
		if err != nil {
			t.Fatalf("ParseFilter(%q) accepted a filter that does not build: %v", s, err)
		}
		again, err := keys.ParseFilter(text)
		if err != nil || !again.Equal(flt) {
			t.Fatalf("ParseFilter(%q) -> %q -> %v, %v: not the same tree", s, text, again, err)
		}
		if again.String() != text {
			t.Fatalf("text not stable: %q then %q", text, again.String())
		}
		_ = keys.Classify(flt)
	})
}

package keys_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestRetype(t *testing.T) {
	types := map[string]string{"Age": "Edm.Int64", "Score": "Edm.Double", "Name": "Edm.String", "Small": "Edm.Int32"}
	typeOf := func(name string) string { return types[name] }
	for _, tc := range []struct {
		in   keys.Filter
		want string // "" means an error
	}{
		{keys.Prop("Age").Ge(45), "Age ge 45L"},
		{keys.Prop("Age").Ge(int64(45)), "Age ge 45L"},
		{keys.Prop("Score").Gt(3), "Score gt 3.0"},
		{keys.Prop("Score").Gt(int64(1) << 53), "Score gt 9007199254740992.0"},
		{keys.Prop("Score").Gt(int64(1)<<53 + 1), ""},
		{keys.Prop("Small").Eq(7), "Small eq 7"},
		{keys.Prop("Unknown").Eq(7), "Unknown eq 7"},
		{keys.Prop("Name").Eq(7), ""},
		{keys.Prop("Age").Eq(2.5), ""},
		{keys.And(keys.PK().Eq("p"), keys.Or(keys.Prop("Name").Eq("x"), keys.Not(keys.Prop("Age").Lt(3)))), "(PartitionKey eq 'p') and ((Name eq 'x') or (not (Age lt 3L)))"},
	} {
		got, err := tc.in.Retype(typeOf)
		if tc.want == "" {
			if !errors.Is(err, keys.ErrInvalidFilter) {
				t.Errorf("%v: retyped to %v, %v; want ErrInvalidFilter", tc.in, got, err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%v: retyped to %q, %v; want %q", tc.in, got.String(), err, tc.want)
		}
	}
	// The original is unchanged.
	f := keys.Prop("Age").Ge(45)
	if _, err := f.Retype(typeOf); err != nil || f.String() != "Age ge 45" {
		t.Errorf("Retype changed its receiver: %q", f.String())
	}
}

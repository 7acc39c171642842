package keys_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestFilterProperties(t *testing.T) {
	f := keys.And(keys.PK().Eq("Sales"), keys.Or(keys.Prop("Age").Gt(30), keys.Not(keys.Prop("Email").Eq("x"))), keys.Prop("Age").Lt(60))
	if got := fmt.Sprint(f.Properties()); got != "[PartitionKey Age Email]" {
		t.Errorf("Properties = %s, want [PartitionKey Age Email]", got)
	}
	parsed, err := keys.ParseFilter("PartitionKey eq 'Sales' and Agee gt 30")
	if err != nil {
		t.Fatal(err)
	}
	has := func(name string) bool { return name == "Age" || name == "Email" }
	for _, c := range []struct {
		name string
		f    keys.Filter
		bad  string // the property named in the error; "" for none
	}{
		{"known properties", f, ""},
		{"keys and Timestamp", keys.And(keys.RK().Ge("a"), keys.Prop("Timestamp").Gt(0)), ""},
		{"a typo", keys.And(keys.PK().Eq("Sales"), keys.Prop("Agee").Gt(30)), "Agee"},
		{"a typo under not", keys.Not(keys.Prop("EMail").Eq("x")), "EMail"},
		{"a parsed filter", parsed, "Agee"},
		{"the zero Filter", keys.Filter{}, ""},
	} {
		err := c.f.CheckProperties(has)
		var fe *keys.FilterError
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && (!errors.Is(err, keys.ErrInvalidFilter) || !errors.As(err, &fe) || fe.Property != c.bad):
			t.Errorf("%s: %v, want ErrInvalidFilter naming %s", c.name, err, c.bad)
		}
	}
	// An invalid Filter reports its own error.
	if err := keys.Prop("no-dash").Eq(1).CheckProperties(has); !errors.Is(err, keys.ErrInvalidFilter) {
		t.Errorf("an invalid filter: %v", err)
	}
}

package keys_test

import (
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestScope(t *testing.T) {
	cases := []struct{ filter, scope string }{
		{"PartitionKey eq 'a' and RowKey eq 'b' and Age gt 3", "(PartitionKey eq 'a') and (RowKey eq 'b')"},
		{"PartitionKey eq 'a' and RowKey ge 'b' and RowKey lt 'c' and Name eq 'x'", "(PartitionKey eq 'a') and (RowKey ge 'b') and (RowKey lt 'c')"},
		{"PartitionKey eq 'a' and (RowKey eq 'b' or RowKey eq 'c')", "PartitionKey eq 'a'"},
		{"PartitionKey eq 'a' and RowKey ne 'b'", "PartitionKey eq 'a'"},
		{"PartitionKey ge 'a' and PartitionKey lt 'b' and Age gt 3", "(PartitionKey ge 'a') and (PartitionKey lt 'b')"},
		{"Age gt 3", ""},
		{"not (PartitionKey eq 'a')", ""},
		{"", ""},
	}
	for _, c := range cases {
		f, err := keys.ParseFilter(c.filter)
		if err != nil {
			t.Fatalf("ParseFilter(%q): %v", c.filter, err)
		}
		got, err := f.Scope().Build()
		if err != nil || got != c.scope {
			t.Errorf("Scope(%q) = %q, %v; want %q", c.filter, got, err, c.scope)
		}
		if sc := f.Scope(); !f.IsZero() && keys.Classify(sc) != keys.Classify(f) && keys.Classify(f) != keys.TableScan {
			t.Errorf("Classify(Scope(%q)) = %v, want %v", c.filter, keys.Classify(sc), keys.Classify(f))
		}
	}
	bad := keys.Prop("").Eq(1)
	if bad.Scope().Err() == nil {
		t.Error("Scope of an invalid filter lost its error")
	}
}

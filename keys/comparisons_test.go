package keys_test

import (
	"reflect"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestComparisons(t *testing.T) {
	f, err := keys.ParseFilter("PartitionKey eq 'p' and (Amount eq 5 or Amount ge 5L) and not (Price lt 2.5)")
	if err != nil {
		t.Fatal(err)
	}
	want := []keys.Comparison{
		{"PartitionKey", "eq", "'p'", "Edm.String"},
		{"Amount", "eq", "5", "Edm.Int32"},
		{"Amount", "ge", "5L", "Edm.Int64"},
		{"Price", "lt", "2.5", "Edm.Double"},
	}
	if got := f.Comparisons(); !reflect.DeepEqual(got, want) {
		t.Errorf("Comparisons() = %+v\nwant %+v", got, want)
	}
	if got := (keys.Filter{}).Comparisons(); got != nil {
		t.Errorf("the zero Filter has comparisons %+v", got)
	}
	if got := keys.Prop("bad name").Eq(1).Comparisons(); got != nil {
		t.Errorf("an invalid Filter has comparisons %+v", got)
	}
}

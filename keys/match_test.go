package keys_test

import (
	"math"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// props is an entity as Match sees it.
type props map[string]keys.Value

func (r props) get(name string) (keys.Value, bool) {
	v, ok := r[name]
	return v, ok
}

func TestMatch(t *testing.T) {
	when := time.Date(2024, 2, 3, 4, 5, 6, 700, time.UTC)
	r := props{
		"PartitionKey": keys.StringValue("p"),
		"RowKey":       keys.StringValue("r\uE000"),
		"Name":         keys.StringValue("Ann"),
		"Age":          keys.Int32Value(41),
		"Big":          keys.Int64Value(1 << 40),
		"Price":        keys.DoubleValue(3),
		"NaN":          keys.DoubleValue(math.NaN()),
		"Ok":           keys.BoolValue(true),
		"When":         keys.DateTimeValue(when),
		"Id":           keys.GuidValue([16]byte{0xc9, 0xda}),
		"Raw":          keys.BinaryValue([]byte{1, 2, 3}),
	}
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{"", true},
		{"Name eq 'Ann'", true},
		{"Name ne 'Ann'", false},
		{"Name gt 'Am' and Name lt 'Ao'", true},
		{"Age eq 41", true},
		{"Age ge 42", false},
		// No promotion between numeric types: the service compares
		// Edm.Int32 with Int32 literals only.
		{"Age eq 41L", false},
		{"Age eq 41.0", false},
		{"Age ne 41L", false},
		{"Big eq 1099511627776L", true},
		{"Price eq 3.0", true},
		{"Price eq 3", false},
		{"Price lt 3.5", true},
		{"NaN eq 1.0", false},
		{"NaN ne 1.0", true},
		{"Ok eq true", true},
		{"Ok gt false", true},
		{"When eq datetime'2024-02-03T04:05:06.0000007Z'", true},
		{"When lt datetime'2024-02-03T04:05:06Z'", false},
		{"Id eq guid'c9da0000-0000-0000-0000-000000000000'", true},
		{"Raw eq X'010203'", true},
		{"Raw gt X'0102'", true},
		// A missing property makes every comparison false, ne included.
		{"Missing eq 'x'", false},
		{"Missing ne 'x'", false},
		{"not (Missing eq 'x')", true},
		// A string compared with a number: false, not an error.
		{"Name eq 1", false},
		// Keys compare by UTF-16 code units: U+E000 sorts above U+10000.
		{"RowKey gt 'r\U00010000'", true},
		{"PartitionKey eq 'p' and (RowKey eq 'x' or Age eq 41)", true},
		{"not (Age eq 41) or Name eq 'Bob'", false},
	} {
		f, err := keys.ParseFilter(c.filter)
		if err != nil {
			t.Fatalf("ParseFilter(%q): %v", c.filter, err)
		}
		if got := f.Match(r.get); got != c.want {
			t.Errorf("%q matched %v, want %v", c.filter, got, c.want)
		}
	}
	if keys.PK().Eq(string([]byte{0xff})).Match(r.get) {
		t.Error("an invalid Filter matched")
	}
}

func TestBounds(t *testing.T) {
	for _, c := range []struct {
		filter string
		want   keys.KeyBounds
	}{
		{"Name eq 'x'", keys.KeyBounds{}},
		{"PartitionKey eq 'p'", keys.KeyBounds{PK: "p", HasPK: true, PKLo: "p", HasPKLo: true, PKHi: "p", HasPKHi: true}},
		{"PartitionKey eq 'p' and RowKey gt 'a' and RowKey le 'c' and RowKey lt 'd'",
			keys.KeyBounds{PK: "p", HasPK: true, PKLo: "p", HasPKLo: true, PKHi: "p", HasPKHi: true, RKLo: "a", HasRKLo: true, RKLoOpen: true, RKHi: "c", HasRKHi: true}},
		{"PartitionKey ge 'a' and PartitionKey lt 'b'", keys.KeyBounds{PKLo: "a", HasPKLo: true, PKHi: "b", HasPKHi: true, PKHiOpen: true}},
		// Under or and not, nothing bounds the keys.
		{"PartitionKey eq 'a' or PartitionKey eq 'b'", keys.KeyBounds{}},
		{"not (PartitionKey lt 'a')", keys.KeyBounds{}},
		// Contradictory partitions leave an empty range (lo above hi).
		{"PartitionKey eq 'a' and PartitionKey eq 'b'", keys.KeyBounds{PK: "a", HasPK: true, PKLo: "b", HasPKLo: true, PKHi: "a", HasPKHi: true}},
	} {
		f, err := keys.ParseFilter(c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Bounds(); got != c.want {
			t.Errorf("Bounds(%q) = %+v, want %+v", c.filter, got, c.want)
		}
	}
}

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
		// A number literal widens to a wider property type, never
		// narrows: an Int64 literal against an Int32 property is a
		// comparison of different types (ne, lt, le true).
		{"Age eq 41L", false},
		{"Age eq 41.0", false},
		{"Age ne 41L", true},
		{"Age lt 40L", true},
		{"Big eq 1099511627776L", true},
		{"Big eq 1099511627776.0", false},
		{"Big gt 1", true},
		{"Price eq 3.0", true},
		{"Price eq 3", true},
		{"Price eq 3L", true},
		{"Price lt 3.5", true},
		{"NaN eq 1", false},
		{"NaN ne 1", true},
		{"NaN lt 1", false},
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
		// A string compared with a number: the property counts as below
		// the literal, not an error.
		{"Name eq 1", false},
		{"Name lt 1", true},
		// A bare property is true only for an Edm.Boolean true; a bare
		// true or false is itself.
		{"Ok", true},
		{"not Ok", false},
		{"Name", false},
		{"not Name", true},
		{"Missing", false},
		{"not Missing", true},
		{"true", true},
		{"false or Ok", true},
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

// TestMatchTypes runs every operator over a property of each EDM type
// compared with a literal of each type, holding the same value where the
// types allow (3, 3L, 3.0, ...), against the answers CloudStub's tests
// assert for Azure (CloudStub.AzureDataTables.Tests/Data/
// TableQueryComparisonTestData.cs, github.com/Andrei15193/CloudStub): a
// number literal widened to the property's type compares numerically;
// any other pair of types decides eq, gt and ge false, ne, lt and le
// true; a missing property decides every operator false.
func TestMatchTypes(t *testing.T) {
	when := time.Date(2020, 1, 22, 0, 0, 0, 0, time.UTC)
	guid := [16]byte{0x68, 0x26, 0x0b, 0x3f}
	values := map[string]keys.Value{
		"String":   keys.StringValue("3"),
		"Int32":    keys.Int32Value(3),
		"Int64":    keys.Int64Value(3),
		"Double":   keys.DoubleValue(3),
		"Boolean":  keys.BoolValue(true),
		"DateTime": keys.DateTimeValue(when),
		"Guid":     keys.GuidValue(guid),
		"Binary":   keys.BinaryValue([]byte{3}),
	}
	literals := map[string]string{
		"String":   "'3'",
		"Int32":    "3",
		"Int64":    "3L",
		"Double":   "3.0",
		"Boolean":  "true",
		"DateTime": "datetime'2020-01-22T00:00:00Z'",
		"Guid":     "guid'68260b3f-0000-0000-0000-000000000000'",
		"Binary":   "X'03'",
	}
	// The answers of eq ne lt le gt ge, t for true.
	const (
		equal    = "tfftft" // same value, same or widened type
		mismatch = "ftttff" // different types
		missing  = "ffffff"
	)
	widens := map[[2]string]bool{{"Int64", "Int32"}: true, {"Double", "Int32"}: true, {"Double", "Int64"}: true}
	ops := []string{"eq", "ne", "lt", "le", "gt", "ge"}
	for prop, v := range values {
		for litType, lit := range literals {
			want := mismatch
			if prop == litType || widens[[2]string{prop, litType}] {
				want = equal
			}
			for i, op := range ops {
				for _, c := range []struct {
					get  func(string) (keys.Value, bool)
					want byte
				}{
					{props{"P": v}.get, want[i]},
					{props{}.get, missing[i]},
					{props{"P": {}}.get, missing[i]}, // null
				} {
					text := "P " + op + " " + lit
					f, err := keys.ParseFilter(text)
					if err != nil {
						t.Fatalf("ParseFilter(%q): %v", text, err)
					}
					if got := f.Match(c.get); got != (c.want == 't') {
						t.Errorf("%s property: %q matched %v, want %v", prop, text, got, !got)
					}
					if got := keys.Not(f).Match(c.get); got != (c.want != 't') {
						t.Errorf("%s property: not (%s) matched %v, want %v", prop, text, got, !got)
					}
				}
			}
		}
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

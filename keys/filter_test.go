package keys_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

type myGUID [16]byte
type status string
type myTime time.Time

// The guide's filters, built with the builder, must come out textually as
// the guide prints them (those written in the canonical "(a) and (b)"
// form), parse back to the same tree, and classify as the guide says.
var guideFilters = []struct {
	text  string // as printed in the guide, after "$filter="
	built keys.Filter
	class keys.Class
	canon bool // the builder prints exactly text
}{
	{"(PartitionKey eq 'Sales') and (RowKey eq '2')", keys.And(keys.PK().Eq("Sales"), keys.RK().Eq("2")), keys.Point, true},
	{"PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("S")), keys.Range, false},
	{"PartitionKey eq 'Sales' and LastName eq 'Smith'", keys.And(keys.PK().Eq("Sales"), keys.Prop("LastName").Eq("Smith")), keys.PartitionScan, false},
	{"LastName eq 'Jones'", keys.Prop("LastName").Eq("Jones"), keys.TableScan, true},
	{"PartitionKey eq 'Sales' and (RowKey eq '121' or RowKey eq '322')", keys.And(keys.PK().Eq("Sales"), keys.Or(keys.RK().Eq("121"), keys.RK().Eq("322"))), keys.PartitionScan, false},
	{"(PartitionKey eq 'Sales') and (RowKey eq 'empid_000223')", keys.And(keys.PK().Eq("Sales"), keys.RK().Eq(keys.Join("empid", keys.PadInt(223, 6)))), keys.Point, true},
	{"(PartitionKey eq 'Sales') and (RowKey eq 'email_jonesj@contoso.com')", keys.And(keys.PK().Eq("Sales"), keys.RK().Eq(keys.Join("email", "jonesj@contoso.com"))), keys.Point, true},
	{"(PartitionKey eq 'Sales') and (RowKey ge 'empid_000100') and (RowKey le 'empid_000199')", keys.And(keys.PK().Eq("Sales"), keys.RK().Between("empid_000100", "empid_000199")), keys.Range, true},
	{"(PartitionKey eq 'Sales') and (RowKey ge 'email_a') and (RowKey lt 'email_b')", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("email_a")), keys.Range, true},
	{"(PartitionKey eq 'empid_Sales') and (RowKey eq '000223')", keys.And(keys.PK().Eq("empid_Sales"), keys.RK().Eq("000223")), keys.Point, true},
	{"(PartitionKey eq 'email_Sales') and (RowKey eq 'jonesj@contoso.com')", keys.And(keys.PK().Eq("email_Sales"), keys.RK().Eq("jonesj@contoso.com")), keys.Point, true},
	{"(PartitionKey eq 'empid_Sales') and (RowKey ge '000100') and (RowKey le '000199')", keys.And(keys.PK().Eq("empid_Sales"), keys.RK().Ge(keys.PadInt(100, 6)), keys.RK().Le(keys.PadInt(199, 6))), keys.Range, true},
	{"(PartitionKey eq 'email_Sales') and (RowKey ge 'a') and (RowKey lt 'b')", keys.And(keys.PK().Eq("email_Sales"), keys.RK().Prefix("a")), keys.Range, true},
	// Compound key pattern: all reviews of employee 000123.
	{"(PartitionKey eq 'Sales') and (RowKey ge 'empid_000123') and (RowKey lt 'empid_000124')", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("empid_000123")), keys.Range, true},
	// The C# samples: GenerateFilterCondition / CombineFilters output.
	{"((PartitionKey eq 'Sales') and (RowKey ge 'B')) and (RowKey lt 'C')", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("B")), keys.Range, false},
	{"(PartitionKey eq 'Sales') and ((RowKey ge 'B') and (RowKey lt 'F'))", keys.And(keys.PK().Eq("Sales"), keys.RK().Ge("B"), keys.RK().Lt("F")), keys.Range, false},
	{"PartitionKey eq 'Sales'", keys.PK().Eq("Sales"), keys.PartitionScan, true},
}

func TestGuideFilters(t *testing.T) {
	for _, g := range guideFilters {
		built, err := g.built.Build()
		if err != nil {
			t.Errorf("%s: Build: %v", g.text, err)
			continue
		}
		if g.canon && built != g.text {
			t.Errorf("built %q, the guide prints %q", built, g.text)
		}
		parsed, err := keys.ParseFilter(g.text)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", g.text, err)
			continue
		}
		if !parsed.Equal(g.built) {
			t.Errorf("ParseFilter(%q) = %v, want the tree of %v", g.text, parsed, built)
		}
		if c := keys.Classify(parsed); c != g.class {
			t.Errorf("Classify(%q) = %v, the guide says %v", g.text, c, g.class)
		}
		if c := keys.Classify(g.built); c != g.class {
			t.Errorf("Classify(built %q) = %v, the guide says %v", built, c, g.class)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		f    keys.Filter
		want keys.Class
		pk   string
	}{
		{keys.Filter{}, keys.TableScan, ""},
		{keys.RK().Eq("1"), keys.TableScan, ""},
		{keys.And(keys.PK().Ge("a"), keys.PK().Lt("b")), keys.TableScan, ""},
		{keys.Or(keys.PK().Eq("a"), keys.PK().Eq("b")), keys.TableScan, ""},
		{keys.Or(keys.And(keys.PK().Eq("a"), keys.RK().Eq("1")), keys.And(keys.PK().Eq("a"), keys.RK().Eq("2"))), keys.TableScan, ""},
		{keys.Not(keys.PK().Ne("a")), keys.TableScan, ""},
		{keys.And(keys.PK().Eq("a"), keys.PK().Eq("b")), keys.TableScan, ""},
		{keys.PK().Eq(""), keys.PartitionScan, ""},
		{keys.And(keys.PK().Eq("a"), keys.PK().Eq("a"), keys.RK().Eq("1")), keys.Point, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Eq("1"), keys.Prop("Age").Gt(30)), keys.Point, "a"},
		{keys.And(keys.RK().Eq("1"), keys.PK().Eq("a")), keys.Point, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Ge("m")), keys.Range, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Gt("m")), keys.Range, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Le("m")), keys.Range, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Lt("m")), keys.Range, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Prefix("S"), keys.Prop("LastName").Eq("Smith")), keys.Range, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Prefix("")), keys.PartitionScan, "a"},
		{keys.And(keys.PK().Eq("a"), keys.RK().Ne("m")), keys.PartitionScan, "a"},
		{keys.And(keys.PK().Eq("a"), keys.Not(keys.RK().Lt("m"))), keys.PartitionScan, "a"},
		{keys.And(keys.PK().Eq("a"), keys.Or(keys.RK().Ge("x"), keys.RK().Lt("b"))), keys.PartitionScan, "a"},
		{keys.And(keys.PK().Eq("a"), keys.Prop("RowKeyCopy").Eq("1")), keys.PartitionScan, "a"},
		{keys.And(keys.PK().Eq("a"), keys.Prop("Age").Eq(1<<40)), keys.TableScan, ""}, // invalid: int too wide for Int32
	}
	for _, tt := range tests {
		if got := keys.Classify(tt.f); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.f, got, tt.want)
		}
		pk, ok := tt.f.PartitionKey()
		if ok != (tt.want != keys.TableScan) || pk != tt.pk {
			t.Errorf("PartitionKey(%v) = %q, %v", tt.f, pk, ok)
		}
	}
	names := map[keys.Class]string{keys.Point: "point query", keys.Range: "range query", keys.PartitionScan: "partition scan", keys.TableScan: "table scan", 0: "Class(0)"}
	for c, s := range names {
		if c.String() != s {
			t.Errorf("Class(%d).String() = %q, want %q", int(c), c.String(), s)
		}
	}
}

func TestPropertyLiterals(t *testing.T) {
	when := time.Date(2014, 8, 22, 0, 50, 32, 123456789, time.FixedZone("X", 2*3600))
	g := myGUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	s := "ptr"
	tests := []struct {
		v    any
		want string
	}{
		{"O'Brien", "P eq 'O''Brien'"},
		{"'", "P eq ''''"},
		{"') or (1 eq 1", "P eq ''') or (1 eq 1'"},
		{status("active"), "P eq 'active'"},
		{&s, "P eq 'ptr'"},
		{true, "P eq true"},
		{false, "P eq false"},
		{42, "P eq 42"},
		{int8(-8), "P eq -8"},
		{int16(16), "P eq 16"},
		{int32(math.MinInt32), "P eq -2147483648"},
		{uint8(8), "P eq 8"},
		{uint16(65535), "P eq 65535"},
		{int64(10), "P eq 10L"},
		{int64(math.MinInt64), "P eq -9223372036854775808L"},
		{uint32(10), "P eq 10L"},
		{uint64(math.MaxInt64), "P eq 9223372036854775807L"},
		{time.Duration(5), "P eq 5L"},
		{3.0, "P eq 3.0"},
		{-0.5, "P eq -0.5"},
		{float32(1.5), "P eq 1.5"},
		{1e21, "P eq 1000000000000000000000.0"},
		{5e-324, "P eq 0." + strings.Repeat("0", 323) + "5"},
		{when, "P eq datetime'2014-08-21T22:50:32.1234567Z'"},
		{myTime(when), "P eq datetime'2014-08-21T22:50:32.1234567Z'"},
		{g, "P eq guid'01234567-89ab-cdef-0123-456789abcdef'"},
		{[16]byte{}, "P eq guid'00000000-0000-0000-0000-000000000000'"},
		{[]byte{0x0a, 0x1b}, "P eq X'0a1b'"},
		{[]byte{}, "P eq X''"},
	}
	for _, tt := range tests {
		f := keys.Prop("P").Eq(tt.v)
		got, err := f.Build()
		if err != nil || got != tt.want {
			t.Errorf("Prop(P).Eq(%T %v) = %q, %v; want %q", tt.v, tt.v, got, err, tt.want)
			continue
		}
		back, err := keys.ParseFilter(got)
		if err != nil || !back.Equal(f) {
			t.Errorf("ParseFilter(%q) = %v, %v; want the same tree", got, back, err)
		}
	}
	// The builder copies byte slices: changing the caller's slice later
	// does not change the filter.
	b := []byte{1, 2}
	f := keys.Prop("P").Eq(b)
	b[0] = 9
	if got := f.String(); got != "P eq X'0102'" {
		t.Errorf("filter changed with its input slice: %s", got)
	}
}

func TestFilterErrors(t *testing.T) {
	var nilPtr *string
	tests := []struct {
		name string
		f    keys.Filter
		prop string // property the error must name
	}{
		{"empty name", keys.Prop("").Eq(1), ""},
		{"digit first", keys.Prop("1abc").Eq(1), "1abc"},
		{"space", keys.Prop("Last Name").Eq("x"), "Last Name"},
		{"quote", keys.Prop("a'b").Eq("x"), "a'b"},
		{"paren", keys.Prop("a)").Eq("x"), "a)"},
		{"keyword", keys.Prop("and").Eq("x"), "and"},
		{"keyword case", keys.Prop("True").Eq("x"), "True"},
		{"too long", keys.Prop("a" + strings.Repeat("b", 255)).Eq(1), "a" + strings.Repeat("b", 255)},
		{"nil", keys.Prop("P").Eq(nil), "P"},
		{"nil pointer", keys.Prop("P").Eq(nilPtr), "P"},
		{"int range", keys.Prop("P").Eq(1 << 31), "P"},
		{"uint64 range", keys.Prop("P").Eq(uint64(math.MaxUint64)), "P"},
		{"NaN", keys.Prop("P").Eq(math.NaN()), "P"},
		{"Inf", keys.Prop("P").Lt(math.Inf(1)), "P"},
		{"struct", keys.Prop("P").Eq(struct{}{}), "P"},
		{"map", keys.Prop("P").Eq(map[string]int{}), "P"},
		{"year 0", keys.Prop("P").Eq(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)), "P"},
		{"bad utf8", keys.Prop("P").Eq("\xff"), "P"},
		{"pk not string", keys.Prop("PartitionKey").Eq(1), "PartitionKey"},
		{"rk not string", keys.Prop("RowKey").Eq(true), "RowKey"},
		{"zero key", keys.Key{}.Eq("x"), ""},
		{"not zero", keys.Not(keys.Filter{}), ""},
		{"or empty", keys.Or(), ""},
		{"or zero", keys.Or(keys.PK().Eq("a"), keys.Filter{}), ""},
		{"error inside and", keys.And(keys.PK().Eq("a"), keys.Prop("1").Eq(1)), "1"},
		{"error inside or", keys.Or(keys.PK().Eq("a"), keys.Prop("x y").Eq(1)), "x y"},
		{"error inside not", keys.Not(keys.Prop("P").Eq(nil)), "P"},
		{"16 comparisons", manyComparisons(16), ""},
	}
	for _, tt := range tests {
		s, err := tt.f.Build()
		var fe *keys.FilterError
		if !errors.Is(err, keys.ErrInvalidFilter) || !errors.As(err, &fe) || s != "" {
			t.Errorf("%s: Build = %q, %v; want a *FilterError wrapping ErrInvalidFilter", tt.name, s, err)
			continue
		}
		if fe.Property != tt.prop {
			t.Errorf("%s: error names property %q, want %q (%v)", tt.name, fe.Property, tt.prop, err)
		}
		if !strings.HasPrefix(tt.f.String(), "!tablekit: invalid filter") {
			t.Errorf("%s: String() = %q, want an error marker", tt.name, tt.f.String())
		}
		if tt.f.IsZero() {
			t.Errorf("%s: invalid filter reports IsZero", tt.name)
		}
	}
	if s, err := manyComparisons(15).Build(); err != nil || s == "" {
		t.Errorf("15 comparisons: %q, %v", s, err)
	}
	for _, ok := range []string{"_x", "Ünïcödé", "a1_b2", "Timestamp", "x", "datetime", "andy", "日本語"} {
		if _, err := keys.Prop(ok).Eq(1).Build(); err != nil {
			t.Errorf("Prop(%q): %v", ok, err)
		}
	}
}

func manyComparisons(n int) keys.Filter {
	fs := []keys.Filter{keys.PK().Eq("p")}
	for i := 1; i < n; i++ {
		fs = append(fs, keys.Prop("N").Ne(i))
	}
	return keys.And(fs...)
}

func TestFilterComposition(t *testing.T) {
	if !(keys.Filter{}).IsZero() || !keys.And().IsZero() || !keys.And(keys.Filter{}, keys.Filter{}).IsZero() || !keys.RK().Prefix("").IsZero() {
		t.Errorf("zero filters are not zero")
	}
	if s, err := (keys.Filter{}).Build(); s != "" || err != nil {
		t.Errorf("zero Build = %q, %v", s, err)
	}
	a, b, c := keys.PK().Eq("a"), keys.RK().Ge("b"), keys.Prop("C").Eq(int64(3))
	base := keys.And(a, b)
	left := keys.And(base, c)
	right := keys.And(base, keys.Prop("D").Eq(4))
	if base.String() != "(PartitionKey eq 'a') and (RowKey ge 'b')" {
		t.Errorf("deriving filters changed the base: %s", base)
	}
	if left.String() != "(PartitionKey eq 'a') and (RowKey ge 'b') and (C eq 3L)" || right.String() != "(PartitionKey eq 'a') and (RowKey ge 'b') and (D eq 4)" {
		t.Errorf("derived filters: %s | %s", left, right)
	}
	if !keys.And(keys.And(a, b), c).Equal(keys.And(a, keys.And(b, c))) || !keys.And(a, keys.Filter{}).Equal(a) {
		t.Errorf("And is not flattened")
	}
	tests := []struct {
		f    keys.Filter
		want string
	}{
		{keys.Or(a, b, c), "(PartitionKey eq 'a') or (RowKey ge 'b') or (C eq 3L)"},
		{keys.Or(keys.Or(a, b), c), "(PartitionKey eq 'a') or (RowKey ge 'b') or (C eq 3L)"},
		{keys.And(a, keys.Or(b, c)), "(PartitionKey eq 'a') and ((RowKey ge 'b') or (C eq 3L))"},
		{keys.Or(keys.And(a, b), c), "((PartitionKey eq 'a') and (RowKey ge 'b')) or (C eq 3L)"},
		{keys.Not(keys.And(a, b)), "not ((PartitionKey eq 'a') and (RowKey ge 'b'))"},
		{keys.Not(keys.Not(a)), "not (not (PartitionKey eq 'a'))"},
		{keys.Or(a), "PartitionKey eq 'a'"},
		{keys.RK().Prefix("\uffff"), "RowKey ge '\uffff'"},
		{keys.RK().Prefix("a'"), "(RowKey ge 'a''') and (RowKey lt 'a(')"},
		{keys.And(keys.PK().Ne("x"), keys.PK().Gt("x"), keys.PK().Lt("x"), keys.PK().Le("x")), "(PartitionKey ne 'x') and (PartitionKey gt 'x') and (PartitionKey lt 'x') and (PartitionKey le 'x')"},
		{keys.And(keys.Prop("N").Ne(1), keys.Prop("N").Gt(1), keys.Prop("N").Ge(1), keys.Prop("N").Lt(1), keys.Prop("N").Le(1)), "(N ne 1) and (N gt 1) and (N ge 1) and (N lt 1) and (N le 1)"},
	}
	for _, tt := range tests {
		if got, err := tt.f.Build(); err != nil || got != tt.want {
			t.Errorf("Build = %q, %v; want %q", got, err, tt.want)
		}
		back, err := keys.ParseFilter(tt.want)
		if err != nil || !back.Equal(tt.f) {
			t.Errorf("ParseFilter(%q) = %v, %v", tt.want, back, err)
		}
	}
}

func TestParseFilter(t *testing.T) {
	ok := []struct{ in, want string }{
		{"", ""},
		{"   ", ""},
		{"  PartitionKey eq 'a'  ", "PartitionKey eq 'a'"},
		{"( ( PartitionKey eq 'a' ) )", "PartitionKey eq 'a'"},
		{"A eq 1 or B eq 2 and C eq 3", "(A eq 1) or ((B eq 2) and (C eq 3))"},
		{"(A eq 1 or B eq 2) and C eq 3", "((A eq 1) or (B eq 2)) and (C eq 3)"},
		{"not A eq 1 and B eq 2", "(not (A eq 1)) and (B eq 2)"},
		{"not not A eq 1", "not (not (A eq 1))"},
		{"A\teq\t1", "A eq 1"},
		{"A eq 1.50", "A eq 1.5"},
		{"A eq -007", "A eq -7"},
		{"A eq binary'0A1b'", "A eq X'0a1b'"},
		{"A eq guid'01234567-89AB-CDEF-0123-456789ABCDEF'", "A eq guid'01234567-89ab-cdef-0123-456789abcdef'"},
		{"A eq datetime'2014-08-22T00:50:32Z'", "A eq datetime'2014-08-22T00:50:32.0000000Z'"},
		{"A eq datetime'2014-08-22T02:50:32.123456789+02:00'", "A eq datetime'2014-08-22T00:50:32.1234567Z'"},
		{"RowKey eq 'it''s (not) a ''trap'' and or'", "RowKey eq 'it''s (not) a ''trap'' and or'"},
		{"A eq 2147483647 and B eq -2147483648", "(A eq 2147483647) and (B eq -2147483648)"},
		// OData's other number forms: Int64 with l, Doubles with an
		// exponent or a D suffix (CloudStub's tests against an account
		// write Doubles as 3D).
		{"A eq 10l", "A eq 10L"},
		{"A eq 3D", "A eq 3.0"},
		{"A eq -2.5d", "A eq -2.5"},
		{"A eq 1e5", "A eq 100000.0"},
		{"A eq 2.5E-3", "A eq 0.0025"},
		{"A eq 1E+3d", "A eq 1000.0"},
		// A bare property (true only for an Edm.Boolean true) and a bare
		// true or false are conditions of their own.
		{"Active", "Active"},
		{"(Active)", "Active"},
		{"not Active", "not (Active)"},
		{"A eq 1 and Active or B", "((A eq 1) and (Active)) or (B)"},
		{"false", "false"},
		{"true and A eq 1", "(true) and (A eq 1)"},
	}
	for _, tt := range ok {
		f, err := keys.ParseFilter(tt.in)
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", tt.in, err)
			continue
		}
		if got := f.String(); got != tt.want {
			t.Errorf("ParseFilter(%q) builds %q, want %q", tt.in, got, tt.want)
		}
	}
	bad := []string{
		"PartitionKey eq 'a",    // unterminated: Azurite returns 200 and no rows
		"PartitionKey eq 'a''",  // unterminated after an escaped quote
		"PartitionKey eq \"a\"", // double quotes
		"PartitionKey EQ 'a'",   // upper-case operator
		"PartitionKey eq 'a' AND RowKey eq 'b'",
		"PartitionKey eq 'a' && RowKey eq 'b'",
		"PartitionKey eq 'a'and RowKey eq 'b'",
		"PartitionKey eq 'a' and(RowKey eq 'b')",
		"PartitionKey eq'a'",
		"PartitionKeyeq 'a'",
		"PartitionKey eq 1",         // key compared with a number
		"PartitionKey",              // bare key: keys are strings
		"PartitionKey eq",           // missing value
		"eq 'a'",                    //
		"(PartitionKey eq 'a'",      // unbalanced
		"PartitionKey eq 'a')",      //
		"()",                        //
		"PartitionKey eq 'a' and",   //
		"and PartitionKey eq 'a'",   //
		"not(A eq 1)",               // OData wants a blank after not
		"A eq 1.",                   //
		"A eq .5",                   //
		"A eq 1e",                   // exponent without digits
		"A eq 1e+-5",                //
		"A eq 1e999",                // infinite
		"A eq 3DD",                  //
		"A eq 3M",                   // Edm.Decimal: no such property type
		"A eq 3f",                   // Edm.Single: likewise
		"A eq 1.5.5",                //
		"A eq 5LL",                  //
		"A eq 12abc",                //
		"5",                         // a value alone
		"'a'",                       //
		"A gte 5",                   // no such operator
		"A eq 2147483648",           // Int32 overflow
		"A eq 9223372036854775808L", // Int64 overflow
		"A eq null",                 //
		"A eq True",                 //
		"A eq x'0a'",                //
		"A eq X'0g'",                //
		"A eq X'0'",                 //
		"A eq guid'0123'",           //
		"A eq datetime'2014-08-22'", //
		"A eq datetime'0000-01-01T00:00:00Z'",
		"A eq time'12:00'",  // unknown typed literal
		"A eq 'x'y",         //
		"A eq 'x' B eq 'y'", // missing operator, as the guide's garbled copies
		"1A eq 1",           //
		"and eq 1",          //
		"A.B eq 1",          //
		"A eq '\xff'",       // invalid UTF-8
		strings.Repeat("(", 100) + "A eq 1" + strings.Repeat(")", 100),
		strings.Repeat("not ", 100) + "A eq 1",
		manyComparisonsText(16),
	}
	for _, in := range bad {
		f, err := keys.ParseFilter(in)
		var fe *keys.FilterError
		if !errors.Is(err, keys.ErrInvalidFilter) || !errors.As(err, &fe) || !f.IsZero() {
			t.Errorf("ParseFilter(%.60q) = %v, %v; want a *FilterError", in, f, err)
		}
	}
	if _, err := keys.ParseFilter(manyComparisonsText(15)); err != nil {
		t.Errorf("15 comparisons: %v", err)
	}
	// Well formed, but a form the service does not implement: 501
	// NotImplemented there, ErrUnsupportedFilter here.
	for _, in := range []string{"1 eq 2", "A eq B", "5 lt Amount", "'a' eq PartitionKey", "true eq Active", "A eq 1 and B ne C"} {
		f, err := keys.ParseFilter(in)
		var fe *keys.FilterError
		if !errors.Is(err, keys.ErrUnsupportedFilter) || !errors.Is(err, keys.ErrInvalidFilter) || !errors.As(err, &fe) || !fe.Unsupported || !f.IsZero() {
			t.Errorf("ParseFilter(%q) = %v, %v; want an unsupported *FilterError", in, f, err)
		}
	}
	for _, in := range bad {
		if _, err := keys.ParseFilter(in); errors.Is(err, keys.ErrUnsupportedFilter) {
			t.Errorf("ParseFilter(%q) = %v: malformed, not unsupported", in, err)
		}
	}
	_, err := keys.ParseFilter("PartitionKey eq 'a' and RowKey eq 'b")
	var fe *keys.FilterError
	if !errors.As(err, &fe) || fe.Offset != 34 {
		t.Errorf("unterminated string error = %v, want offset 34", err)
	}
}

func manyComparisonsText(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "N ne " + strings.Repeat("1", 1+i%5)
	}
	return strings.Join(parts, " and ")
}

package keys

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/azrules"
)

// ErrInvalidFilter is the sentinel every filter error wraps: a bad
// property name, an unsupported value, too many comparisons, or text that
// ParseFilter does not accept. It unwraps to ErrInvalidArgument.
var ErrInvalidFilter = NewArgumentSentinel("invalid filter")

// MaxComparisons is the Table service's limit on discrete comparisons in
// one $filter string (azrules.MaxFilterComparisons). Build and ParseFilter
// refuse filters with more.
const MaxComparisons = azrules.MaxFilterComparisons

// MaxPropertyNameLength is the longest property name the service accepts,
// in UTF-16 code units (azrules.MaxPropertyNameLength).
const MaxPropertyNameLength = azrules.MaxPropertyNameLength

// ErrUnsupportedFilter is the sentinel of a filter that is well formed
// OData but of a form the Table service does not implement: a comparison
// of two properties, of two constants, or with the constant before the
// property ("1 eq 2", "A eq B", "5 lt Amount"). The service answers these
// 501 NotImplemented where it answers a malformed filter 400 InvalidInput,
// so a *FilterError that wraps it also wraps ErrInvalidFilter.
var ErrUnsupportedFilter = NewArgumentSentinel("filter form the service does not implement")

// FilterError describes why a filter is invalid. It wraps ErrInvalidFilter,
// and ErrUnsupportedFilter as well when Unsupported is set.
type FilterError struct {
	Property string // the property involved, if any
	Offset   int    // byte offset in the text given to ParseFilter, or -1
	Rule     string // what is wrong, in words
	// Unsupported is set for a well-formed filter of a form the service
	// does not implement (see ErrUnsupportedFilter).
	Unsupported bool
	// TokenEnd is set when a complete expression is followed by a token
	// that cannot continue it ("aaa bbb ccc": bbb): the byte offset just
	// past that token, where Azure's parser reports the syntax error
	// (Offset is the token's start). It is 0 otherwise.
	TokenEnd int
}

func (e *FilterError) Error() string {
	var b strings.Builder
	b.WriteString("tablekit: invalid filter")
	if e.Property != "" {
		b.WriteString(" on property ")
		b.WriteString(e.Property)
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Rule)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidFilter) true, and
// errors.Is(err, ErrUnsupportedFilter) when e.Unsupported.
func (e *FilterError) Unwrap() []error {
	if e.Unsupported {
		return []error{ErrInvalidFilter, ErrUnsupportedFilter}
	}
	return []error{ErrInvalidFilter}
}

func filterErr(prop, rule string) error { return &FilterError{Property: prop, Offset: -1, Rule: rule} }

// Filter is an immutable $filter expression: a comparison, or an and, or,
// not of filters. Build one with PK, RK, Prop, And, Or and Not, or read one
// with ParseFilter. Values never touch the text until Build, which writes
// each as a typed OData literal. Invalid input (a bad property name, an
// unsupported value type) is kept in the Filter and reported by Build, so
// expressions compose without checking errors at every step.
//
// The zero Filter is "no filter": it matches every entity, Build returns
// "", And ignores it, and Classify calls it a TableScan. Filters are values;
// deriving one from another never changes the original, and they are safe
// for concurrent use.
type Filter struct {
	n   *node
	err error
}

type nodeKind uint8

const (
	kindCmp nodeKind = iota + 1
	kindAnd
	kindOr
	kindNot
	kindConst // a bare true or false, read by ParseFilter
)

type cmpOp uint8

const (
	opEq cmpOp = iota + 1
	opNe
	opGt
	opGe
	opLt
	opLe
)

var opText = [...]string{opEq: "eq", opNe: "ne", opGt: "gt", opGe: "ge", opLt: "lt", opLe: "le"}

// node is never modified after construction; kids slices are never
// appended to once a node holds them.
type node struct {
	kind nodeKind
	name string  // kindCmp
	op   cmpOp   // kindCmp
	lit  literal // kindCmp; kindConst (an Edm.Boolean)
	kids []*node // kindAnd, kindOr (2 or more), kindNot (1)
	// bare marks a kindCmp read from a bare property name ("Active"),
	// which the service evaluates as "Active eq true" and Build writes
	// back as the name alone.
	bare bool
}

const (
	namePartitionKey = "PartitionKey"
	nameRowKey       = "RowKey"
)

// Key names PartitionKey or RowKey in a filter; get one from PK or RK.
type Key struct{ name string }

// PK returns the PartitionKey for building filter conditions.
func PK() Key { return Key{name: namePartitionKey} }

// RK returns the RowKey for building filter conditions.
func RK() Key { return Key{name: nameRowKey} }

func (k Key) cmp(op cmpOp, v string) Filter {
	if k.name == "" {
		return Filter{err: filterErr("", "zero keys.Key: use keys.PK() or keys.RK()")}
	}
	return newCmp(k.name, op, literal{kind: litString, s: v})
}

// Eq is "key eq 'v'".
func (k Key) Eq(v string) Filter { return k.cmp(opEq, v) }

// Ne is "key ne 'v'".
func (k Key) Ne(v string) Filter { return k.cmp(opNe, v) }

// Gt is "key gt 'v'".
func (k Key) Gt(v string) Filter { return k.cmp(opGt, v) }

// Ge is "key ge 'v'".
func (k Key) Ge(v string) Filter { return k.cmp(opGe, v) }

// Lt is "key lt 'v'".
func (k Key) Lt(v string) Filter { return k.cmp(opLt, v) }

// Le is "key le 'v'".
func (k Key) Le(v string) Filter { return k.cmp(opLe, v) }

// Between is "key ge 'lo' and key le 'hi'" (both bounds included), the
// guide's "RowKey ge 'empid_000100' and RowKey le 'empid_000199'".
func (k Key) Between(lo, hi string) Filter { return And(k.Ge(lo), k.Le(hi)) }

// Prefix selects the keys that start with p: "key ge lo and key lt hi"
// with the bounds of PrefixRange(p), or only "key ge lo" when there is no
// upper bound. Prefix("") is the zero Filter, since every key matches.
func (k Key) Prefix(p string) Filter {
	if p == "" {
		return Filter{}
	}
	lo, hi := PrefixRange(p)
	if hi == "" {
		return k.Ge(lo)
	}
	return And(k.Ge(lo), k.Lt(hi))
}

// Property names a property in a filter; get one from Prop.
type Property struct{ name string }

// Prop returns the property called name for building filter conditions.
// The name must be a valid C# identifier of at most 255 characters and not
// an OData keyword (and, or, not, eq, ne, gt, ge, lt, le, true, false,
// null, in any case); otherwise Build reports an error naming it.
// Prop("PartitionKey") and Prop("RowKey") are the keys and accept only
// strings.
func Prop(name string) Property { return Property{name: name} }

func (p Property) cmp(op cmpOp, v any) Filter {
	lit, err := literalOf(p.name, v)
	if err != nil {
		return Filter{err: err}
	}
	return newCmp(p.name, op, lit)
}

// Eq is "name eq v", v written as the OData literal of its Go type (see
// the package documentation for the mapping).
func (p Property) Eq(v any) Filter { return p.cmp(opEq, v) }

// Ne is "name ne v".
func (p Property) Ne(v any) Filter { return p.cmp(opNe, v) }

// Gt is "name gt v".
func (p Property) Gt(v any) Filter { return p.cmp(opGt, v) }

// Ge is "name ge v".
func (p Property) Ge(v any) Filter { return p.cmp(opGe, v) }

// Lt is "name lt v".
func (p Property) Lt(v any) Filter { return p.cmp(opLt, v) }

// Le is "name le v".
func (p Property) Le(v any) Filter { return p.cmp(opLe, v) }

func newCmp(name string, op cmpOp, lit literal) Filter {
	if err := validatePropertyName(name); err != nil {
		return Filter{err: err}
	}
	if (name == namePartitionKey || name == nameRowKey) && lit.kind != litString {
		return Filter{err: filterErr(name, "keys compare only with strings, not "+lit.kind.String())}
	}
	if lit.kind == litString && !utf8.ValidString(lit.s) {
		return Filter{err: filterErr(name, "string value is not valid UTF-8")}
	}
	return Filter{n: &node{kind: kindCmp, name: name, op: op, lit: lit}}
}

var odataKeywords = []string{"and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false", "null"}

// validatePropertyName applies the service's rule (azrules.CheckPropertyName:
// a C# identifier, at most 255 UTF-16 code units) plus one of ours: no
// OData keyword, which some parsers (Azurite's among them) would read as
// an operator.
func validatePropertyName(name string) error {
	if err := azrules.CheckPropertyName(name); err != nil {
		switch {
		case name == "":
		case errors.Is(err, azrules.ErrForm):
			name = fmt.Sprintf("%q", name) // not UTF-8: quoted, to stay printable
		}
		return filterErr(name, err.Error())
	}
	for _, kw := range odataKeywords {
		if strings.EqualFold(name, kw) {
			return filterErr(name, "property name is an OData keyword")
		}
	}
	return nil
}

// And is the conjunction of fs. Zero Filters are ignored (And() and And of
// zero Filters is the zero Filter, matching everything), a single
// remaining filter is returned as is, and nested ands are flattened:
// And(And(a, b), c) is And(a, b, c) and builds "(a) and (b) and (c)".
func And(fs ...Filter) Filter { return combine(kindAnd, fs) }

// Or is the disjunction of fs; nested ors are flattened. Because the zero
// Filter matches everything, an Or of it is almost certainly a mistake:
// Or() and Or with a zero Filter report an error at Build.
func Or(fs ...Filter) Filter { return combine(kindOr, fs) }

func combine(kind nodeKind, fs []Filter) Filter {
	var kids []*node
	for _, f := range fs {
		if f.err != nil {
			return f
		}
		switch {
		case f.n == nil && kind == kindOr:
			return Filter{err: filterErr("", "an empty Filter (which matches everything) inside Or")}
		case f.n == nil:
		case f.n.kind == kind:
			kids = append(kids, f.n.kids...)
		default:
			kids = append(kids, f.n)
		}
	}
	switch len(kids) {
	case 0:
		if kind == kindOr {
			return Filter{err: filterErr("", "Or of no filters")}
		}
		return Filter{}
	case 1:
		return Filter{n: kids[0]}
	}
	return Filter{n: &node{kind: kind, kids: kids}}
}

// Not is the negation of f, written "not (f)". Not of the zero Filter
// reports an error at Build (it would match nothing). Note that the
// service cannot use an index for a negation: see Classify.
func Not(f Filter) Filter {
	if f.err != nil {
		return f
	}
	if f.n == nil {
		return Filter{err: filterErr("", "Not of an empty Filter")}
	}
	return Filter{n: &node{kind: kindNot, kids: []*node{f.n}}}
}

// IsZero reports whether f is the zero Filter (no filter, matches
// everything). An invalid Filter is not zero.
func (f Filter) IsZero() bool { return f.n == nil && f.err == nil }

// Err returns the error Build would return, without building the text.
func (f Filter) Err() error {
	if f.err != nil {
		return f.err
	}
	if err := azrules.CheckFilterComparisons(f.n.comparisons()); err != nil {
		return filterErr("", err.Error())
	}
	return nil
}

// Build returns the $filter text, or an error wrapping ErrInvalidFilter
// (a *FilterError naming the property and the rule) if any part of the
// expression is invalid or it has more than MaxComparisons comparisons.
// The zero Filter builds "". Comparisons print as "Name op literal"; every
// operand of and/or is parenthesised, as in the guide's
// "(PartitionKey eq 'Sales') and (RowKey eq '2')".
func (f Filter) Build() (string, error) {
	if err := f.Err(); err != nil {
		return "", err
	}
	if f.n == nil {
		return "", nil
	}
	var b strings.Builder
	f.n.write(&b)
	return b.String(), nil
}

// String returns the Build text, or "!invalid filter: " and the error.
func (f Filter) String() string {
	s, err := f.Build()
	if err != nil {
		return "!" + err.Error()
	}
	return s
}

func (n *node) comparisons() int {
	if n == nil {
		return 0
	}
	switch n.kind {
	case kindCmp:
		return 1
	case kindConst:
		return 0
	}
	c := 0
	for _, k := range n.kids {
		c += k.comparisons()
	}
	return c
}

func (n *node) write(b *strings.Builder) {
	switch n.kind {
	case kindConst:
		n.lit.write(b)
	case kindCmp:
		b.WriteString(n.name)
		if n.bare {
			return
		}
		b.WriteByte(' ')
		b.WriteString(opText[n.op])
		b.WriteByte(' ')
		n.lit.write(b)
	case kindAnd, kindOr:
		for i, k := range n.kids {
			if i > 0 {
				if n.kind == kindAnd {
					b.WriteString(" and ")
				} else {
					b.WriteString(" or ")
				}
			}
			b.WriteByte('(')
			k.write(b)
			b.WriteByte(')')
		}
	case kindNot:
		b.WriteString("not (")
		n.kids[0].write(b)
		b.WriteByte(')')
	}
}

func (n *node) equal(m *node) bool {
	if n == nil || m == nil {
		return n == m
	}
	if n.kind != m.kind || n.name != m.name || n.op != m.op || n.bare != m.bare || len(n.kids) != len(m.kids) || !n.lit.equal(m.lit) {
		return false
	}
	for i := range n.kids {
		if !n.kids[i].equal(m.kids[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether f and g are the same expression tree (same
// structure, names, operators and typed values). Two invalid Filters are
// equal only if they are both invalid.
func (f Filter) Equal(g Filter) bool {
	if (f.err != nil) || (g.err != nil) {
		return (f.err != nil) == (g.err != nil)
	}
	return f.n.equal(g.n)
}

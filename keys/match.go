package keys

import (
	"bytes"
	"math"
	"time"
)

// Value is one typed property value as a filter sees it, for Match: build
// it with StringValue, Int32Value, Int64Value, DoubleValue, BoolValue,
// DateTimeValue, GuidValue or BinaryValue. The zero Value is no value (a
// property that is absent or null): every comparison with it is false.
type Value struct{ l literal }

// StringValue is an Edm.String (or a key, or Timestamp's table name).
func StringValue(s string) Value { return Value{literal{kind: litString, s: s}} }

// Int32Value is an Edm.Int32.
func Int32Value(n int32) Value { return Value{literal{kind: litInt32, i: int64(n)}} }

// Int64Value is an Edm.Int64.
func Int64Value(n int64) Value { return Value{literal{kind: litInt64, i: n}} }

// DoubleValue is an Edm.Double (NaN and ±Inf included).
func DoubleValue(f float64) Value { return Value{literal{kind: litDouble, f: f}} }

// BoolValue is an Edm.Boolean.
func BoolValue(b bool) Value { return Value{literal{kind: litBool, bo: b}} }

// DateTimeValue is an Edm.DateTime.
func DateTimeValue(t time.Time) Value { return Value{literal{kind: litDateTime, t: t}} }

// GuidValue is an Edm.Guid, its 16 bytes in the order of its text form.
func GuidValue(g [16]byte) Value { return Value{literal{kind: litGuid, g: g}} }

// BinaryValue is an Edm.Binary; b is not copied and must not change while
// the Value is in use.
func BinaryValue(b []byte) Value { return Value{literal{kind: litBinary, b: b}} }

// Match reports whether an entity satisfies f, as the Table service
// evaluates a $filter: get returns the entity's property called name
// (PartitionKey, RowKey and Timestamp included, or TableName for a query
// of tables) and whether it has one. The zero Filter matches everything;
// an invalid Filter matches nothing.
//
// The rules are the service's, as far as the evidence shows them
// (docs/EMULATOR.md, "Filters", gives each one's evidence and strength):
//
//   - a property the entity lacks (or holds as null) makes every
//     comparison false, ne included, so "not (X eq 1)" is true for an
//     entity without X;
//   - a number literal is widened to the property's number type when that
//     type is wider (Edm.Int32 to Edm.Int64 or Edm.Double, Edm.Int64 to
//     Edm.Double) and compared numerically: "Amount eq 5" matches an
//     Int64 or Double Amount of 5. It is never narrowed: 5L and 5.0 do not
//     compare numerically with an Int32 property;
//   - any other comparison of values of different EDM types (narrowing
//     included) is decided as if the property sorted below the literal:
//     eq, gt and ge are false, ne, lt and le are true;
//   - values of one type: strings (keys included) compare by UTF-16 code
//     units, as Compare orders keys; Booleans false < true; DateTimes as
//     instants; Guids and Binary values byte by byte; Doubles as IEEE 754
//     numbers, so a NaN equals nothing and ne is true for it;
//   - a bare property name ("Active", as ParseFilter reads it) is true
//     only for an Edm.Boolean true, and a bare true or false is itself;
//   - and, or and not combine the results; a filter of more than
//     MaxComparisons comparisons never reaches Match from ParseFilter.
func (f Filter) Match(get func(name string) (Value, bool)) bool {
	if f.err != nil {
		return false
	}
	if f.n == nil {
		return true
	}
	return f.n.match(get)
}

func (n *node) match(get func(string) (Value, bool)) bool {
	switch n.kind {
	case kindAnd:
		for _, k := range n.kids {
			if !k.match(get) {
				return false
			}
		}
		return true
	case kindOr:
		for _, k := range n.kids {
			if k.match(get) {
				return true
			}
		}
		return false
	case kindNot:
		return !n.kids[0].match(get)
	case kindConst:
		return n.lit.bo
	}
	v, ok := get(n.name)
	if !ok || v.l.kind == 0 {
		return false
	}
	p, lit := v.l, n.lit
	var c int
	switch {
	case p.kind == lit.kind:
		if p.kind == litDouble && (math.IsNaN(p.f) || math.IsNaN(lit.f)) {
			return n.op == opNe
		}
		c = compareLiterals(p, lit)
	case p.kind == litInt64 && lit.kind == litInt32:
		c = cmpOrdered(p.i, lit.i)
	case p.kind == litDouble && (lit.kind == litInt32 || lit.kind == litInt64):
		if math.IsNaN(p.f) {
			return n.op == opNe
		}
		c = cmpOrdered(p.f, float64(lit.i))
	default:
		// Of different types (a narrowing included): the property
		// counts as below the literal.
		c = -1
	}
	switch n.op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	}
	return false
}

// compareLiterals orders two literals of the same kind.
func compareLiterals(a, b literal) int {
	switch a.kind {
	case litString:
		return Compare(a.s, b.s)
	case litBool:
		switch {
		case a.bo == b.bo:
			return 0
		case b.bo:
			return -1
		}
		return 1
	case litInt32, litInt64:
		return cmpOrdered(a.i, b.i)
	case litDouble:
		return cmpOrdered(a.f, b.f)
	case litDateTime:
		return a.t.Compare(b.t)
	case litGuid:
		return bytes.Compare(a.g[:], b.g[:])
	case litBinary:
		return bytes.Compare(a.b, b.b)
	}
	return 0
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// KeyBounds is what a filter says about the keys of the entities it can
// match, for a service that plans a query: the one partition it pins
// (PartitionKey eq), and the bounds on PartitionKey and on RowKey that
// every match satisfies. A bound is inclusive unless its Open flag is
// set; an empty Has flag means unbounded.
type KeyBounds struct {
	// PK is the partition every match is in, when HasPK.
	PK    string
	HasPK bool
	// PKLo/PKHi bound PartitionKey; RKLo/RKHi bound RowKey.
	PKLo, PKHi, RKLo, RKHi                 string
	HasPKLo, HasPKHi, HasRKLo, HasRKHi     bool
	PKLoOpen, PKHiOpen, RKLoOpen, RKHiOpen bool
}

// Bounds returns the key bounds f implies: the comparisons of
// PartitionKey and RowKey with eq, gt, ge, lt and le that f's top-level
// and requires (a lone comparison counts as an and of one). Anything
// under or and not is ignored, which only widens the bounds, so a
// service that scans inside them and evaluates f with Match on each
// entity returns exactly f's matches. Contradictory bounds (PartitionKey
// eq 'a' and PartitionKey eq 'b') are returned as they are; the scan
// inside them finds nothing.
func (f Filter) Bounds() KeyBounds {
	var b KeyBounds
	if f.err != nil || f.n == nil {
		return b
	}
	kids := []*node{f.n}
	if f.n.kind == kindAnd {
		kids = f.n.kids
	}
	for _, k := range kids {
		if k.kind != kindCmp || k.lit.kind != litString {
			continue
		}
		switch k.name {
		case namePartitionKey:
			if k.op == opEq && !b.HasPK {
				// A second, different eq leaves the bounds empty (lo > hi).
				b.PK, b.HasPK = k.lit.s, true
			}
			b.PKLo, b.HasPKLo, b.PKLoOpen = tighterLo(b.PKLo, b.HasPKLo, b.PKLoOpen, k)
			b.PKHi, b.HasPKHi, b.PKHiOpen = tighterHi(b.PKHi, b.HasPKHi, b.PKHiOpen, k)
		case nameRowKey:
			b.RKLo, b.HasRKLo, b.RKLoOpen = tighterLo(b.RKLo, b.HasRKLo, b.RKLoOpen, k)
			b.RKHi, b.HasRKHi, b.RKHiOpen = tighterHi(b.RKHi, b.HasRKHi, b.RKHiOpen, k)
		}
	}
	return b
}

// tighterLo returns the tighter of a lower bound and the one comparison k
// gives (eq, gt, ge), or the bound unchanged.
func tighterLo(lo string, has, open bool, k *node) (string, bool, bool) {
	return tighter(lo, has, open, k, opGe, opGt, 1)
}

// tighterHi is tighterLo for upper bounds (eq, lt, le).
func tighterHi(hi string, has, open bool, k *node) (string, bool, bool) {
	return tighter(hi, has, open, k, opLe, opLt, -1)
}

// tighter is tighterLo (closed ge, strict gt, sign 1) and tighterHi
// (le, lt, -1): a value beyond the bound in sign's direction replaces it;
// an equal one keeps it, open if either is.
func tighter(bound string, has, open bool, k *node, closed, strict cmpOp, sign int) (string, bool, bool) {
	var v string
	var o bool
	switch k.op {
	case opEq, closed:
		v = k.lit.s
	case strict:
		v, o = k.lit.s, true
	default:
		return bound, has, open
	}
	if !has {
		return v, true, o
	}
	switch c := Compare(v, bound) * sign; {
	case c > 0:
		return v, true, o
	case c == 0:
		return bound, true, open || o
	}
	return bound, has, open
}

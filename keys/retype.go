package keys

import "fmt"

// maxExactDouble is the largest integer a float64 holds exactly (2^53).
const maxExactDouble = 1 << 53

// Retype returns f with each numeric literal written in the EDM type of
// the property it is compared with, as typeOf reports it ("Edm.Int64",
// "Edm.Double", ...; "" when unknown). A Go int is Edm.Int32 in a filter
// but Edm.Int64 in tablekit's entities, so a typed repository retypes the
// filters it is given by its struct's fields and sends each literal in its
// property's own type, which the REST reference asks for ("Querying tables
// and entities": the constant must be of the property's data type).
//
// An Edm.Int32 literal becomes Edm.Int64 for an Int64 property; an Int32
// or Int64 literal becomes Edm.Double for a Double property when the
// Double holds it exactly. (The service widens these itself, as far as
// the evidence shows: see Match.) A literal that cannot be written in its
// property's type exactly, and every other mismatch (a string compared
// with a number, a Double or Int64 literal with an Int32 property), is an
// error wrapping ErrInvalidFilter naming the property: the service would
// not compare the values, answering ne, lt and le true and eq, gt and ge
// false whatever they are. Properties typeOf does not know are left as
// they are, as is an invalid Filter.
func (f Filter) Retype(typeOf func(name string) string) (Filter, error) {
	if f.err != nil || f.n == nil {
		return f, nil
	}
	n, err := f.n.retype(typeOf)
	if err != nil {
		return Filter{}, err
	}
	return Filter{n: n}, nil
}

// retype returns n, or a copy of it with its literals retyped; nodes that
// need no change are shared.
func (n *node) retype(typeOf func(string) string) (*node, error) {
	if n.kind != kindCmp {
		var kids []*node
		for i, k := range n.kids {
			nk, err := k.retype(typeOf)
			if err != nil {
				return nil, err
			}
			if nk != k && kids == nil {
				kids = append(make([]*node, 0, len(n.kids)), n.kids[:i]...)
			}
			if kids != nil {
				kids = append(kids, nk)
			}
		}
		if kids == nil {
			return n, nil
		}
		c := *n
		c.kids = kids
		return &c, nil
	}
	want := typeOf(n.name)
	if want == "" || n.name == namePartitionKey || n.name == nameRowKey {
		return n, nil
	}
	got := n.lit.kind.String()
	if got == want {
		return n, nil
	}
	lit := n.lit
	switch {
	case want == litInt64.String() && lit.kind == litInt32:
		lit.kind = litInt64
	case want == litDouble.String() && (lit.kind == litInt32 || lit.kind == litInt64):
		if lit.i > maxExactDouble || lit.i < -maxExactDouble {
			return nil, filterErr(n.name, fmt.Sprintf("%s literal %d has no exact Edm.Double; the property is an Edm.Double", got, lit.i))
		}
		lit = literal{kind: litDouble, f: float64(lit.i)}
	default:
		return nil, filterErr(n.name, fmt.Sprintf("compared with an %s literal, but the property is an %s: the service does not compare values of different types", got, want))
	}
	c := *n
	c.lit = lit
	return &c, nil
}

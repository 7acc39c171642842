package keys

import "fmt"

// maxExactDouble is the largest integer a float64 holds exactly (2^53).
const maxExactDouble = 1 << 53

// Retype returns f with each numeric literal written in the EDM type of
// the property it is compared with, as typeOf reports it ("Edm.Int64",
// "Edm.Double", ...; "" when unknown). The service compares a property
// only with a literal of its own type: on Azure Table storage `Age ge 45`
// matches no entity whose Age is an Edm.Int64, where `Age ge 45L` does
// (REST reference, "Querying tables and entities": the constant must be
// of the property's data type). A Go int is Edm.Int32 in a filter but
// Edm.Int64 in tablekit's entities, so a typed repository retypes the
// filters it is given by its struct's fields.
//
// An Edm.Int32 literal becomes Edm.Int64 for an Int64 property; an Int32
// or Int64 literal becomes Edm.Double for a Double property when the
// Double holds it exactly. A literal that cannot be written in its
// property's type exactly, and every other mismatch (a string compared
// with a number, a Double with an Int64), is an error wrapping
// ErrInvalidFilter naming the property: on Azure the comparison would
// silently match nothing. Properties typeOf does not know are left as
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
		return nil, filterErr(n.name, fmt.Sprintf("compared with an %s literal, but the property is an %s: the service matches no entity when the types differ", got, want))
	}
	c := *n
	c.lit = lit
	return &c, nil
}

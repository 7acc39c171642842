package keys

import "strings"

// Comparison is one comparison of a property with a constant in a
// filter, as the service receives it.
type Comparison struct {
	Property string `json:"property"` // the property compared
	Op       string `json:"op"`       // eq, ne, gt, ge, lt or le
	Constant string `json:"constant"` // the constant as the filter text writes it ("5", "5L", "5.0")
	// Type is the constant's EDM type ("Edm.Int32", "Edm.Int64",
	// "Edm.Double", "Edm.String", ...). The service compares a property
	// with a constant of another type by its own rules (docs/EMULATOR.md),
	// so a filter can match nothing because of a type alone.
	Type string `json:"type"`
}

// Comparisons returns every comparison of f with a constant, in the order
// they appear in its text; PartitionKey and RowKey count. The zero Filter
// and an invalid one have none. It lets a tool say what types a filter
// sends (tablekit query --explain) without parsing the text again.
func (f Filter) Comparisons() []Comparison {
	if f.err != nil || f.n == nil {
		return nil
	}
	var out []Comparison
	var walk func(n *node)
	walk = func(n *node) {
		if n.kind == kindCmp {
			var b strings.Builder
			n.lit.write(&b)
			out = append(out, Comparison{Property: n.name, Op: opText[n.op], Constant: b.String(), Type: n.lit.kind.String()})
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(f.n)
	return out
}

package keys

// Scope returns the part of f that bounds what the service reads to answer
// it: f's top-level and-ed comparisons of PartitionKey or RowKey with eq,
// gt, ge, lt or le. Every entity the service scans for f matches Scope
// (the other conditions are tested on each of them), so a keys-only count
// of Scope is the number of entities f scans. The scope of a point query
// is its two key equalities, of a range query its partition and RowKey
// bounds, of a partition scan its partition; a table scan's scope holds
// its PartitionKey bounds, if any, and is the zero Filter (the whole
// table) otherwise. An invalid Filter is returned as is.
func (f Filter) Scope() Filter {
	if f.err != nil || f.n == nil {
		return f
	}
	var kids []*node
	for _, c := range f.n.conjuncts() {
		if c.kind != kindCmp || (c.name != namePartitionKey && c.name != nameRowKey) {
			continue
		}
		switch c.op {
		case opEq, opGt, opGe, opLt, opLe:
			kids = append(kids, c)
		}
	}
	switch len(kids) {
	case 0:
		return Filter{}
	case 1:
		return Filter{n: kids[0]}
	}
	return Filter{n: &node{kind: kindAnd, kids: kids}}
}

package keys

import "fmt"

// Class ranks a query by how much of the table the service reads to answer
// it, following the guide's "Design for querying" section: a point query
// is best, then a range query, then a partition scan, then a table scan.
type Class int

// The classes, best first.
const (
	// Point: PartitionKey eq and RowKey eq, "the most efficient lookup".
	Point Class = iota + 1
	// Range: PartitionKey eq and RowKey bounds (gt, ge, lt, le, a prefix,
	// between): one partition, a contiguous run of RowKeys.
	Range
	// PartitionScan: PartitionKey eq and anything else (property
	// conditions, RowKey ne, an or of RowKeys, a negation).
	PartitionScan
	// TableScan: no PartitionKey equality pins the query to one
	// partition; "inefficient because it searches all of the partitions".
	TableScan
)

// String returns "point query", "range query", "partition scan" or
// "table scan".
func (c Class) String() string {
	switch c {
	case Point:
		return "point query"
	case Range:
		return "range query"
	case PartitionScan:
		return "partition scan"
	case TableScan:
		return "table scan"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// conjuncts returns the top-level and-ed conditions of n.
func (n *node) conjuncts() []*node {
	if n == nil {
		return nil
	}
	if n.kind == kindAnd {
		return n.kids
	}
	return []*node{n}
}

// PartitionKey returns the partition the filter is confined to: the value
// of a "PartitionKey eq" comparison that is one of the filter's top-level
// and-ed conditions. ok is false when there is none, when two such
// comparisons disagree (the filter matches nothing), and for an invalid
// Filter. A PartitionKey equality inside an or or a not does not count,
// even when every branch names the same partition: the service is not
// documented to use it, so the query is treated as a table scan; write it
// as "PartitionKey eq 'p' and (... or ...)" instead.
func (f Filter) PartitionKey() (pk string, ok bool) {
	if f.err != nil {
		return "", false
	}
	for _, c := range f.n.conjuncts() {
		if c.kind == kindCmp && c.name == namePartitionKey && c.op == opEq {
			if ok && c.lit.s != pk {
				return "", false
			}
			pk, ok = c.lit.s, true
		}
	}
	return pk, ok
}

// Classify ranks f as the guide ranks queries. Only the filter's top-level
// and-ed conditions count:
//
//   - a PartitionKey equality (see Filter.PartitionKey) and a RowKey
//     equality make a Point query, whatever else is and-ed: the service
//     reads at most that one entity and tests the rest on it;
//   - a PartitionKey equality and a RowKey bound (gt, ge, lt, le; Prefix
//     and Between build these) make a Range query, also with extra
//     property conditions and-ed: the service still reads only that range
//     of RowKeys ("PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt
//     'T' and LastName eq 'Smith'" scans S..T of Sales);
//   - a PartitionKey equality with anything else is a PartitionScan: RowKey
//     ne, property conditions, negations, and "an 'or' to specify a filter
//     based on RowKey values", which the guide says "results in a partition
//     scan, and isn't treated as a range query";
//   - everything else is a TableScan, including the zero Filter, a
//     PartitionKey range (several partitions), an or of partitions, and an
//     invalid Filter (whose Build reports the error).
func Classify(f Filter) Class {
	if _, ok := f.PartitionKey(); !ok {
		return TableScan
	}
	class := PartitionScan
	for _, c := range f.n.conjuncts() {
		if c.kind != kindCmp || c.name != nameRowKey {
			continue
		}
		switch c.op {
		case opEq:
			return Point
		case opGt, opGe, opLt, opLe:
			class = Range
		}
	}
	return class
}

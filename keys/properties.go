package keys

// Properties returns the names of the properties f compares, each once,
// in the order they first appear; PartitionKey and RowKey count. The zero
// Filter and an invalid one compare none.
func (f Filter) Properties() []string {
	if f.err != nil || f.n == nil {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if n.kind == kindCmp {
			if !seen[n.name] {
				seen[n.name] = true
				names = append(names, n.name)
			}
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(f.n)
	return names
}

// CheckProperties returns an error wrapping ErrInvalidFilter, naming the
// property, for the first property f compares that has reports false for;
// PartitionKey, RowKey and Timestamp always exist. An invalid Filter
// returns its own error. It lets a typed repository refuse a filter on a
// property its type does not have (a typo that would match nothing)
// before any request.
func (f Filter) CheckProperties(has func(name string) bool) error {
	if err := f.Err(); err != nil {
		return err
	}
	for _, name := range f.Properties() {
		switch name {
		case namePartitionKey, nameRowKey, "Timestamp":
			continue
		}
		if !has(name) {
			return filterErr(name, "no such property in the entity type (a filter on it matches nothing)")
		}
	}
	return nil
}

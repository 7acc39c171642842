package tables

import "github.com/tablekit/tablekit/entity"

// Put stores es in table (created if missing) as insert-or-replace would,
// without HTTP: the benchmarks load a million entities with it.
func (s *Service) Put(table string, es []entity.Entity) {
	s.mu.Lock()
	t := s.tables[s.tableKey(table)]
	if t == nil {
		t = newTable(table, s.cfg.Cosmos)
		s.tables[s.tableKey(table)] = t
	}
	s.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range es {
		r := s.key(e.PartitionKey, e.RowKey)
		r.props = propsOf(e)
		r.ts = s.clock.now()
		t.rows.ReplaceOrInsert(r)
	}
}

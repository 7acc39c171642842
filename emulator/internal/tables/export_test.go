package tables

import "github.com/tablekit/tablekit/entity"

// Put stores es in table (created if missing) as insert-or-replace would,
// without HTTP: the benchmarks load a million entities with it.
func (s *Service) Put(table string, es []entity.Entity) {
	if s.d != nil {
		t := s.lookup(table)
		if t == nil {
			var err error
			if t, err = s.createTableDisk(s.tableKey(table), table); err != nil || t == nil {
				panic("tables: Put: creating " + table + ": " + errString(err))
			}
		}
		if err := s.putDisk(t, es); err != nil {
			panic("tables: Put: " + err.Error())
		}
		return
	}
	s.mu.Lock()
	t := s.tables[s.tableKey(table)]
	if t == nil {
		t = newTable(table, s.cfg.Cosmos, s.cfg.Now())
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

func errString(err error) string {
	if err == nil {
		return "raced"
	}
	return err.Error()
}

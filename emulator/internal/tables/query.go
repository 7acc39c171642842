package tables

import (
	"net/http"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/emulator/answer"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/keys"
)

// pageBufs keeps page bodies' buffers for reuse: a 1,000-entity page is
// hundreds of KiB, grown anew on every page otherwise.
var pageBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// maxPooledPage bounds the buffers pageBufs keeps.
const maxPooledPage = 4 << 20

// plan is a query, planned: the filter, the key bounds it implies, a
// table SAS's key range, and where the scan starts.
type plan struct {
	f     keys.Filter
	b     keys.KeyBounds
	sas   *answer.KeyRange
	start *row
	top   int
}

// segment is what a page scanned on one partition server.
type segment struct{ server, scanned int }

// page is one query page: the matches, the resume point (nil after the
// last page) and the work done, by server.
type page struct {
	rows  []*row
	next  *row
	work  []segment
	early bool  // ended by EarlyEnd, before $top and the range's end
	gone  bool  // the table was deleted (on disk; in memory t.gone says it)
	err   error // the disk failed
}

// planQuery picks where to start: the pinned partition (at its lowest
// RowKey bound), else the lowest PartitionKey bound, then no earlier than
// a SAS's start and the client's continuation. On Cosmos DB, whose order
// is not the keys' order, only a pinned partition narrows the scan.
func (s *Service) planQuery(f keys.Filter, sas *answer.KeyRange, cont *row, top int) plan {
	p := plan{f: f, b: f.Bounds(), sas: sas, top: top}
	b := &p.b
	start := s.key("", "")
	switch {
	case b.HasPK:
		rk := ""
		if b.HasRKLo {
			rk = b.RKLo
		}
		start = s.key(b.PK, rk)
	case b.HasPKLo && b.PKLoOpen && !s.cfg.Cosmos:
		// PartitionKey gt X starts past partition X, at the least key
		// above it, as Azure's index seeks: scanning X to skip it cost a
		// parallel scan's probe past a hot partition the whole partition
		// (issue 35: 30,000 entities scanned for none returned).
		start = s.key(b.PKLo+"\x00", "")
	case b.HasPKLo && !s.cfg.Cosmos:
		start = s.key(b.PKLo, "")
	}
	if sas != nil && sas.HasStart && !s.cfg.Cosmos {
		if k := s.key(sas.StartPK, sas.StartRK); s.less(start, k) {
			start = k
		}
	}
	if cont != nil && s.less(start, cont) {
		start = cont
	}
	p.start = start
	return p
}

func (s *Service) less(a, b *row) bool {
	if s.cfg.Cosmos {
		return lessCosmos(a, b)
	}
	return lessStorage(a, b)
}

// beyond reports whether r is past the end of the plan's range: outside
// the pinned partition, above the PartitionKey bound or the SAS range's
// end, or above the RowKey bound in a pinned partition. Rows come in
// index order, so the scan stops at the first.
func (s *Service) beyond(p *plan, r *row) bool {
	b := &p.b
	if b.HasPK {
		if r.pk != b.PK {
			return true
		}
		if b.HasRKHi {
			if c := keys.Compare(r.rk, b.RKHi); c > 0 || c == 0 && b.RKHiOpen {
				return true
			}
		}
	}
	if s.cfg.Cosmos {
		return false
	}
	if b.HasPKHi {
		if c := keys.Compare(r.pk, b.PKHi); c > 0 || c == 0 && b.PKHiOpen {
			return true
		}
	}
	// Past the SAS range's last partition (rows of that partition past
	// its RowKey are left out by outside).
	if p.sas != nil && p.sas.HasEnd && keys.Compare(r.pk, p.sas.EndPK) > 0 {
		return true
	}
	return false
}

// outside reports whether r, inside the scan's range, is excluded by an
// open lower bound or a SAS range (which Match does not see).
func outside(p *plan, r *row) bool {
	b := &p.b
	if b.PKLoOpen && r.pk == b.PKLo {
		return true
	}
	if b.HasPK && b.RKLoOpen && r.rk == b.RKLo {
		return true
	}
	return p.sas != nil && !p.sas.Contains(r.pk, r.rk)
}

// run reads one page of p from t (t read-locked by the caller). With
// early (EarlyEnd, and the request not exempt) the page may end early: at a random point drawn per page
// (a quarter of them before any entity), or where the scan crosses to another
// partition server; either way with a continuation at the next entity.
// early says whether the page may end early (EarlyEnd, and the query not
// exempt); load (nil: none) is the scale model the page's work is booked
// on, by partition server.
func (s *Service) run(t *table, p *plan, early bool, load Load) page {
	var pg page
	cutoff := -1
	if early {
		prob := s.cfg.EarlyEnd.Probability
		if prob == 0 {
			prob = 0.5
		}
		s.rngMu.Lock()
		if s.rng.Float64() < prob {
			// A quarter of the early ends are empty pages (Azure's after
			// a time budget spent on entities that did not match), the
			// rest end at a random point.
			cutoff = 0
			if s.rng.IntN(4) > 0 {
				cutoff = s.rng.IntN(p.top)
			}
		}
		s.rngMu.Unlock()
	}
	scanned, server, lastPK, first := 0, 0, "", true
	visit := func(r *row) bool {
		if s.beyond(p, r) {
			return false
		}
		if len(pg.rows) == p.top {
			pg.next = r
			return false
		}
		if scanned == cutoff {
			pg.next, pg.early = r, true
			return false
		}
		if load != nil && (first || r.pk != lastPK) {
			srv := load.Server(t.name, r.pk)
			if !first && srv != server {
				if early && scanned > 0 {
					pg.next, pg.early = r, true
					return false
				}
			}
			if first || srv != server {
				pg.work = append(pg.work, segment{server: srv})
			}
			server, lastPK, first = srv, r.pk, false
		}
		scanned++
		if len(pg.work) > 0 {
			pg.work[len(pg.work)-1].scanned++
		}
		if outside(p, r) || !p.f.Match(r.filterValue) {
			return true
		}
		pg.rows = append(pg.rows, r)
		return true
	}
	if s.d != nil {
		pg.gone, pg.err = s.ascendDisk(t, p.start, visit)
		return pg
	}
	t.rows.AscendGreaterOrEqual(p.start, visit)
	return pg
}

// queryEntities answers Query Entities: $filter, $top, $select and the
// NextPartitionKey/NextRowKey continuation, in and out.
func (s *Service) queryEntities(q *request, name string) {
	grant, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Permission: 'r', Name: name})
	if !ok {
		return
	}
	v := q.query
	top, f, e := pageOf(v, s.cfg.Cosmos)
	if e != nil {
		s.fail(q, e)
		return
	}
	var cont *row
	if npk, nrk := v.Get("NextPartitionKey"), v.Get("NextRowKey"); npk != "" || nrk != "" {
		pk, ok1 := decodeToken(npk)
		rk, ok2 := decodeToken(nrk)
		if !ok1 || (nrk != "" && !ok2) {
			s.fail(q, errInvalidInput)
			return
		}
		cont = s.key(pk, rk)
	}
	sel := parseSelect(v.Get("$select"))
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	p := s.planQuery(f, keyRange(grant), cont, top)
	// A query is admitted at no cost and charged what its page scanned,
	// in the partition it names (an empty PartitionKey included) or the
	// account.
	pk, hasPK := p.b.PK, p.b.HasPK
	if !s.admit(q, t.name, pk, hasPK, 0) {
		return
	}
	var pg page
	early := s.rng != nil && q.r.Header.Get(NoEarlyEndHeader) == ""
	if s.d != nil {
		// On disk: read transactions of their own, no lock.
		if top > 0 {
			pg = s.run(t, &p, early, q.load)
		}
	} else {
		t.mu.RLock()
		pg.gone = t.gone
		if top > 0 && !pg.gone { // $top=0: no entity and no continuation
			pg = s.run(t, &p, early, q.load)
		}
		t.mu.RUnlock()
	}
	switch {
	case pg.err != nil:
		s.fail(q, answer.InternalError())
		return
	case pg.gone:
		s.fail(q, errTableNotFound)
		return
	}
	if pg.early {
		s.earlyPages.Add(1)
		if len(pg.rows) == 0 {
			s.emptyPages.Add(1)
		}
	}
	if load := q.load; load != nil {
		n := 0
		for _, w := range pg.work {
			n += w.scanned
		}
		load.Charge(t.name, pk, hasPK, n)
		for _, w := range pg.work {
			if load.Work(q.r.Context(), w.server, w.scanned) != nil {
				return // the client has gone
			}
		}
	}
	bp := pageBufs.Get().(*[]byte)
	b := (*bp)[:0]
	defer func() {
		if cap(b) <= maxPooledPage {
			*bp = b[:0]
			pageBufs.Put(bp)
		}
	}()
	b = append(b, '{')
	if m := s.metadata(q, t.name, false, sel); m != "" {
		if sel == nil && v.Has("$select") && strings.TrimSpace(v.Get("$select")) == "" {
			// An empty $select selects every property, and the link
			// says it was sent (azure-cosmos-table-python's recorded
			// batch tests, 2017: "$metadata#<table>&$select=").
			m += "&$select="
		}
		b = append(b, `"odata.metadata":`...)
		b = appendQuoted(b, m)
		b = append(b, ',')
	}
	b = append(b, `"value":[`...)
	for i, r := range pg.rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendRow(b, q, t.name, r, sel, "")
	}
	b = append(b, "]}"...)
	if pg.next != nil {
		h := q.headers()
		h.Set("x-ms-continuation-NextPartitionKey", encodeToken(pg.next.pk))
		h.Set("x-ms-continuation-NextRowKey", encodeToken(pg.next.rk))
	}
	q.reply(http.StatusOK, b)
}

// keyRange is the grant's table SAS key range, if any.
func keyRange(g *auth.Grant) *answer.KeyRange {
	k := g.KeyRange
	if k == nil {
		return nil
	}
	return &answer.KeyRange{StartPK: k.StartPK, StartRK: k.StartRK, EndPK: k.EndPK, EndRK: k.EndRK, HasStart: k.HasStart, HasEnd: k.HasEnd}
}

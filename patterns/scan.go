package patterns

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// DefaultScanParallel is the number of key ranges a parallel scan reads at
// once when its options do not say.
const DefaultScanParallel = 8

// ScanOptions configures Scan (and the whole-table operations built on
// it). A nil *ScanOptions means the defaults: T's properties, pages of
// 1,000, DefaultScanParallel ranges at once, from the start.
type ScanOptions struct {
	// QueryOptions shape each range's query: Select, SelectAll, Top and
	// AllowUnknownProperties as for Query. Limit is ignored, and Scan
	// needs no AllowTableScan: reading a whole table is what it is for.
	QueryOptions
	// Parallel is the number of key ranges read at once (0 means
	// DefaultScanParallel; 1 reads the table as one sequential range).
	Parallel int
	// Resume is a ScanProgress.Token of an earlier Scan with the same
	// table, filter and projection: the scan continues after the pages
	// that token covers. A token of another query fails with
	// tablekit.ErrInvalidToken.
	Resume string
	// Progress, when set, is called after each page fn handled, one call
	// at a time, with the totals of this run and a token covering every
	// page handled so far.
	Progress func(ScanProgress)
}

// ScanProgress is where a Scan is.
type ScanProgress struct {
	// Token resumes the scan (ScanOptions.Resume): it covers every page
	// whose fn returned nil, and no other. Persist it after the work fn
	// did is durable, and a crashed scan resumes without losing or
	// repeating a row (on a table nobody writes meanwhile).
	Token string
	// Rows and Pages are the rows and pages handed to fn in this run.
	Rows  int64
	Pages int
	// Ranges is the number of key ranges known so far (they are found
	// while the scan runs); RangesDone of them are finished.
	Ranges, RangesDone int
}

// ScanResult is what a Scan did.
type ScanResult struct {
	// Rows and Pages are those handed to fn.
	Rows  int64
	Pages int
	// Ranges is the number of key ranges the scan ran.
	Ranges int
	// Requests counts the query pages and the probes that found split
	// points.
	Requests int
	// Throttled counts the requests the service refused for being over
	// a target (503 ServerBusy, 429, 500 OperationTimedOut): each was
	// asked again after a pause, and the range it was for is not split
	// further. Requests does not count them.
	Throttled int
}

// Scan reads every entity matching f (the zero keys.Filter: the whole
// table), split into key ranges read concurrently, and calls fn with each
// page's entities. fn is called from up to Parallel goroutines at once;
// the pages of one range come in key order, one after the other, those of
// different ranges in no particular order. Scan stops at fn's first error
// and returns it.
//
// Azure has no split API, so the ranges come from the data: a range that
// turns out to have more pages is split while it runs, between its
// position and its end, by PartitionKey where other partitions remain and
// by RowKey inside one partition. Probes find where the keys are: each
// reads the first page of the range a candidate point would start (or,
// narrowing in on keys that share a long prefix, asks for one key:
// $top=1, keys only), one request each, so a new range starts with its
// first page in hand. Each row belongs to exactly one range, so on a
// table nobody writes the scan yields every row exactly once, as a
// sequential Query would. On a live table it is fuzzy as any scan is: a
// row written while the scan runs may or may not be seen.
//
// Resuming: opts.Progress hands out a token after each page; a Scan given
// it in opts.Resume reads the pages the token does not cover.
//
// On Azure Cosmos DB, whose results are not sorted, ranges cannot be cut
// at a key, so Scan reads the table as one range (what Query does).
//
// Requests: one per page of each range (the first pages of most ranges
// read by the probes that found them), plus the other probes (a few per
// split; more for keys sharing long prefixes). The count depends on
// timing and is reported in ScanResult.Requests.
//
//go:noinline
func (t *Table[T]) Scan(ctx context.Context, f keys.Filter, fn func(ctx context.Context, items []T) error, opts *ScanOptions) (ScanResult, error) {
	o := optsOf(opts)
	f, q, err := t.ops().prepareScan(f, &o)
	if err != nil {
		return ScanResult{}, err
	}
	return scanPages(ctx, t.w, f, q, &o, func(ctx context.Context, p scanPage) error {
		if len(p.rows) == 0 {
			return nil
		}
		items := make([]T, len(p.rows))
		if err := t.ops().decodeRows(p.rows, func(i int) any { return &items[i] }); err != nil {
			return err
		}
		return fn(ctx, items)
	})
}

// decodeRows decodes a scan page's rows, row i into item(i) (a *T).
func (t *tableOps) decodeRows(rows [][]byte, item func(i int) any) error {
	// One reader for the page's rows: they share its buffers, and each
	// row's strings one allocation.
	var r entity.PageReader
	for i, raw := range rows {
		r.ResetRow(raw)
		var err error
		if r.Next() {
			err = r.Decode(t.codec, item(i))
		}
		if err == nil && !r.Next() { // the row's end, checked
			err = r.Err()
		}
		if err != nil {
			return tkerr.Errorf("tablekit: scan %s: %w", t.name, err)
		}
	}
	return nil
}

// prepareScan is the query each range of a scan runs, and f as it is
// sent (typedFilter).
func (t *tableOps) prepareScan(f keys.Filter, o *ScanOptions) (keys.Filter, query, error) {
	f, err := t.typedFilter(f, o.AllowUnknownProperties)
	if err != nil {
		return f, query{}, err
	}
	qo := o.QueryOptions
	qo.AllowTableScan, qo.Limit = true, 0
	q, err := prepareQuery(t.name, f, &qo, t.codec.Select())
	return f, q, err
}

// SplitScan divides the scan of f into about n key ranges (a point inside
// a partition adds one: the rest of that partition and the partitions
// after it are two ranges), at existing keys that probes find (a few requests, none on Cosmos DB, whose scan is
// one range), and returns a token for each: Scans given them in
// ScanOptions.Resume, with the same filter and options, read every row
// exactly once between them, on one machine or many, each splitting its
// range further as it runs. Each token is also the checkpoint its Scan
// starts from. An empty table gives one token.
func (t *Table[T]) SplitScan(ctx context.Context, f keys.Filter, n int, opts *ScanOptions) ([]string, error) {
	return t.ops().splitScan(ctx, f, n, opts)
}

func (t *tableOps) splitScan(ctx context.Context, f keys.Filter, n int, opts *ScanOptions) ([]string, error) {
	o := optsOf(opts)
	f, q, err := t.prepareScan(f, &o)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > 10_000 {
		return nil, tkerr.Errorf("tablekit: split scan of %s: %w: %d ranges is outside 1..10000", t.name, tablekit.ErrInvalidArgument, n)
	}
	whole := &scanRange{Hi: position{End: true}, Stop: position{End: true}}
	ranges := []*scanRange{whole}
	s := &scan{w: t.w, base: f, q: q, ordered: !t.w.Profile().Cosmos()}
	if s.ordered && n > 1 {
		first, found, err := s.probe(ctx, keys.Filter{})
		if err != nil {
			return nil, err
		}
		if found {
			var points []position
			for round := 0; len(points) < n-1 && round < 8; round++ {
				// Spread points above first; then again above the last
				// point found, until n-1 or no more are found.
				more, _, err := s.findSplit(ctx, first, whole.Stop, whole.Hi, n-1-len(points), true, splitHint{})
				if err != nil {
					return nil, err
				}
				more = slices.DeleteFunc(more, func(p position) bool { return cmpPos(p, first) <= 0 })
				if len(more) == 0 {
					break
				}
				more = evenly(more, n-1-len(points))
				points = append(points, more...)
				slices.SortFunc(points, cmpPos)
				points = slices.CompactFunc(points, func(a, b position) bool { return cmpPos(a, b) == 0 })
				first = points[len(points)-1]
			}
			if len(points) > 0 {
				ranges = append(ranges, splitRanges(points, whole.Stop, whole.Hi)...)
				whole.Stop = points[0]
			}
		}
	}
	tokens := make([]string, len(ranges))
	for i, r := range ranges {
		b, _ := json.Marshal(scanToken{V: scanTokenVersion, Q: q.hash[:], Ranges: []*scanRange{r}})
		tokens[i] = base64.RawURLEncoding.EncodeToString(b)
	}
	return tokens, nil
}

// scanRange is one key range of a scan: the rows in [Lo, Hi) that the
// filter selects, cut at Stop once a split gave the rest to other ranges.
type scanRange struct {
	Lo   position           `json:"l"`
	Hi   position           `json:"h"`
	Stop position           `json:"s"`
	Cont *wire.Continuation `json:"c,omitempty"` // after the last page fn handled

	// This run's state, under the scan's lock.
	claimed   *position // the last key handed out (nil: none in this run)
	first     position  // the first key of the last page read (with claimed)
	hint      splitHint // what the last page read says (pageHint)
	more      bool      // the last page had a continuation
	pages     int       // read since the range was made or last split
	running   bool
	done      bool
	handled   bool // done, and its last page handled
	splitting bool
	dead      bool // a split found nothing to split
	throttled bool // a page of it was refused at a target: not split
	filter    string
	pending   *pendingPage // the first page, read by the split that made r
}

// scanToken is what a ScanProgress.Token holds.
type scanToken struct {
	V      int          `json:"v"`
	Q      []byte       `json:"q"`
	Ranges []*scanRange `json:"r"`
}

const scanTokenVersion = 1

// scan is one run of the engine.
type scan struct {
	w        *wire.Table
	base     keys.Filter
	q        query
	ordered  bool
	fn       func(ctx context.Context, p scanPage) error
	opts     *ScanOptions
	parallel int

	mu      sync.Mutex
	cond    *sync.Cond
	ranges  []*scanRange // every range of this run, in creation order
	queue   []*scanRange // ranges waiting for a worker
	running int
	splits  int // split searches under way: they may queue ranges
	// bounds holds what prefix gallops learned: no PartitionKey at or
	// above bounds[""], no RowKey of partition p at or above bounds["\x00"+p].
	bounds   map[string]string
	err      error
	res      ScanResult
	pause    time.Duration // the first pause after a throttling answer (page)
	progress sync.Mutex
}

// scanPage is one page of a scan's range, as the service sent its rows.
type scanPage struct {
	rows [][]byte
	rng  *scanRange // the range; its pages come one after the other
	last bool       // the range's last page
}

// scanPages runs the engine: fn gets each page's rows. f is the caller's
// filter, q the query prepared from it.
func scanPages(ctx context.Context, w *wire.Table, f keys.Filter, q query, opts *ScanOptions, fn func(ctx context.Context, p scanPage) error) (ScanResult, error) {
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = DefaultScanParallel
	}
	s := &scan{w: w, base: f, q: q, ordered: !w.Profile().Cosmos(), fn: fn, opts: opts}
	s.cond = sync.NewCond(&s.mu)
	if s.ordered && q.selects != "" {
		// Cuts and splits need each row's keys.
		for _, k := range keysOnly {
			if !slices.Contains(strings.Split(q.selects, ","), k) {
				s.q.selects += "," + k
			}
		}
	}
	if !s.ordered {
		parallel = 1
	}
	s.parallel = parallel
	if opts.Resume != "" {
		if err := s.resume(opts.Resume); err != nil {
			return ScanResult{}, err
		}
	} else {
		s.ranges = []*scanRange{{Hi: position{End: true}, Stop: position{End: true}}}
	}
	for _, r := range s.ranges {
		bf, err := boundsFilter(r.Lo, r.Hi)
		if err != nil {
			return ScanResult{}, err
		}
		if r.filter, err = keys.And(f, bf).Build(); err != nil {
			return ScanResult{}, err
		}
	}
	s.queue = slices.Clone(s.ranges)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.work(ctx); err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.cond.Broadcast()
				s.mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	s.res.Ranges = len(s.ranges)
	if s.err == nil && ctx.Err() != nil {
		s.err = ctx.Err()
	}
	return s.res, s.err
}

// work is one worker: it reads queued ranges, and when none is queued,
// splits a running one for itself, until every range is done.
func (s *scan) work(ctx context.Context) error {
	for {
		s.mu.Lock()
		var r *scanRange
		for {
			if s.err != nil || ctx.Err() != nil {
				s.mu.Unlock()
				return nil
			}
			if len(s.queue) > 0 {
				r, s.queue = s.queue[0], s.queue[1:]
				break
			}
			if s.running == 0 && s.splits == 0 {
				s.cond.Broadcast()
				s.mu.Unlock()
				return nil
			}
			if c := s.splitCandidate(); c != nil && s.splits < maxSplitSearches {
				c.splitting = true
				s.splits++
				s.mu.Unlock()
				err := s.split(ctx, c)
				s.mu.Lock()
				c.splitting = false
				s.splits--
				s.cond.Broadcast()
				if err != nil {
					s.mu.Unlock()
					return err
				}
				continue
			}
			s.cond.Wait()
		}
		r.running = true
		s.running++
		s.mu.Unlock()

		err := s.read(ctx, r)

		s.mu.Lock()
		r.running = false
		s.running--
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// read reads r's pages until it is done.
func (s *scan) read(ctx context.Context, r *scanRange) error {
	pos := r.Cont
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var rows [][]byte
		var next *wire.Continuation
		fetched := r.pending == nil
		if fetched {
			var err error
			if rows, next, err = s.page(ctx, r, wire.Query{Filter: r.filter, Select: s.q.selects, Top: s.q.top}, pos); err != nil {
				return err
			}
		} else {
			// The first page, read by the search that made r (and
			// counted there).
			rows, next, r.pending = r.pending.rows, r.pending.next, nil
		}
		s.mu.Lock()
		if fetched {
			s.res.Requests++
		}
		// Claim the rows before r.Stop: a split sets Stop only above the
		// last claimed key, so a row is claimed by one range only.
		keep := len(rows)
		if s.ordered && len(rows) > 0 && !r.Stop.End {
			last, err := rowPosition(rows[len(rows)-1])
			if err != nil {
				s.mu.Unlock()
				return err
			}
			if cmpPos(last, r.Stop) >= 0 {
				keep, err = cutAt(rows, r.Stop)
				if err != nil {
					s.mu.Unlock()
					return err
				}
				next = nil // the rest belongs to other ranges
			}
		}
		rows = rows[:keep]
		if s.ordered && keep > 0 {
			p, err := rowPosition(rows[keep-1])
			if err != nil {
				s.mu.Unlock()
				return err
			}
			r.claimed = &p
			if r.first, err = rowPosition(rows[0]); err != nil {
				s.mu.Unlock()
				return err
			}
			if r.hint, err = pageHint(rows, r.first, p); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		r.pages++
		r.more = next != nil
		r.done = next == nil
		s.cond.Broadcast() // a page read: a split may be worth trying
		s.mu.Unlock()

		if len(rows) > 0 || next == nil {
			if err := s.fn(ctx, scanPage{rows: rows, rng: r, last: next == nil}); err != nil {
				return err
			}
		}
		s.mu.Lock()
		r.Cont = next
		r.handled = r.done
		s.res.Pages++
		s.res.Rows += int64(len(rows))
		var p ScanProgress
		if s.opts.Progress != nil {
			p = s.progressLocked()
		}
		s.mu.Unlock()
		if s.opts.Progress != nil {
			s.progress.Lock()
			s.opts.Progress(p)
			s.progress.Unlock()
		}
		if next == nil {
			return nil
		}
		pos = next
	}
}

// cutAt returns how many of rows (in key order) come before stop.
func cutAt(rows [][]byte, stop position) (int, error) {
	var err error
	n, _ := slices.BinarySearchFunc(rows, stop, func(raw []byte, stop position) int {
		p, e := rowPosition(raw)
		if e != nil {
			err = e
			return 0
		}
		return cmpPos(p, stop)
	})
	return n, err
}

// progressLocked is the progress of the scan, with a token of the ranges
// not yet handled to their end.
func (s *scan) progressLocked() ScanProgress {
	p := ScanProgress{Rows: s.res.Rows, Pages: s.res.Pages, Ranges: len(s.ranges)}
	tok := scanToken{V: scanTokenVersion, Q: s.q.hash[:]}
	for _, r := range s.ranges {
		if r.handled {
			p.RangesDone++
			continue
		}
		tok.Ranges = append(tok.Ranges, r)
	}
	b, _ := json.Marshal(tok) // strings, bools and pointers to them only
	p.Token = base64.RawURLEncoding.EncodeToString(b)
	return p
}

func (s *scan) resume(token string) error {
	if len(token) > 4<<20 {
		return fmt.Errorf("%w: %d bytes is longer than any scan token tablekit issues", tablekit.ErrInvalidToken, len(token))
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return fmt.Errorf("%w: a scan token is URL-safe base64", tablekit.ErrInvalidToken)
	}
	var tok scanToken
	if err := json.Unmarshal(b, &tok); err != nil || tok.V != scanTokenVersion {
		return fmt.Errorf("%w: not a tablekit scan token", tablekit.ErrInvalidToken)
	}
	if !slices.Equal(tok.Q, s.q.hash[:]) {
		return fmt.Errorf("%w: the scan token belongs to another query (table, filter, projection or page size differ)", tablekit.ErrInvalidToken)
	}
	for _, r := range tok.Ranges {
		if r == nil || cmpPos(r.Stop, r.Hi) > 0 || cmpPos(r.Lo, r.Stop) > 0 {
			return fmt.Errorf("%w: a scan range of the token is malformed", tablekit.ErrInvalidToken)
		}
		if r.Cont != nil && r.Cont.PK == "" {
			return fmt.Errorf("%w: a scan range's position is malformed", tablekit.ErrInvalidToken)
		}
	}
	s.ranges = tok.Ranges
	return nil
}

// splitCandidate picks a running range worth splitting: the one that read
// the most pages since it was last split and has more. (A range's pages
// since its last split stand in for its size, which nothing tells: the
// half a split leaves a range may be the small one.)
func (s *scan) splitCandidate() *scanRange {
	if !s.ordered {
		return nil
	}
	var best *scanRange
	for _, r := range s.ranges {
		if !r.running || r.splitting || r.dead || r.done || r.throttled {
			// A range refused at a target (its partition's, or the
			// account's) gains nothing from a second reader beside it.
			continue
		}
		// A range is searched once it read a page: the page says where
		// the range is, how much it has left and what its keys look like
		// (pageHint); a search started earlier would spend its first
		// round trip finding the range's first key.
		if r.claimed == nil || !r.more {
			continue
		}
		// A range about to end is done before a search would be.
		if left, ok := pagesLeft(r.first, *r.claimed, r.Stop); ok && left < minSplitPages {
			continue
		}
		if best == nil || r.pages > best.pages {
			best = r
		}
	}
	return best
}

// minSplitPages is how many pages a range must have left (pagesLeft) to
// be worth a split search: a search takes a few round trips, and a range
// with less left ends sooner by reading it.
const minSplitPages = 3

// maxProbePages bounds the empty pages one probe follows; minSpread is
// the fewest points a search probes in a round, and maxNarrow
// the most midpoints it then probes one after the other. A search whose
// range's last page shares a prefix of minGallopHint characters or more
// gallops over prefixes in its first round (splitKeys).
const (
	maxProbePages = 8
	minSpread     = 4
	maxNarrow     = 4
	minGallopHint = 4
)

// split looks for split points between r's position and its stop
// (findSplit), and gives the keys from the first one on to new ranges,
// each with its first page when the search read it.
func (s *scan) split(ctx context.Context, r *scanRange) error {
	s.mu.Lock()
	cur, hint, stop := *r.claimed, r.hint, r.Stop
	// r.Hi is set when r is made, and never changes.
	// As many split points as there are workers without a range, so one
	// round of probes gives each of them one.
	want := min(max(s.parallel-s.running-len(s.queue), 1), maxSplitPoints)
	s.mu.Unlock()

	points, opened, err := s.findSplit(ctx, cur, stop, r.Hi, want, false, hint)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return err
	}
	// The range moved on while the probes ran: only points above what
	// it claimed and below its stop split it. A range is given up on
	// (dead) only when the search found no key in it: one that read past
	// the keys found (its pages come faster than a search's probes, on a
	// busy service) is searched again from where it is.
	found := len(points)
	points = slices.DeleteFunc(points, func(p position) bool {
		return cmpPos(p, *r.claimed) <= 0 || cmpPos(p, r.Stop) >= 0
	})
	if len(points) == 0 || r.done {
		r.dead = found == 0 && !r.done
		return nil
	}
	add := splitRanges(points, r.Stop, r.Hi)
	kept := add[:0]
	for _, n := range add {
		// The range the search read the first page of, if it did.
		if i := slices.IndexFunc(opened, func(o *scanRange) bool { return o.Lo == n.Lo && o.Hi == n.Hi && o.Stop == n.Stop }); i >= 0 {
			n = opened[i]
			if p := n.pending; len(p.rows) == 0 && p.next == nil {
				continue // nothing there
			}
		} else {
			bf, err := boundsFilter(n.Lo, n.Hi)
			if err != nil {
				return err
			}
			if n.filter, err = keys.And(s.base, bf).Build(); err != nil {
				return err
			}
		}
		kept = append(kept, n)
	}
	add = kept
	r.Stop = points[0]
	r.pages = 0 // what it has left is a fraction now: count afresh
	s.ranges = append(s.ranges, add...)
	s.queue = append(s.queue, add...)
	return nil
}

// splitRanges are the ranges that take the keys from points[0] (sorted,
// each inside a range that stops at stop and whose filter bound is hi)
// up to stop: from each point to the next.
func splitRanges(points []position, stop, hi position) []*scanRange {
	var add []*scanRange
	for i, at := range points {
		end := stop
		if i+1 < len(points) {
			end = points[i+1]
		}
		if at.RK == "" {
			// At a partition: the partitions from at up to the next point.
			add = append(add, &scanRange{Lo: at, Hi: pkBound(end, hi), Stop: end})
			continue
		}
		// Inside partition at.PK: its rows from at (to the next point if
		// that is in the partition), and the partitions after it when
		// the range reached past them.
		partEnd := position{PK: at.PK, PartEnd: true}
		if cmpPos(end, partEnd) <= 0 {
			add = append(add, &scanRange{Lo: at, Hi: end, Stop: end})
			continue
		}
		add = append(add,
			&scanRange{Lo: at, Hi: partEnd, Stop: partEnd},
			&scanRange{Lo: partEnd, Hi: pkBound(end, hi), Stop: end})
	}
	return add
}

// pkBound is the filter bound of a range of whole partitions that stops at
// end: end itself when it is a partition's start or the table's end,
// else (end inside a partition, whose later rows another range holds)
// the original bound hi, the cut at end doing the rest.
func pkBound(end, hi position) position {
	if end.End || (end.RK == "" && !end.PartEnd) {
		return end
	}
	return hi
}

// maxSplitPoints bounds the points one split search looks for, and
// maxSplitSearches the searches under way at once: a search probes for a
// point for every idle worker, so more at once only add probes (each costs
// the service a query; on Azurite as much as a page).
const (
	maxSplitPoints   = 16
	maxSplitSearches = 2
	gallopProbes     = 8
)

// splitHint is what a range's last page tells a split search.
type splitHint struct {
	// inPartition: the page lay in one partition, the range's position's:
	// its rows are searched at once with the partitions after it, not
	// after them.
	inPartition bool
	// pk and rk: how many characters the page's PartitionKeys, and
	// RowKeys within one partition, share (0: unknown), where prefix
	// gallops start (prefixBound).
	pk, rk int
}

// pageHint is the hint of a page whose rows (in key order, at least one)
// went from first to last. The RowKeys' prefix comes from the rows of
// last's partition; a partition that holds a quarter of the page or more
// is taken to fill pages.
func pageHint(rows [][]byte, first, last position) (splitHint, error) {
	common := func(a, b string) int { return commonPrefix(a, b, false) }
	if first.PK == last.PK {
		return splitHint{inPartition: true, pk: len([]rune(last.PK)), rk: common(first.RK, last.RK)}, nil
	}
	h := splitHint{pk: common(first.PK, last.PK)}
	// The first row of last's partition.
	var err error
	i, _ := slices.BinarySearchFunc(rows, last.PK, func(raw []byte, pk string) int {
		p, e := rowPosition(raw)
		if e != nil {
			err = e
			return 0
		}
		return keys.Compare(p.PK, pk)
	})
	if err != nil || i >= len(rows)-1 {
		return h, err
	}
	partFirst, err := rowPosition(rows[i])
	if err != nil {
		return h, err
	}
	h.rk = common(partFirst.RK, last.RK)
	h.inPartition = 4*(len(rows)-i) >= len(rows)
	return h, nil
}

// findSplit finds up to n split points between cur and stop (a range's
// stop; hi its filter's bound), spread over the keys there: partitions
// after cur's where there are some, else rows of cur's partition after
// cur. They come sorted, without repeats. adjacent allows the row right
// after cur as the point when no other is found: a range that is running
// reads it before the search ends. h tells what the range's last page
// says (pageHint).
//
// A Scan's search (s.fn set; not SplitScan's) reads, in its rounds of
// spread points, the first page of each range the points would make
// (splitRanges from them to stop) where SplitScan probes for one key:
// the same request, and the new range starts with its first page in hand
// instead of a round trip behind. Those points need not be keys, and
// opened holds the ranges read; split keeps those it makes.
func (s *scan) findSplit(ctx context.Context, cur, stop, hi position, n int, adjacent bool, h splitHint) (points []position, opened []*scanRange, err error) {
	inPart := !stop.End && stop.PK == cur.PK && !stop.PartEnd
	var mu sync.Mutex
	// pageOf reads the first page of the i-th range that the points at
	// pos (sorted) make when they split a range that stops at end.
	pageOf := func(pos func(string) position, end position) func(ctx context.Context, points []string, i int) (bool, error) {
		if s.fn == nil {
			return nil
		}
		return func(ctx context.Context, points []string, i int) (bool, error) {
			ps := make([]position, len(points))
			for j, p := range points {
				ps[j] = pos(p)
			}
			// Each point makes one range: rows up to the next point or
			// end (a row point's end is within its partition), or
			// partitions up to the next point or stop.
			r := splitRanges(ps, end, hi)[i]
			found, err := s.openRange(ctx, r)
			if err == nil {
				mu.Lock()
				opened = append(opened, r)
				mu.Unlock()
			}
			return found, err
		}
	}
	rowEnd := position{PK: cur.PK, PartEnd: true}
	if inPart {
		rowEnd = stop
	}
	rowLevel := func(ctx context.Context) ([]position, error) {
		rks, err := s.splitKeys(ctx, "\x00"+cur.PK, cur.RK, stop.RK, !inPart, adjacent, n, h.rk, pageOf(func(rk string) position { return keyAt(cur.PK, rk) }, rowEnd), func(ctx context.Context, f func(keys.Key) keys.Filter) (string, bool, error) {
			fs := []keys.Filter{keys.PK().Eq(cur.PK), f(keys.RK())}
			if inPart {
				fs = append(fs, keys.RK().Lt(stop.RK))
			}
			k, found, err := s.probe(ctx, keys.And(fs...))
			return k.RK, found, err
		})
		out := make([]position, len(rks))
		for i, rk := range rks {
			out[i] = keyAt(cur.PK, rk)
		}
		return out, err
	}
	if !stop.End && keys.Compare(cur.PK, stop.PK) >= 0 {
		points, err = rowLevel(ctx)
		return points, opened, err
	}
	partitionLevel := func(ctx context.Context) ([]position, error) {
		var upper keys.Filter
		switch {
		case stop.End:
		case stop.PartEnd:
			upper = keys.PK().Le(stop.PK)
		default:
			upper = keys.PK().Lt(stop.PK)
		}
		pks, err := s.splitKeys(ctx, "", cur.PK, stop.PK, stop.End, true, n, h.pk, pageOf(func(pk string) position { return keyAt(pk, "") }, stop), func(ctx context.Context, f func(keys.Key) keys.Filter) (string, bool, error) {
			k, found, err := s.probe(ctx, keys.And(f(keys.PK()), upper))
			return k.PK, found, err
		})
		out := make([]position, len(pks))
		for i, pk := range pks {
			out[i] = keyAt(pk, "")
		}
		return out, err
	}
	if !h.inPartition {
		// Partitions after cur's where there are some, else cur's rows.
		if points, err = partitionLevel(ctx); err != nil || len(points) > 0 {
			return points, opened, err
		}
		points, err = rowLevel(ctx)
		return points, opened, err
	}
	// The range is inside a partition that fills pages: split its rows
	// and the partitions after it at once (its rows come first).
	var levels [2][]position
	err = atOnce(2, func(i int) (err error) {
		if i == 0 {
			levels[0], err = rowLevel(ctx)
		} else {
			levels[1], err = partitionLevel(ctx)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return append(levels[0], levels[1]...), opened, nil
}

// openRange reads r's first page (its filter set from its bounds): the
// page waits in r.pending for the worker that takes r. It reports
// whether r has anything to read: rows before its stop, or a
// continuation.
func (s *scan) openRange(ctx context.Context, r *scanRange) (bool, error) {
	bf, err := boundsFilter(r.Lo, r.Hi)
	if err != nil {
		return false, err
	}
	if r.filter, err = keys.And(s.base, bf).Build(); err != nil {
		return false, err
	}
	rows, next, err := s.page(ctx, r, wire.Query{Filter: r.filter, Select: s.q.selects, Top: s.q.top}, nil)
	s.mu.Lock()
	s.res.Requests++
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	r.pending = &pendingPage{rows: rows, next: next}
	keep := len(rows)
	if !r.Stop.End && keep > 0 {
		if keep, err = cutAt(rows, r.Stop); err != nil {
			return false, err
		}
		if keep < len(rows) {
			next = nil
		}
	}
	return keep > 0 || next != nil, nil
}

// pendingPage is a range's first page, read by the split search that
// made the range.
type pendingPage struct {
	rows [][]byte
	next *wire.Continuation
}

// splitKeys finds up to n existing keys above cur, spread over those that
// exist between cur and hi (no bound when open), for one key of the pair;
// first returns the first existing key the bound selects within the
// range. In one round it probes n points spread between cur and hi, and
// the first key above cur: on keys spread over the space (hex, GUIDs,
// names, numbers) the points find them, and when no key lies above cur
// that one probe says so. When there are keys above cur but every point
// lay above them, they share a long prefix with cur (tenant ids, padded
// numbers): a gallop over cur's prefixes finds the longest one that no
// key leaves (keys.PrefixRange), a tight bound to spread the points under
// again; when they still find nothing, a few midpoints toward cur are
// probed one after the other, and last (when adjacent) the key after cur
// is the point. A bound a gallop found with no upper bound holds for the
// whole scan (memo names the key: "" for PartitionKeys, "\x00"+p for the
// RowKeys of partition p), and later searches start under it. When the
// range's last page shares a long prefix (hint characters), the gallop
// runs in the first round, beside the spread points.
//
// With pageOf (a Scan's search, findSplit), a round of spread points
// reads the first page of each point's range instead of probing for one
// key, and the points themselves are the split points when any of those
// ranges holds rows.
func (s *scan) splitKeys(ctx context.Context, memo, cur, hi string, open, adjacent bool, n, hint int, pageOf func(ctx context.Context, points []string, i int) (bool, error), first func(ctx context.Context, f func(keys.Key) keys.Filter) (string, bool, error)) ([]string, error) {
	s.mu.Lock()
	memoed, known := s.bounds[memo]
	s.mu.Unlock()
	if known && keys.Compare(memoed, cur) > 0 && (open || keys.Compare(memoed, hi) < 0) {
		hi, open = memoed, false
	}
	memoize := open
	// At least minSpread points, all of whose keys are kept: a search
	// for one point between a key and a loose bound (the start of the
	// hex partitions and the end of the table) finds where the keys are,
	// and the ranges beyond what idle workers take wait queued for the
	// next worker that finishes, where it would have waited for a search.
	points := spread(cur, hi, open, max(n, minSpread))
	gallop := func(ctx context.Context) (string, bool, error) {
		return s.prefixBound(ctx, cur, hi, open, hint, func(ctx context.Context, m string) (bool, error) {
			_, ok, err := first(ctx, func(k keys.Key) keys.Filter { return k.Ge(m) })
			return ok, err
		})
	}
	// The points differ from cur a character or so after its common
	// prefix with hi (no bound: its first few characters): when the last
	// page's keys share a longer prefix, the keys after it likely do
	// too, and every point lies above them. Then the gallop that would
	// follow runs in the same round.
	var (
		found   []string
		b       string
		ok, ran bool
	)
	err := atOnce(2, func(i int) (err error) {
		switch {
		case i == 0:
			found, err = s.probeRound(ctx, cur, points, hi, open, true, pageOf, first)
		case hint >= commonPrefix(cur, hi, open)+minGallopHint:
			ran = true
			b, ok, err = gallop(ctx)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var next string // the first key above cur
	for _, k := range found {
		if k != "" {
			next = k
			break
		}
	}
	if next == "" {
		return nil, nil // no key above cur
	}
	if out := sortedKeys(found[1:]); len(out) > 0 {
		if pageOf != nil {
			return points, nil // each point's range read
		}
		return out, nil
	}
	lowest := hi
	if len(points) > 0 {
		lowest = points[0]
	}
	if !ran {
		if b, ok, err = gallop(ctx); err != nil {
			return nil, err
		}
	}
	if ok && (open && len(points) == 0 || keys.Compare(b, lowest) < 0) {
		if memoize {
			s.mu.Lock()
			if s.bounds == nil {
				s.bounds = map[string]string{}
			}
			s.bounds[memo] = b
			s.mu.Unlock()
		}
		// The bound is tighter than the lowest point: spread again under
		// it, at least minSpread points (the keys may fill a sliver of
		// what is under the bound), and keep n of what they find.
		if points = spread(cur, b, false, max(n, minSpread)); len(points) > 0 {
			found, err := s.probeRound(ctx, cur, points, b, false, false, pageOf, first)
			if err != nil {
				return nil, err
			}
			if out := sortedKeys(found); len(out) > 0 {
				if pageOf != nil {
					return points, nil
				}
				return evenly(out, n), nil
			}
			lowest = points[0]
		}
	}
	// Nothing at or above the lowest point: narrow toward cur, a few
	// midpoints one after the other.
	for range maxNarrow {
		m, ok := midKey(cur, lowest, false)
		if !ok {
			break
		}
		k, ok, err := first(ctx, func(kk keys.Key) keys.Filter { return kk.Ge(m) })
		if err != nil {
			return nil, err
		}
		if ok {
			return []string{k}, nil
		}
		lowest = m
	}
	if !adjacent {
		return nil, nil
	}
	return []string{next}, nil
}

// evenly returns n of the sorted keys, spread over them (all of them when
// there are n or fewer).
func evenly[E any](ks []E, n int) []E {
	if len(ks) <= n {
		return ks
	}
	out := make([]E, n)
	for i := range out {
		out[i] = ks[(2*i+1)*len(ks)/(2*n)]
	}
	return out
}

// intervals are the key ranges a round of probes covers: above cur up to
// the first point, then from each point up to the next, the last one up
// to hi (no bound when open). Bounded probes tell what unbounded ones do
// (the first key at or above a point is the first found from there on),
// and cost a service that sorts what matches (Azurite) far less.
func intervals(cur string, points []string, hi string, open bool) []func(keys.Key) keys.Filter {
	out := make([]func(keys.Key) keys.Filter, 0, len(points)+1)
	for i := -1; i < len(points); i++ {
		lower := func(k keys.Key) keys.Filter { return k.Gt(cur) }
		if i >= 0 {
			m := points[i]
			lower = func(k keys.Key) keys.Filter { return k.Ge(m) }
		}
		switch {
		case i+1 < len(points):
			up := points[i+1]
			out = append(out, func(k keys.Key) keys.Filter { return keys.And(lower(k), k.Lt(up)) })
		case !open:
			out = append(out, func(k keys.Key) keys.Filter { return keys.And(lower(k), k.Lt(hi)) })
		default:
			out = append(out, lower)
		}
	}
	return out
}

// probeRound is one round of a search's probes, all at once, over the
// intervals from cur to the points and on to hi (intervals); without
// above, the first one (above cur, below the first point) is left out.
// It returns the first key each interval holds ("" for none). With
// pageOf, each interval from a point is read as the first page of the
// range it would make (findSplit), and a non-empty one reports the point
// itself.
func (s *scan) probeRound(ctx context.Context, cur string, points []string, hi string, open, above bool, pageOf func(ctx context.Context, points []string, i int) (bool, error), first func(ctx context.Context, f func(keys.Key) keys.Filter) (string, bool, error)) ([]string, error) {
	fs := intervals(cur, points, hi, open)
	if !above {
		fs = fs[1:]
	}
	skip := len(fs) - len(points) // 1 when the first interval is probed
	found := make([]string, len(fs))
	err := atOnce(len(fs), func(i int) error {
		if pageOf != nil && i >= skip {
			ok, err := pageOf(ctx, points, i-skip)
			if ok {
				found[i] = points[i-skip]
			}
			return err
		}
		k, ok, err := first(ctx, fs[i])
		if ok {
			found[i] = k
		}
		return err
	})
	return found, err
}

// sortedKeys returns the keys found, sorted, without repeats.
func sortedKeys(found []string) []string {
	var out []string
	for _, k := range found {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, keys.Compare)
	return slices.Compact(out)
}

// prefixBound finds the successor of the longest prefix of cur that every
// key above cur (below hi unless open) shares: no key lies at or above
// it. above(m) tells whether a key lies at or above m. It holds for long
// prefixes first; the longest prefix where it fails bounds what is left.
// Up to gallopProbes lengths are probed at once, then again between the
// two that bracket the answer: two round trips for keys of up to
// gallopProbes² characters, where a bisection would take one per
// halving. It reports false when no prefix bounds the keys more tightly
// than hi.
//
// hint, when not 0, is where the answer likely is: the length of the
// prefix the range's last page's keys share (keys past a page differ
// from it a few places before its own difference). The first round
// probes the gallopProbes lengths up to just past it, one apart, which
// settles most searches in one round.
func (s *scan) prefixBound(ctx context.Context, cur, hi string, open bool, hint int, above func(ctx context.Context, m string) (bool, error)) (string, bool, error) {
	runes := []rune(cur)
	aboveLen := func(m int) (bool, error) {
		_, succ := keys.PrefixRange(string(runes[:m]))
		if succ == "" || (!open && keys.Compare(succ, hi) >= 0) {
			return false, nil // nothing can lie above: the bound holds
		}
		return above(ctx, succ)
	}
	lo, top := 1, len(runes) // the answer is in [lo-1, top]
	bound := 0
	hinted := hint > 0 && hint <= len(runes)
	for lo <= top {
		step := max(1, (top-lo+1+gallopProbes-1)/gallopProbes)
		var ms []int
		if hinted {
			for m := max(lo, hint-gallopProbes+2); m <= min(top, hint+1); m++ {
				ms = append(ms, m)
			}
		} else {
			for m := lo; m <= top; m += step {
				ms = append(ms, m)
			}
		}
		oks := make([]bool, len(ms))
		if err := atOnce(len(ms), func(i int) (err error) {
			oks[i], err = aboveLen(ms[i])
			return err
		}); err != nil {
			return "", false, err
		}
		// above is monotone: the last length where it fails, and the
		// first probed length above it, bracket the answer.
		next := top + 1
		for i := len(ms) - 1; i >= 0; i-- {
			if !oks[i] {
				bound = ms[i]
				break
			}
			next = ms[i]
		}
		lo, top = max(bound+1, lo), next-1
		if step == 1 && !hinted {
			break
		}
		hinted = false
	}
	if bound == 0 {
		return "", false, nil
	}
	_, succ := keys.PrefixRange(string(runes[:bound]))
	if succ == "" || (!open && keys.Compare(succ, hi) >= 0) {
		return "", false, nil
	}
	return succ, true, nil
}

// spread returns up to n strings strictly between lo and hi (no bound
// when open), in order, splitting the space by repeated midpoints. With
// no bound, a midpoint stays in lo's alphabet (midKey), a guess that may
// leave out most keys (hex keys after decimal ones, names after
// numbers): so half the points go above that alphabet, up to the end of
// ASCII.
func spread(lo, hi string, open bool, n int) []string {
	if n <= 0 {
		return nil
	}
	if open && n >= 2 && lo != "" {
		if top := alphabetOf(utf16.Encode([]rune(lo))).top(); top < 0x7F {
			wide := n / 2
			out := spread(lo, string(rune(top)), false, n-wide)
			out = append(out, string(rune(top)))
			return append(out, spread(string(rune(top)), "\x7f", false, wide-1)...)
		}
	}
	m, ok := midKey(lo, hi, open)
	if !ok {
		return nil
	}
	left := (n - 1) / 2
	out := spread(lo, m, false, left)
	out = append(out, m)
	return append(out, spread(m, hi, open, n-1-left)...)
}

// commonPrefix is the number of characters a and b share at their start
// (0 when open: b is no bound).
func commonPrefix(a, b string, open bool) int {
	if open {
		return 0
	}
	ra, rb := []rune(a), []rune(b)
	n := 0
	for n < len(ra) && n < len(rb) && ra[n] == rb[n] {
		n++
	}
	return n
}

// Pauses after a throttling answer to a scan's request, when the service
// names none: from scanThrottlePause, doubling while the same request is
// refused, up to maxScanThrottlePause, each ±20%. A target's bucket
// refills in about 100 ms (a page of 1,000 costs half a second of a
// partition's 2,000 a second), where azcore's retries wait 0.8 s, then
// 1.6 s and 3.2 s, and then fail the scan.
const (
	scanThrottlePause    = 100 * time.Millisecond
	maxScanThrottlePause = 5 * time.Second
)

// page reads one page of q for range r (nil: a probe). A throttling
// answer does not end the scan: the page is asked again after a pause
// (the service's, or one doubling from the scan's first pause) until ctx
// ends, and r is marked so that no split puts another reader beside it.
// The scan's first pause is learned: the pause after which a request
// refused more than once got through, shrinking by a tenth each time one
// pause is enough, never below scanThrottlePause; a request then waits
// about as long as its target needs, refused once rather than three
// times.
func (s *scan) page(ctx context.Context, r *scanRange, q wire.Query, pos *wire.Continuation) ([][]byte, *wire.Continuation, error) {
	s.mu.Lock()
	pause := max(s.pause, scanThrottlePause)
	s.mu.Unlock()
	refused := 0
	for {
		rows, next, after, throttled, err := s.w.PageThrottled(ctx, q, pos)
		if !throttled {
			if refused > 0 {
				s.mu.Lock()
				if refused == 1 {
					s.pause = max(scanThrottlePause, s.pause*9/10)
				} else {
					s.pause = pause / 2 // the last pause, the one that worked
				}
				s.mu.Unlock()
			}
			return rows, next, err
		}
		refused++
		s.mu.Lock()
		s.res.Throttled++
		if r != nil {
			r.throttled = true
		}
		s.mu.Unlock()
		d := after
		if d <= 0 {
			d = time.Duration(float64(pause) * (0.8 + 0.4*rand.Float64()))
			pause = min(2*pause, maxScanThrottlePause)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// probe returns the first key the filter selects: one request.
func (s *scan) probe(ctx context.Context, f keys.Filter) (position, bool, error) {
	text, err := f.Build()
	if err != nil {
		return position{}, false, err
	}
	// Azure may answer a page with no rows and a continuation (a
	// partition server's boundary, or five seconds spent): follow it.
	var pos *wire.Continuation
	for range maxProbePages {
		rows, next, err := s.page(ctx, nil, wire.Query{Filter: text, Select: "PartitionKey,RowKey", Top: 1}, pos)
		s.mu.Lock()
		s.res.Requests++
		s.mu.Unlock()
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return position{}, false, ctx.Err()
			}
			return position{}, false, err
		}
		if len(rows) > 0 {
			p, err := rowPosition(rows[0])
			return p, err == nil, err
		}
		if next == nil {
			return position{}, false, nil
		}
		pos = next
	}
	return position{}, false, nil
}

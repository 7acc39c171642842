package tablecopy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// DefaultRangeKeys is how many keys a compared range holds: a mismatch
// names the range (its first and last key) that differs.
const DefaultRangeKeys = 10000

// maxListed bounds the keys a Mismatch lists of each kind.
const maxListed = 5

// Mismatch is a difference found by a verification: a segment whose
// content is not what the manifest says, or a key range whose entities
// differ between two sides (a backup and a table, or two tables).
type Mismatch struct {
	Table string `json:"table"`
	// Segment is set when a backup file does not hold what its manifest
	// says; From and To are then its First and Last keys.
	Segment string `json:"segment,omitempty"`
	// From and To are the first and last key of the range compared.
	From Key `json:"from"`
	To   Key `json:"to"`
	// Segments, when the backup's manifest cut the table into ranges
	// (TableBackup.Ranges), are the segments of the range that differs.
	Segments []string `json:"segments,omitempty"`
	// Want is the expected side (the source, or the backup), Got the
	// other.
	Want Sum `json:"want"`
	Got  Sum `json:"got"`
	// Missing keys are on the expected side only, Extra on the other
	// only, Changed on both with different content: at most five each.
	Missing []Key `json:"missing,omitempty"`
	Extra   []Key `json:"extra,omitempty"`
	Changed []Key `json:"changed,omitempty"`
	// Reason explains a mismatch that is not about entities (an
	// unreadable file, a key list that disagrees with its segments).
	Reason string `json:"reason,omitempty"`
}

// String names the table, the range (or segment) and what differs.
func (m Mismatch) String() string {
	var b strings.Builder
	if m.Segment != "" {
		fmt.Fprintf(&b, "table %s, segment %s", m.Table, m.Segment)
	} else {
		fmt.Fprintf(&b, "table %s, range %v to %v", m.Table, m.From, m.To)
	}
	if m.Reason != "" {
		fmt.Fprintf(&b, ": %s", m.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, ": want %v, got %v", m.Want, m.Got)
	list := func(what string, ks []Key) {
		if len(ks) > 0 {
			fmt.Fprintf(&b, "; %s", what)
			for i, k := range ks {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, " %v", k)
			}
		}
	}
	list("missing", m.Missing)
	list("extra", m.Extra)
	list("changed", m.Changed)
	return b.String()
}

// TableCheck is the verification of one table.
type TableCheck struct {
	Table string `json:"table"`
	// Against names what the table's expected content was compared with:
	// a table ("account/table"), or "" when only the backup was checked.
	Against string `json:"against,omitempty"`
	// Want is the expected content (the backup's, or the source's), Got
	// the other side's (zero when only the backup was checked).
	Want       Sum        `json:"want"`
	Got        Sum        `json:"got"`
	Segments   int        `json:"segments,omitempty"`
	Ranges     int        `json:"ranges"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// OK reports whether the check found no mismatch.
func (c TableCheck) OK() bool { return len(c.Mismatches) == 0 }

// VerifyOptions configures VerifyBackup and Compare. A nil *VerifyOptions
// means the defaults.
type VerifyOptions struct {
	// Tables verifies only these tables of the backup.
	Tables []string
	// Account, when set, holds the tables to compare the backup with
	// (the backed up tables, or their restored copies); without it only
	// the backup itself is checked.
	Account *tablekit.Account
	// ToTable compares the backup's one table with this table.
	ToTable string
	// Filter (Compare) compares only the entities matching it on both
	// sides: those a copy with this filter copied.
	Filter keys.Filter
	// Parallel is how many key ranges of a table are read at once.
	Parallel int
	// RangeKeys is how many keys a compared range holds, where no
	// manifest cuts the table into ranges (Compare, and backups written
	// before ranges existed); 0 means DefaultRangeKeys.
	RangeKeys int
	// Progress, when set, is called after each page, one call at a time.
	Progress func(Progress)
}

// VerifyBackup checks the backup at from: every segment of it and of its
// base chain is read back and its count and checksum compared with the
// manifest, and its key list with the segments and the deleted keys.
// With opts.Account, each table is then scanned and compared with the
// content the backup restores, range by range: the key ranges of the
// backup's manifest (TableBackup.Ranges), or, for a backup written before
// ranges existed, ranges of opts.RangeKeys keys. It returns one
// TableCheck per table; an error only when it could not check.
//
// On a table written since the backup, differences are expected: those
// writes. Compare a quiescent table, or a restored copy.
func VerifyBackup(ctx context.Context, from *Location, opts *VerifyOptions) ([]TableCheck, error) {
	o := VerifyOptions{}
	if opts != nil {
		o = *opts
	}
	if o.RangeKeys <= 0 {
		o.RangeKeys = DefaultRangeKeys
	}
	ms, ls, err := chain(ctx, from)
	if err != nil {
		return nil, err
	}
	last := ms[len(ms)-1]
	names, err := selectTables(last, o.Tables, from)
	if err != nil {
		return nil, err
	}
	if o.ToTable != "" && len(names) != 1 {
		return nil, tkerr.Errorf("tablekit: verify: %w: --to-table names one table, and %d are selected", tablekit.ErrInvalidArgument, len(names))
	}
	prog := &progressFunc{fn: o.Progress}
	var total int64
	for _, n := range names {
		for _, m := range ms {
			if t := m.table(n); t != nil {
				total += t.Entities
			}
		}
	}
	var read int64
	var checks []TableCheck
	for _, n := range names {
		chk := TableCheck{Table: n}
		var want state
		for i, m := range ms {
			t := m.table(n)
			if t == nil {
				return nil, fmt.Errorf("tablekit: verify: the backup %s of the chain holds no table %s", ls[i], n)
			}
			s, mm, err := checkTableBackup(ctx, ls[i], m, t, want, func(k int64) {
				read += k
				prog.report(Progress{Table: n, Phase: "verify", Entities: read, Total: total})
			})
			if err != nil {
				return nil, err
			}
			chk.Segments += len(t.Segments)
			chk.Mismatches = append(chk.Mismatches, mm...)
			want = s
		}
		chk.Want = want.sum()
		if last.Kind == KindChanges {
			// A changes backup has no full key list: it says nothing of the
			// entities it does not hold.
			checks = append(checks, chk)
			continue
		}
		if o.Account != nil {
			target := n
			if o.ToTable != "" {
				target = o.ToTable
			}
			tbl, err := patterns.NewTable[entity.Entity](o.Account, target, nil)
			if err != nil {
				return nil, tkerr.Errorf("tablekit: verify: %w", err)
			}
			chk.Against = o.Account.Name() + "/" + target
			got, err := tableState(ctx, tbl, keys.Filter{}, o.Parallel, func(p Progress) { prog.report(p) })
			if err != nil {
				return nil, tkerr.Errorf("tablekit: verify: read %s: %w", target, err)
			}
			chk.Got = got.sum()
			var mm []Mismatch
			if rs := last.table(n).Ranges; len(rs) > 0 {
				chk.Ranges, mm = diffRanges(n, want, got, rs)
			} else {
				chk.Ranges, mm = diffStates(n, want, got, o.RangeKeys)
			}
			chk.Mismatches = append(chk.Mismatches, mm...)
		}
		checks = append(checks, chk)
	}
	return checks, nil
}

// checkTableBackup reads one table of one backup: its segments (count and
// checksum of each), its deleted keys, and its key list, which must be
// prev (the state its base restores) less the deleted keys, with the
// segments' entities. It returns the key list as read.
func checkTableBackup(ctx context.Context, l *Location, m *Manifest, t *TableBackup, prev state, read func(int64)) (state, []Mismatch, error) {
	mm := checkRanges(t)
	rangeOfSeg := map[string]int{}
	for i, r := range t.Ranges {
		for _, f := range r.Segments {
			rangeOfSeg[f] = i
		}
	}
	segs := state{}
	for _, seg := range t.Segments {
		ri, ranged := rangeOfSeg[seg.File]
		outside := 0
		var first Key
		err := readSegmentPages(ctx, l, seg, 0, func(_ int, page []entity.Entity, hs []uint64) error {
			for i, e := range page {
				segs[mapKey(e.PartitionKey, e.RowKey)] = hs[i]
				if k := (Key{e.PartitionKey, e.RowKey}); ranged && !t.Ranges[ri].contains(k) {
					if outside++; outside == 1 {
						first = k
					}
				}
			}
			read(int64(len(page)))
			return nil
		})
		var ce *CorruptError
		switch {
		case errors.As(err, &ce) && ce.Err != nil:
			mm = append(mm, Mismatch{Table: t.Name, Segment: seg.File, From: seg.First, To: seg.Last, Want: ce.Want, Got: ce.Got, Reason: ce.Error()})
		case errors.As(err, &ce):
			mm = append(mm, Mismatch{Table: t.Name, Segment: seg.File, From: seg.First, To: seg.Last, Want: ce.Want, Got: ce.Got})
		case err != nil && ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case err != nil:
			mm = append(mm, Mismatch{Table: t.Name, Segment: seg.File, From: seg.First, To: seg.Last, Want: Sum{seg.Entities, mustHex(seg.Checksum)}, Reason: err.Error()})
		}
		if outside > 0 {
			mm = append(mm, Mismatch{Table: t.Name, Segment: seg.File, From: seg.First, To: seg.Last,
				Reason: fmt.Sprintf("%d entities outside its range %d (from %v), the first %v", outside, ri, t.Ranges[ri].From, first)})
		}
	}
	if m.Kind == KindChanges {
		return segs, mm, nil
	}
	listed := state{}
	if err := readKeys(ctx, l, t.Keys, func(k Key, h uint64) error {
		listed[mapKey(k.PartitionKey, k.RowKey)] = h
		return nil
	}); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		mm = append(mm, Mismatch{Table: t.Name, Segment: t.Keys.File, Reason: err.Error()})
		return segs, mm, nil
	}
	// What the key list should say.
	want := state{}
	if m.Kind == KindIncremental && prev != nil {
		for k, h := range prev {
			want[k] = h
		}
		if t.Deleted != nil {
			if err := readKeys(ctx, l, *t.Deleted, func(k Key, _ uint64) error {
				delete(want, mapKey(k.PartitionKey, k.RowKey))
				return nil
			}); err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				mm = append(mm, Mismatch{Table: t.Name, Segment: t.Deleted.File, Reason: err.Error()})
			}
		}
		// Keys the listing found that neither the base nor the changes
		// hold have no known hash (a clock far off the service's): take
		// the key list's word for them.
		for k, h := range listed {
			if _, inBase := want[k]; !inBase {
				if _, inSegs := segs[k]; !inSegs {
					want[k] = h
				}
			}
		}
	}
	for k, h := range segs {
		want[k] = h
	}
	if _, d := diffStates(t.Name, want, listed, 1<<62); len(d) > 0 {
		for _, x := range d {
			x.Segment = t.Keys.File
			x.Reason = fmt.Sprintf("the key list disagrees with the segments (and base): it holds %v, they %v; first keys missing %v, extra %v, changed %v", x.Got, x.Want, x.Missing, x.Extra, x.Changed)
			mm = append(mm, x)
		}
	}
	return listed, mm, nil
}

// checkRanges checks a table's manifest ranges against its segments:
// every segment in exactly one range, and each range's count and
// checksum the sum of its segments'.
func checkRanges(t *TableBackup) []Mismatch {
	if len(t.Ranges) == 0 {
		return nil
	}
	var mm []Mismatch
	bySeg := map[string]Segment{}
	for _, seg := range t.Segments {
		bySeg[seg.File] = seg
	}
	in := map[string]int{}
	for i, r := range t.Ranges {
		var sum Sum
		for _, f := range r.Segments {
			seg, ok := bySeg[f]
			if !ok {
				mm = append(mm, Mismatch{Table: t.Name, Segment: f, From: r.From, Reason: fmt.Sprintf("range %d names a segment the table does not list", i)})
				continue
			}
			in[f]++
			sum.Merge(Sum{seg.Entities, mustHex(seg.Checksum)})
		}
		if want := (Sum{r.Entities, mustHex(r.Checksum)}); sum != want {
			mm = append(mm, Mismatch{Table: t.Name, From: r.From, Segments: r.Segments, Want: want, Got: sum,
				Reason: fmt.Sprintf("range %d's count and checksum are %v, its segments' %v", i, want, sum)})
		}
	}
	for _, seg := range t.Segments {
		if in[seg.File] != 1 {
			mm = append(mm, Mismatch{Table: t.Name, Segment: seg.File, From: seg.First, To: seg.Last, Reason: fmt.Sprintf("in %d of the manifest's ranges, not one", in[seg.File])})
		}
	}
	return mm
}

// diffRanges compares want and got range by range, as the manifest's
// ranges cut the keys, and returns the number of ranges and a Mismatch,
// naming the range's segments, for each range that differs.
func diffRanges(table string, want, got state, rs []KeyRange) (int, []Mismatch) {
	parts := make([][2]state, len(rs))
	for i := range parts {
		parts[i] = [2]state{{}, {}}
	}
	for k, h := range want {
		parts[rangeOf(rs, splitMapKey(k))][0][k] = h
	}
	for k, h := range got {
		parts[rangeOf(rs, splitMapKey(k))][1][k] = h
	}
	var out []Mismatch
	for i, p := range parts {
		if _, d := diffStates(table, p[0], p[1], 1<<62); len(d) > 0 {
			m := d[0]
			m.Segments = rs[i].Segments
			out = append(out, m)
		}
	}
	return len(rs), out
}

// tableState reads every entity of tbl (a parallel scan) and returns each
// key's EntityHash.
func tableState(ctx context.Context, tbl *rows, filter keys.Filter, parallel int, progress func(Progress)) (state, error) {
	return tableStateAs(ctx, tbl, "", filter, parallel, progress)
}

// tableStateAs is tableState of tbl's entities as a copy to the table as
// holds them (retargetViews); an empty as means as they are.
func tableStateAs(ctx context.Context, tbl *rows, as string, filter keys.Filter, parallel int, progress func(Progress)) (state, error) {
	s := state{}
	var mu sync.Mutex
	err := scan(ctx, tbl, scanSpec{filter: filter, parallel: parallel, progress: func(p patterns.ScanProgress) {
		if progress != nil {
			progress(Progress{Table: tbl.Name(), Phase: "verify", Entities: p.Rows, Ranges: p.Ranges, RangesDone: p.RangesDone})
		}
	}}, func(_ context.Context, items []entity.Entity) error {
		if as != "" {
			items, _ = retargetAll(items, tbl.Name(), as)
		}
		hs := make([]uint64, len(items))
		for i, e := range items {
			h, err := EntityHash(e)
			if err != nil {
				return err
			}
			hs[i] = h
		}
		mu.Lock()
		defer mu.Unlock()
		for i, e := range items {
			s[mapKey(e.PartitionKey, e.RowKey)] = hs[i]
		}
		return nil
	})
	return s, err
}

// Compare reads tables a (the expected side, a copy's source) and b
// (a copy's target) and compares their entities (keys and properties;
// not Timestamp or ETag), range by range: all of them, or those matching
// opts.Filter on both sides. a's entities are compared as Copy writes them
// under b's name (their list of views renamed, see Copy).
func Compare(ctx context.Context, a, b *patterns.Table[entity.Entity], opts *VerifyOptions) (TableCheck, error) {
	o := VerifyOptions{}
	if opts != nil {
		o = *opts
	}
	if o.RangeKeys <= 0 {
		o.RangeKeys = DefaultRangeKeys
	}
	chk := TableCheck{Table: a.Name(), Against: b.Account().Name() + "/" + b.Name()}
	prog := &progressFunc{fn: o.Progress}
	var sa, sb state
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sa, ea = tableStateAs(ctx, a, b.Name(), o.Filter, o.Parallel, prog.report) }()
	go func() { defer wg.Done(); sb, eb = tableState(ctx, b, o.Filter, o.Parallel, prog.report) }()
	wg.Wait()
	if err := errors.Join(ea, eb); err != nil {
		return chk, tkerr.Errorf("tablekit: compare %s with %s: %w", a.Name(), b.Name(), err)
	}
	chk.Want, chk.Got = sa.sum(), sb.sum()
	chk.Ranges, chk.Mismatches = diffStates(a.Name(), sa, sb, o.RangeKeys)
	return chk, nil
}

// diffStates compares want and got over the union of their keys, cut in
// key order into ranges of rangeKeys keys, and returns the number of
// ranges and a Mismatch for each range that differs.
func diffStates(table string, want, got state, rangeKeys int) (int, []Mismatch) {
	if len(want) == len(got) {
		same := true
		for k, h := range want {
			if g, ok := got[k]; !ok || g != h {
				same = false
				break
			}
		}
		if same {
			return max(1, (len(want)+rangeKeys-1)/rangeKeys), nil
		}
	}
	union := make([]string, 0, max(len(want), len(got)))
	for k := range want {
		union = append(union, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			union = append(union, k)
		}
	}
	slices.SortFunc(union, func(a, b string) int { return splitMapKey(a).Compare(splitMapKey(b)) })
	var out []Mismatch
	ranges := 0
	for start := 0; start < len(union); start += rangeKeys {
		ranges++
		part := union[start:min(start+rangeKeys, len(union))]
		m := Mismatch{Table: table, From: splitMapKey(part[0]), To: splitMapKey(part[len(part)-1])}
		differs := false
		for _, k := range part {
			w, inW := want[k]
			g, inG := got[k]
			if inW {
				m.Want.Add(w)
			}
			if inG {
				m.Got.Add(g)
			}
			switch {
			case inW && !inG:
				differs = true
				if len(m.Missing) < maxListed {
					m.Missing = append(m.Missing, splitMapKey(k))
				}
			case !inW && inG:
				differs = true
				if len(m.Extra) < maxListed {
					m.Extra = append(m.Extra, splitMapKey(k))
				}
			case w != g:
				differs = true
				if len(m.Changed) < maxListed {
					m.Changed = append(m.Changed, splitMapKey(k))
				}
			}
		}
		if differs {
			out = append(out, m)
		}
	}
	return max(ranges, 1), out
}

package tablecopy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// DefaultSegmentBytes is the size past which a segment is closed and the
// next page starts another.
const DefaultSegmentBytes = 64 << 20

// DefaultBackupRanges is how many key ranges a backup cuts each table
// into when its options do not say: each range has its own segments, and
// verification compares a table with the backup range by range.
const DefaultBackupRanges = 16

// DefaultSkewMargin is subtracted from a base backup's start to choose
// the entities an incremental backup takes: Timestamp is the service's
// clock and the start the client's.
const DefaultSkewMargin = 5 * time.Minute

// BackupOptions configures Backup. A nil *BackupOptions means a full
// backup with the defaults.
type BackupOptions struct {
	// Parallel is how many key ranges are read at once; 0 means the
	// scan's default.
	Parallel int
	// Ranges is how many key ranges each table is cut into, at keys
	// that patterns.Table.SplitScan finds (fewer on a small table): each
	// range's entities go to its own segments, and the manifest names the
	// ranges (TableBackup.Ranges). 0 means DefaultBackupRanges.
	Ranges int
	// Base makes the backup incremental: it holds the entities whose
	// Timestamp is later than the base's start (less SkewMargin) and the
	// keys deleted since the base, found by diffing a key-only listing
	// with the base's key list. The base is a full or incremental backup
	// of every table backed up.
	Base *Location
	// Since, without Base, backs up only the entities whose Timestamp is
	// later: changes, without deleted keys (a KindChanges backup).
	Since time.Time
	// SkewMargin is how far before the base's start an incremental backup
	// looks; 0 means DefaultSkewMargin.
	SkewMargin time.Duration
	// SegmentBytes is the size at which a segment is closed; 0 means
	// DefaultSegmentBytes.
	SegmentBytes int64
	// Progress, when set, is called after each page, one call at a time.
	Progress func(Progress)
}

// BackupResult says what a Backup did.
type BackupResult struct {
	Manifest *Manifest
	Location *Location
	// Resumed is set when the backup continued an interrupted one.
	Resumed bool
	// Entities counts the entities stored in this run; Skipped those a
	// resumed run found in the backup already.
	Entities, Skipped int64
	// AlreadyComplete is set when the Location held this backup, finished
	// (a rerun of the same backup): nothing was written.
	AlreadyComplete bool
}

// ErrBackupExists is returned by Backup when its Location already holds
// a finished backup (or an unfinished one of other tables).
var ErrBackupExists = errors.New("tablekit: the location already holds a backup")

// Backup writes a backup of tables (in acct) to to: per table, gzip JSON
// lines segments (one gzip member per page of a parallel scan, a segment
// closed at SegmentBytes), a key list, the deleted keys of an incremental
// backup, and last a manifest.json naming them all with their counts and
// checksums (see Manifest).
//
// Backup is resumable: it keeps checkpoint.json in to, holding each
// table's scan position and the committed length of each segment after
// every page. Run again with the same tables and options after an
// interruption (even SIGKILL), it continues: what an interrupted run wrote
// past the checkpoint is ignored, and entities already in the backup are
// skipped (BackupResult.Skipped). Run again once finished, it does nothing
// (BackupResult.AlreadyComplete); a Location holding another backup is
// refused with ErrBackupExists.
//
// A backup of tables being written is fuzzy: each entity is stored as the
// scan found it, between the manifest's Start and End (docs/COPY.md says
// what that guarantees).
func Backup(ctx context.Context, acct *tablekit.Account, tables []string, to *Location, opts *BackupOptions) (BackupResult, error) {
	res := BackupResult{Location: to}
	o := BackupOptions{}
	if opts != nil {
		o = *opts
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SkewMargin <= 0 {
		o.SkewMargin = DefaultSkewMargin
	}
	if o.Ranges <= 0 {
		o.Ranges = DefaultBackupRanges
	}
	if o.Ranges > 1000 {
		return res, tkerr.Errorf("tablekit: backup: %w: %d ranges; at most 1000", tablekit.ErrInvalidArgument, o.Ranges)
	}
	if len(tables) == 0 {
		return res, tkerr.Errorf("tablekit: backup: %w: no tables", tablekit.ErrInvalidArgument)
	}
	if acct == nil || to == nil {
		return res, tkerr.Errorf("tablekit: backup: %w: nil account or location", tablekit.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, t := range tables {
		if seen[t] {
			return res, tkerr.Errorf("tablekit: backup: %w: table %s given twice", tablekit.ErrInvalidArgument, t)
		}
		seen[t] = true
		if _, err := patterns.NewTable[entity.Entity](acct, t, nil); err != nil {
			return res, tkerr.Errorf("tablekit: backup: %w", err)
		}
	}
	job := backupJob{Tables: tables, Kind: KindFull, Source: acct.Name() + " " + endpointOnly(acct.TableEndpoint())}
	var base *Manifest
	if o.Base != nil {
		var err error
		if base, err = ReadManifest(ctx, o.Base); err != nil {
			return res, tkerr.Errorf("tablekit: backup: base: %w", err)
		}
		for _, t := range tables {
			if base.table(t) == nil {
				return res, tkerr.Errorf("tablekit: backup: %w: the base %s holds no table %s", tablekit.ErrInvalidArgument, o.Base, t)
			}
		}
		if base.Kind == KindChanges {
			return res, tkerr.Errorf("tablekit: backup: %w: the base %s is a --since backup, with no key list to diff", tablekit.ErrInvalidArgument, o.Base)
		}
		job.Kind, job.Base = KindIncremental, o.Base.reference(to)
	} else if !o.Since.IsZero() {
		since := o.Since.UTC()
		job.Kind, job.Since = KindChanges, &since
	}

	b := &backup{ctx: ctx, acct: acct, to: to, o: o, base: base, job: job, prog: &progressFunc{fn: o.Progress}}
	if err := b.open(ctx); err != nil {
		return res, err
	}
	res.Resumed = b.ck.Run > 1
	if b.complete != nil {
		res.Manifest, res.AlreadyComplete = b.complete, true
		return res, to.s.Delete(ctx, checkpointName)
	}
	b.c = newCommitter(ctx, b.snapshot, b.persist)
	var err error
	for i := range b.ck.Tables {
		if err = b.table(ctx, &b.ck.Tables[i]); err != nil {
			break
		}
	}
	if cerr := b.c.close(); err == nil && cerr != nil {
		err = fmt.Errorf("checkpoint in %s: %w", to, cerr)
	}
	res.Entities, res.Skipped = b.stored.Load(), b.skipped.Load()
	if err != nil {
		return res, tkerr.Errorf("tablekit: backup to %s: %w", to, err)
	}
	m := b.manifest()
	body, _ := json.MarshalIndent(m, "", "  ")
	if err := to.s.Put(ctx, manifestName, append(body, '\n')); err != nil {
		return res, tkerr.Errorf("tablekit: backup to %s: write %s: %w", to, manifestName, err)
	}
	if err := to.s.Delete(ctx, checkpointName); err != nil {
		return res, tkerr.Errorf("tablekit: backup to %s: remove %s: %w", to, checkpointName, err)
	}
	res.Manifest = m
	return res, nil
}

// endpointOnly is a service URL without its query (where a SAS would be),
// for what tablecopy writes down.
func endpointOnly(u string) string {
	u, _, _ = strings.Cut(u, "?")
	return tablekit.Redact(u)
}

// backupJob is what a backup was asked to do: a rerun must ask the same.
type backupJob struct {
	Tables []string   `json:"tables"`
	Kind   string     `json:"kind"`
	Base   string     `json:"base,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
	Source string     `json:"source"`
}

func (j backupJob) equal(o backupJob) bool {
	return slices.Equal(j.Tables, o.Tables) && j.Kind == o.Kind && j.Base == o.Base && j.Source == o.Source &&
		(j.Since == nil) == (o.Since == nil) && (j.Since == nil || j.Since.Equal(*o.Since))
}

// backupCheckpoint is checkpoint.json.
type backupCheckpoint struct {
	Format  string      `json:"format"` // "tablekit-backup-checkpoint"
	Version int         `json:"version"`
	Job     backupJob   `json:"job"`
	Run     int         `json:"run"`
	Start   time.Time   `json:"start"`
	Tables  []tableStep `json:"tables"`
}

const checkpointFormat = "tablekit-backup-checkpoint"

// Phases of a table in a backup.
const (
	phaseList = ""     // incremental: key listing not done yet
	phaseScan = "scan" // scanning: Token is where
	phaseDone = "done" // key list written
)

// tableStep is one table's progress in checkpoint.json.
type tableStep struct {
	Name     string     `json:"name"`
	Phase    string     `json:"phase"`
	Start    time.Time  `json:"start"`
	End      time.Time  `json:"end"`
	Since    *time.Time `json:"since,omitempty"`
	Token    string     `json:"token,omitempty"`
	Segments []Segment  `json:"segments"`
	Skipped  int64      `json:"skipped,omitempty"`
	Runs     int        `json:"runs"`
	Listing  *KeyFile   `json:"listing,omitempty"` // incremental: keys listed, with the base's hashes
	Deleted  *KeyFile   `json:"deleted,omitempty"`
	Keys     *KeyFile   `json:"keys,omitempty"`
	// Ranged is set once the table's key ranges are cut: Bounds are
	// where ranges 1, 2, ... start (range 0 starts at the table's first
	// key), and RangeOf names the range of each segment. A checkpoint of
	// a build before ranges has neither: its segments are not ranged.
	Ranged  bool           `json:"ranged,omitempty"`
	Bounds  []Key          `json:"bounds,omitempty"`
	RangeOf map[string]int `json:"rangeOf,omitempty"`
}

// rangeIndex is the range of st (Bounds) holding k.
func (st *tableStep) rangeIndex(k Key) int {
	return sort.Search(len(st.Bounds), func(i int) bool { return k.Compare(st.Bounds[i]) < 0 })
}

// ranges is the table's key ranges, as the manifest lists them, with
// their segments (those holding entities).
func (st *tableStep) ranges() []KeyRange {
	if !st.Ranged {
		return nil
	}
	rs := make([]KeyRange, len(st.Bounds)+1)
	for i := range rs {
		if i > 0 {
			rs[i].From = st.Bounds[i-1]
		}
		if i < len(st.Bounds) {
			to := st.Bounds[i]
			rs[i].To = &to
		}
		rs[i].Segments = []string{}
	}
	sums := make([]Sum, len(rs))
	for _, seg := range st.Segments {
		i, ok := st.RangeOf[seg.File]
		if !ok || seg.Entities == 0 || i < 0 || i >= len(rs) {
			continue
		}
		rs[i].Segments = append(rs[i].Segments, seg.File)
		sums[i].Merge(Sum{seg.Entities, mustHex(seg.Checksum)})
	}
	for i := range rs {
		rs[i].Entities, rs[i].Checksum = sums[i].Count, hex64(sums[i].Hash)
	}
	return rs
}

// cutRanges cuts the scan of tbl (with filter) into up to n key ranges
// and returns where ranges 1, 2, ... start: SplitScan's ranges, each
// starting at its first key, which a one-key page of it finds (one
// request per range, read parallel at once; a range that turns out empty
// is left out, its keys going to the range before).
func cutRanges(ctx context.Context, tbl *rows, filter keys.Filter, n, parallel int) ([]Key, error) {
	if n <= 1 {
		return nil, nil
	}
	so := patterns.ScanOptions{QueryOptions: patterns.QueryOptions{Select: []string{"PartitionKey", "RowKey"}, Top: 1, AllowUnknownProperties: true}, Parallel: 1}
	tokens, err := tbl.SplitScan(ctx, filter, n, &so)
	if err != nil {
		return nil, fmt.Errorf("split: %w", err)
	}
	firsts := make([]*Key, len(tokens))
	errs := make([]error, len(tokens))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	errFound := errors.New("found")
	for i := 1; i < len(tokens); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			o := so
			o.Resume = tokens[i]
			_, err := tbl.Scan(ctx, filter, func(_ context.Context, items []entity.Entity) error {
				firsts[i] = &Key{items[0].PartitionKey, items[0].RowKey}
				return errFound
			}, &o)
			if err != nil && !errors.Is(err, errFound) {
				errs[i] = fmt.Errorf("first key of range %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var bounds []Key
	for _, k := range firsts {
		if k != nil && (len(bounds) == 0 || bounds[len(bounds)-1].Compare(*k) < 0) {
			bounds = append(bounds, *k)
		}
	}
	return bounds, nil
}

// backup is one run of Backup.
type backup struct {
	ctx      context.Context
	acct     *tablekit.Account
	to       *Location
	o        BackupOptions
	base     *Manifest
	job      backupJob
	prog     *progressFunc
	ck       backupCheckpoint // guarded by c.mu once c runs
	complete *Manifest
	c        *committer
	// rangeDir, set for a range of a distributed backup job, is the
	// directory of its segments; the range writes no key list (the job's
	// finish writes one per table, over every range).
	rangeDir string

	stored, skipped atomic.Int64
}

// open reads the checkpoint, or starts one.
func (b *backup) open(ctx context.Context) error {
	mb, merr := b.to.get(ctx, manifestName)
	cb, cerr := b.to.get(ctx, checkpointName)
	if cerr != nil && !errors.Is(cerr, fs.ErrNotExist) {
		return tkerr.Errorf("tablekit: backup to %s: %w", b.to, cerr)
	}
	if merr != nil && !errors.Is(merr, fs.ErrNotExist) {
		return tkerr.Errorf("tablekit: backup to %s: %w", b.to, merr)
	}
	if cerr == nil {
		if err := json.Unmarshal(cb, &b.ck); err != nil || b.ck.Format != checkpointFormat {
			return fmt.Errorf("tablekit: backup to %s: %s is not a tablekit checkpoint; delete it to start over", b.to, checkpointName)
		}
		if b.ck.Version != ManifestVersion {
			return fmt.Errorf("tablekit: backup to %s: %s has version %d; this build resumes version %d only", b.to, checkpointName, b.ck.Version, ManifestVersion)
		}
		if !b.ck.Job.equal(b.job) {
			return tkerr.Errorf("tablekit: backup to %s: %w: an unfinished backup of other tables or options is there (%s); resume it with its own command, or delete %s", b.to, ErrBackupExists, describeJob(b.ck.Job), checkpointName)
		}
		if merr == nil {
			// Interrupted between writing the manifest and removing the
			// checkpoint: the backup is complete.
			var m Manifest
			if err := json.Unmarshal(mb, &m); err != nil {
				return tkerr.Errorf("tablekit: backup to %s: %s: %w", b.to, manifestName, err)
			}
			b.complete = &m
			return nil
		}
		b.ck.Run++
		return nil
	}
	if merr == nil {
		// A finished backup: the same command run again (say, after a kill
		// between its end and its exit) has nothing left to do.
		var m Manifest
		if err := json.Unmarshal(mb, &m); err == nil && b.sameJob(&m) {
			b.complete = &m
			return nil
		}
		return tkerr.Errorf("tablekit: backup to %s: %w (%s of other tables or options); choose another location", b.to, ErrBackupExists, manifestName)
	}
	b.ck = backupCheckpoint{Format: checkpointFormat, Version: ManifestVersion, Job: b.job, Run: 1, Start: time.Now().UTC()}
	for _, t := range b.job.Tables {
		st := tableStep{Name: t, Phase: phaseScan}
		switch b.job.Kind {
		case KindIncremental:
			st.Phase = phaseList
			since := b.base.table(t).Start.Add(-b.o.SkewMargin)
			st.Since = &since
		case KindChanges:
			st.Since = b.job.Since
		}
		b.ck.Tables = append(b.ck.Tables, st)
	}
	body, _ := json.Marshal(b.ck)
	if err := b.to.s.Put(ctx, checkpointName, body); err != nil {
		return tkerr.Errorf("tablekit: backup to %s: write %s: %w", b.to, checkpointName, err)
	}
	return nil
}

// sameJob reports whether m is the manifest of the backup b was asked
// to write.
func (b *backup) sameJob(m *Manifest) bool {
	if m.Format != ManifestFormat || m.Kind != b.job.Kind || m.Base != b.job.Base || m.Source != b.job.Source || len(m.Tables) != len(b.job.Tables) {
		return false
	}
	for i, t := range m.Tables {
		if t.Name != b.job.Tables[i] {
			return false
		}
		if b.job.Since != nil && (t.Since == nil || !t.Since.Equal(*b.job.Since)) {
			return false
		}
	}
	return true
}

func describeJob(j backupJob) string {
	s := fmt.Sprintf("%s backup of %v", j.Kind, j.Tables)
	if j.Base != "" {
		s += " on " + j.Base
	}
	return s
}

func (b *backup) snapshot() any {
	body, _ := json.Marshal(b.ck)
	return body
}

func (b *backup) persist(ctx context.Context, s any) error {
	return b.to.s.Put(ctx, checkpointName, s.([]byte))
}

// table backs up one table, from wherever its step is.
func (b *backup) table(ctx context.Context, st *tableStep) error {
	c := b.c
	c.mu.Lock()
	phase := st.Phase
	if phase == phaseDone {
		c.mu.Unlock()
		return nil
	}
	st.Runs++
	if st.Start.IsZero() {
		st.Start = time.Now().UTC()
	}
	c.changed()
	c.mu.Unlock()

	tbl, err := patterns.NewTable[entity.Entity](b.acct, st.Name, nil)
	if err != nil {
		return err
	}
	if phase == phaseList {
		if err := b.list(ctx, tbl, st); err != nil {
			return err
		}
	}

	// What earlier runs stored, by key: re-read entities are skipped.
	prev := state{}
	for _, seg := range st.Segments {
		if err := readSegment(ctx, b.to, seg, func(e entity.Entity, h uint64) error {
			prev[mapKey(e.PartitionKey, e.RowKey)] = h
			return nil
		}); err != nil {
			return fmt.Errorf("table %s: %w", st.Name, err)
		}
	}
	var (
		stored = state{}            // this run's entities, guarded by c.mu
		free   = map[int][]string{} // per range, segments no fn is appending to, not full
		segN   = 0
	)
	var filter keys.Filter
	if st.Since != nil {
		filter = keys.Prop("Timestamp").Gt(*st.Since)
	}
	c.mu.Lock()
	cut := !st.Ranged && b.rangeDir == "" && st.Token == "" && len(st.Segments) == 0
	if st.Ranged && st.RangeOf == nil {
		// Cut, then interrupted before its first segment: the
		// checkpoint left the empty map out.
		st.RangeOf = map[string]int{}
	}
	c.mu.Unlock()
	if cut {
		// A new scan: cut the table into key ranges, each with its own
		// segments (a range of a distributed job is one range already).
		bounds, err := cutRanges(ctx, tbl, filter, b.o.Ranges, b.o.Parallel)
		if err != nil {
			return fmt.Errorf("table %s: %w", st.Name, err)
		}
		c.mu.Lock()
		st.Ranged, st.Bounds, st.RangeOf = true, bounds, map[string]int{}
		v := c.changed()
		c.mu.Unlock()
		if err := c.wait(ctx, v); err != nil {
			return err
		}
	}
	// put stores items, all of range ri (-1: not ranged), in a segment.
	put := func(ctx context.Context, ri int, items []entity.Entity) error {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
		var sum Sum
		var lo, hi Key
		type kh struct {
			k string
			h uint64
		}
		hashes := make([]kh, 0, len(items))
		skipped := int64(0)
		var line []byte
		for _, e := range items {
			k := mapKey(e.PartitionKey, e.RowKey)
			if _, ok := prev[k]; ok {
				skipped++
				continue
			}
			canon, err := Canonical(e)
			if err != nil {
				return fmt.Errorf("table %s: %w", st.Name, err)
			}
			h := lineHash(canon)
			line = appendLine(line[:0], canon, e.Timestamp)
			zw.Write(line)
			sum.Add(h)
			hashes = append(hashes, kh{k, h})
			key := Key{e.PartitionKey, e.RowKey}
			if len(hashes) == 1 || key.Compare(lo) < 0 {
				lo = key
			}
			if len(hashes) == 1 || key.Compare(hi) > 0 {
				hi = key
			}
		}
		b.skipped.Add(skipped)
		if len(hashes) == 0 {
			if skipped > 0 {
				c.mu.Lock()
				st.Skipped += skipped
				c.changed()
				c.mu.Unlock()
			}
			return nil
		}
		zw.Close()

		c.mu.Lock()
		if c.err != nil {
			// The checkpoint cannot be written (or, for a range of a
			// distributed job, another holder took the range over): what
			// this run appends now would never be committed.
			err := c.err
			c.mu.Unlock()
			return err
		}
		var name string
		if n := len(free[ri]); n > 0 {
			name, free[ri] = free[ri][n-1], free[ri][:n-1]
		} else {
			segN++
			dir := st.Name
			switch {
			case b.rangeDir != "":
				dir = b.rangeDir
			case ri >= 0:
				dir = fmt.Sprintf("%s/r%05d", st.Name, ri)
			}
			name = fmt.Sprintf("%s/seg-%04d-%06d.jsonl.gz", dir, b.ck.Run, segN)
			st.Segments = append(st.Segments, Segment{File: name})
			if ri >= 0 {
				st.RangeOf[name] = ri
			}
		}
		off := segmentNamed(st, name).Bytes
		c.mu.Unlock()

		// Only this fn appends to the segment now: it left the free list.
		err := b.to.s.Append(ctx, name, off, buf.Bytes())

		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			// It takes no more pages in this run.
			return fmt.Errorf("table %s: segment %s: %w", st.Name, name, err)
		}
		seg := segmentNamed(st, name)
		seg.Bytes += int64(buf.Len())
		seg.Entities += sum.Count
		seg.Checksum = hex64(mustHex(seg.Checksum) + sum.Hash)
		if seg.Entities == sum.Count || lo.Compare(seg.First) < 0 {
			seg.First = lo
		}
		if seg.Entities == sum.Count || hi.Compare(seg.Last) > 0 {
			seg.Last = hi
		}
		st.Skipped += skipped
		for _, x := range hashes {
			stored[x.k] = x.h
		}
		if seg.Bytes < b.o.SegmentBytes {
			free[ri] = append(free[ri], name)
		}
		c.changed()
		b.stored.Add(sum.Count)
		return nil
	}
	c.mu.Lock()
	ranged := st.Ranged
	c.mu.Unlock()
	fn := func(ctx context.Context, items []entity.Entity) error {
		if !ranged {
			return put(ctx, -1, items)
		}
		// A page may hold keys of two ranges (the scan's ranges are not
		// the backup's): each part goes to its range's segments.
		var order []int
		parts := map[int][]entity.Entity{}
		for _, e := range items {
			ri := st.rangeIndex(Key{e.PartitionKey, e.RowKey})
			if _, ok := parts[ri]; !ok {
				order = append(order, ri)
			}
			parts[ri] = append(parts[ri], e)
		}
		for _, ri := range order {
			if err := put(ctx, ri, parts[ri]); err != nil {
				return err
			}
		}
		return nil
	}
	progress := func(p patterns.ScanProgress) {
		c.mu.Lock()
		st.Token = p.Token
		c.changed()
		c.mu.Unlock()
		b.prog.report(Progress{Table: st.Name, Phase: "backup", Entities: b.stored.Load(), Skipped: b.skipped.Load(), Ranges: p.Ranges, RangesDone: p.RangesDone})
	}
	c.mu.Lock()
	token := st.Token
	c.mu.Unlock()
	if err := scan(ctx, tbl, scanSpec{filter: filter, parallel: b.o.Parallel, resume: token, progress: progress}, fn); err != nil {
		return fmt.Errorf("table %s: %w", st.Name, err)
	}

	if b.rangeDir != "" {
		c.mu.Lock()
		st.Phase = phaseDone
		st.End = time.Now().UTC()
		v := c.changed()
		c.mu.Unlock()
		return c.wait(ctx, v)
	}
	// The key list: what the table holds once this backup is restored.
	final := prev
	for k, h := range stored {
		final[k] = h
	}
	if st.Listing != nil {
		listed := state{}
		if err := readKeys(ctx, b.to, *st.Listing, func(k Key, h uint64) error {
			listed[mapKey(k.PartitionKey, k.RowKey)] = h
			return nil
		}); err != nil {
			return fmt.Errorf("table %s: %w", st.Name, err)
		}
		for k, h := range final {
			listed[k] = h
		}
		final = listed
	}
	kf, err := putKeyList(ctx, b.to, st.Name+"/keys.jsonl.gz", final)
	if err != nil {
		return fmt.Errorf("table %s: %w", st.Name, err)
	}
	c.mu.Lock()
	st.Keys = &kf
	st.Phase = phaseDone
	st.End = time.Now().UTC()
	v := c.changed()
	c.mu.Unlock()
	return c.wait(ctx, v)
}

// segmentNamed is the segment of st named name, which fn added; the
// last ones are the likeliest.
func segmentNamed(st *tableStep, name string) *Segment {
	for i := len(st.Segments) - 1; i > 0; i-- {
		if st.Segments[i].File == name {
			return &st.Segments[i]
		}
	}
	return &st.Segments[0]
}

func parseHex64OrZero(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return parseHex64(s)
}

// list takes an incremental backup's key-only listing, and writes the
// listing (with the base's hash of each key it knew) and the keys
// deleted since the base.
func (b *backup) list(ctx context.Context, tbl *rows, st *tableStep) error {
	lf, df, err := listKeys(ctx, tbl, b.o.Base, b.base.table(st.Name), b.to, b.o.Parallel, func(p patterns.ScanProgress) {
		b.prog.report(Progress{Table: st.Name, Phase: "list keys", Entities: b.stored.Load(), Ranges: p.Ranges, RangesDone: p.RangesDone})
	})
	if err != nil {
		return err
	}
	c := b.c
	c.mu.Lock()
	st.Listing, st.Deleted, st.Phase = &lf, &df, phaseScan
	v := c.changed()
	c.mu.Unlock()
	return c.wait(ctx, v)
}

// listKeys lists the keys of tbl (a key-only parallel scan) and writes,
// into to, TABLE/listing.jsonl.gz (each key with the hash baseT's key list
// gives it, 0 for a key the base did not hold) and TABLE/deleted.jsonl.gz
// (the keys of the base that the listing did not find).
func listKeys(ctx context.Context, tbl *rows, base *Location, baseT *TableBackup, to *Location, parallel int, progress func(patterns.ScanProgress)) (listing, deleted KeyFile, err error) {
	name := tbl.Name()
	baseState := state{}
	if err := readKeys(ctx, base, baseT.Keys, func(k Key, h uint64) error {
		baseState[mapKey(k.PartitionKey, k.RowKey)] = h
		return nil
	}); err != nil {
		return listing, deleted, fmt.Errorf("table %s: base key list: %w", name, err)
	}
	var mu sync.Mutex
	listed := state{}
	err = scan(ctx, tbl, scanSpec{keysOnly: true, parallel: parallel, progress: progress}, func(_ context.Context, items []entity.Entity) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range items {
			k := mapKey(e.PartitionKey, e.RowKey)
			listed[k] = baseState[k]
		}
		return nil
	})
	if err != nil {
		return listing, deleted, fmt.Errorf("table %s: key listing: %w", name, err)
	}
	var gone []Key
	for k := range baseState {
		if _, ok := listed[k]; !ok {
			gone = append(gone, splitMapKey(k))
		}
	}
	if listing, err = putKeyList(ctx, to, name+"/listing.jsonl.gz", listed); err != nil {
		return listing, deleted, fmt.Errorf("table %s: %w", name, err)
	}
	var dbuf bytes.Buffer
	if err := writeDeleted(&dbuf, gone); err != nil {
		return listing, deleted, err
	}
	deleted = KeyFile{File: name + "/deleted.jsonl.gz", Count: int64(len(gone))}
	if err := to.s.Put(ctx, deleted.File, dbuf.Bytes()); err != nil {
		return listing, deleted, fmt.Errorf("table %s: write %s: %w", name, deleted.File, err)
	}
	return listing, deleted, nil
}

// manifest is the finished backup's manifest.
func (b *backup) manifest() *Manifest {
	m := &Manifest{Format: ManifestFormat, Version: ManifestVersion, Tablekit: buildinfo.Version(), Kind: b.job.Kind, Base: b.job.Base,
		Source: b.job.Source, Start: b.ck.Start, End: time.Now().UTC()}
	for _, st := range b.ck.Tables {
		t := TableBackup{Name: st.Name, Start: st.Start, End: st.End, Since: st.Since, Skipped: st.Skipped, Runs: st.Runs, Deleted: st.Deleted}
		var sum Sum
		for _, seg := range st.Segments {
			if seg.Entities == 0 {
				continue // created by a run that stopped before its first page landed
			}
			h, _ := parseHex64OrZero(seg.Checksum)
			sum.Merge(Sum{seg.Entities, h})
			t.Segments = append(t.Segments, seg)
		}
		t.Entities, t.Checksum = sum.Count, hex64(sum.Hash)
		t.Ranges = st.ranges()
		if st.Keys != nil {
			t.Keys = *st.Keys
		}
		m.Tables = append(m.Tables, t)
	}
	return m
}

// appendLine appends the segment line of an entity: its canonical line
// with its Timestamp (as export writes it), and a newline.
func appendLine(dst, canon []byte, ts time.Time) []byte {
	if ts.IsZero() {
		dst = append(dst, canon...)
		return append(dst, '\n')
	}
	dst = append(dst, canon[:len(canon)-1]...)
	if len(canon) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"Timestamp@odata.type":"Edm.DateTime","Timestamp":"`...)
	dst = ts.UTC().AppendFormat(dst, "2006-01-02T15:04:05.0000000Z")
	return append(dst, "\"}\n"...)
}

// putKeyList writes s as a key list.
func putKeyList(ctx context.Context, l *Location, name string, s state) (KeyFile, error) {
	var buf bytes.Buffer
	if err := writeKeyList(&buf, s); err != nil {
		return KeyFile{}, err
	}
	if err := l.s.Put(ctx, name, buf.Bytes()); err != nil {
		return KeyFile{}, fmt.Errorf("write %s: %w", name, err)
	}
	sum := s.sum()
	return KeyFile{File: name, Count: sum.Count, Checksum: hex64(sum.Hash)}, nil
}

// readKeys reads a key list or deleted-key list.
func readKeys(ctx context.Context, l *Location, kf KeyFile, fn func(Key, uint64) error) error {
	r, err := l.s.Open(ctx, kf.File, -1)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", kf.File, l, err)
	}
	defer r.Close()
	n := int64(0)
	if err := readKeyList(r, func(k Key, h uint64) error { n++; return fn(k, h) }); err != nil {
		return fmt.Errorf("%s in %s: %w", kf.File, l, err)
	}
	if n != kf.Count {
		return fmt.Errorf("%s in %s: %d keys, the manifest says %d", kf.File, l, n, kf.Count)
	}
	return nil
}

// readSegment reads the entities of seg, in order, with their hashes, and
// checks their count and checksum.
func readSegment(ctx context.Context, l *Location, seg Segment, fn func(e entity.Entity, h uint64) error) error {
	return readSegmentPages(ctx, l, seg, 0, func(_ int, page []entity.Entity, hs []uint64) error {
		for i, e := range page {
			if err := fn(e, hs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// readSegmentPages reads seg a page (gzip member) at a time, skipping the
// first skip pages (read and counted, not handed to fn), and checks the
// whole segment's count and checksum at its end. Content that does not
// decode, or does not match the manifest, is a *CorruptError; errors of
// the store and fn's are returned as they are.
func readSegmentPages(ctx context.Context, l *Location, seg Segment, skip int, fn func(index int, page []entity.Entity, hashes []uint64) error) error {
	if seg.Bytes == 0 {
		return nil
	}
	r, err := l.s.Open(ctx, seg.File, seg.Bytes)
	if err != nil {
		return fmt.Errorf("segment %s: %w", seg.File, err)
	}
	defer r.Close()
	src := &readErr{r: r}
	var sum Sum
	// damaged is the error of content that does not decode: corruption,
	// unless the store's reads failed.
	damaged := func(err error) error {
		if src.err != nil {
			return fmt.Errorf("segment %s: %w", seg.File, err)
		}
		return &CorruptError{File: seg.File, Want: Sum{seg.Entities, mustHex(seg.Checksum)}, Got: sum, Err: err}
	}
	br := bufio.NewReaderSize(src, 256<<10)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return damaged(err)
	}
	zr.Multistream(false)
	for index := 0; ; index++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var page []entity.Entity
		var hs []uint64
		lr := bufio.NewReaderSize(zr, 64<<10)
		line := 0
		for {
			text, rerr := readLine(lr)
			if len(bytes.TrimSpace(text)) > 0 {
				line++
				e, err := entity.ParseEntity(text)
				if err != nil {
					return damaged(fmt.Errorf("page %d, line %d: %w", index+1, line, err))
				}
				canon, err := Canonical(e)
				if err != nil {
					return damaged(fmt.Errorf("page %d, line %d: %w", index+1, line, err))
				}
				h := lineHash(canon)
				sum.Add(h)
				page = append(page, e)
				hs = append(hs, h)
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return damaged(fmt.Errorf("page %d: %w", index+1, rerr))
			}
		}
		if index >= skip {
			if err := fn(index, page, hs); err != nil {
				return err
			}
		}
		err := zr.Reset(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return damaged(fmt.Errorf("after page %d: %w", index+1, err))
		}
		zr.Multistream(false)
	}
	// Skipped pages are read too: a resumed restore checks the whole
	// segment as a first run does.
	if sum.Count != seg.Entities || hex64(sum.Hash) != seg.Checksum {
		return &CorruptError{File: seg.File, Want: Sum{seg.Entities, mustHex(seg.Checksum)}, Got: sum}
	}
	return nil
}

// readErr records the first error, other than io.EOF, of its reader: an
// error of the store, not of the content.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

func mustHex(s string) uint64 {
	h, _ := parseHex64OrZero(s)
	return h
}

// CorruptError is a backup segment whose content does not match its
// manifest: it does not decode (Err says why, Got counts the entities
// before the damage), or its entities' count or checksum differ.
// Restore, VerifyBackup and a job's completion return it (VerifyBackup as
// a Mismatch) for every such segment, before any success.
type CorruptError struct {
	File      string
	Want, Got Sum
	Err       error
}

// Error names the segment and both sums, or what did not decode.
func (e *CorruptError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("segment %s is damaged after %v: %v; the manifest says %v", e.File, e.Got, e.Err, e.Want)
	}
	return fmt.Sprintf("segment %s holds %v; the manifest says %v", e.File, e.Got, e.Want)
}

// Unwrap returns what did not decode (nil when the segment decoded).
func (e *CorruptError) Unwrap() error { return e.Err }

// maxLine bounds one segment line (an entity is at most 1 MiB on the
// service; JSON escaping and base64 make its text larger).
const maxLine = 8 << 20

func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil {
			line = line[:len(line)-1]
		}
		return line, err
	}
}

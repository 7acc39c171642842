package tablecopy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/patterns"
)

// DefaultRestoreParallel is how many segments a restore writes at once.
const DefaultRestoreParallel = 4

// ErrIncomplete is wrapped by the error of a Restore or Copy whose writes
// all succeeded and yet left fewer entities in the target than it read
// from its source: a restore or copy that lost entities does not pass for
// done.
var ErrIncomplete = errors.New("tablekit: fewer entities written than read")

// RestoreOptions configures Restore. A nil *RestoreOptions restores every
// table of the backup under its own name.
type RestoreOptions struct {
	// Tables restores only these tables of the backup.
	Tables []string
	// ToTable restores the backup's one table (or the one of Tables)
	// under this name.
	ToTable string
	// Parallel is how many segments are written at once; 0 means
	// DefaultRestoreParallel.
	Parallel int
	// Concurrency bounds the transactions in flight per segment
	// (patterns.BulkOptions.Concurrency); 0 means 8.
	Concurrency int
	// Insert refuses entities that exist in the target before the
	// restore. Later backups of an incremental chain still replace what
	// earlier ones of the same restore wrote.
	Insert bool
	// NoCheckpoint restores without a checkpoint: an interrupted restore
	// starts over.
	NoCheckpoint bool
	// Restart discards the checkpoint of an earlier restore of the same
	// backup into the same tables (unfinished, or finished) and restores
	// from the start.
	Restart bool
	// Progress, when set, is called after each page, one call at a time.
	Progress func(Progress)
}

// RestoreResult says what a Restore did in this run.
type RestoreResult struct {
	// Tables maps each restored table of the backup to its target.
	Tables map[string]string
	// Written counts entities written, Deleted the keys an incremental
	// backup deleted that were deleted (or already gone) in the target.
	Written, Deleted int64
	// Skipped counts entities an interrupted run had written already
	// (found identical in the target).
	Skipped int64
	Resumed bool
	// AlreadyComplete is set when the checkpoint says this restore
	// finished already (the same restore run again): nothing was written.
	AlreadyComplete bool
	// Throttled counts the service's throttling answers, each retried.
	Throttled int64
	// Backups is the length of the chain applied (1 for a full backup).
	Backups int
}

// Restore writes the backup at from (and, for an incremental backup, its
// chain of bases, oldest first) into tables of acct through BulkWrite:
// for each backup of the chain, the keys it deleted are deleted, then its
// entities are upserted (or inserted, with opts.Insert), several segments
// at once. Every property comes back as it was backed up, of every EDM
// type, Tk* properties included.
//
// Restore is resumable: unless opts.NoCheckpoint it keeps
// restore-HASH.json in from (HASH names the target account, tables and
// options),
// holding the pages of each segment written. A page is written only once
// the page before the previous one is in the checkpoint, so after an
// interruption (even SIGKILL) the same call continues, and reads back
// from the target the at most two pages per segment the interrupted run
// may have written, skipping the entities identical there. When the
// restore completes the checkpoint says so: the same restore run again
// does nothing (RestoreResult.AlreadyComplete) unless opts.Restart. It
// returns a *WriteError naming the entities the target refused.
func Restore(ctx context.Context, from *Location, acct *tablekit.Account, opts *RestoreOptions) (RestoreResult, error) {
	res := RestoreResult{Tables: map[string]string{}}
	o := RestoreOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultRestoreParallel
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if from == nil || acct == nil {
		return res, tkerr.Errorf("tablekit: restore: %w: nil location or account", tablekit.ErrInvalidArgument)
	}
	ms, ls, err := chain(ctx, from)
	if err != nil {
		return res, err
	}
	last := ms[len(ms)-1]
	res.Backups = len(ms)
	names, err := selectTables(last, o.Tables, from)
	if err != nil {
		return res, err
	}
	if o.ToTable != "" && len(names) != 1 {
		return res, tkerr.Errorf("tablekit: restore: %w: --to-table names one target, and %d tables are selected", tablekit.ErrInvalidArgument, len(names))
	}
	for _, n := range names {
		target := n
		if o.ToTable != "" {
			target = o.ToTable
		}
		if _, err := patterns.NewTable[entity.Entity](acct, target, nil); err != nil {
			return res, tkerr.Errorf("tablekit: restore: %w", err)
		}
		res.Tables[n] = target
		for i, m := range ms {
			if m.table(n) == nil {
				return res, fmt.Errorf("tablekit: restore: the backup %s of the chain holds no table %s", ls[i], n)
			}
		}
	}

	r := &restore{from: from, acct: acct, o: o, ms: ms, ls: ls, prog: &progressFunc{fn: o.Progress}}
	for _, n := range names {
		for i, m := range ms {
			t := m.table(n)
			r.total += t.Entities
			r.ck.Steps = append(r.ck.Steps, restoreStep{Table: n, Target: res.Tables[n], Backup: i, Pages: map[string]int{}})
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%d", acct.Name(), acct.TableEndpoint(), o.Insert, len(ms))
	for _, n := range names {
		fmt.Fprintf(h, "\x00%s\x00%s", n, res.Tables[n])
	}
	r.ckName = "restore-" + hex.EncodeToString(h.Sum(nil)[:8]) + ".json"
	r.ck.Format, r.ck.Version = restoreCheckpointFormat, ManifestVersion
	r.ck.Target = acct.Name() + " " + endpointOnly(acct.TableEndpoint())

	if !o.NoCheckpoint {
		b, err := from.get(ctx, r.ckName)
		switch {
		case err == nil && o.Restart:
		case err == nil:
			var ck restoreCheckpoint
			if err := json.Unmarshal(b, &ck); err != nil || ck.Format != restoreCheckpointFormat || len(ck.Steps) != len(r.ck.Steps) {
				return res, fmt.Errorf("tablekit: restore: %s in %s is not this restore's checkpoint; delete it to start over", r.ckName, from)
			}
			for i := range ck.Steps {
				if ck.Steps[i].Table != r.ck.Steps[i].Table || ck.Steps[i].Backup != r.ck.Steps[i].Backup {
					return res, fmt.Errorf("tablekit: restore: %s in %s is not this restore's checkpoint; delete it to start over", r.ckName, from)
				}
				if ck.Steps[i].Pages == nil {
					ck.Steps[i].Pages = map[string]int{}
				}
			}
			r.ck.Steps = ck.Steps
			res.Resumed, r.resumed = true, true
			res.AlreadyComplete = true
			for _, st := range ck.Steps {
				res.AlreadyComplete = res.AlreadyComplete && st.Done
			}
			if res.AlreadyComplete {
				res.Resumed = false
				return res, nil
			}
		case !errors.Is(err, fs.ErrNotExist):
			return res, tkerr.Errorf("tablekit: restore: %w", err)
		}
		r.c = newCommitter(ctx, r.snapshot, r.persist)
		if !r.resumed {
			// The checkpoint exists before the first write, so a rerun after
			// any interruption knows it resumes.
			r.lock()
			v := r.changed()
			r.unlock()
			if err := r.wait(ctx, v); err != nil {
				r.c.close()
				return res, tkerr.Errorf("tablekit: restore: checkpoint %s in %s: %w", r.ckName, from, err)
			}
		}
	}

	for i := range r.ck.Steps {
		if err = r.step(ctx, &r.ck.Steps[i]); err != nil {
			break
		}
	}
	if r.c != nil {
		if cerr := r.c.close(); err == nil && cerr != nil {
			err = fmt.Errorf("checkpoint %s in %s: %w", r.ckName, from, cerr)
		}
	}
	res.Written, res.Skipped, res.Deleted, res.Throttled = r.written.Load(), r.skipped.Load(), r.deleted.Load(), r.throttled.Load()
	if err == nil && !res.Resumed && res.Written+res.Skipped != r.total {
		// Every page is checked as it is written; this is the whole
		// restore's count against the manifests' (a resumed run wrote
		// only the pages its checkpoint lacked).
		err = fmt.Errorf("%d entities written, the backup holds %d (%w)", res.Written+res.Skipped, r.total, ErrIncomplete)
	}
	if err != nil {
		return res, tkerr.Errorf("tablekit: restore from %s: %w", from, err)
	}
	return res, nil
}

// selectTables returns the tables of m named by want (all when empty).
func selectTables(m *Manifest, want []string, l *Location) ([]string, error) {
	if len(want) == 0 {
		var names []string
		for _, t := range m.Tables {
			names = append(names, t.Name)
		}
		return names, nil
	}
	for _, n := range want {
		if m.table(n) == nil {
			var have []string
			for _, t := range m.Tables {
				have = append(have, t.Name)
			}
			return nil, tkerr.Errorf("tablekit: %w: the backup %s holds no table %s (it holds %v)", tablekit.ErrInvalidArgument, l, n, have)
		}
	}
	return slices.Compact(slices.Clone(want)), nil
}

const restoreCheckpointFormat = "tablekit-restore-checkpoint"

// restoreCheckpoint is restore-HASH.json.
type restoreCheckpoint struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	Target  string        `json:"target"`
	Steps   []restoreStep `json:"steps"`
}

// restoreStep is one backup of the chain applied to one table.
type restoreStep struct {
	Table       string         `json:"table"`
	Target      string         `json:"target"`
	Backup      int            `json:"backup"` // index in the chain, oldest first
	DeletesDone bool           `json:"deletesDone,omitempty"`
	Pages       map[string]int `json:"pages"` // segment file -> pages written
	Done        bool           `json:"done,omitempty"`
}

type restore struct {
	from    *Location
	acct    *tablekit.Account
	o       RestoreOptions
	ms      []*Manifest
	ls      []*Location
	prog    *progressFunc
	ckName  string
	ck      restoreCheckpoint // guarded by c.mu
	c       *committer
	resumed bool
	total   int64

	written, skipped, deleted atomic.Int64
	throttled                 atomic.Int64
	segsDone, segs            atomic.Int64
}

func (r *restore) snapshot() any {
	b, _ := json.Marshal(r.ck)
	return b
}

func (r *restore) persist(ctx context.Context, s any) error {
	return r.from.s.Put(ctx, r.ckName, s.([]byte))
}

// lock and unlock guard the checkpoint state (a no-op without one).
func (r *restore) lock() {
	if r.c != nil {
		r.c.mu.Lock()
	}
}

func (r *restore) unlock() {
	if r.c != nil {
		r.c.mu.Unlock()
	}
}

// changed records a change (with the lock held); wait makes it durable.
func (r *restore) changed() uint64 {
	if r.c == nil {
		return 0
	}
	return r.c.changed()
}

func (r *restore) wait(ctx context.Context, v uint64) error {
	if r.c == nil {
		return nil
	}
	return r.c.wait(ctx, v)
}

// step applies one backup of the chain to one table.
func (r *restore) step(ctx context.Context, st *restoreStep) error {
	r.lock()
	done, deletesDone := st.Done, st.DeletesDone
	r.unlock()
	m, l := r.ms[st.Backup], r.ls[st.Backup]
	t := m.table(st.Table)
	if done {
		return nil
	}
	dst, err := patterns.NewTable[entity.Entity](r.acct, st.Target, nil)
	if err != nil {
		return err
	}
	if err := dst.CreateIfNotExists(ctx, nil); err != nil {
		return fmt.Errorf("create %s: %w", st.Target, err)
	}
	if t.Deleted != nil && !deletesDone {
		if err := r.deletes(ctx, dst, l, *t.Deleted); err != nil {
			return fmt.Errorf("table %s: deletes of %s: %w", st.Table, l, err)
		}
		r.lock()
		st.DeletesDone = true
		v := r.changed()
		r.unlock()
		if err := r.wait(ctx, v); err != nil {
			return err
		}
	}
	// With Insert, the keys an earlier backup of the chain wrote are
	// replaced, not refused.
	var upsertKeys func(string) bool
	if r.o.Insert && st.Backup > 0 {
		prev := map[string]bool{}
		pt := r.ms[st.Backup-1].table(st.Table)
		if err := readKeys(ctx, r.ls[st.Backup-1], pt.Keys, func(k Key, _ uint64) error {
			prev[mapKey(k.PartitionKey, k.RowKey)] = true
			return nil
		}); err != nil {
			return fmt.Errorf("table %s: %w", st.Table, err)
		}
		upsertKeys = func(k string) bool { return prev[k] }
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Concurrency is per segment; the job's writer shares it.
	w := newWriter(ctx, dst, "", r.o.Insert, r.o.Concurrency*r.o.Parallel) // a restore writes exactly what the backup holds
	defer func() {
		w.close()
		r.written.Add(w.written.Load())
		r.skipped.Add(w.skipped.Load())
		r.throttled.Add(w.throttled.Load())
	}()
	r.segs.Add(int64(len(t.Segments)))
	work := make(chan Segment)
	errc := make(chan error, r.o.Parallel)
	var wg sync.WaitGroup
	for range r.o.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seg := range work {
				if err := r.segment(ctx, st, l, seg, w, upsertKeys); err != nil {
					errc <- fmt.Errorf("table %s: %w", st.Table, err)
					cancel()
					return
				}
				r.segsDone.Add(1)
			}
		}()
	}
	for _, seg := range t.Segments {
		select {
		case work <- seg:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.lock()
	st.Done = true
	v := r.changed()
	r.unlock()
	return r.wait(ctx, v)
}

// segment writes one segment's pages, from the first the checkpoint does
// not hold. Page j is written only once j-1 pages are durable in the
// checkpoint, so an interrupted run may have written pages d and d+1
// (d the checkpoint's count) and no further: a resumed run reads those
// back before writing them.
func (r *restore) segment(ctx context.Context, st *restoreStep, l *Location, seg Segment, w *writer, upsertKeys func(string) bool) error {
	r.lock()
	start := st.Pages[seg.File]
	r.unlock()
	var versions []uint64 // versions[j]: the change recording j+1 pages written
	err := readSegmentPages(ctx, l, seg, start, func(j int, page []entity.Entity, _ []uint64) error {
		if k := j - 2 - start; k >= 0 {
			if err := r.wait(ctx, versions[k]); err != nil {
				return err
			}
		}
		careful := r.resumed && j < start+2
		if err := w.writeAll(ctx, page, careful, upsertKeys, "a page"); err != nil {
			return fmt.Errorf("segment %s, page %d: %w", seg.File, j+1, err)
		}
		r.lock()
		st.Pages[seg.File] = j + 1
		versions = append(versions, r.changed())
		r.unlock()
		r.prog.report(Progress{Table: st.Table, Phase: "restore", Entities: r.written.Load() + w.written.Load(), Skipped: r.skipped.Load() + w.skipped.Load(), Total: r.total,
			Ranges: int(r.segs.Load()), RangesDone: int(r.segsDone.Load())})
		return nil
	})
	return err
}

// deletes deletes the keys of a deleted-key list from dst.
func (r *restore) deletes(ctx context.Context, dst *rows, l *Location, kf KeyFile) error {
	var ks []Key
	if err := readKeys(ctx, l, kf, func(k Key, _ uint64) error {
		ks = append(ks, k)
		return nil
	}); err != nil {
		return err
	}
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, k := range ks {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := dst.DeleteIfExists(ctx, k.PartitionKey, k.RowKey, nil); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("delete %v: %w", k, err)
				}
				mu.Unlock()
				return
			}
			r.deleted.Add(1)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

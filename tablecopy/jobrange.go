package tablecopy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/patterns"
)

// errDisplaced stops a range's holder whose state another holder (a
// duplicate delivery of its message) has taken over.
var errDisplaced = errors.New("another worker took the range over")

// RangeHandlerOptions configures RangeHandler. A nil *RangeHandlerOptions
// means the defaults.
type RangeHandlerOptions struct {
	// Accounts are the accounts, besides the worker's own (Call.Account),
	// whose tables or blobs jobs may name: a copy's target, a backup's
	// Blob storage. A job naming an account the worker does not connect
	// to fails, naming the account's endpoint.
	Accounts []*tablekit.Account
	// Dirs are the directories under which a backup job's local DEST may
	// be: a filesystem every worker mounts at the same path. A job naming
	// a directory elsewhere fails; without Dirs, every local DEST does (a
	// queue message cannot make a worker write where it was not told to).
	Dirs []string
}

// RangeHandler returns the handler of KindRange steps: it copies, or
// backs up, one key range of a job StartCopyJob or StartBackupJob started.
// Register it on a consistency.Worker (tablekit-worker does).
//
// The handler first claims the range: it writes the range's state,
// conditionally on the version it read, with a new attempt number. Every
// later write of the state (its checkpoint, after each page) is
// conditional on the version the handler wrote last, so when a message is
// delivered again while an earlier holder still runs (its visibility
// lapsed), the later delivery takes the range over and the earlier one
// stops at its next checkpoint and returns nil, leaving the range to it.
// A range resumes from its checkpoint: a copy reads back the pages the
// earlier attempt had in flight and skips the entities already identical
// in the target; a backup writes new segments (named by attempt) and
// ignores what the earlier attempt appended past its checkpoint. A done
// range does nothing; a backup's handler then runs FinishJob, so that the
// last range to finish writes the manifest.
//
// Errors name the job and range; a failure that retrying cannot fix (a
// refused entity, an account the worker does not know) is permanent, and
// on the message's last delivery the error is recorded in the range's
// state for JobStatus.
func RangeHandler(opts *RangeHandlerOptions) consistency.Handler {
	var accts []*tablekit.Account
	var dirs []string
	if opts != nil {
		accts = slices.Clone(opts.Accounts)
		dirs = slices.Clone(opts.Dirs)
	}
	return func(ctx context.Context, c *consistency.Call) error {
		var args rangeArgs
		if err := c.Decode(&args); err != nil {
			return err
		}
		r := &rangeRun{accts: append([]*tablekit.Account{c.Account}, accts...), dirs: dirs, args: args, log: c.Logger}
		err := r.run(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errDisplaced):
			c.Logger.Info("range taken over by another delivery; leaving it", "job", args.Job, "range", args.Range, "error", err)
			return nil
		}
		if consistency.IsPermanent(err) || c.MaxDequeueCount > 0 && c.DequeueCount >= c.MaxDequeueCount {
			r.recordError(context.WithoutCancel(ctx), err)
		}
		return err
	}
}

// rangeRun is one delivery of a range message.
type rangeRun struct {
	accts []*tablekit.Account
	dirs  []string
	args  rangeArgs
	log   *slog.Logger
	store jobStore
	rec   *jobRecord
	state rangeState // as last written by this run
	etag  string     // of state
}

func (r *rangeRun) errorf(format string, a ...any) error {
	return tkerr.Errorf("tablekit: job %s range %d: %w", r.args.Job, r.args.Range, fmt.Errorf(format, a...))
}

// account finds the account of ref among those the worker connects to.
func (r *rangeRun) account(ref endpointRef, blob bool) (*tablekit.Account, error) {
	for _, a := range r.accts {
		ep := a.TableEndpoint()
		if blob {
			ep = a.BlobEndpoint()
		}
		if ep != "" && endpointKey(ep) == ref.Endpoint && a.Name() == ref.Account {
			return a, nil
		}
	}
	what := "table"
	if blob {
		what = "blob"
	}
	return nil, consistency.Permanent(r.errorf("%w: the worker connects to no account %s with %s endpoint %s (give it with the --dest- flags of tablekit-worker)", tablekit.ErrNoEndpoint, ref.Account, what, ref.Endpoint))
}

// dir is the local Location of a backup job, if the worker allows it.
func (r *rangeRun) dir(loc string) (*Location, error) {
	if !filepath.IsAbs(loc) {
		return nil, consistency.Permanent(r.errorf("%w: the job's directory %q is not absolute", consistency.ErrInvalidArgs, loc))
	}
	l := Dir(loc)
	if !jobDirAllowed(l.String(), r.dirs) {
		return nil, consistency.Permanent(r.errorf("%w: the job writes to the directory %s, which the worker does not allow (give it, or a directory above it, with tablekit-worker's --job-dir)", tablekit.ErrInvalidArgument, loc))
	}
	return l, nil
}

func (r *rangeRun) run(ctx context.Context) error {
	a := r.args
	if !validJobID(a.Job) || a.Range < 0 {
		return consistency.Permanent(r.errorf("%w: malformed range message", consistency.ErrInvalidArgs))
	}
	var err error
	switch {
	case a.Store.Table != "":
		acct, aerr := r.account(a.Store.endpointRef, false)
		if aerr != nil {
			return aerr
		}
		r.store, err = newTableJobStore(acct, a.Store.Table, a.Job)
	case strings.HasPrefix(a.Store.Location, BlobScheme):
		acct, aerr := r.account(a.Store.endpointRef, true)
		if aerr != nil {
			return aerr
		}
		r.store, err = openJobStore(a.Store.Location, acct)
	case a.Store.Location != "":
		to, derr := r.dir(a.Store.Location)
		if derr != nil {
			return derr
		}
		r.store = dirJobStore{d: to.s.(dirStore)}
	default:
		err = consistency.Permanent(r.errorf("%w: the message names no job store", consistency.ErrInvalidArgs))
	}
	if err != nil {
		return err
	}
	data, _, err := r.store.load(ctx, jobName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return consistency.Permanent(r.errorf("no such job in %s", r.store.ref()))
		}
		return r.errorf("%w", err)
	}
	r.rec = &jobRecord{}
	if err := json.Unmarshal(data, r.rec); err != nil || r.rec.ID != a.Job || r.rec.Op != a.Op || a.Range >= r.rec.Ranges {
		return consistency.Permanent(r.errorf("%w: the job record in %s does not match the message", consistency.ErrInvalidArgs, r.store.ref()))
	}
	if err := r.claim(ctx); err != nil {
		return err
	}
	if !r.state.Done {
		r.log.Info("range started", "job", a.Job, "range", a.Range, "table", r.state.Table, "attempt", r.state.Attempt)
		switch r.rec.Op {
		case JobCopy:
			err = r.copy(ctx)
		case JobBackup:
			err = r.backup(ctx)
		default:
			err = consistency.Permanent(r.errorf("%w: operation %q", consistency.ErrInvalidArgs, r.rec.Op))
		}
		if err != nil {
			if errors.Is(err, errDisplaced) {
				return err
			}
			// A holder displaced between checkpoints may fail because
			// of what the new holder did meanwhile (an insert refused by
			// the entity the new holder wrote first): its failure is
			// the new holder's to settle, not a failure of the range.
			if d := r.displaced(ctx); d != nil {
				return d
			}
			return r.errorf("%w", err)
		}
		r.log.Info("range done", "job", a.Job, "range", a.Range, "table", r.state.Table, "attempt", r.state.Attempt)
	}
	if r.rec.Op == JobBackup {
		if _, err := finishBackup(ctx, r.store, r.rec, r.accts); err != nil {
			return r.errorf("finish: %w", err)
		}
	}
	return nil
}

// claim reads the range's state and, unless it is done, writes it back
// with a new attempt: from then on this run holds the range.
func (r *rangeRun) claim(ctx context.Context) error {
	for tries := 0; ; tries++ {
		data, etag, err := r.store.load(ctx, rangeName(r.args.Range))
		if err != nil {
			return r.errorf("%w", err)
		}
		var st rangeState
		if err := json.Unmarshal(data, &st); err != nil {
			return consistency.Permanent(r.errorf("%w: its state is not one tablekit wrote", consistency.ErrInvalidArgs))
		}
		r.state, r.etag = st, etag
		if st.Done {
			return nil
		}
		st.Attempt++
		st.Owner = newJobID(time.Now())
		st.Error = ""
		now := time.Now().UTC()
		if st.Start.IsZero() {
			st.Start = now
		}
		st.Updated = now
		body, _ := json.Marshal(st)
		etag, err = r.store.save(ctx, rangeName(r.args.Range), body, etag)
		if errors.Is(err, errStale) && tries < 5 {
			continue // another delivery claimed it meanwhile: claim after it
		}
		if err != nil {
			return r.errorf("claim: %w", err)
		}
		r.state, r.etag = st, etag
		return nil
	}
}

// displaced returns an errDisplaced error when another delivery has
// claimed the range since this run's last write of its state, nil when
// this run still holds it (or its state cannot be read: the caller's own
// error then stands).
func (r *rangeRun) displaced(ctx context.Context) error {
	data, _, err := r.store.load(context.WithoutCancel(ctx), rangeName(r.args.Range))
	if err != nil {
		return nil
	}
	var st rangeState
	if json.Unmarshal(data, &st) != nil || st.Owner == r.state.Owner {
		return nil
	}
	return fmt.Errorf("job %s range %d attempt %d: %w (attempt %d holds it)", r.args.Job, r.args.Range, r.state.Attempt, errDisplaced, st.Attempt)
}

// save writes the state this run holds, conditionally on its last
// version; called by one committer at a time.
func (r *rangeRun) save(ctx context.Context, st rangeState) error {
	st.Updated = time.Now().UTC()
	if st.Done && st.End.IsZero() {
		st.End = st.Updated
	}
	body, _ := json.Marshal(st)
	etag, err := r.store.save(ctx, rangeName(r.args.Range), body, r.etag)
	if errors.Is(err, errStale) {
		return fmt.Errorf("job %s range %d attempt %d: %w (%v)", r.args.Job, r.args.Range, st.Attempt, errDisplaced, err)
	}
	if err != nil {
		return err
	}
	r.state, r.etag = st, etag
	return nil
}

// recordError writes err into the range's state, for JobStatus, if this
// run still holds it.
func (r *rangeRun) recordError(ctx context.Context, err error) {
	if r.store == nil || r.etag == "" || r.state.Done {
		return
	}
	st := r.state
	st.Error = tablekit.Redact(err.Error())
	if serr := r.save(ctx, st); serr != nil {
		r.log.Warn("cannot record the range's failure", "job", r.args.Job, "range", r.args.Range, "error", serr)
	}
}

// copy copies the range, from its checkpoint.
func (r *rangeRun) copy(ctx context.Context) error {
	rec := r.rec
	if rec.Target == nil || len(rec.Tables) != 1 {
		return consistency.Permanent(fmt.Errorf("%w: a copy job names one source and a target", consistency.ErrInvalidArgs))
	}
	sacct, err := r.account(rec.Source, false)
	if err != nil {
		return err
	}
	dacct, err := r.account(*rec.Target, false)
	if err != nil {
		return err
	}
	src, err := patterns.NewTable[entity.Entity](sacct, rec.Tables[0], nil)
	if err != nil {
		return consistency.Permanent(err)
	}
	dst, err := patterns.NewTable[entity.Entity](dacct, rec.ToTable, nil)
	if err != nil {
		return consistency.Permanent(err)
	}
	ck := &copyCheckpoint{token: r.state.Token, resumed: r.state.Attempt > 1}
	if s := r.state.Copy; s != nil {
		ck.token, ck.done, ck.written, ck.skipped = s.Token, s.Done, s.Written, s.Skipped
		for _, sp := range s.Spans {
			ck.window = append(ck.window, span{Key{sp[0], sp[1]}, Key{sp[2], sp[3]}})
		}
	}
	ck.save = func(ctx context.Context, s copySnapshot) error {
		st := r.state
		st.Copy, st.Done = &s, s.Done
		return r.save(ctx, st)
	}
	filter, err := rec.filter(rec.Tables[0])
	if err != nil {
		return consistency.Permanent(err)
	}
	_, err = copyFrom(ctx, src, dst, CopyOptions{Filter: filter, Parallel: rec.Parallel, Insert: rec.Insert, Concurrency: max(rec.Concurrency, 1)}, ck)
	if we := (*WriteError)(nil); errors.As(err, &we) {
		// The target refused entities (BulkWrite retried throttling
		// itself): another delivery would be refused the same way.
		return consistency.Permanent(err)
	}
	return err
}

// backup backs the range up into its own segments, from its checkpoint.
func (r *rangeRun) backup(ctx context.Context) error {
	rec := r.rec
	sacct, err := r.account(rec.Source, false)
	if err != nil {
		return err
	}
	var to *Location
	if rec.Blob != nil {
		bacct, err := r.account(*rec.Blob, true)
		if err != nil {
			return err
		}
		if to, err = ParseLocation(rec.Location, bacct); err != nil {
			return consistency.Permanent(err)
		}
	} else if to, err = r.dir(rec.Location); err != nil {
		return err
	}
	step := tableStep{Name: r.state.Table, Phase: phaseScan, Token: r.state.Token, Since: rec.since(r.state.Table)}
	if r.state.Step != nil {
		step = *r.state.Step
	}
	b := &backup{ctx: ctx, acct: sacct, to: to, o: BackupOptions{Parallel: rec.Parallel, SegmentBytes: rec.SegmentBytes}, prog: &progressFunc{},
		rangeDir: fmt.Sprintf("%s/r%05d", r.state.Table, r.args.Range)}
	b.ck = backupCheckpoint{Run: r.state.Attempt, Tables: []tableStep{step}}
	// The snapshot is taken under the committer's lock: a copy of the step
	// (its segments too, which pages keep changing).
	base := r.state // save replaces r.state, in the committer's goroutine
	snapshot := func() any {
		st := base
		s := b.ck.Tables[0]
		s.Segments = slices.Clone(s.Segments)
		st.Step, st.Done = &s, s.Phase == phaseDone
		return st
	}
	b.c = newCommitter(ctx, snapshot, func(ctx context.Context, s any) error { return r.save(ctx, s.(rangeState)) })
	err = b.table(ctx, &b.ck.Tables[0])
	if cerr := b.c.close(); err == nil {
		err = cerr
	}
	return err
}

// FinishJob finishes a distributed backup whose ranges are all done: it
// writes each table's key list and the manifest, over every range's
// segments, and returns the manifest; it returns nil while a range is not
// done, and the manifest already written when there is one. Copy jobs
// have nothing to finish: it returns nil.
//
// The finish is race-free without a lock: each range's holder marks the
// range done (durably) before it reads the other ranges' states, so the
// last to finish sees every range done; and when several see it at once
// (or a watcher runs FinishJob too), each writes the same objects, made
// from the same done states, each write replacing the object whole.
//
// acct is the Blob storage account of the backup (and of the job's
// reference), as for ReadJob.
func FinishJob(ctx context.Context, ref string, acct *tablekit.Account) (*Manifest, error) {
	store, err := openJobStore(ref, acct)
	if err != nil {
		return nil, err
	}
	data, _, err := store.load(ctx, jobName)
	if err != nil {
		return nil, tkerr.Errorf("tablekit: job %s: %w", ref, err)
	}
	var rec jobRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("tablekit: job %s: not a tablekit job record", ref)
	}
	if rec.Op != JobBackup {
		return nil, nil
	}
	m, err := finishBackup(ctx, store, &rec, []*tablekit.Account{acct})
	if err != nil {
		return nil, tkerr.Errorf("tablekit: job %s: finish: %w", rec.ID, err)
	}
	return m, nil
}

// finishBackup writes the key lists and manifest of a backup job whose
// ranges are done (see FinishJob).
func finishBackup(ctx context.Context, store jobStore, rec *jobRecord, accts []*tablekit.Account) (*Manifest, error) {
	var to *Location
	if ds, ok := store.(dirJobStore); ok {
		to = &Location{s: ds.d}
	}
	for _, a := range accts {
		if to != nil || rec.Blob == nil {
			break
		}
		if a.BlobEndpoint() != "" && endpointKey(a.BlobEndpoint()) == rec.Blob.Endpoint {
			l, err := ParseLocation(rec.Location, a)
			if err != nil {
				return nil, err
			}
			to = l
		}
	}
	if to == nil {
		what := "directory " + rec.Location
		if rec.Blob != nil {
			what = "blob endpoint " + rec.Blob.Endpoint
		}
		return nil, fmt.Errorf("%w: no account or store for the job's %s", tablekit.ErrNoEndpoint, what)
	}
	if m, err := ReadManifest(ctx, to); err == nil {
		return m, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	_, states, err := loadJob(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, st := range states {
		if !st.Done || st.Step == nil {
			return nil, nil
		}
	}
	m := &Manifest{Format: ManifestFormat, Version: ManifestVersion, Tablekit: buildinfo.Version(), Kind: rec.Kind, Base: rec.Base,
		Source: rec.Source.Account + " " + rec.Source.Endpoint}
	for _, name := range rec.Tables {
		t := TableBackup{Name: name, Since: rec.since(name)}
		final := state{}
		var sum Sum
		for _, st := range states {
			if st.Table != name {
				continue
			}
			s := st.Step
			if t.Start.IsZero() || s.Start.Before(t.Start) {
				t.Start = s.Start
			}
			if s.End.After(t.End) {
				t.End = s.End
			}
			t.Skipped += s.Skipped
			t.Runs = max(t.Runs, s.Runs)
			// The job's ranges are in key order: each is a manifest
			// range, from its first key (the table's first, for the
			// first) to the next one's.
			var kr *KeyRange
			var krSum Sum
			for _, seg := range s.Segments {
				if seg.Entities == 0 {
					continue
				}
				if kr == nil {
					kr = &KeyRange{From: seg.First, Segments: []string{}}
				}
				if seg.First.Compare(kr.From) < 0 {
					kr.From = seg.First
				}
				kr.Segments = append(kr.Segments, seg.File)
				krSum.Merge(Sum{seg.Entities, mustHex(seg.Checksum)})
				if err := readSegment(ctx, to, seg, func(e entity.Entity, h uint64) error {
					k := mapKey(e.PartitionKey, e.RowKey)
					if _, dup := final[k]; dup {
						return fmt.Errorf("table %s: (%q, %q) is in two ranges' segments (range %d's %s among them)", name, e.PartitionKey, e.RowKey, st.Index, seg.File)
					}
					final[k] = h
					return nil
				}); err != nil {
					return nil, err
				}
				h, _ := parseHex64OrZero(seg.Checksum)
				sum.Merge(Sum{seg.Entities, h})
				t.Segments = append(t.Segments, seg)
			}
			if kr != nil {
				kr.Entities, kr.Checksum = krSum.Count, hex64(krSum.Hash)
				if n := len(t.Ranges); n == 0 {
					kr.From = Key{}
				} else {
					from := kr.From
					t.Ranges[n-1].To = &from
				}
				t.Ranges = append(t.Ranges, *kr)
			}
		}
		t.Entities, t.Checksum = sum.Count, hex64(sum.Hash)
		if l := rec.list(name); l != nil {
			// Incremental: what the table holds once restored is the
			// listing (each key with the base's hash), with the hashes of
			// the entities the ranges stored.
			listed := state{}
			if err := readKeys(ctx, to, l.Listing, func(k Key, h uint64) error {
				listed[mapKey(k.PartitionKey, k.RowKey)] = h
				return nil
			}); err != nil {
				return nil, fmt.Errorf("table %s: %w", name, err)
			}
			for k, h := range final {
				listed[k] = h
			}
			final = listed
			df := l.Deleted
			t.Deleted = &df
		}
		kf, err := putKeyList(ctx, to, name+"/keys.jsonl.gz", final)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		t.Keys = kf
		if m.Start.IsZero() || t.Start.Before(m.Start) {
			m.Start = t.Start
		}
		if t.End.After(m.End) {
			m.End = t.End
		}
		m.Tables = append(m.Tables, t)
	}
	body, _ := json.MarshalIndent(m, "", "  ")
	if err := to.s.Put(ctx, manifestName, append(body, '\n')); err != nil {
		return nil, fmt.Errorf("write %s: %w", manifestName, err)
	}
	return m, nil
}

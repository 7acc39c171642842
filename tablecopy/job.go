package tablecopy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// KindRange is the consistency step kind of one key range of a
// distributed copy or backup job: tablekit-worker registers RangeHandler
// for it.
const KindRange = "tablecopy-range"

// DefaultJobRanges is how many key ranges a distributed job splits each
// table into when its options do not say: enough for 16 workers to share
// a table, or for fewer to balance ranges of uneven size (see
// docs/COPY.md, "Distributed", for the throughput this reaches).
const DefaultJobRanges = 16

// Job operations.
const (
	JobCopy   = "copy"
	JobBackup = "backup"
)

// JobOptions configures StartCopyJob and StartBackupJob. A nil
// *JobOptions means the defaults.
type JobOptions struct {
	// Ranges is how many key ranges each table is split into (SplitScan
	// finds fewer on a small table); 0 means DefaultJobRanges.
	Ranges int
	// Parallel is how many key ranges each worker reads at once inside
	// its range (it splits its range further as it runs); 0 means the
	// scan's default.
	Parallel int
	// Filter (copy) copies only the entities matching it (as
	// CopyOptions.Filter); the zero Filter copies the whole table.
	Filter keys.Filter
	// Insert (copy) inserts each entity, refusing one that exists in the
	// target; otherwise entities are upserted.
	Insert bool
	// Concurrency (copy) bounds the transactions in flight per key range
	// a worker reads; 0 means 8.
	Concurrency int
	// CheckpointTable (copy) names the table, in the target's account,
	// holding the job and its ranges' checkpoints; empty means
	// DefaultCheckpointTable.
	CheckpointTable string
	// Since (backup) backs up only the entities whose Timestamp is later
	// (a KindChanges backup).
	Since time.Time
	// Base (backup) makes the backup incremental, as BackupOptions.Base:
	// the start lists each table's keys and diffs them with the base's key
	// list, then the ranges back up the entities changed since the base's
	// start (less SkewMargin).
	Base *Location
	// SkewMargin (backup, with Base) is how far before the base's start
	// the ranges look; 0 means DefaultSkewMargin.
	SkewMargin time.Duration
	// SegmentBytes (backup) is the size at which a range's segment is
	// closed; 0 means DefaultSegmentBytes.
	SegmentBytes int64
}

// Job is a distributed job that StartCopyJob or StartBackupJob started.
type Job struct {
	// Ref names the job where it lives, for JobStatus, FinishJob and
	// "tablekit job": table://CHECKPOINTTABLE/ID (a copy, in the target's
	// account) or the backup's blob://CONTAINER/PREFIX.
	Ref    string
	ID     string
	Op     string // JobCopy or JobBackup
	Queue  string // the queue its range messages were sent to
	Ranges int    // key ranges (messages), over all tables
}

// jobRecord is the job object: what the job is, written once by its
// start.
type jobRecord struct {
	Format   string      `json:"format"` // jobFormat
	Version  int         `json:"version"`
	ID       string      `json:"id"`
	Op       string      `json:"op"`
	Created  time.Time   `json:"created"`
	Queue    string      `json:"queue"`
	Ranges   int         `json:"ranges"`
	Source   endpointRef `json:"source"` // the account whose tables are read
	Tables   []string    `json:"tables"`
	Parallel int         `json:"parallel,omitempty"`
	// copy
	Target          *endpointRef `json:"target,omitempty"`
	ToTable         string       `json:"toTable,omitempty"`
	Filter          string       `json:"filter,omitempty"` // OData text (keys.ParseFilter reads it)
	Insert          bool         `json:"insert,omitempty"`
	Concurrency     int          `json:"concurrency,omitempty"`
	CheckpointTable string       `json:"checkpointTable,omitempty"`
	// backup
	Location     string       `json:"location,omitempty"`
	Blob         *endpointRef `json:"blob,omitempty"` // the account of a blob:// Location; nil for a directory
	Kind         string       `json:"kind,omitempty"`
	Since        *time.Time   `json:"since,omitempty"`
	SegmentBytes int64        `json:"segmentBytes,omitempty"`
	// incremental backup: the base (as its manifest will name it) and
	// each table's key listing and deleted keys, written by the start
	Base  string    `json:"base,omitempty"`
	Lists []jobList `json:"lists,omitempty"`
}

// jobList is what an incremental backup job's start listed of a table.
type jobList struct {
	Table   string    `json:"table"`
	Since   time.Time `json:"since"`
	Listing KeyFile   `json:"listing"`
	Deleted KeyFile   `json:"deleted"`
}

// since is the time after which a backup job's ranges of table back up
// changed entities (nil: every entity).
func (rec *jobRecord) since(table string) *time.Time {
	for _, l := range rec.Lists {
		if l.Table == table {
			t := l.Since
			return &t
		}
	}
	return rec.Since
}

// list is what the start of an incremental backup job listed of table.
func (rec *jobRecord) list(table string) *jobList {
	for i := range rec.Lists {
		if rec.Lists[i].Table == table {
			return &rec.Lists[i]
		}
	}
	return nil
}

const (
	jobFormat  = "tablekit-job"
	jobVersion = 1
	jobName    = "job"
)

// endpointRef names an account by its name and a service endpoint,
// without secrets: a worker finds the account among those it connects to.
type endpointRef struct {
	Account  string `json:"account"`
	Endpoint string `json:"endpoint"`
}

// rangeState is a range's object: its first token, then its checkpoint
// and progress, written by whoever holds the range (conditionally on the
// version it read, so that a duplicate delivery takes the range over and
// the holder it displaced stops at its next write).
type rangeState struct {
	Index   int       `json:"index"`
	Table   string    `json:"table"`
	Token   string    `json:"token"`             // where the range starts (SplitScan)
	Attempt int       `json:"attempt,omitempty"` // claims so far
	Owner   string    `json:"owner,omitempty"`   // the claim holding it
	Start   time.Time `json:"start,omitzero"`
	End     time.Time `json:"end,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	Done    bool      `json:"done,omitempty"`
	// Copy is a copy range's checkpoint; Step a backup range's (its
	// segments, committed lengths and token).
	Copy  *copySnapshot `json:"copy,omitempty"`
	Step  *tableStep    `json:"step,omitempty"`
	Error string        `json:"error,omitempty"` // the failure that stopped it
}

func rangeName(i int) string { return fmt.Sprintf("range-%05d", i) }

// newJobID is a job id: the start time and 8 random hex digits.
func newJobID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "j" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// rangeArgs are a range message's arguments: where the job is, and which
// range. They name accounts by endpoint only: no key or SAS travels.
type rangeArgs struct {
	Job   string   `json:"job"`
	Op    string   `json:"op"`
	Range int      `json:"range"`
	Store storeRef `json:"store"`
}

// storeRef is where a job lives: a table (a copy's checkpoint table) in
// the account of a table endpoint, or a blob:// location in the account
// of a blob endpoint.
type storeRef struct {
	endpointRef
	Table    string `json:"table,omitempty"`
	Location string `json:"location,omitempty"`
}

func jobOpts(opts *JobOptions) JobOptions {
	o := JobOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Ranges <= 0 {
		o.Ranges = DefaultJobRanges
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.CheckpointTable == "" {
		o.CheckpointTable = DefaultCheckpointTable
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SkewMargin <= 0 {
		o.SkewMargin = DefaultSkewMargin
	}
	return o
}

// StartCopyJob starts a distributed copy of src into dst: it creates dst,
// splits the scan of src into up to opts.Ranges key ranges
// (patterns.Table.SplitScan), records the job and one state per range in
// opts.CheckpointTable of dst's account (PartitionKey "job-ID"), and sends
// one KindRange message per range to q, which tablekit-worker replicas
// (RangeHandler) take and copy, each with a checkpoint in its range's
// state. It returns once the messages are sent; JobStatus follows the job.
// Workers must connect to both src's and dst's accounts.
//
// Each range is copied as Copy copies a table, resumed from its
// checkpoint when its message comes back after a worker died: no entity
// is lost or written twice (with opts.Insert, none is refused for having
// been written by an earlier attempt).
func StartCopyJob(ctx context.Context, src, dst *rows, q *consistency.Queue, opts *JobOptions) (*Job, error) {
	o := jobOpts(opts)
	if src == nil || dst == nil || q == nil {
		return nil, tkerr.Errorf("tablekit: copy job: %w: nil table or queue", tablekit.ErrInvalidArgument)
	}
	if src.Account() == dst.Account() && src.Name() == dst.Name() {
		return nil, tkerr.Errorf("tablekit: copy job %s: %w: source and target are the same table", src.Name(), tablekit.ErrInvalidArgument)
	}
	if o.Ranges > 1000 {
		return nil, tkerr.Errorf("tablekit: copy job %s: %w: %d ranges; at most 1000", src.Name(), tablekit.ErrInvalidArgument, o.Ranges)
	}
	filter, err := o.Filter.Build()
	if err != nil {
		return nil, tkerr.Errorf("tablekit: copy job %s: %w", src.Name(), err)
	}
	store, err := newTableJobStore(dst.Account(), o.CheckpointTable, "x")
	if err != nil {
		return nil, tkerr.Errorf("tablekit: copy job: checkpoint table: %w", err)
	}
	if err := dst.CreateIfNotExists(ctx, nil); err != nil {
		return nil, tkerr.Errorf("tablekit: copy job: create %s: %w", dst.Name(), err)
	}
	if err := store.tbl.CreateIfNotExists(ctx, nil); err != nil {
		return nil, tkerr.Errorf("tablekit: copy job: create checkpoint table %s: %w", o.CheckpointTable, err)
	}
	now := time.Now().UTC()
	rec := jobRecord{Format: jobFormat, Version: jobVersion, ID: newJobID(now), Op: JobCopy, Created: now, Queue: q.Name(),
		Source: endpointRef{src.Account().Name(), endpointKey(src.Account().TableEndpoint())}, Tables: []string{src.Name()}, Parallel: o.Parallel,
		Target: &endpointRef{dst.Account().Name(), endpointKey(dst.Account().TableEndpoint())}, ToTable: dst.Name(),
		Filter: filter, Insert: o.Insert, Concurrency: o.Concurrency, CheckpointTable: o.CheckpointTable}
	store.id = rec.ID
	ref := storeRef{endpointRef: *rec.Target, Table: o.CheckpointTable}
	return startJob(ctx, src.Account(), rec, store, ref, q, o)
}

// StartBackupJob starts a distributed backup of tables (in acct) into to:
// it splits each table's scan into up to opts.Ranges key ranges, records
// the job and one state per range in to (job/job.json,
// job/range-NNNNN.json), and sends one KindRange message per range to q.
// Each range is backed up by a worker (RangeHandler) into its own
// segments (TABLE/rNNNNN/seg-AAAA-NNNNNN.jsonl.gz, AAAA its attempt), with
// its checkpoint in its state; the worker that finishes the last range
// writes the key lists and manifest.json (FinishJob, which JobStatus
// callers may run too: it is idempotent). The result is a backup like
// Backup's, one manifest range per job range, which Restore and
// VerifyBackup read.
//
// A full backup; with opts.Since a changes backup; with opts.Base an
// incremental one, whose key listing (a key-only parallel scan of each
// table, diffed with the base's key list) this function takes before it
// sends the messages, so that every key is listed before its range reads
// the changes (the order Backup keeps).
//
// to is in Blob storage (blob://), which workers on other machines write
// into, and workers must connect to its account; or a local directory,
// which every worker must reach at the same path, on a filesystem whose
// advisory locks (flock) hold across them, and which each worker must
// allow (RangeHandlerOptions.Dirs). Workers must connect to acct.
func StartBackupJob(ctx context.Context, acct *tablekit.Account, tables []string, to *Location, q *consistency.Queue, opts *JobOptions) (*Job, error) {
	o := jobOpts(opts)
	if acct == nil || to == nil || q == nil {
		return nil, tkerr.Errorf("tablekit: backup job: %w: nil account, location or queue", tablekit.ErrInvalidArgument)
	}
	if len(tables) == 0 {
		return nil, tkerr.Errorf("tablekit: backup job: %w: no tables", tablekit.ErrInvalidArgument)
	}
	if o.Ranges*len(tables) > 1000 {
		return nil, tkerr.Errorf("tablekit: backup job to %s: %w: %d ranges; at most 1000 in all", to, tablekit.ErrInvalidArgument, o.Ranges*len(tables))
	}
	seen := map[string]bool{}
	for _, t := range tables {
		if seen[t] {
			return nil, tkerr.Errorf("tablekit: backup job: %w: table %s given twice", tablekit.ErrInvalidArgument, t)
		}
		seen[t] = true
		if _, err := patterns.NewTable[entity.Entity](acct, t, nil); err != nil {
			return nil, tkerr.Errorf("tablekit: backup job: %w", err)
		}
	}
	for _, name := range []string{manifestName, checkpointName} {
		if _, err := to.get(ctx, name); err == nil {
			return nil, tkerr.Errorf("tablekit: backup job to %s: %w (%s); choose another location", to, ErrBackupExists, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, tkerr.Errorf("tablekit: backup job to %s: %w", to, err)
		}
	}
	if o.Base != nil && !o.Since.IsZero() {
		return nil, tkerr.Errorf("tablekit: backup job to %s: %w: give Since or Base, not both", to, tablekit.ErrInvalidArgument)
	}
	now := time.Now().UTC()
	rec := jobRecord{Format: jobFormat, Version: jobVersion, ID: newJobID(now), Op: JobBackup, Created: now, Queue: q.Name(),
		Source: endpointRef{acct.Name(), endpointKey(acct.TableEndpoint())}, Tables: tables, Parallel: o.Parallel,
		Location: to.String(), Kind: KindFull, SegmentBytes: o.SegmentBytes}
	var store jobStore
	var ref storeRef
	switch s := to.s.(type) {
	case *blobStore:
		rec.Blob = &endpointRef{accountOfBlob(s), endpointKey(s.c.URL())}
		store, ref = blobJobStore{b: s}, storeRef{endpointRef: *rec.Blob, Location: rec.Location}
	case dirStore:
		store, ref = dirJobStore{d: s}, storeRef{Location: rec.Location}
	default:
		return nil, tkerr.Errorf("tablekit: backup job to %s: %w: a distributed backup goes to blob://CONTAINER/PREFIX or a directory", to, tablekit.ErrInvalidArgument)
	}
	switch {
	case !o.Since.IsZero():
		since := o.Since.UTC()
		rec.Kind, rec.Since = KindChanges, &since
	case o.Base != nil:
		base, err := ReadManifest(ctx, o.Base)
		if err != nil {
			return nil, tkerr.Errorf("tablekit: backup job: base: %w", err)
		}
		if base.Kind == KindChanges {
			return nil, tkerr.Errorf("tablekit: backup job: %w: the base %s is a --since backup, with no key list to diff", tablekit.ErrInvalidArgument, o.Base)
		}
		for _, t := range tables {
			if base.table(t) == nil {
				return nil, tkerr.Errorf("tablekit: backup job: %w: the base %s holds no table %s", tablekit.ErrInvalidArgument, o.Base, t)
			}
		}
		// The job record is not written yet: a start interrupted here
		// leaves listings that the next start overwrites.
		if _, _, err := store.load(ctx, jobName); err == nil {
			return nil, tkerr.Errorf("tablekit: backup job to %s: %w: %s holds a job already", to, ErrBackupExists, store.ref())
		}
		rec.Kind, rec.Base = KindIncremental, o.Base.reference(to)
		for _, t := range tables {
			tbl, err := patterns.NewTable[entity.Entity](acct, t, nil)
			if err != nil {
				return nil, tkerr.Errorf("tablekit: backup job: %w", err)
			}
			bt := base.table(t)
			lf, df, err := listKeys(ctx, tbl, o.Base, bt, to, o.Parallel, nil)
			if err != nil {
				return nil, tkerr.Errorf("tablekit: backup job to %s: %w", to, err)
			}
			rec.Lists = append(rec.Lists, jobList{Table: t, Since: bt.Start.Add(-o.SkewMargin).UTC(), Listing: lf, Deleted: df})
		}
	}
	return startJob(ctx, acct, rec, store, ref, q, o)
}

// accountOfBlob is the account name of a blob client's endpoint: the
// first label of its host, or the first path segment on a path-style
// (emulator) endpoint.
func accountOfBlob(b *blobStore) string {
	u := endpointKey(b.c.URL())
	_, rest, _ := strings.Cut(u, "://")
	host, path, _ := strings.Cut(rest, "/")
	if path != "" {
		p, _, _ := strings.Cut(path, "/")
		return p
	}
	name, _, _ := strings.Cut(host, ".")
	return name
}

// startJob splits the tables, writes the job and its ranges, and sends
// the messages.
func startJob(ctx context.Context, acct *tablekit.Account, rec jobRecord, store jobStore, ref storeRef, q *consistency.Queue, o JobOptions) (*Job, error) {
	fail := func(err error) (*Job, error) {
		return nil, tkerr.Errorf("tablekit: %s job %s: %w", rec.Op, rec.ID, err)
	}
	var states []rangeState
	for _, t := range rec.Tables {
		tbl, err := patterns.NewTable[entity.Entity](acct, t, nil)
		if err != nil {
			return fail(err)
		}
		filter, err := rec.filter(t)
		if err != nil {
			return fail(err)
		}
		tokens, err := splitScan(ctx, tbl, filter, o.Ranges)
		if err != nil {
			return fail(fmt.Errorf("split table %s: %w", t, err))
		}
		for _, tok := range tokens {
			states = append(states, rangeState{Index: len(states), Table: t, Token: tok})
		}
	}
	rec.Ranges = len(states)
	body, _ := json.Marshal(rec)
	if _, err := store.save(ctx, jobName, body, ""); err != nil {
		if errors.Is(err, errStale) {
			if data, _, lerr := store.load(ctx, jobName); lerr == nil {
				var other jobRecord
				_ = json.Unmarshal(data, &other)
				return fail(fmt.Errorf("%w: %s holds job %s already; follow it with tablekit job status %s", ErrBackupExists, store.ref(), other.ID, store.ref()))
			}
		}
		return fail(err)
	}
	for _, st := range states {
		b, _ := json.Marshal(st)
		if _, err := store.save(ctx, rangeName(st.Index), b, ""); err != nil {
			return fail(fmt.Errorf("range %d: %w", st.Index, err))
		}
	}
	if err := q.Create(ctx, nil); err != nil {
		return fail(err)
	}
	for _, st := range states {
		if err := enqueueRange(ctx, q, rec, ref, st.Index); err != nil {
			return fail(err)
		}
	}
	return &Job{Ref: store.ref(), ID: rec.ID, Op: rec.Op, Queue: rec.Queue, Ranges: rec.Ranges}, nil
}

func enqueueRange(ctx context.Context, q *consistency.Queue, rec jobRecord, ref storeRef, i int) error {
	tx := &consistency.Transaction{ID: rec.ID + ".r" + strconv.Itoa(i), Steps: []consistency.Step{
		consistency.NewStep(KindRange, rangeArgs{Job: rec.ID, Op: rec.Op, Range: i, Store: ref})}}
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		return fmt.Errorf("range %d: enqueue on %s: %w", i, q.Name(), err)
	}
	return nil
}

// filter is the filter a job's ranges of table scan with: a copy's own,
// or a backup's Timestamp bound.
func (rec *jobRecord) filter(table string) (keys.Filter, error) {
	if rec.Op == JobCopy {
		if rec.Filter == "" {
			return keys.Filter{}, nil
		}
		f, err := keys.ParseFilter(rec.Filter)
		if err != nil {
			return f, fmt.Errorf("the job's filter: %w", err)
		}
		return f, nil
	}
	if since := rec.since(table); since != nil {
		return keys.Prop("Timestamp").Gt(*since), nil
	}
	return keys.Filter{}, nil
}

// splitScan is SplitScan with the projection tablecopy's scans use, so
// that its tokens resume them.
func splitScan(ctx context.Context, t *rows, filter keys.Filter, n int) ([]string, error) {
	return t.SplitScan(ctx, filter, n, &patterns.ScanOptions{QueryOptions: patterns.QueryOptions{SelectAll: true, AllowUnknownProperties: true}})
}

// JobStatus is where a distributed job is, as its ranges' states say.
type JobStatus struct {
	ID, Op, Queue string
	Created       time.Time
	Tables        []string // the tables read
	// ToTable is a copy's target table; Location a backup's.
	ToTable, Location string
	// Filter is a copy's filter (OData text), empty for the whole table.
	Filter string
	Ranges []RangeStatus
	// RangesDone and RangesFailed count the ranges finished, and those
	// that failed (their message poisoned, or their state holding the
	// error that stopped them).
	RangesDone, RangesFailed int
	// Entities and Skipped add up the ranges' counts (Progress's
	// meaning); a page a killed worker had in flight may count twice.
	Entities, Skipped int64
	// Updated is the latest write of a range's state.
	Updated time.Time
	// Manifest is a finished backup's manifest.
	Manifest *Manifest
	// Complete is set when every range is done and, for a backup, the
	// manifest is written.
	Complete bool
}

// RangeStatus is one range of a job.
type RangeStatus struct {
	Index    int
	Table    string
	Attempts int // claims: more than 1 after a redelivery
	Done     bool
	Entities int64
	Skipped  int64
	Start    time.Time
	End      time.Time
	// Error is the failure that stopped the range (from its state, or
	// its poison record).
	Error    string
	Poisoned bool
}

// JobStatusOptions configures ReadJob. A nil *JobStatusOptions means the
// defaults.
type JobStatusOptions struct {
	// QueueAccount, when set, is the account of the job's queue: its
	// poison queue is read for the job's ranges (a range whose workers
	// crashed more often than their delivery limit is poisoned without a
	// word in its state).
	QueueAccount *tablekit.Account
}

// ReadJob reads the job ref names (Job.Ref) in acct (the target's
// account of a copy; the Blob storage account of a backup) and returns
// its status.
func ReadJob(ctx context.Context, ref string, acct *tablekit.Account, opts *JobStatusOptions) (*JobStatus, error) {
	store, err := openJobStore(ref, acct)
	if err != nil {
		return nil, err
	}
	rec, states, err := loadJob(ctx, store)
	if err != nil {
		return nil, err
	}
	s := &JobStatus{ID: rec.ID, Op: rec.Op, Queue: rec.Queue, Created: rec.Created, Tables: rec.Tables, ToTable: rec.ToTable, Location: rec.Location, Filter: rec.Filter}
	poisoned := map[int]string{}
	if opts != nil && opts.QueueAccount != nil {
		q, err := consistency.NewQueue(opts.QueueAccount, rec.Queue, nil)
		if err != nil {
			return nil, tkerr.Errorf("tablekit: job %s: %w", rec.ID, err)
		}
		recs, err := q.Poisoned(ctx, 32, nil)
		if err != nil {
			return nil, tkerr.Errorf("tablekit: job %s: poison queue: %w", rec.ID, err)
		}
		for _, p := range recs {
			if i, ok := strings.CutPrefix(p.TxID, rec.ID+".r"); ok {
				if n, err := strconv.Atoi(i); err == nil {
					poisoned[n] = p.Error
				}
			}
		}
	}
	for _, st := range states {
		r := RangeStatus{Index: st.Index, Table: st.Table, Attempts: st.Attempt, Done: st.Done, Start: st.Start, End: st.End, Error: st.Error}
		switch {
		case st.Copy != nil:
			r.Entities, r.Skipped = st.Copy.Written, st.Copy.Skipped
		case st.Step != nil:
			for _, seg := range st.Step.Segments {
				r.Entities += seg.Entities
			}
			r.Skipped = st.Step.Skipped
		}
		if e, ok := poisoned[st.Index]; ok && !st.Done {
			r.Poisoned = true
			if r.Error == "" {
				r.Error = e
			}
		}
		if r.Done {
			s.RangesDone++
		} else if r.Error != "" {
			s.RangesFailed++
		}
		s.Entities += r.Entities
		s.Skipped += r.Skipped
		if st.Updated.After(s.Updated) {
			s.Updated = st.Updated
		}
		s.Ranges = append(s.Ranges, r)
	}
	s.Complete = s.RangesDone == len(states)
	if rec.Op == JobBackup && s.Complete {
		l, err := ParseLocation(rec.Location, acct)
		if err != nil {
			return nil, err
		}
		m, err := ReadManifest(ctx, l)
		switch {
		case err == nil:
			s.Manifest = m
		case errors.Is(err, fs.ErrNotExist):
			s.Complete = false // the finish is still to run: FinishJob
		default:
			return nil, err
		}
	}
	return s, nil
}

// loadJob reads the job object and every range's state.
func loadJob(ctx context.Context, store jobStore) (*jobRecord, []rangeState, error) {
	data, _, err := store.load(ctx, jobName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, tkerr.Errorf("tablekit: job %s: no such job: %w", store.ref(), err)
		}
		return nil, nil, tkerr.Errorf("tablekit: job %s: %w", store.ref(), err)
	}
	var rec jobRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Format != jobFormat {
		return nil, nil, fmt.Errorf("tablekit: job %s: not a tablekit job record", store.ref())
	}
	if rec.Version != jobVersion {
		return nil, nil, fmt.Errorf("tablekit: job %s: version %d; this build reads version %d", store.ref(), rec.Version, jobVersion)
	}
	states := make([]rangeState, rec.Ranges)
	errs := make([]error, rec.Ranges)
	sem := make(chan struct{}, 16)
	done := make(chan struct{})
	for i := range states {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem; done <- struct{}{} }()
			data, _, err := store.load(ctx, rangeName(i))
			if err == nil {
				err = json.Unmarshal(data, &states[i])
			}
			if err != nil {
				errs[i] = tkerr.Errorf("tablekit: job %s range %d: %w", rec.ID, i, err)
			}
		}()
	}
	for range states {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return &rec, states, nil
}

// RequeueJob sends again the message of every range of the job ref names
// that is not done, to q (the job's queue, or another): after its start
// was interrupted before sending them all, or its poisoned messages were
// dropped. A range whose message is still queued gets a second one; the
// two deliveries share the range safely (the later takes it over). It
// returns how many it sent.
func RequeueJob(ctx context.Context, ref string, acct *tablekit.Account, q *consistency.Queue) (int, error) {
	store, err := openJobStore(ref, acct)
	if err != nil {
		return 0, err
	}
	rec, states, err := loadJob(ctx, store)
	if err != nil {
		return 0, err
	}
	sref := storeRef{Table: rec.CheckpointTable, Location: rec.Location}
	switch {
	case rec.Op == JobCopy:
		sref.endpointRef = *rec.Target
	case rec.Blob != nil:
		sref.endpointRef = *rec.Blob
	}
	n := 0
	for _, st := range states {
		if st.Done {
			continue
		}
		if err := enqueueRange(ctx, q, *rec, sref, st.Index); err != nil {
			return n, tkerr.Errorf("tablekit: job %s: %w", rec.ID, err)
		}
		n++
	}
	return n, nil
}

package tablecopy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// DefaultCheckpointTable is the table, in the target's account, that holds
// the checkpoints of copies in progress: one entity per copy, PartitionKey
// the target table, RowKey a hash of the source. It works on Azure Table
// storage and Cosmos DB alike (which have no blob service in common).
const DefaultCheckpointTable = "TablekitCheckpoints"

// CopyOptions configures Copy. A nil *CopyOptions means the defaults.
type CopyOptions struct {
	// Filter copies only the entities matching it; the zero Filter copies
	// the whole table.
	Filter keys.Filter
	// Parallel is how many key ranges are read (and written) at once;
	// 0 means the scan's default.
	Parallel int
	// Insert inserts each entity, refusing (as a failure) one that exists
	// in the target; otherwise entities are upserted, replacing.
	Insert bool
	// Concurrency bounds the transactions in flight per key range
	// (patterns.BulkOptions.Concurrency); 0 means 8.
	Concurrency int
	// CheckpointTable names the checkpoint table in the target's account;
	// empty means DefaultCheckpointTable.
	CheckpointTable string
	// NoCheckpoint copies without a checkpoint: an interrupted copy
	// starts over.
	NoCheckpoint bool
	// Restart discards the checkpoint of an earlier copy with the same
	// source, target and options (unfinished, or finished) and copies
	// from the start.
	Restart bool
	// Progress, when set, is called after each page, one call at a time.
	Progress func(Progress)
}

// CopyResult says what a Copy did in this run.
type CopyResult struct {
	Written int64 // entities written to the target
	// Skipped counts the entities an interrupted run had written already
	// (found identical in the target, in the pages it had in flight).
	Skipped int64
	// Resumed is set when the copy continued from a checkpoint.
	Resumed bool
	// Window is how many key spans the interrupted run had in flight:
	// the pages in them were checked against the target before writing.
	Window int
	// AlreadyComplete is set when the checkpoint says this copy finished
	// already (the same copy run again): nothing was written.
	AlreadyComplete bool
	Requests        int64 // write transactions sent
	// Throttled counts the service's throttling answers, each retried
	// (patterns.BulkResult.Throttled).
	Throttled int64
	// ViewsElsewhere counts the entities copied under another table name
	// whose views in other tables the copy does not carry: their list of
	// views names the target's table alone (see Copy), and the target's
	// patterns.Model.Repair writes the rest.
	ViewsElsewhere int64
}

// Copy copies the entities of src (every one, or those matching
// opts.Filter) into dst, creating dst if needed, through dst.BulkWrite.
// Every property is copied exactly as stored, of every EDM type, Tk*
// properties included; Timestamp and ETag are the target's own. One
// exception: under another table name, the list of views an entity
// carries (consistency.CopiesProperty, a patterns.Model's) names the
// target's table instead of the source's, and leaves out the views in
// other tables, which the copy does not carry (CopyResult.ViewsElsewhere
// counts such entities): a move of a copied entity must not delete the
// source's views.
//
// Copy is resumable: unless opts.NoCheckpoint, it keeps a checkpoint
// beside the target (an entity of opts.CheckpointTable in dst's account)
// holding the scan's position after each handled page, and the key spans
// of the pages being written. Run again after an interruption (even
// SIGKILL), it continues from there; the pages the interrupted run had in
// flight are read back from the target first, and entities already
// identical there are skipped, not written twice (with opts.Insert, not
// refused either). When the copy completes, the checkpoint says so: the
// same copy run again does nothing (CopyResult.AlreadyComplete) unless
// opts.Restart.
//
// A copy of a table that changes meanwhile is fuzzy: each entity is copied
// as the scan found it. It returns a *WriteError naming the entities the
// target refused.
func Copy(ctx context.Context, src, dst *patterns.Table[entity.Entity], opts *CopyOptions) (CopyResult, error) {
	var res CopyResult
	o := CopyOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.CheckpointTable == "" {
		o.CheckpointTable = DefaultCheckpointTable
	}
	if src == nil || dst == nil {
		return res, tkerr.Errorf("tablekit: copy: %w: nil table", tablekit.ErrInvalidArgument)
	}
	if src.Account() == dst.Account() && src.Name() == dst.Name() {
		return res, tkerr.Errorf("tablekit: copy %s: %w: source and target are the same table", src.Name(), tablekit.ErrInvalidArgument)
	}
	if err := o.Filter.Err(); err != nil {
		return res, err
	}
	if err := dst.CreateIfNotExists(ctx, nil); err != nil {
		return res, tkerr.Errorf("tablekit: copy: create %s: %w", dst.Name(), err)
	}
	var ck *copyCheckpoint
	if !o.NoCheckpoint {
		var err error
		if ck, err = openCopyCheckpoint(ctx, src, dst, o); err != nil {
			return res, err
		}
		if ck.done && !o.Restart {
			res.AlreadyComplete = true
			return res, nil
		}
	}
	return copyFrom(ctx, src, dst, o, ck)
}

// copyFrom is Copy from the checkpoint ck (nil: none), with o's defaults
// set: a whole copy, or one range of a distributed copy job.
//
// A page is written while the scan reads on: fn hands it to a goroutine
// of its own and returns, with at most one page being written per key
// range read at once. A range that read a page and then wrote it before
// reading the next left its partition's server idle while it wrote, and
// its target partition idle while it read: on a table half in one
// partition, the copy took the time of both (issue 35).
//
// So the scan's token may pass pages not yet written. The checkpoint
// holds a token only once every page it covers is written, and the span
// of each page until a checkpointed token covers it: a resumed run reads
// again, carefully, every page after the checkpointed token, and those
// already written are skipped as identical.
func copyFrom(ctx context.Context, src, dst *rows, o CopyOptions, ck *copyCheckpoint) (CopyResult, error) {
	var res CopyResult
	if ck != nil {
		res.Resumed, res.Window = ck.resumed, len(ck.window)
	}
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = patterns.DefaultScanParallel
	}
	// Concurrency is per key range; the job's writer shares it.
	w := newWriter(ctx, dst, src.Name(), o.Insert, o.Concurrency*parallel)
	prog := &progressFunc{fn: o.Progress}
	var st copyState
	var c *committer
	if ck != nil {
		st = copyState{token: ck.token, window: ck.window, inflight: map[uint64]span{}, wrote: map[uint64]bool{}, done: ck.done}
		st.written, st.skipped = ck.written, ck.skipped
		st.counts = func() (int64, int64) { return w.written.Load(), w.skipped.Load() }
		c = newCommitter(ctx, st.snapshotFunc(), ck.persist)
	}
	var (
		nextID   uint64
		slots    = make(chan struct{}, parallel) // pages being written
		writes   sync.WaitGroup
		errMu    sync.Mutex
		writeErr error // the first page that failed: the copy stops
	)
	failed := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return writeErr
	}
	// fn gets the scan's context, which ends with the scan; the page's
	// write runs on ctx, the copy's, and the copy waits for it.
	fn := func(sctx context.Context, items []entity.Entity) error {
		if err := failed(); err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-sctx.Done():
			return sctx.Err()
		}
		sp := spanOf(items)
		careful := false
		var id, v uint64
		if c != nil {
			c.mu.Lock()
			nextID++
			id = nextID
			st.inflight[id] = sp
			for _, ws := range st.window {
				careful = careful || ws.overlaps(sp)
			}
			v = c.changed()
			// The page counts as returned: the scan's next token may
			// cover it (see progress).
			st.returnedRows += int64(len(items))
			st.returned = append(st.returned, id)
			c.mu.Unlock()
		}
		writes.Add(1)
		go func() {
			defer func() { <-slots; writes.Done() }()
			// The span is durable before the first write of the page: an
			// interrupted run's pages in flight are known on resume.
			err := error(nil)
			if c != nil {
				err = c.wait(ctx, v)
			}
			if err == nil {
				err = w.writeAll(ctx, items, careful, nil, "a page")
			}
			if err != nil {
				errMu.Lock()
				if writeErr == nil {
					writeErr = err
				}
				errMu.Unlock()
				return
			}
			if c != nil {
				c.mu.Lock()
				st.wrote[id] = true
				if st.advance() {
					c.changed()
				}
				c.mu.Unlock()
			}
		}()
		return nil
	}
	progress := func(p patterns.ScanProgress) {
		if c != nil {
			c.mu.Lock()
			// The token covers the pages the engine recorded, each after its
			// fn returned. When it counts as many rows as the pages whose fn
			// returned (each page has rows), it covers exactly those: it is
			// checkpointed once they are all written.
			if p.Rows == st.returnedRows {
				if n := len(st.tokens); n > 0 && st.tokens[n-1].pages == len(st.returned) {
					st.tokens = st.tokens[:n-1] // the same pages: the later token
				}
				st.tokens = append(st.tokens, pendingToken{token: p.Token, pages: len(st.returned)})
				if st.advance() {
					c.changed()
				}
			}
			c.mu.Unlock()
		}
		prog.report(Progress{Table: src.Name(), Phase: "copy", Entities: w.written.Load(), Skipped: w.skipped.Load(), Ranges: p.Ranges, RangesDone: p.RangesDone})
	}
	var err error
	if !st.done {
		err = scan(ctx, src, scanSpec{filter: o.Filter, parallel: o.Parallel, resume: st.token, progress: progress}, fn)
	}
	writes.Wait()
	if werr := failed(); werr != nil && (err == nil || errors.Is(err, werr)) {
		err = werr
	}
	w.close()
	res.Written, res.Skipped, res.Requests, res.Throttled = w.written.Load(), w.skipped.Load(), w.requests.Load(), w.throttled.Load()
	res.ViewsElsewhere = w.elsewhere.Load()
	if c != nil {
		if err == nil {
			c.mu.Lock()
			st.done = true
			c.changed()
			c.mu.Unlock()
		}
		if cerr := c.close(); err == nil && cerr != nil {
			err = fmt.Errorf("checkpoint in %s: %w", o.CheckpointTable, cerr)
		}
	}
	if err != nil {
		return res, tkerr.Errorf("tablekit: copy %s to %s: %w", src.Name(), dst.Name(), err)
	}
	return res, nil
}

// copyState is a copy's progress, as its checkpoint holds it.
type copyState struct {
	token    string // checkpointed: every page it covers is written
	done     bool
	window   []span          // in flight in the interrupted run: read back before writing
	inflight map[uint64]span // pages not covered by token: being written, or written since
	// This run's pages in the order their fn returned (returned), the
	// rows in them, those written, how many of returned (from the first)
	// are written, and the scan's tokens waiting for their pages.
	returnedRows int64
	returned     []uint64
	wrote        map[uint64]bool
	prefix       int
	tokens       []pendingToken
	written      int64 // by earlier runs, as their checkpoint says
	skipped      int64
	counts       func() (written, skipped int64) // this run's
}

// pendingToken is a scan token covering the first pages of
// copyState.returned.
type pendingToken struct {
	token string
	pages int
}

// advance takes the latest scan token whose pages are all written as the
// checkpoint's token, and drops the spans it covers; it reports whether
// the state changed. Called with the committer's lock held.
func (st *copyState) advance() bool {
	for st.prefix < len(st.returned) && st.wrote[st.returned[st.prefix]] {
		st.prefix++
	}
	n := 0
	for n < len(st.tokens) && st.tokens[n].pages <= st.prefix {
		n++
	}
	if n == 0 {
		return false
	}
	t := st.tokens[n-1]
	st.tokens = st.tokens[n:]
	st.token = t.token
	for _, id := range st.returned[:t.pages] {
		delete(st.inflight, id)
		delete(st.wrote, id)
	}
	st.returned = st.returned[t.pages:]
	st.prefix -= t.pages
	for i := range st.tokens {
		st.tokens[i].pages -= t.pages
	}
	return true
}

type copySnapshot struct {
	Token string      `json:"token"`
	Done  bool        `json:"done,omitempty"`
	Spans [][4]string `json:"spans,omitempty"`
	// Written and Skipped count the entities of every run so far (for a
	// job's progress; a page a killed run had in flight may count twice).
	Written int64 `json:"written,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
}

// snapshotFunc returns the committer's snapshot of st: the token, and
// every span not covered by it (the resumed window and the pages in flight).
func (st *copyState) snapshotFunc() func() any {
	return func() any {
		s := copySnapshot{Token: st.token, Done: st.done, Written: st.written, Skipped: st.skipped}
		if st.counts != nil {
			w, k := st.counts()
			s.Written += w
			s.Skipped += k
		}
		add := func(sp span) {
			s.Spans = append(s.Spans, [4]string{sp.Lo.PartitionKey, sp.Lo.RowKey, sp.Hi.PartitionKey, sp.Hi.RowKey})
		}
		for _, sp := range st.window {
			add(sp)
		}
		for _, sp := range st.inflight {
			add(sp)
		}
		return s
	}
}

// copyCheckpoint is a copy's checkpoint entity.
type copyCheckpoint struct {
	tbl     *rows
	pk, rk  string
	source  string
	resumed bool
	token   string
	done    bool
	window  []span
	written int64
	skipped int64
	// save, when set, persists the snapshot instead of the checkpoint
	// entity: a range of a distributed job (see job.go).
	save func(ctx context.Context, s copySnapshot) error
}

// checkpoint properties: the state as JSON, split over properties of at
// most 30,000 characters (a string property holds 32,768 UTF-16 units).
const (
	ckStateProp = "State"
	ckChunk     = 30000
)

func openCopyCheckpoint(ctx context.Context, src, dst *rows, o CopyOptions) (*copyCheckpoint, error) {
	tbl, err := patterns.NewTable[entity.Entity](dst.Account(), o.CheckpointTable, nil)
	if err != nil {
		return nil, tkerr.Errorf("tablekit: copy: checkpoint table: %w", err)
	}
	filter, _ := o.Filter.Build()
	source := src.Account().Name() + " " + src.Account().TableEndpoint() + " " + src.Name()
	h := sha256.Sum256([]byte(source + "\x00" + filter + "\x00" + fmt.Sprint(o.Insert)))
	ck := &copyCheckpoint{tbl: tbl, pk: dst.Name(), rk: "copy-" + hex.EncodeToString(h[:16]), source: src.Account().Name() + "/" + src.Name()}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		return nil, tkerr.Errorf("tablekit: copy: create checkpoint table %s: %w", o.CheckpointTable, err)
	}
	e, err := tbl.Get(ctx, ck.pk, ck.rk, nil)
	if errors.Is(err, tablekit.ErrNotFound) || err == nil && o.Restart {
		return ck, nil
	}
	if err != nil {
		return nil, tkerr.Errorf("tablekit: copy: read checkpoint in %s: %w", o.CheckpointTable, err)
	}
	var snap copySnapshot
	if err := json.Unmarshal([]byte(getChunks(e)), &snap); err != nil {
		return nil, fmt.Errorf("tablekit: copy: checkpoint (%q, %q) in %s is not one tablekit wrote; delete it to start over: %v", ck.pk, ck.rk, o.CheckpointTable, err)
	}
	ck.resumed, ck.token, ck.done = true, snap.Token, snap.Done
	ck.written, ck.skipped = snap.Written, snap.Skipped
	for _, s := range snap.Spans {
		ck.window = append(ck.window, span{Key{s[0], s[1]}, Key{s[2], s[3]}})
	}
	return ck, nil
}

func (ck *copyCheckpoint) persist(ctx context.Context, s any) error {
	if ck.save != nil {
		return ck.save(ctx, s.(copySnapshot))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	e := entity.Entity{PartitionKey: ck.pk, RowKey: ck.rk, Properties: map[string]entity.Value{
		"Source":  entity.String(ck.source),
		"Updated": entity.DateTime(time.Now().UTC()),
	}}
	putChunks(&e, string(b))
	return ck.tbl.Upsert(ctx, &e, nil)
}

// putChunks stores text in e's State0, State1, ... properties.
func putChunks(e *entity.Entity, text string) {
	for i := 0; len(text) > 0 || i == 0; i++ {
		n := min(len(text), ckChunk)
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n--
		}
		e.Properties[fmt.Sprintf("%s%d", ckStateProp, i)] = entity.String(text[:n])
		text = text[n:]
	}
}

// getChunks is the text putChunks stored in e.
func getChunks(e entity.Entity) string {
	var sb strings.Builder
	for i := 0; ; i++ {
		v, ok := e.Properties[fmt.Sprintf("%s%d", ckStateProp, i)]
		if !ok {
			break
		}
		s, _ := v.V.(string)
		sb.WriteString(s)
	}
	return sb.String()
}

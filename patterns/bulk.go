package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/bufpool"
	"github.com/tablekit/tablekit/internal/throttle"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
)

// BulkOptions configures BulkWrite. A nil *BulkOptions means the defaults.
type BulkOptions struct {
	// Insert inserts each entity; existing ones are reported as failed.
	// Otherwise each entity is upserted with Mode.
	Insert bool
	// Mode is the upsert each entity gets unless Insert is set:
	// UpsertReplace (the default) or UpsertMerge.
	Mode UpsertMode
	// Concurrency is the most transactions in flight: the ceiling of the
	// concurrency BulkWrite adapts to the service's throttling (see
	// BulkWrite). Default 8: the performance checklist warns against
	// unbounded parallelism, and 8 transactions of 100 entities keep up
	// with what one client reaches (docs/BENCHMARKS.md) while staying
	// under the account's target of ~20,000 entities/s on Azure.
	Concurrency int
	// MaxBatchBytes splits a partition's batch before its request body
	// reaches this size. Default (and maximum) 4,000,000 bytes: a safety
	// margin under the 4 MiB limit.
	MaxBatchBytes int
}

// BulkFailure is one entity BulkWrite could not write.
type BulkFailure struct {
	Index        int // position in the input, from 0
	PartitionKey string
	RowKey       string
	Err          error
}

// BulkResult summarises a BulkWrite.
type BulkResult struct {
	Written int // entities written
	// Requests is the transactions sent: resends after a failed entity
	// and after a throttling answer included (not azcore's own retries,
	// nor the reads that settle a lost answer).
	Requests int
	// Throttled is the throttling answers the service gave the
	// transactions (503 ServerBusy, 429, 500 OperationTimedOut): each was
	// sent again after a pause, or (a 500 that may have been applied)
	// settled by reading back first. 0 when the service kept up.
	Throttled int
	Failed    []BulkFailure // entities not written, in input order
}

// BulkError is returned by BulkWrite when some entities were not written.
// The others were: nothing is rolled back.
type BulkError struct {
	Failed []BulkFailure
}

func (e *BulkError) Error() string {
	f := e.Failed[0]
	return fmt.Sprintf("tablekit: bulk write: %d entities failed; the first (input %d, PartitionKey %q, RowKey %q): %v",
		len(e.Failed), f.Index, f.PartitionKey, f.RowKey, f.Err)
}

// Unwrap returns each failure's error, so errors.Is(err,
// tablekit.ErrAlreadyExists) tells whether any failure was a duplicate.
func (e *BulkError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		errs[i] = f.Err
	}
	return errs
}

const (
	defaultMaxBatchBytes = 4_000_000
	// Bounds on the entities BulkWriteSeq holds while it fills batches:
	// 100 partitions' worth of full batches, and 64 MiB.
	maxWaitingEntities = 100 * MaxTransactionOps
	maxWaitingBytes    = 64 << 20
)

// BulkWrite writes every entity of items, in as few requests as the rules
// allow: it groups entities by partition, and sends each group as entity
// group transactions of at most 100 entities and MaxBatchBytes, up to
// Concurrency at a time. N entities of one partition take ceil(N/100)
// requests when under the byte limit. Entities are encoded by the workers,
// a transaction's worth at a time: the first request leaves once its own
// entities are encoded, and the rest are encoded while earlier
// transactions are in flight. items must not change until BulkWrite
// returns.
//
// Atomicity holds per transaction only: a BulkWrite as a whole is not
// atomic. When one entity of a transaction fails (say, an insert (BulkOptions.Insert) meets an
// existing entity), the service applies none of it; BulkWrite records that
// entity in BulkResult.Failed and sends the rest of the transaction again,
// so one bad entity never loses the others. An entity that appears more
// than once in the input is written once per appearance; which lands last
// is unspecified when the appearances fall in different transactions.
//
// Throttling. BulkWrite adapts its pace to the service, as the
// performance checklist asks: when the service answers that a partition or
// the account is over its target (503 ServerBusy or 500 OperationTimedOut
// on Azure, 429 on Cosmos DB), BulkWrite slows that partition (the
// account, when the answer says the account is over its limit, or is a
// 429): half the transactions in flight, and a paced rate in entities per
// second, learned from what the service lets through and refuses, which
// the partitions share as they share one target (see internal/throttle;
// docs/BENCHMARKS.md measures it against small and large burst
// allowances, bound by partitions or by the account). It pauses for the
// service's retry-after
// (x-ms-retry-after-ms, Retry-After) when given, and sends the
// transaction again; the pace climbs back while the service keeps up, up
// to Concurrency transactions in flight. A throttled transaction is never
// given up (until ctx ends) and never applied twice: a 503 or 429 was not
// applied, and a 500 OperationTimedOut is settled by reading back before
// it is sent again. BulkResult.Throttled counts these answers; they are
// not failures. Other transient failures are retried by azcore as before.
// Transactions leave in the order they fill, except that one whose
// partition is paced or paused lets those of other partitions go first:
// a throttled partition slows only itself.
//
// BulkWrite returns a *BulkError when some entities failed, and ctx's error
// when it was cancelled (entities not yet sent are then reported failed).
//
//go:noinline
func (t *Table[T]) BulkWrite(ctx context.Context, items []T, opts *BulkOptions) (BulkResult, error) {
	return t.ops().bulkWrite(ctx, func(yield func(any) bool) {
		for i := range items {
			if !yield(&items[i]) {
				return
			}
		}
	}, opts)
}

// BulkWriteSeq is BulkWrite over an iterator: entities are grouped as they
// arrive and sent as their transactions fill, with memory bounded by
// Concurrency and the partitions being filled, not by the input's length.
// At most 10,000 entities wait in transactions being filled, and about
// 64 MiB of them as entity.Codec.DataSize counts; past either bound the
// transaction of the partition added to least recently leaves early (in
// key-ordered input, one the input has moved past). Filled transactions
// wait for a worker, up to 4 × Concurrency of them and 16 MiB.
//
//go:noinline
func (t *Table[T]) BulkWriteSeq(ctx context.Context, items iter.Seq[T], opts *BulkOptions) (BulkResult, error) {
	return t.ops().bulkWrite(ctx, func(yield func(any) bool) {
		for v := range items {
			if !yield(&v) {
				return
			}
		}
	}, opts)
}

// bulkWrite is BulkWrite and BulkWriteSeq: it holds the entities by
// pointer (*T, into the caller's slice, or to the iterator's values) until
// a worker encodes them.
func (t *tableOps) bulkWrite(ctx context.Context, items iter.Seq[any], opts *BulkOptions) (BulkResult, error) {
	o, opType, err := t.bulkSetup(opts)
	if err != nil {
		return BulkResult{}, err
	}
	b := newBulk(ctx, t, o.Concurrency, o.MaxBatchBytes)
	finish := b.start(o.Concurrency)
	c := newBulkCall()
	t.feed(b, c, items, opType, o.MaxBatchBytes)
	finish()

	res := c.result()
	res.Requests, res.Throttled = b.lim.Sent(), b.lim.Throttled()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Failed) > 0 {
		return res, &BulkError{Failed: res.Failed}
	}
	return res, nil
}

// bulkSetup checks opts for a bulk write to t and returns them with their
// defaults set, and the operation each entity gets.
func (t *tableOps) bulkSetup(opts *BulkOptions) (BulkOptions, OpType, error) {
	o := optsOf(opts)
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.MaxBatchBytes <= 0 || o.MaxBatchBytes > defaultMaxBatchBytes {
		o.MaxBatchBytes = defaultMaxBatchBytes
	}
	if !o.Mode.Valid() {
		return o, 0, tkerr.Errorf("tablekit: bulk write to %s: %w: mode %v is neither UpsertReplace nor UpsertMerge", t.name, tablekit.ErrInvalidArgument, o.Mode)
	}
	if !o.Insert && o.Mode == UpsertMerge && t.codec.Encrypted() {
		return o, 0, ErrEncryptedMerge
	}
	opType := upsertOp(o.Mode)
	if o.Insert {
		opType = OpInsert
	}
	return o, opType, nil
}

// feed groups the entities of one call by partition and dispatches the
// groups to b's workers as their transactions fill; it returns once every
// group is dispatched (not sent). items are *T of t's codec.
func (t *tableOps) feed(b *bulk, c *bulkCall, items iter.Seq[any], opType OpType, maxBatchBytes int) {
	defer c.seal()
	// Groups being filled, by partition. The loop reads only keys (and
	// sizes the data, see entity.Codec.DataSize): the workers encode, so a
	// group's entities are encoded while earlier transactions are in
	// flight, not all of them before the first request. When too many
	// entities (or bytes) wait in the groups, the one added to least
	// recently is sent early to keep memory bounded; below that, every
	// batch is full and requests are fewest.
	pending := map[string]*group{}
	waiting, waitingBytes := 0, 0
	flush := func(pk string) {
		g := pending[pk]
		delete(pending, pk)
		waiting -= len(g.items)
		waitingBytes -= g.bytes
		c.add()
		b.dispatch(g)
	}
	index := -1
	for v := range items {
		index++
		if b.ctx.Err() != nil {
			break
		}
		var body []byte
		pk, rk := t.codec.Keys(v)
		size, ok := t.codec.DataSize(v)
		if !ok {
			// An EntityMarshaler: its size is known only once encoded.
			var err error
			if body, pk, rk, err = t.marshalValue(v); err != nil {
				b.fail(c, index, pk, rk, err)
				continue
			}
			size = len(body)
		}
		size += wire.OpWireSize(Op{PartitionKey: pk, RowKey: rk})
		g := pending[pk]
		if g != nil {
			if _, dup := g.rks.Lookup(g.ops, rk); dup || len(g.items) == MaxTransactionOps || g.bytes+size > maxBatchBytes {
				flush(pk)
				g = nil
			}
		}
		if g == nil {
			g = newGroup()
			g.call = c
			pending[pk] = g
		}
		// A bulk load settles a lost answer by content (Op.Unique): no
		// entity's content derives from a read. What is stored is exactly
		// what was given.
		g.ops = append(g.ops, Op{Type: opType, PartitionKey: pk, RowKey: rk, Entity: body, Unique: true})
		g.items = append(g.items, v)
		g.index = append(g.index, index)
		g.rks.Add(g.ops, len(g.ops)-1)
		g.bytes += size
		waiting++
		waitingBytes += size
		if waiting > maxWaitingEntities || waitingBytes > maxWaitingBytes {
			// The group the input left longest ago goes: in a key-ordered
			// input (an export, a copy's or a restore's pages) a partition
			// the input has moved past is complete. Sending the fullest
			// instead sent the partition being read, a few entities at a
			// time, once 10,000 entities of small partitions waited: a
			// skewed 250,000-entity table took 21,840 transactions for
			// 8,125 full ones (issue 35).
			stale := ""
			for k, pg := range pending {
				if stale == "" || pg.index[len(pg.index)-1] < pending[stale].index[len(pending[stale].index)-1] {
					stale = k
				}
			}
			flush(stale)
		}
	}
	for pk := range pending {
		flush(pk)
	}
}

// bulkCall is what one call of a bulk job (a BulkWrite, a BulkWriter's
// Write) gave: its groups in flight, the entities written and failed.
type bulkCall struct {
	mu      sync.Mutex
	pending int  // groups dispatched and not done
	sealed  bool // every group is dispatched
	done    chan struct{}
	written int
	failed  []BulkFailure
}

func newBulkCall() *bulkCall { return &bulkCall{done: make(chan struct{})} }

// add counts a group dispatched.
func (c *bulkCall) add() {
	c.mu.Lock()
	c.pending++
	c.mu.Unlock()
}

// groupDone counts a group done (its entities written or failed).
func (c *bulkCall) groupDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending--; c.pending == 0 && c.sealed {
		close(c.done)
	}
}

// seal says no more groups come.
func (c *bulkCall) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	if c.pending == 0 {
		close(c.done)
	}
}

func (c *bulkCall) wrote(n int) {
	c.mu.Lock()
	c.written += n
	c.mu.Unlock()
}

func (c *bulkCall) fail(index int, pk, rk string, err error) {
	c.mu.Lock()
	c.failed = append(c.failed, BulkFailure{Index: index, PartitionKey: pk, RowKey: rk, Err: err})
	c.mu.Unlock()
}

// result is the call's outcome, its failures in input order; call it once
// done is closed.
func (c *bulkCall) result() BulkResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := BulkResult{Written: c.written, Failed: c.failed}
	slices.SortFunc(res.Failed, func(x, y BulkFailure) int { return x.Index - y.Index })
	return res
}

// BulkWriter is a bulk write that stays open: each Write is written as a
// BulkWrite of its own would be (grouped by partition into transactions
// of at most 100 entities), and every Write, from any number of
// goroutines, shares the writer's workers and its pace. What the service's
// throttling taught one Write (a partition's rate, the account's, a
// pause) paces the others, and the writer keeps at most Concurrency
// transactions in flight in all: a job that writes what it reads page by
// page (a copy, a restore) runs at the pace one BulkWriteSeq over the
// whole input would, instead of starting each page at full speed into the
// service's refusals.
//
// Transactions never span two Writes: a partition's entities in two
// Writes take at least two transactions.
type BulkWriter[T any] struct {
	t        *tableOps
	b        *bulk
	opType   OpType
	maxBytes int
	finish   func()

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
}

// NewBulkWriter returns a BulkWriter on t: opts as for BulkWrite, with
// Concurrency the most transactions in flight across every Write. ctx
// governs every Write: once it ends, what is not yet sent fails with its
// error. Close the writer when done.
func (t *Table[T]) NewBulkWriter(ctx context.Context, opts *BulkOptions) (*BulkWriter[T], error) {
	o, opType, err := t.ops().bulkSetup(opts)
	if err != nil {
		return nil, err
	}
	b := newBulk(ctx, t.ops(), o.Concurrency, o.MaxBatchBytes)
	return &BulkWriter[T]{t: t.ops(), b: b, opType: opType, maxBytes: o.MaxBatchBytes, finish: b.start(o.Concurrency)}, nil
}

// Write writes items as BulkWrite does, through the writer's workers and
// pace, and returns once every one of them is written or failed; it is
// safe to call from many goroutines at once. BulkResult.Failed indexes
// items; BulkResult.Requests and Throttled are 0 (the writer's
// transactions are shared: Close and Stats count them). It returns a
// *BulkError when some entities failed, the writer's context's error once
// it ended, and an error wrapping tablekit.ErrInvalidArgument after Close.
// items must not change until Write returns.
func (w *BulkWriter[T]) Write(items []T) (BulkResult, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return BulkResult{}, tkerr.Errorf("tablekit: bulk write to %s: %w: the BulkWriter is closed", w.t.name, tablekit.ErrInvalidArgument)
	}
	w.calls.Add(1)
	w.mu.Unlock()
	defer w.calls.Done()
	c := newBulkCall()
	w.t.feed(w.b, c, func(yield func(any) bool) {
		for i := range items {
			if !yield(&items[i]) {
				return
			}
		}
	}, w.opType, w.maxBytes)
	<-c.done
	res := c.result()
	if err := w.b.ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Failed) > 0 {
		return res, &BulkError{Failed: res.Failed}
	}
	return res, nil
}

// Stats returns what the writer did so far: the entities its Writes
// wrote, and the transactions it sent and the throttling answers they got
// (as BulkResult counts them). Failed is left empty: each Write returns
// its own.
func (w *BulkWriter[T]) Stats() BulkResult {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return BulkResult{Written: w.b.written, Requests: w.b.lim.Sent(), Throttled: w.b.lim.Throttled()}
}

// Close waits for the Writes in progress, stops the workers and returns
// Stats. Writes after Close fail; Close may be called more than once.
func (w *BulkWriter[T]) Close() BulkResult {
	w.mu.Lock()
	first := !w.closed
	w.closed = true
	w.mu.Unlock()
	if first {
		w.calls.Wait()
		w.finish()
	}
	return w.Stats()
}

// group is one partition's operations on their way to transactions. When
// items is set, ops[i] writes items[i], encoded by the worker unless its
// Entity is already set.
type group struct {
	items []any // *T of the bulk's codec
	ops   []Op
	index []int          // input position of each item
	rks   wire.RowKeySet // the RowKeys of ops
	bytes int            // estimated: entity.Codec.DataSize plus wire.OpWireSize
	bufs  *groupBufs     // where ops and index came from
	call  *bulkCall      // the call it is from, if any: told when it is done
}

// groupBufs are the operation and index slices of a group, room for a
// full transaction, reused from group to group and from bulk write to
// bulk write: grown from nothing by append, a group's operations cost
// 2.5 times a transaction's room in garbage (a fifth of a bulk write's
// allocated bytes).
type groupBufs struct {
	ops   []Op
	index []int
}

var groupSlices = sync.Pool{New: func() any {
	return &groupBufs{ops: make([]Op, 0, MaxTransactionOps), index: make([]int, 0, MaxTransactionOps)}
}}

func newGroup() *group {
	gb := groupSlices.Get().(*groupBufs)
	// items has a transaction's room at once: grown from nothing by
	// append, it took 8 allocations a group (84 of a 1,000-entity bulk
	// write's 1,550).
	return &group{items: make([]any, 0, MaxTransactionOps), ops: gb.ops[:0], index: gb.index[:0], bufs: gb}
}

// release hands g's slices back for another group. Nothing may use g
// afterwards: run is done with it, and the transactions sent from it
// keep none of its operations (a failed one's retries use copies).
func (g *group) release() {
	gb := g.bufs
	if gb == nil {
		return
	}
	g.bufs, g.ops, g.index = nil, nil, nil
	clear(gb.ops[:cap(gb.ops)]) // the entities and keys they held
	groupSlices.Put(gb)
}

// submit validates ops and sends them as one transaction through the core
// (see wire.Table.Batch, which resolves lost responses).
func (t *tableOps) submit(ctx context.Context, ops []Op) ([]OpResult, error) {
	return t.w.Batch(ctx, ops)
}

// bulk sends groups as transactions, Concurrency workers at a time, and
// collects the outcome of each entity. Its transactions go through one
// throttle.Limiter (see wire.Table.BatchLimited), so every job built on
// it (BulkWrite, DeleteWhere) adapts its concurrency to the service's
// throttling the same way.
//
// Groups wait in a queue, in the order they were dispatched, and a free
// worker takes the first whose partition may send now (its slot taken
// with Limiter.TryAcquire), not the first in line: a partition the
// limiter paces or pauses holds back its own groups only, while the
// others' go.
type bulk struct {
	ctx      context.Context
	codec    *entity.Codec
	lim      *throttle.Limiter // the sends and throttling answers are counted here
	submit   func(ctx context.Context, ops []Op, slot *throttle.Slot) ([]OpResult, error)
	maxBytes int // of one transaction on the wire

	qmu         sync.Mutex
	queue       []*group // dispatched, not yet taken by a worker
	queuedBytes int
	maxQueued   int           // groups the queue holds before dispatch waits
	closed      bool          // no more groups come
	more        chan struct{} // closed and replaced when a group is queued, or the queue closed
	room        chan struct{} // closed and replaced when a worker takes a group

	mu      sync.Mutex
	written int
	failed  []BulkFailure
}

// maxQueuedBytes bounds the bytes of the groups waiting for a worker
// (entity.Codec.DataSize's estimate); a single group is always let in.
const maxQueuedBytes = 16 << 20

// newBulk returns a bulk job on t with at most ceiling transactions in
// flight, each of at most maxBytes on the wire, sent through the job's
// limiter.
func newBulk(ctx context.Context, t *tableOps, ceiling, maxBytes int) *bulk {
	b := &bulk{
		ctx: ctx, codec: t.codec, lim: t.w.NewLimiter(ceiling), maxBytes: maxBytes,
		// Enough waiting groups for a free worker to find one whose
		// partition may send when several partitions are paced.
		maxQueued: 4 * ceiling,
		more:      make(chan struct{}), room: make(chan struct{}),
	}
	b.submit = func(ctx context.Context, ops []Op, slot *throttle.Slot) ([]OpResult, error) {
		return t.w.BatchLimited(ctx, ops, b.lim, slot)
	}
	return b
}

// start runs n workers, each sending the groups it takes from the queue;
// finish closes the queue and waits for them.
func (b *bulk) start(n int) (finish func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wire.GrowStack()
			for {
				g, slot := b.next()
				if g == nil {
					return
				}
				b.run(g, slot)
				if g.call != nil {
					g.call.groupDone()
				}
				g.release()
			}
		}()
	}
	return func() {
		b.qmu.Lock()
		b.closed = true
		close(b.more)
		b.more = make(chan struct{})
		b.qmu.Unlock()
		wg.Wait()
	}
}

// dispatch queues g for the workers, waiting while the queue is full.
func (b *bulk) dispatch(g *group) {
	if len(g.ops) == 0 {
		return
	}
	b.qmu.Lock()
	// The workers take every group once ctx ends (without sending it), so
	// the queue always drains.
	for len(b.queue) >= b.maxQueued || len(b.queue) > 0 && b.queuedBytes+g.bytes > maxQueuedBytes {
		room := b.room
		b.qmu.Unlock()
		<-room
		b.qmu.Lock()
	}
	b.queue = append(b.queue, g)
	b.queuedBytes += g.bytes
	close(b.more)
	b.more = make(chan struct{})
	b.qmu.Unlock()
}

// next returns the first queued group whose partition may send now, with
// the slot of the limiter to send it in, waiting until one may; nil once
// the queue is closed and empty. After ctx ends it returns the groups in
// order without a slot: they fail without being sent.
func (b *bulk) next() (*group, *throttle.Slot) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// Taken before trying, so an answer in between wakes the wait.
		changed := b.lim.Changed()
		b.qmu.Lock()
		var wait time.Duration // 0: until an answer comes, or a group
		switch {
		case len(b.queue) == 0 && b.closed:
			b.qmu.Unlock()
			return nil, nil
		case len(b.queue) > 0 && b.ctx.Err() != nil:
			g := b.take(0)
			b.qmu.Unlock()
			return g, nil
		}
		for i, g := range b.queue {
			slot, w := b.lim.TryAcquire(g.ops[0].PartitionKey, len(g.ops))
			if slot != nil {
				g := b.take(i)
				b.qmu.Unlock()
				return g, slot
			}
			if w > 0 && (wait == 0 || w < wait) {
				wait = w
			}
		}
		more := b.more
		b.qmu.Unlock()
		var at <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			at = timer.C
		}
		done := b.ctx.Done()
		if b.ctx.Err() != nil {
			done = nil // ended: wait for the groups to come
		}
		select {
		case <-done:
		case <-changed:
		case <-more:
		case <-at:
		}
	}
}

// take removes the queue's group i and returns it. Called with qmu held.
func (b *bulk) take(i int) *group {
	g := b.queue[i]
	b.queue = slices.Delete(b.queue, i, i+1)
	b.queuedBytes -= g.bytes
	close(b.room)
	b.room = make(chan struct{})
	return g
}

// fail records an entity not written: in its call's failures when c is
// set, else in the job's.
func (b *bulk) fail(c *bulkCall, index int, pk, rk string, err error) {
	if c != nil {
		c.fail(index, pk, rk, err)
		return
	}
	b.mu.Lock()
	b.failed = append(b.failed, BulkFailure{Index: index, PartitionKey: pk, RowKey: rk, Err: err})
	b.mu.Unlock()
}

// arenas holds the buffers groups are encoded into, up to 1 MiB each.
var arenas = &bufpool.Pool{Size: 64 << 10, Max: 1 << 20}

// Marks in run's ends for an operation without a span in the arena.
const (
	preEncoded = -1 // not encoded here: a delete, or an EntityMarshaler the producer encoded
	notEncoded = -2 // failed to encode, reported
)

// run encodes a group's entities into one buffer, reports those that do
// not encode, and sends the rest as transactions of at most maxBytes on
// the wire (the group's size was an estimate before encoding), the first
// in slot when not nil.
func (b *bulk) run(g *group, slot *throttle.Slot) {
	var arena []byte
	if g.items != nil {
		ap := arenas.Get()
		// g.bytes counts each operation's part headers too: room enough
		// for the entities in all but rare cases (heavy JSON escaping).
		arena = slices.Grow(*ap, g.bytes)
		// The transactions are sent below and nothing keeps their
		// entities after: the buffer serves the next group.
		defer func() {
			*ap = arena
			arenas.Put(ap)
		}()
	}
	ends := make([]int, len(g.ops))
	for i := range g.ops {
		if g.items == nil || g.ops[i].Entity != nil {
			ends[i] = preEncoded
			continue
		}
		var err error
		n := len(arena)
		if arena, err = b.codec.AppendMarshal(arena, g.items[i]); err != nil {
			arena = arena[:n]
			ends[i] = notEncoded
			b.fail(g.call, g.index[i], g.ops[i].PartitionKey, g.ops[i].RowKey, err)
			continue
		}
		ends[i] = len(arena)
	}
	ops, index := g.ops[:0], g.index[:0]
	start, size := 0, 0
	for i, op := range g.ops {
		switch end := ends[i]; end {
		case notEncoded:
			continue
		case preEncoded:
		default:
			op.Entity = arena[start:end:end]
			start = end
		}
		if len(ops) > 0 && size+wire.OpWireSize(op) > b.maxBytes {
			b.send(g.call, ops, index, slot)
			ops, index, size, slot = nil, nil, 0, nil
		}
		ops = append(ops, op)
		index = append(index, g.index[i])
		size += wire.OpWireSize(op)
	}
	b.send(g.call, ops, index, slot)
}

// send submits ops as one transaction, dropping the entity a failed
// transaction names and resending the rest, until it succeeds or nothing
// is left. The first send goes in slot when not nil; slot is released if
// nothing is sent.
func (b *bulk) send(c *bulkCall, ops []Op, index []int, slot *throttle.Slot) {
	defer func() {
		if slot != nil {
			slot.Release()
		}
	}()
	for len(ops) > 0 {
		if err := b.ctx.Err(); err != nil {
			for i, op := range ops {
				b.fail(c, index[i], op.PartitionKey, op.RowKey, err)
			}
			return
		}
		_, err := b.submit(b.ctx, ops, slot)
		slot = nil // answered by submit
		if err == nil {
			b.mu.Lock()
			b.written += len(ops)
			b.mu.Unlock()
			if c != nil {
				c.wrote(len(ops))
			}
			return
		}
		if i, ok := transactionIndex(err); ok && i < len(ops) {
			b.fail(c, index[i], ops[i].PartitionKey, ops[i].RowKey, err)
			ops = slices.Delete(slices.Clone(ops), i, i+1)
			index = slices.Delete(slices.Clone(index), i, i+1)
			continue
		}
		// The whole transaction failed (authorization, a transient failure
		// after azcore's retries, a lost answer reading back could not
		// settle, a cancelled context): every entity in it did.
		if errors.Is(err, context.Canceled) {
			err = b.ctx.Err()
		}
		for i, op := range ops {
			b.fail(c, index[i], op.PartitionKey, op.RowKey, fmt.Errorf("transaction of %s entities failed: %w", strconv.Itoa(len(ops)), err))
		}
		return
	}
}

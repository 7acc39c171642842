package patterns

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"

	"github.com/tablekit/tablekit"
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
	// Concurrency bounds the transactions in flight. Default 8: the
	// performance checklist warns against unbounded parallelism.
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
	Written  int           // entities written
	Requests int           // transactions sent, retries after a failed entity included
	Failed   []BulkFailure // entities not written, in input order
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
// requests when under the byte limit.
//
// Atomicity holds per transaction only: a BulkWrite as a whole is not
// atomic. When one entity of a transaction fails (say, an insert (BulkOptions.Insert) meets an
// existing entity), the service applies none of it; BulkWrite records that
// entity in BulkResult.Failed and sends the rest of the transaction again,
// so one bad entity never loses the others. An entity that appears more
// than once in the input is written once per appearance; which lands last
// is unspecified when the appearances fall in different transactions.
//
// BulkWrite returns a *BulkError when some entities failed, and ctx's error
// when it was cancelled (entities not yet sent are then reported failed).
func (t *Table[T]) BulkWrite(ctx context.Context, items []T, opts *BulkOptions) (BulkResult, error) {
	return t.BulkWriteSeq(ctx, slices.Values(items), opts)
}

// BulkWriteSeq is BulkWrite over an iterator: entities are encoded and sent
// as they arrive, with memory bounded by Concurrency and the number of
// partitions being filled, not by the input's length.
func (t *Table[T]) BulkWriteSeq(ctx context.Context, items iter.Seq[T], opts *BulkOptions) (BulkResult, error) {
	o := optsOf(opts)
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.MaxBatchBytes <= 0 || o.MaxBatchBytes > defaultMaxBatchBytes {
		o.MaxBatchBytes = defaultMaxBatchBytes
	}
	if !o.Mode.Valid() {
		return BulkResult{}, fmt.Errorf("tablekit: bulk write to %s: %w: mode %v is neither UpsertReplace nor UpsertMerge", t.name, tablekit.ErrInvalidArgument, o.Mode)
	}
	if !o.Insert && o.Mode == UpsertMerge && t.codec.Encrypted() {
		return BulkResult{}, ErrEncryptedMerge
	}
	opType := upsertOp(o.Mode)
	if o.Insert {
		opType = OpInsert
	}

	b := &bulk{ctx: ctx, submit: t.submit, work: make(chan *group)}
	var wg sync.WaitGroup
	for i := 0; i < o.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range b.work {
				b.send(g)
			}
		}()
	}

	// Groups being filled, by partition. When too many entities (or
	// bytes) wait in them, the fullest is sent early to keep memory
	// bounded; below that, every batch is full and requests are fewest.
	pending := map[string]*group{}
	waiting, waitingBytes := 0, 0
	flush := func(pk string) {
		g := pending[pk]
		delete(pending, pk)
		waiting -= len(g.ops)
		waitingBytes -= g.bytes
		b.dispatch(g)
	}
	index := -1
	for v := range items {
		index++
		if ctx.Err() != nil {
			break
		}
		body, pk, rk, err := t.marshal(&v)
		if err != nil {
			b.fail(index, pk, rk, err)
			continue
		}
		// A bulk load settles a lost answer by content (Op.Unique): no
		// entity's content derives from a read, and none gets the write
		// marker, so what is stored is exactly what was given.
		op := Op{Type: opType, PartitionKey: pk, RowKey: rk, Entity: body, Unique: true}
		g := pending[pk]
		if g != nil && (len(g.ops) == MaxTransactionOps || g.bytes+wire.OpWireSize(op) > o.MaxBatchBytes || g.has(rk)) {
			flush(pk)
			g = nil
		}
		if g == nil {
			g = &group{rks: map[string]bool{}}
			pending[pk] = g
		}
		g.ops = append(g.ops, op)
		g.index = append(g.index, index)
		g.rks[rk] = true
		g.bytes += wire.OpWireSize(op)
		waiting++
		waitingBytes += wire.OpWireSize(op)
		if waiting > maxWaitingEntities || waitingBytes > maxWaitingBytes {
			fullest := ""
			for k, pg := range pending {
				if fullest == "" || len(pg.ops) > len(pending[fullest].ops) {
					fullest = k
				}
			}
			flush(fullest)
		}
	}
	for pk := range pending {
		flush(pk)
	}
	close(b.work)
	wg.Wait()

	res := BulkResult{Written: b.written, Requests: b.requests, Failed: b.failed}
	slices.SortFunc(res.Failed, func(x, y BulkFailure) int { return x.Index - y.Index })
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Failed) > 0 {
		return res, &BulkError{Failed: res.Failed}
	}
	return res, nil
}

type group struct {
	ops   []Op
	index []int // input position of each op
	rks   map[string]bool
	bytes int
}

func (g *group) has(rk string) bool { return g.rks[rk] }

// submit validates ops and sends them as one transaction through the core
// (see wire.Table.Batch, which resolves lost responses).
func (t *Table[T]) submit(ctx context.Context, ops []Op) ([]OpResult, error) {
	return t.w.Batch(ctx, ops)
}

type bulk struct {
	ctx    context.Context
	submit func(ctx context.Context, ops []Op) ([]OpResult, error)
	work   chan *group

	mu       sync.Mutex
	written  int
	requests int
	failed   []BulkFailure
}

func (b *bulk) dispatch(g *group) {
	if len(g.ops) == 0 {
		return
	}
	b.work <- g
}

func (b *bulk) fail(index int, pk, rk string, err error) {
	b.mu.Lock()
	b.failed = append(b.failed, BulkFailure{Index: index, PartitionKey: pk, RowKey: rk, Err: err})
	b.mu.Unlock()
}

// send submits one group, dropping the entity a failed transaction names
// and resending the rest, until it succeeds or nothing is left.
func (b *bulk) send(g *group) {
	ops, index := g.ops, g.index
	for len(ops) > 0 {
		if err := b.ctx.Err(); err != nil {
			for i, op := range ops {
				b.fail(index[i], op.PartitionKey, op.RowKey, err)
			}
			return
		}
		_, err := b.submit(b.ctx, ops)
		b.mu.Lock()
		b.requests++
		b.mu.Unlock()
		if err == nil {
			b.mu.Lock()
			b.written += len(ops)
			b.mu.Unlock()
			return
		}
		if i, ok := transactionIndex(err); ok && i < len(ops) {
			b.fail(index[i], ops[i].PartitionKey, ops[i].RowKey, err)
			ops = slices.Delete(slices.Clone(ops), i, i+1)
			index = slices.Delete(slices.Clone(index), i, i+1)
			continue
		}
		// The whole transaction failed (authorization, throttling after
		// azcore's retries, a cancelled context): every entity in it did.
		if errors.Is(err, context.Canceled) {
			err = b.ctx.Err()
		}
		for i, op := range ops {
			b.fail(index[i], op.PartitionKey, op.RowKey, fmt.Errorf("transaction of %s entities failed: %w", strconv.Itoa(len(ops)), err))
		}
		return
	}
}

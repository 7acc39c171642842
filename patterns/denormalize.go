package patterns

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
)

// Denormalization is the guide's denormalization pattern with co-located
// entities: fields of a source entity S (the manager's employee entity)
// are copied into target entities D (the department, which keeps the
// manager's name and phone so one point query returns everything), and
// every change keeps them consistent in one entity group transaction, so
// sources and targets must share a partition and a table.
//
// Requests: reading a target is one request (Get); UpdateSource is 2 plus
// one per target (read the source and its targets, one transaction);
// UpdateTarget is 3 (read the target and its source, one transaction that
// also checks the source's ETag).
type Denormalization[S, D any] struct {
	src     *Table[S]
	dst     *Table[D]
	targets func(s *S) []string
	source  func(d *D) string
	copy    func(s *S, d *D)
}

// NewDenormalization returns the denormalization of table name: targets
// lists the RowKeys of the targets of a source (in its partition), source
// names the RowKey of a target's source ("" for none), and copy writes the
// source's fields into a target. It makes no request.
func NewDenormalization[S, D any](acct *tablekit.Account, name string, targets func(s *S) []string, source func(d *D) string, copy func(s *S, d *D), opts *TableOptions) (*Denormalization[S, D], error) {
	if targets == nil || source == nil || copy == nil {
		return nil, errors.New("tablekit: NewDenormalization: targets, source and copy are required")
	}
	src, err := NewTable[S](acct, name, opts)
	if err != nil {
		return nil, err
	}
	dst, err := NewTable[D](acct, name, opts)
	if err != nil {
		return nil, err
	}
	return &Denormalization[S, D]{src: src, dst: dst, targets: targets, source: source, copy: copy}, nil
}

// Sources is the table of source entities.
func (x *Denormalization[S, D]) Sources() *Table[S] { return x.src }

// Targets is the table of target entities (the same table).
func (x *Denormalization[S, D]) Targets() *Table[D] { return x.dst }

// UpdateSource reads the source, calls fn on it, reads its targets and
// writes the source and every target (with the copied fields refreshed)
// in one transaction conditional on all their ETags; a concurrent change
// starts it over (a target deleted meanwhile is then skipped). Targets
// that do not exist are skipped. At most 99 targets fit one transaction.
// A lost response is settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown.
func (x *Denormalization[S, D]) UpdateSource(ctx context.Context, pk, rk string, fn func(*S) error) (S, error) {
	return x.src.modify(ctx, pk, rk, fn, func(_, s *S) ([]Op, error) {
		body, _, _, err := x.src.marshal(s)
		if err != nil {
			return nil, err
		}
		ops := []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}
		rks := x.targets(s)
		if len(rks) >= MaxTransactionOps {
			return nil, fmt.Errorf("tablekit: update %s: %w: %d targets; a transaction holds the source and at most %d", x.src.describe(pk, rk), tablekit.ErrInvalidTransaction, len(rks), MaxTransactionOps-1)
		}
		ds, read, err := x.readTargets(ctx, pk, rks)
		if err != nil {
			return nil, err
		}
		for i := range ds {
			if read[i].etag == "" {
				continue
			}
			x.copy(s, &ds[i])
			b, _, _, err := x.dst.marshal(&ds[i])
			if err == nil {
				b, err = keepLog(b, read[i].body)
			}
			if err != nil {
				return nil, err
			}
			ops = append(ops, Op{Type: OpReplace, PartitionKey: pk, RowKey: rks[i], Entity: b, ETag: read[i].etag})
		}
		return ops, nil
	}, wire.ModifyOptions{})
}

// stored is an entity's JSON and ETag as read.
type stored struct {
	body []byte
	etag string
}

// readTargets reads the targets in parallel; a missing one has an empty
// ETag.
func (x *Denormalization[S, D]) readTargets(ctx context.Context, pk string, rks []string) ([]D, []stored, error) {
	ds := make([]D, len(rks))
	read := make([]stored, len(rks))
	errs := make([]error, len(rks))
	var wg sync.WaitGroup
	for i, rk := range rks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, etag, body, err := x.dst.read(ctx, pk, rk)
			if tablekit.IsNotFound(err) {
				return
			}
			ds[i], read[i], errs[i] = d, stored{body: body, etag: etag}, err
		}()
	}
	wg.Wait()
	return ds, read, errors.Join(errs...)
}

// UpdateTarget reads the target, calls fn on it (which may point it at
// another source, the department's new manager), reads its source and
// writes the target with the source's fields copied, in one transaction
// that also checks the source's ETag (a merge of its keys alone), so the
// copy is never stale. A concurrent change starts it over; a lost
// response is settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown.
func (x *Denormalization[S, D]) UpdateTarget(ctx context.Context, pk, rk string, fn func(*D) error) (D, error) {
	return x.dst.modify(ctx, pk, rk, fn, func(_, d *D) ([]Op, error) {
		var source []Op
		if srk := x.source(d); srk != "" {
			s, setag, err := x.src.getWithETag(ctx, pk, srk)
			if err != nil {
				return nil, fmt.Errorf("tablekit: update %s: its source: %w", x.dst.describe(pk, rk), err)
			}
			x.copy(&s, d)
			source = append(source, Op{Type: OpMerge, PartitionKey: pk, RowKey: srk, Entity: wire.KeysOnly(pk, srk), ETag: setag})
		}
		body, _, _, err := x.dst.marshal(d)
		if err != nil {
			return nil, err
		}
		return append([]Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, source...), nil
	}, wire.ModifyOptions{})
}

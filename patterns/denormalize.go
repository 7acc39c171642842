package patterns

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// A target names its one source (the department its manager); a source
// lists its targets (the departments it manages). The target's name is
// the truth: UpdateSource copies only into targets that still name it, so
// a source's list that still holds a target moved to another source never
// copies a former manager over the current one. With
// DenormalizationOptions.Link and Unlink, UpdateTarget keeps the lists in
// step in the same transaction as the move.
//
// Requests: reading a target is one request (Get); UpdateSource is 2 plus
// one per listed target (read the source and its targets, one
// transaction); UpdateTarget is 3 (read the target and its source, one
// transaction that also checks the source's ETag), and 4 when it moves
// the target away from a source and Unlink is set (that source is read
// too).
type Denormalization[S, D any] struct {
	src     *Table[S]
	dst     *Table[D]
	targets func(s *S) []string
	source  func(d *D) string
	copy    func(s *S, d *D)
	link    func(s *S, target string)
	unlink  func(s *S, target string)
}

// DenormalizationOptions configures a Denormalization. A nil
// *DenormalizationOptions means the defaults.
type DenormalizationOptions[S any] struct {
	// Table configures the table of sources and targets.
	Table *TableOptions
	// Link adds a target's RowKey to a source's list of targets (the list
	// the targets function reads). UpdateTarget calls it on the target's
	// source when that source does not list the target yet, and writes the
	// source in the same transaction. Nil leaves the lists to the caller.
	Link func(s *S, target string)
	// Unlink removes a target's RowKey from a source's list of targets.
	// UpdateTarget calls it on the former source when the target moves to
	// another source (or to none) and writes that source in the same
	// transaction; UpdateSource calls it for listed targets that name
	// another source. Nil leaves the lists to the caller; UpdateSource
	// still skips such targets.
	Unlink func(s *S, target string)
}

// NewDenormalization returns the denormalization of table name: targets
// lists the RowKeys of the targets of a source (in its partition), source
// names the RowKey of a target's source ("" for none), and copy writes the
// source's fields into a target. It makes no request.
func NewDenormalization[S, D any](acct *tablekit.Account, name string, targets func(s *S) []string, source func(d *D) string, copy func(s *S, d *D), opts *DenormalizationOptions[S]) (*Denormalization[S, D], error) {
	if targets == nil || source == nil || copy == nil {
		return nil, fmt.Errorf("tablekit: NewDenormalization: %w: targets, source and copy are required", tablekit.ErrInvalidArgument)
	}
	var o DenormalizationOptions[S]
	if opts != nil {
		o = *opts
	}
	src, err := NewTable[S](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	dst, err := NewTable[D](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	return &Denormalization[S, D]{src: src, dst: dst, targets: targets, source: source, copy: copy, link: o.Link, unlink: o.Unlink}, nil
}

// Sources is the table of source entities.
func (x *Denormalization[S, D]) Sources() *Table[S] { return x.src }

// Targets is the table of target entities (the same table).
func (x *Denormalization[S, D]) Targets() *Table[D] { return x.dst }

// CreateIfNotExists creates the table of sources and targets; an existing
// one is not an error. One request.
func (x *Denormalization[S, D]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return x.src.CreateIfNotExists(ctx, opts)
}

// UpdateSource reads the source, calls fn on it, reads its targets and
// writes the source and every target that still names this source (with
// the copied fields refreshed) in one transaction conditional on all
// their ETags; a concurrent change starts it over (a target deleted or
// moved meanwhile is then skipped). Listed targets that do not exist, or
// that name another source, are skipped, and with Unlink set the latter
// are removed from the source's list in the same write. At most 99
// targets fit one transaction. A lost response is settled as Table.Update
// settles it, or reported with tablekit.ErrOutcomeUnknown.
func (x *Denormalization[S, D]) UpdateSource(ctx context.Context, pk, rk string, fn func(*S) error, opts *UpdateOptions) (S, error) {
	return x.src.modify(ctx, pk, rk, fn, func(_, s *S) ([]Op, error) {
		rks := x.targets(s)
		if len(rks) >= MaxTransactionOps {
			return nil, fmt.Errorf("tablekit: update %s: %w: %d targets; a transaction holds the source and at most %d", x.src.describe(pk, rk), tablekit.ErrInvalidTransaction, len(rks), MaxTransactionOps-1)
		}
		ds, read, err := x.readTargets(ctx, pk, rks)
		if err != nil {
			return nil, err
		}
		ops := []Op{{}} // the source's own write, marshalled last
		for i := range ds {
			if read[i].etag == "" {
				continue
			}
			if x.source(&ds[i]) != rk {
				// Moved to another source: the copy there is the truth.
				if x.unlink != nil {
					x.unlink(s, rks[i])
				}
				continue
			}
			x.copy(s, &ds[i])
			b, err := x.dst.marshalKeepLog(&ds[i], read[i].body)
			if err != nil {
				return nil, err
			}
			ops = append(ops, Op{Type: OpReplace, PartitionKey: pk, RowKey: rks[i], Entity: b, ETag: read[i].etag})
		}
		body, _, _, err := x.src.marshal(s)
		if err != nil {
			return nil, err
		}
		ops[0] = Op{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}
		return ops, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
}

// marshalKeepLog encodes v as the replacement of the entity read as was,
// keeping was's write-id log (see keepLog).
func (t *Table[T]) marshalKeepLog(v *T, was []byte) ([]byte, error) {
	b, _, _, err := t.marshal(v)
	if err != nil {
		return nil, err
	}
	return keepLog(b, was)
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
// copy is never stale. With Link set, a source that does not list the
// target yet gets it added in the same transaction; with Unlink set, a
// former source that still lists it has it removed in the same
// transaction. A concurrent change starts it over; a lost response is
// settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown.
func (x *Denormalization[S, D]) UpdateTarget(ctx context.Context, pk, rk string, fn func(*D) error, opts *UpdateOptions) (D, error) {
	return x.dst.modify(ctx, pk, rk, fn, func(old, d *D) ([]Op, error) {
		var sources []Op
		srk := x.source(d)
		if srk != "" {
			s, setag, sbody, err := x.src.read(ctx, pk, srk)
			if err != nil {
				return nil, fmt.Errorf("tablekit: update %s: its source: %w", x.dst.describe(pk, rk), err)
			}
			x.copy(&s, d)
			op := Op{Type: OpMerge, PartitionKey: pk, RowKey: srk, Entity: wire.KeysOnly(pk, srk), ETag: setag}
			if x.link != nil && !slices.Contains(x.targets(&s), rk) {
				x.link(&s, rk)
				if op.Entity, err = x.src.marshalKeepLog(&s, sbody); err != nil {
					return nil, err
				}
				op.Type = OpReplace
			}
			sources = append(sources, op)
		}
		if was := x.source(old); x.unlink != nil && was != "" && was != srk {
			s, setag, sbody, err := x.src.read(ctx, pk, was)
			switch {
			case tablekit.IsNotFound(err):
			case err != nil:
				return nil, fmt.Errorf("tablekit: update %s: its former source: %w", x.dst.describe(pk, rk), err)
			case slices.Contains(x.targets(&s), rk):
				x.unlink(&s, rk)
				b, err := x.src.marshalKeepLog(&s, sbody)
				if err != nil {
					return nil, err
				}
				sources = append(sources, Op{Type: OpReplace, PartitionKey: pk, RowKey: was, Entity: b, ETag: setag})
			}
		}
		body, _, _, err := x.dst.marshal(d)
		if err != nil {
			return nil, err
		}
		return append([]Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}, sources...), nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
}

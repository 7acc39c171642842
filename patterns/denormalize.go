package patterns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Denormalization is the guide's denormalization pattern with co-located
// entities: fields of a source entity S (the manager's employee entity)
// are copied into target entities D (the department, which keeps the
// manager's name and phone so one point query returns everything), and
// every change keeps them consistent in one entity group transaction, so
// sources and targets must share a partition and a table.
//
// A target names its one source (the department its manager); a source
// lists its targets (the departments it manages), or, with
// DenormalizationOptions.TargetsWhere, a query finds them (every employee
// of the department, for the guide's employees that copy their
// department's manager). The target's name is the truth: UpdateSource
// copies only into targets that still name it, so a list that still holds
// a target moved to another source, or a query broader than the link,
// never copies a former manager over the current one. With
// DenormalizationOptions.Link and Unlink, UpdateTarget keeps the lists in
// step in the same transaction as the move.
//
// One transaction holds at most 100 operations: the source and 99
// targets. An UpdateSource that would write more fails with a
// *TooManyTargetsError before any write; it is not split, because the
// later parts would leave some targets showing the old values with
// nothing to repair them. A larger set belongs to EventualDenormalization
// (NewEventualDenormalizationWhere for a query), which the worker keeps
// eventually consistent.
//
// Requests: reading a target is one request (Get); UpdateSource is 2 plus
// one per listed target (read the source and its targets, one
// transaction), or with TargetsWhere 2 plus one per page of the query
// (read the source, query its partition, one transaction: 3 when the
// matches fit one page of 1,000); UpdateTarget is 3 (read the target and
// its source, one transaction that also checks the source's ETag), and 4
// when it moves the target away from a source and Unlink is set (that
// source is read too).
type Denormalization[S, D any] struct {
	src     *Table[S]
	dst     *Table[D]
	targets func(s *S) []string
	where   func(s *S) keys.Filter
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
	// TargetsWhere finds a source's targets with a query instead of the
	// list NewDenormalization's targets function reads (pass nil targets
	// then: exactly one of the two is required). UpdateSource runs the
	// filter it returns over the source's partition (a PartitionKey
	// condition is added), skips the source itself and every match whose
	// source function names another source, and copies into the rest in
	// the one transaction. The filter names D's properties and is checked
	// against D as Table.Query checks it, for instance
	//
	//	func(d *Department) keys.Filter { return keys.Prop("Department").Eq(d.Name) }
	//
	// It must match every target that names the source: a target it
	// misses keeps its old copy. With a query there is no list to keep,
	// so Link and Unlink must be nil. A target added to the set gets its
	// copy from UpdateTarget (fn may be nil), whose transaction checks
	// the source's ETag, so it never races a change of the source.
	TargetsWhere func(s *S) keys.Filter
}

// TooManyTargetsError reports that a co-located Denormalization's
// UpdateSource would write more targets than one entity group transaction
// holds beside the source. Nothing was written. It unwraps to
// tablekit.ErrInvalidTransaction, and so to tablekit.ErrInvalidArgument.
type TooManyTargetsError struct {
	// Table, PartitionKey and RowKey name the source.
	Table        string
	PartitionKey string
	RowKey       string
	// Targets counts the source's targets: the listed ones, or those a
	// query found naming the source, where counting stops at Max+1.
	Targets int
	// Max is the most targets a transaction holds beside the source (99).
	Max int
}

func (e *TooManyTargetsError) Error() string {
	return "tablekit: update " + e.Table + " (PartitionKey " + strconv.Quote(e.PartitionKey) + ", RowKey " + strconv.Quote(e.RowKey) + "): " + tablekit.ErrInvalidTransaction.Error() +
		": " + strconv.Itoa(e.Targets) + " targets; one transaction holds the source and at most " + strconv.Itoa(e.Max) +
		" (use EventualDenormalization for larger sets)"
}

// Unwrap returns tablekit.ErrInvalidTransaction.
func (e *TooManyTargetsError) Unwrap() error { return tablekit.ErrInvalidTransaction }

// NewDenormalization returns the denormalization of table name: targets
// lists the RowKeys of the targets of a source (in its partition), or is
// nil when opts.TargetsWhere finds them; source names the RowKey of a
// target's source ("" for none), and copy writes the source's fields into
// a target. It makes no request.
func NewDenormalization[S, D any](acct *tablekit.Account, name string, targets func(s *S) []string, source func(d *D) string, copy func(s *S, d *D), opts *DenormalizationOptions[S]) (*Denormalization[S, D], error) {
	o := optsOf(opts)
	switch {
	case source == nil || copy == nil:
		return nil, tkerr.Errorf("tablekit: NewDenormalization: %w: source and copy are required", tablekit.ErrInvalidArgument)
	case (targets == nil) == (o.TargetsWhere == nil):
		return nil, tkerr.Errorf("tablekit: NewDenormalization: %w: give exactly one of targets and TargetsWhere", tablekit.ErrInvalidArgument)
	case o.TargetsWhere != nil && (o.Link != nil || o.Unlink != nil):
		return nil, tkerr.Errorf("tablekit: NewDenormalization: %w: Link and Unlink keep a list of targets; with TargetsWhere there is none", tablekit.ErrInvalidArgument)
	}
	src, err := NewTable[S](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	dst, err := NewTable[D](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	return &Denormalization[S, D]{src: src, dst: dst, targets: targets, where: o.TargetsWhere, source: source, copy: copy, link: o.Link, unlink: o.Unlink}, nil
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

// UpdateSource reads the source, calls fn on it, reads its targets (the
// listed ones, or those TargetsWhere finds) and writes the source and
// every target that still names this source (with the copied fields
// refreshed) in one transaction conditional on all their ETags; a
// concurrent change starts it over (a target deleted or moved meanwhile
// is then skipped). Listed targets that do not exist, or that name
// another source, are skipped, and with Unlink set the latter are removed
// from the source's list in the same write. At most 99 targets fit one
// transaction: more fail with a *TooManyTargetsError before any write. A
// lost response is settled as Table.Update settles it, or reported with
// tablekit.ErrOutcomeUnknown.
func (x *Denormalization[S, D]) UpdateSource(ctx context.Context, pk, rk string, fn func(*S) error, opts *UpdateOptions) (S, error) {
	return x.src.modify(ctx, pk, rk, fn, func(_, s *S) ([]Op, error) {
		var ts []denormTarget[D]
		var err error
		if x.where != nil {
			ts, err = x.queryTargets(ctx, pk, rk, s)
		} else {
			ts, err = x.listedTargets(ctx, pk, rk, s)
		}
		if err != nil {
			return nil, err
		}
		ops := make([]Op, 1, 1+len(ts)) // ops[0]: the source's own write, marshalled last
		for i := range ts {
			x.copy(s, &ts[i].v)
			b, err := x.dst.marshalKeepLog(&ts[i].v, ts[i].body)
			if err != nil {
				return nil, err
			}
			ops = append(ops, Op{Type: OpReplace, PartitionKey: pk, RowKey: ts[i].rk, Entity: b, ETag: ts[i].etag})
		}
		body, _, _, err := x.src.marshal(s)
		if err != nil {
			return nil, err
		}
		ops[0] = Op{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}
		return ops, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0)})
}

// denormTarget is a target that names the source being updated, as read.
type denormTarget[D any] struct {
	rk string
	v  D
	stored
}

// tooMany is the error of a source (pk, rk) with n targets.
func (x *Denormalization[S, D]) tooMany(pk, rk string, n int) error {
	return &TooManyTargetsError{Table: x.src.name, PartitionKey: pk, RowKey: rk, Targets: n, Max: MaxTransactionOps - 1}
}

// listedTargets reads the targets s lists and returns those that exist
// and name (pk, rk); with Unlink set, those naming another source leave
// s's list.
func (x *Denormalization[S, D]) listedTargets(ctx context.Context, pk, rk string, s *S) ([]denormTarget[D], error) {
	rks := x.targets(s)
	if len(rks) >= MaxTransactionOps {
		return nil, x.tooMany(pk, rk, len(rks))
	}
	ds, read, err := x.readTargets(ctx, pk, rks)
	if err != nil {
		return nil, err
	}
	var out []denormTarget[D]
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
		out = append(out, denormTarget[D]{rk: rks[i], v: ds[i], stored: read[i]})
	}
	return out, nil
}

// queryTargets runs TargetsWhere's filter over the partition pk and
// returns the matches that name (pk, rk), stopping with a
// *TooManyTargetsError past what a transaction holds. One request per
// page.
func (x *Denormalization[S, D]) queryTargets(ctx context.Context, pk, rk string, s *S) ([]denormTarget[D], error) {
	// Every property: the replace keeps the target's write-id log.
	q, err := x.dst.ops().prepare(keys.And(keys.PK().Eq(pk), x.where(s)), &QueryOptions{SelectAll: true})
	if err != nil {
		return nil, tkerr.Errorf("tablekit: update %s: TargetsWhere: %w", x.src.describe(pk, rk), err)
	}
	var out []denormTarget[D]
	for raw, err := range rawRows(ctx, x.dst.w, q) {
		if err != nil {
			return nil, err
		}
		var meta struct {
			RowKey string `json:"RowKey"`
			ETag   string `json:"odata.etag"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil || meta.ETag == "" {
			return nil, fmt.Errorf("tablekit: update %s: a row of its TargetsWhere query has no RowKey or ETag", x.src.describe(pk, rk))
		}
		if meta.RowKey == rk {
			continue // the source itself
		}
		var d D
		if err := x.dst.codec.Unmarshal(raw, &d); err != nil {
			return nil, tkerr.Errorf("tablekit: update %s: its target %s: %w", x.src.describe(pk, rk), strconv.Quote(meta.RowKey), err)
		}
		x.dst.codec.SetMeta(&d, meta.ETag, time.Time{})
		if x.source(&d) != rk {
			continue // matched, but follows another source
		}
		if len(out) == MaxTransactionOps-1 {
			return nil, x.tooMany(pk, rk, len(out)+1)
		}
		out = append(out, denormTarget[D]{rk: meta.RowKey, v: d, stored: stored{body: raw, etag: meta.ETag}})
	}
	return out, nil
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
	err := atOnce(len(rks), func(i int) error {
		d, etag, body, err := x.dst.read(ctx, pk, rks[i])
		if tablekit.IsNotFound(err) {
			return nil
		}
		ds[i], read[i] = d, stored{body: body, etag: etag}
		return err
	})
	return ds, read, err
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
				return nil, tkerr.Errorf("tablekit: update %s: its source: %w", x.dst.describe(pk, rk), err)
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
				return nil, tkerr.Errorf("tablekit: update %s: its former source: %w", x.dst.describe(pk, rk), err)
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

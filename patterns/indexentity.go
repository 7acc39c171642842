package patterns

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// ErrListTooLarge is returned when an index entity's member list would
// pass the limits of one entity: the list is a JSON String property, and a
// String holds at most 32,768 UTF-16 code units (an entity at most 1 MiB).
// The guide's answer is option 1: keep the list in a blob
// (NewBlobIndexedTable).
var ErrListTooLarge = errors.New("tablekit: index list too large for an entity; use a blob list index (NewBlobIndexedTable, the guide's option 1)")

// ListTooLargeError names the index and value whose list would overflow.
// It unwraps to ErrListTooLarge.
type ListTooLargeError struct {
	Index   string
	Value   string
	Members int // members the list would hold
	Units   int // UTF-16 code units of its JSON
}

func (e *ListTooLargeError) Error() string {
	return "tablekit: index " + strconv.Quote(e.Index) + " value " + strconv.Quote(e.Value) + ": a list of " +
		strconv.Itoa(e.Members) + " members takes " + strconv.Itoa(e.Units) + " UTF-16 code units, over the " +
		strconv.Itoa(MaxListUnits) + " a String property holds; keep this index in Blob storage instead (NewBlobIndexedTable, the guide's option 1)"
}

// Unwrap returns ErrListTooLarge.
func (e *ListTooLargeError) Unwrap() error { return ErrListTooLarge }

// ListIndex declares an index entity per value: the guide's index entities
// pattern, which lists the entities sharing a non-unique value ("all the
// employees with the last name Jones").
//
//	patterns.ListIndex[Employee]{Name: "lastname", Property: "EmployeeIDs",
//		Key: func(e *Employee) string { return e.LastName }}
type ListIndex[T any] struct {
	// Name identifies the index (ASCII letters and digits): in blob names
	// (option 1), in the default PartitionKey of option 3's index entities,
	// and in errors.
	Name string
	// Key returns v's value; an empty value leaves v out of every list.
	Key func(v *T) string
	// Property is the index entity's list property (options 2 and 3);
	// default "EmployeeIDs", the guide's name.
	Property string
	// Prefix is put before the value in the index entity's RowKey
	// (options 2 and 3). Empty means the value alone, as in the guide's
	// "Sales"/"Jones"; then no primary RowKey may equal a value.
	Prefix string
	// Table holds option 3's index entities; empty means the primary's
	// table.
	Table string
	// Partition is the PartitionKey of option 3's index entities; empty
	// means Name.
	Partition string
	// Parallelism bounds the concurrent reads of Find (default 8).
	Parallelism int
}

func (ix *ListIndex[T]) property() string {
	if ix.Property == "" {
		return "EmployeeIDs"
	}
	return ix.Property
}

func (ix *ListIndex[T]) parallelism() int {
	if ix.Parallelism <= 0 {
		return 8
	}
	return ix.Parallelism
}

func validateListIndex[T any](what string, t *Table[T], ix *ListIndex[T]) error {
	if !validIndexName(ix.Name) {
		return tkerr.Errorf("tablekit: %s: %w: list index name %q: use 1 to 64 ASCII letters and digits", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	if ix.Key == nil {
		return tkerr.Errorf("tablekit: %s: %w: list index %q has no Key function", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	if err := keys.ValidateKey("RowKey", ix.Prefix+"x"); ix.Prefix != "" && err != nil {
		return tkerr.Errorf("tablekit: %s: list index %q prefix: %w", what, ix.Name, err)
	}
	if ix.Table != "" {
		if err := keys.ValidateTableName(ix.Table); err != nil {
			return tkerr.Errorf("tablekit: %s: list index %q: %w", what, ix.Name, err)
		}
	}
	return nil
}

// memberList is a sorted list of member keys without duplicates.
type memberList []string

func (m memberList) with(k string) memberList {
	i, found := slices.BinarySearch(m, k)
	if found {
		return m
	}
	return slices.Insert(slices.Clone(m), i, k)
}

func (m memberList) without(k string) memberList {
	i, found := slices.BinarySearch(m, k)
	if !found {
		return m
	}
	return slices.Delete(slices.Clone(m), i, i+1)
}

// encodeList encodes the list for an index entity, refusing one that
// would pass the String limit.
func encodeList(index, value string, m memberList) (string, error) {
	if m == nil {
		m = memberList{}
	}
	b, _ := json.Marshal(m) // strings always encode
	if n := azrules.UTF16Len(string(b)); n > MaxListUnits {
		return "", &ListTooLargeError{Index: index, Value: value, Members: len(m), Units: n}
	}
	return string(b), nil
}

// listEntity is an index entity as read: its members, ETag (empty when it
// does not exist) and JSON.
type listEntity struct {
	members memberList
	etag    string
	body    []byte
}

func readListEntity(ctx context.Context, w *wire.Table, pk, rk, prop string) (listEntity, error) {
	value, etag, err := w.Get(ctx, pk, rk)
	if err != nil {
		var se *tablekit.ServiceError
		if tablekit.IsNotFound(err) && !(errors.As(err, &se) && se.Code == "TableNotFound") {
			return listEntity{}, nil
		}
		return listEntity{}, err
	}
	return parseListEntity(w.Name(), pk, rk, prop, value, etag)
}

// parseListEntity decodes an index entity's JSON (nil: it does not exist).
func parseListEntity(table, pk, rk, prop string, value []byte, etag string) (listEntity, error) {
	if value == nil {
		return listEntity{}, nil
	}
	p, err := parseProps(value)
	if err != nil {
		return listEntity{}, tkerr.Errorf("tablekit: %s: %w", describeKeys(table, pk, rk), err)
	}
	s, _ := p.str(prop)
	var m memberList
	if s != "" {
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return listEntity{}, tkerr.Errorf("tablekit: %s: property %s is not a JSON list of strings: %w", describeKeys(table, pk, rk), prop, err)
		}
		slices.Sort(m)
		m = slices.Compact(m)
	}
	return listEntity{members: m, etag: etag, body: value}, nil
}

// listOp is the transaction operation that turns index entity old into
// the list m: insert, replace (conditional on old's ETag, keeping its
// write-id log) or delete when m is empty.
func listOp(pk, rk, prop, index, value string, old listEntity, m memberList) (Op, bool, error) {
	if len(m) == 0 {
		if old.etag == "" {
			return Op{}, false, nil
		}
		return Op{Type: OpDelete, PartitionKey: pk, RowKey: rk, ETag: old.etag}, true, nil
	}
	s, err := encodeList(index, value, m)
	if err != nil {
		return Op{}, false, err
	}
	p := rawProps{}
	p.setString("PartitionKey", pk)
	p.setString("RowKey", rk)
	p.setString(prop, s)
	body, err := p.bytes()
	if err != nil {
		return Op{}, false, tkerr.Errorf("tablekit: index %q entity (PartitionKey %q, RowKey %q): %w", index, pk, rk, err)
	}
	if old.etag == "" {
		return Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body}, true, nil
	}
	body, err = keepLog(body, old.body)
	if err != nil {
		return Op{}, false, err
	}
	return Op{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body, ETag: old.etag}, true, nil
}

// keepLog carries the write-id log (wire.UpdateLogProperty) of an entity
// as read (its JSON was) into body, the entity's replacement written by
// another entity's read-modify-write, so that the entity's own pending
// read-modify-write can still tell from the log whether it landed.
func keepLog(body, was []byte) ([]byte, error) {
	log := wire.ReadLog(was)
	if len(log) == 0 {
		return body, nil
	}
	return wire.WithProp(body, wire.UpdateLogProperty, strings.Join(log, " "))
}

func describeKeys(table, pk, rk string) string {
	return table + " (PartitionKey " + strconv.Quote(pk) + ", RowKey " + strconv.Quote(rk) + ")"
}

// fetchAll reads the entities at refs with at most n reads in flight,
// keeping the order of refs; missing entities, and those keep (if not
// nil) refuses, are left out.
func fetchAll[T any](ctx context.Context, t *Table[T], refs []Member, n int, keep func(*T) bool) ([]T, error) {
	out := make([]T, len(refs))
	ok := make([]bool, len(refs))
	err := parallel(ctx, indexes(len(refs)), n, nil, func(ctx context.Context, i int) (int, error) {
		v, err := t.Get(ctx, refs[i].PartitionKey, refs[i].RowKey, nil)
		switch {
		case tablekit.IsNotFound(err):
		case err != nil:
			return 0, err
		case keep == nil || keep(&v):
			out[i], ok[i] = v, true
		}
		return 0, nil
	})
	if err != nil {
		return nil, err
	}
	res := make([]T, 0, len(refs))
	for i := range out {
		if ok[i] {
			res = append(res, out[i])
		}
	}
	return res, nil
}

// lookupMembers reads the entities that members lists under value in
// index ix, ListIndex.Parallelism at a time, keeping those whose value is
// still value (a write that crashed half way, or that the worker has not
// caught up with, leaves others listed).
func lookupMembers[T any](ctx context.Context, t *Table[T], ix ListIndex[T], value string, members func(context.Context, string, *GetOptions) ([]Member, error), opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if opts != nil && opts.Limit < 0 {
			yield(zero, tkerr.Errorf("tablekit: find in %s: %w: Limit %d is negative", t.name, tablekit.ErrInvalidArgument, opts.Limit))
			return
		}
		m, err := members(ctx, value, nil)
		if err != nil {
			yield(zero, err)
			return
		}
		vs, err := fetchAll(ctx, t, m, ix.parallelism(), func(v *T) bool { return ix.Key(v) == value })
		if err != nil {
			yield(zero, err)
			return
		}
		if opts != nil && opts.Limit > 0 && len(vs) > opts.Limit {
			vs = vs[:opts.Limit]
		}
		for _, v := range vs {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// ListIndexedTable is the guide's index entities pattern, option 2: index
// entities in the same partition as the entities they list, updated in the
// same entity group transaction as the entity, with optimistic concurrency
// on the index entity's ETag (a writer that loses the race reads again and
// retries). The guide's "Sales"/"Jones" entity with its EmployeeIDs
// property lists the RowKeys of the Sales employees named Jones.
//
// Requests: Insert 2 (read the index entity, transaction); Update 2, or 4
// when the value changes (read the entity, read both index entities,
// one transaction over the three, as the guide's last-name change);
// Delete 3; Find 1 + one read per member, in parallel.
type ListIndexedTable[T any] struct {
	t  *Table[T]
	ix ListIndex[T]
}

// NewListIndexedTable returns the repository of table name with the index
// entities of ix in each partition; nil opts means the defaults. It makes
// no request.
func NewListIndexedTable[T any](acct *tablekit.Account, name string, ix ListIndex[T], opts *ListIndexedTableOptions) (*ListIndexedTable[T], error) {
	o := optsOf(opts)
	t, what, err := openTable[T](acct, name, o.Table, "NewListIndexedTable")
	if err != nil {
		return nil, err
	}
	if err := validateListIndex(what, t, &ix); err != nil {
		return nil, err
	}
	if ix.Table != "" || ix.Partition != "" {
		return nil, tkerr.Errorf("tablekit: %s: %w: list index %q sets Table or Partition; option 2 keeps index entities in the entity's partition (use NewEventualListIndexedTable for option 3)", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	return &ListIndexedTable[T]{t: t, ix: ix}, nil
}

// Table is the underlying typed table.
func (x *ListIndexedTable[T]) Table() *Table[T] { return x.t }

// CreateIfNotExists creates the table, which holds the entities and
// their index entities; an existing one is not an error. One request.
func (x *ListIndexedTable[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return x.t.CreateIfNotExists(ctx, opts)
}

func (x *ListIndexedTable[T]) readList(ctx context.Context, pk, value string) (listEntity, error) {
	return readListEntity(ctx, x.t.w, pk, x.ix.Prefix+value, x.ix.property())
}

// listRace reports whether a failed transaction lost a race on an index
// entity (or, for op 0 with an ETag, on the entity) and should start over.
func listRace(err error) bool {
	return errors.Is(err, tablekit.ErrPreconditionFailed) || errors.Is(err, tablekit.ErrAlreadyExists) || errors.Is(err, tablekit.ErrNotFound)
}

// Insert adds v and its RowKey to the index entity of its value, in one
// transaction: a read-modify-write of the index entity, so a concurrent
// change of it makes Insert read it again and retry, and a lost response
// is settled through the index entity's write-id log (or reported with
// tablekit.ErrOutcomeUnknown; then v's ETag stays empty also when a
// settled write landed). Errors: tablekit.ErrAlreadyExists (v's keys
// exist), *ListTooLargeError. Two requests per attempt.
func (x *ListIndexedTable[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	body, pk, rk, err := x.t.marshal(v)
	if err != nil {
		return err
	}
	val := x.ix.Key(v)
	if val == "" {
		return x.t.Insert(ctx, v, opts)
	}
	if err := validateKeys(pk, rk); err != nil {
		return err
	}
	irk := x.ix.Prefix + val
	m, err := x.t.w.ModifyBatch(ctx, pk, irk, func(raw []byte, etag string) ([]Op, error) {
		le, err := parseListEntity(x.t.name, pk, irk, x.ix.property(), raw, etag)
		if err != nil {
			return nil, err
		}
		le.body = nil // ModifyBatch writes the log of the entity it reads
		op, _, err := listOp(pk, irk, x.ix.property(), x.ix.Name, val, le, le.members.with(rk))
		if err != nil {
			return nil, err
		}
		return []Op{op, {Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body}}, nil
	}, &wire.ModifyOptions{MaxAttempts: x.t.maxAttempts, Verb: "insert", Race: func(err error) bool {
		i, ok := transactionIndex(err)
		return ok && i == 0 && listRace(err)
	}})
	if err != nil {
		return err
	}
	x.t.setMeta(v, m.Results[1].ETag)
	return nil
}

// Update reads the entity, calls fn on it and writes it conditionally on
// the ETag read. When fn changes the indexed value it reads both index
// entities and updates the three entities in one transaction, as the guide
// describes for a last-name change; any concurrent change starts it over
// (fn must be safe to call again). A lost response is settled as
// Table.Update settles it, or reported with tablekit.ErrOutcomeUnknown.
func (x *ListIndexedTable[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	return x.t.modify(ctx, pk, rk, fn, func(old, v *T) ([]Op, error) {
		body, _, _, err := x.t.marshal(v)
		if err != nil {
			return nil, err
		}
		ops := []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}
		ov, nv := x.ix.Key(old), x.ix.Key(v)
		if ov == nv {
			return ops, nil
		}
		lists, err := x.readLists(ctx, pk, ov, nv)
		if err != nil {
			return nil, err
		}
		if ov != "" {
			op, ok, err := listOp(pk, x.ix.Prefix+ov, x.ix.property(), x.ix.Name, ov, lists[0], lists[0].members.without(rk))
			if err != nil {
				return nil, err
			}
			if ok {
				ops = append(ops, op)
			}
		}
		if nv != "" {
			op, _, err := listOp(pk, x.ix.Prefix+nv, x.ix.property(), x.ix.Name, nv, lists[1], lists[1].members.with(rk))
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		}
		return ops, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0), Race: listRace})
}

// readLists reads the index entities of values a and b (empty values are
// skipped) in parallel.
func (x *ListIndexedTable[T]) readLists(ctx context.Context, pk, a, b string) ([2]listEntity, error) {
	var out [2]listEntity
	var errs [2]error
	var wg sync.WaitGroup
	for i, val := range [2]string{a, b} {
		if val == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = x.readList(ctx, pk, val)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs[0], errs[1])
}

// Delete removes the entity and its RowKey from its index entity in one
// transaction (three requests: read the entity, read the index entity,
// transaction), starting over when the index entity changed meanwhile. As
// Table.Delete, it is conditional on v's ETag unless opts say otherwise
// (tablekit.ErrPreconditionFailed when the entity changed since v was
// read); a missing entity is tablekit.ErrNotFound.
func (x *ListIndexedTable[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	pk, rk, etag, err := x.t.deleteTarget(v, opts)
	if err != nil {
		return err
	}
	_, err = x.t.modify(ctx, pk, rk, nil, func(old, _ *T) ([]Op, error) {
		ops := []Op{{Type: OpDelete, PartitionKey: pk, RowKey: rk}}
		ov := x.ix.Key(old)
		if ov == "" {
			return ops, nil
		}
		le, err := x.readList(ctx, pk, ov)
		if err != nil {
			return nil, err
		}
		op, ok, err := listOp(pk, x.ix.Prefix+ov, x.ix.property(), x.ix.Name, ov, le, le.members.without(rk))
		if err != nil {
			return nil, err
		}
		if ok {
			ops = append(ops, op)
		}
		return ops, nil
	}, wire.ModifyOptions{Verb: "delete", IfMatch: etag, Race: listRace})
	return err
}

// Get reads the entity (pk, rk): a point query, one request;
// tablekit.ErrNotFound when there is none.
func (x *ListIndexedTable[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	return x.t.Get(ctx, pk, rk, opts)
}

// Members returns the keys of the entities listed under value in partition
// pk, in RowKey order (one request; none listed is an empty list, not an
// error).
func (x *ListIndexedTable[T]) Members(ctx context.Context, pk, value string, opts *GetOptions) ([]Member, error) {
	le, err := x.readList(ctx, pk, value)
	if err != nil {
		return nil, err
	}
	out := make([]Member, len(le.members))
	for i, rk := range le.members {
		out[i] = Member{PartitionKey: pk, RowKey: rk}
	}
	return out, nil
}

// Find returns the entities of partition pk whose value is value: the
// guide's three steps (read the index entity, parse the list, read each
// employee), the reads in parallel up to ListIndex.Parallelism. One
// request plus one per member. opts.Limit bounds the result.
func (x *ListIndexedTable[T]) Find(ctx context.Context, pk, value string, opts *QueryOptions) iter.Seq2[T, error] {
	return lookupMembers(ctx, x.t, x.ix, value, func(ctx context.Context, value string, o *GetOptions) ([]Member, error) {
		return x.Members(ctx, pk, value, o)
	}, opts)
}

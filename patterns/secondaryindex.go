package patterns

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// Index declares one secondary index of T: the guide's intra-partition
// (IndexedTable) and inter-partition (EventualIndexedTable) secondary
// index patterns.
//
//	patterns.Index[Employee]{Name: "email", Unique: true,
//		Key: func(e *Employee) string { return e.Email }}
//
// stores, next to the employee "Sales"/"empid_000223", a copy under the
// RowKey "email_jonesj@contoso.com" (IndexedTable) or under PartitionKey
// "email_Sales" and RowKey "jonesj@contoso.com" (EventualIndexedTable).
type Index[T any] struct {
	// Name prefixes the index's keys (Name + "_"); ASCII letters and
	// digits only, distinct within a table.
	Name string
	// Key returns the indexed value of v. An empty value leaves v out of
	// the index (a sparse index).
	Key func(v *T) string
	// Unique makes the value the whole key of the copy. In an IndexedTable
	// a second entity with the same value in the partition fails the whole
	// transaction with tablekit.ErrAlreadyExists (an *IndexConflictError).
	// Without Unique the copy's key is the value joined with the primary's
	// keys (keys.Join), so equal values coexist and Find lists them: in an
	// IndexedTable the value and the primary's RowKey (the primary shares
	// the copy's partition), in an EventualIndexedTable the value, the
	// primary's PartitionKey and its RowKey ("open_cust01_ord00013").
	Unique bool
	// Props lists the properties the copy carries (the guide: "you don't
	// necessarily need to duplicate all the properties"); nil means all.
	// Lookups through the index fill only these fields (and the keys).
	Props []string

	// Table puts the copies in another table (EventualIndexedTable only);
	// empty means the primary's table.
	Table string
	// Partition returns the suffix of the copy's PartitionKey
	// (EventualIndexedTable only; the copy lives in Name + "_" +
	// Partition(v)); nil means the primary's PartitionKey, the guide's
	// "email_Sales".
	Partition func(v *T) string
}

// maxIndexes is the most indexes an IndexedTable may have: an update that
// changes every indexed value deletes and inserts one copy per index next
// to the primary's replace, and an EGT holds at most 100 operations.
const maxIndexes = (MaxTransactionOps - 1) / 2

// IndexConflictError reports that a unique index value is taken: another
// entity of the partition has it. It unwraps to the transaction's error,
// so errors.Is(err, tablekit.ErrAlreadyExists) holds. Nothing was written.
type IndexConflictError struct {
	Table        string
	Index        string
	PartitionKey string
	Value        string
	Err          error
}

func (e *IndexConflictError) Error() string {
	return "tablekit: " + e.Table + ": unique index " + strconv.Quote(e.Index) + " already has value " +
		strconv.Quote(e.Value) + " in partition " + strconv.Quote(e.PartitionKey) + ": " + e.Err.Error()
}

// Unwrap returns the transaction's error.
func (e *IndexConflictError) Unwrap() error { return e.Err }

// IndexedTableOptions configures an IndexedTable. Nil means defaults.
type IndexedTableOptions struct {
	// Table configures the underlying Table.
	Table *TableOptions
	// Primary names the primary RowKey's own prefix ("empid" for the
	// guide's "empid_000223"): every primary RowKey must start with
	// Primary + "_", and Lookup, Find, Prefix and Between accept Primary
	// as an index name. Like every index, it takes the value
	// (Lookup(ctx, "empid", "Sales", "000152") reads RowKey
	// "empid_000152"; a Prefix such as "0001"); Get takes the whole
	// RowKey. Empty means the primary RowKeys are free-form (and must not
	// start with an index's prefix).
	Primary string
}

// IndexedTable is the guide's intra-partition secondary index pattern: a
// repository of T that stores, in the same partition, one copy of each
// entity per index under a prefixed RowKey, and writes the entity and its
// copies in one entity group transaction, so they never disagree.
//
// Requests: Insert 1; Update and Delete 2 (read, transaction), more only
// when another writer changed the entity meanwhile or a copy to delete is
// missing (two more: read again, send without that deletion); Get,
// Lookup 1; Find, Prefix and Between 1 per page of up to 1,000.
//
// Every entity of the partition is either a primary or a copy: query the
// partition through IndexedTable, not through a plain Table[T].
type IndexedTable[T any] struct {
	t       *Table[T]
	indexes []Index[T]
	byName  map[string]int
	primary string
	sel     []string
}

// openTable opens the typed table of a repository that ctor ("NewX")
// builds, and returns it with the name ctor's errors give ("NewX[T]").
func openTable[T any](acct *tablekit.Account, name string, opts *TableOptions, ctor string) (*Table[T], string, error) {
	t, err := NewTable[T](acct, name, opts)
	if err != nil {
		return nil, "", err
	}
	return t, ctor + "[" + t.codec.Type().String() + "]", nil
}

// NewIndexedTable returns the repository of table name with the given
// indexes. It checks the indexes now (names, key functions, projected
// properties, and that an update touching every index fits one
// transaction of 100 operations: at most 49 indexes) and makes no request.
func NewIndexedTable[T any](acct *tablekit.Account, name string, indexes []Index[T], opts *IndexedTableOptions) (*IndexedTable[T], error) {
	o := optsOf(opts)
	t, what, err := openTable[T](acct, name, o.Table, "NewIndexedTable")
	if err != nil {
		return nil, err
	}
	if len(indexes) > maxIndexes {
		return nil, tkerr.Errorf("tablekit: %s: %w: %d indexes; an update that changes every indexed value takes 1 + 2 per index operations and a transaction holds %d, so at most %d indexes fit",
			what, tablekit.ErrInvalidTransaction, len(indexes), MaxTransactionOps, maxIndexes)
	}
	if err := checkHiddenProps(what, t.codec.Select(), PropPrimaryRowKey); err != nil {
		return nil, err
	}
	x := &IndexedTable[T]{t: t, indexes: slices.Clone(indexes), byName: map[string]int{}, primary: o.Primary}
	if o.Primary != "" && !validIndexName(o.Primary) {
		return nil, tkerr.Errorf("tablekit: %s: %w: Primary %q: use 1 to 64 ASCII letters and digits", what, tablekit.ErrInvalidArgument, o.Primary)
	}
	for i, ix := range x.indexes {
		if err := validateIndex(what, t, ix, false); err != nil {
			return nil, err
		}
		if _, dup := x.byName[ix.Name]; dup || ix.Name == o.Primary {
			return nil, tkerr.Errorf("tablekit: %s: %w: index name %q is used twice", what, tablekit.ErrInvalidArgument, ix.Name)
		}
		x.byName[ix.Name] = i
	}
	x.sel = append(slices.Clone(t.codec.Select()), PropPrimaryRowKey)
	return x, nil
}

func validateIndex[T any](what string, t *Table[T], ix Index[T], eventual bool) error {
	if !validIndexName(ix.Name) {
		return tkerr.Errorf("tablekit: %s: %w: index name %q: use 1 to 64 ASCII letters and digits", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	if ix.Key == nil {
		return tkerr.Errorf("tablekit: %s: %w: index %q has no Key function", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	if !eventual && (ix.Table != "" || ix.Partition != nil) {
		return tkerr.Errorf("tablekit: %s: %w: index %q sets Table or Partition, which only an EventualIndexedTable (inter-partition index) can honour", what, tablekit.ErrInvalidArgument, ix.Name)
	}
	if ix.Table != "" {
		if err := keys.ValidateTableName(ix.Table); err != nil {
			return tkerr.Errorf("tablekit: %s: index %q: %w", what, ix.Name, err)
		}
	}
	for _, p := range ix.Props {
		if p == "PartitionKey" || p == "RowKey" || p == "Timestamp" {
			continue
		}
		if !slices.Contains(t.codec.Select(), p) {
			return tkerr.Errorf("tablekit: %s: %w: index %q projects property %q, which %s does not have", what, tablekit.ErrInvalidArgument, ix.Name, p, t.codec.Type())
		}
	}
	return nil
}

// Table is the underlying typed table (for its client, codec and plain
// operations on entities that are not indexed).
func (x *IndexedTable[T]) Table() *Table[T] { return x.t }

// CreateIfNotExists creates the table, which holds the primaries and
// their copies; an existing one is not an error. One request.
func (x *IndexedTable[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return x.t.CreateIfNotExists(ctx, opts)
}

// intraRowKey returns the copy RowKey of ix for value under the primary
// RowKey rk.
func intraRowKey[T any](ix *Index[T], value, rk string) string {
	if ix.Unique {
		return ix.Name + "_" + value
	}
	return ix.Name + "_" + keys.Join(value, rk)
}

// intraCopy is one index copy of an entity: its index, value, RowKey and
// body.
type intraCopy struct {
	index string
	value string
	rk    string
	body  []byte
	props rawProps // body's properties
}

// encode returns the primary's body and keys and its index copies.
func (x *IndexedTable[T]) encode(v *T) (body []byte, pk, rk string, copies []intraCopy, err error) {
	body, pk, rk, err = x.t.marshal(v)
	if err != nil {
		return nil, "", "", nil, err
	}
	if err := validateKeys(pk, rk); err != nil {
		return nil, "", "", nil, err
	}
	if x.primary != "" && !strings.HasPrefix(rk, x.primary+"_") {
		return nil, "", "", nil, tkerr.Errorf("tablekit: %s: %w: RowKey %q does not start with the primary prefix %q", x.t.describe(pk, rk), tablekit.ErrInvalidKey, rk, x.primary+"_")
	}
	for i := range x.indexes {
		if strings.HasPrefix(rk, x.indexes[i].Name+"_") {
			return nil, "", "", nil, tkerr.Errorf("tablekit: %s: %w: RowKey %q starts with the prefix of index %q; set IndexedTableOptions.Primary or change the key", x.t.describe(pk, rk), tablekit.ErrInvalidKey, rk, x.indexes[i].Name)
		}
	}
	var p rawProps
	for i := range x.indexes {
		ix := &x.indexes[i]
		val := ix.Key(v)
		if val == "" {
			continue
		}
		crk := intraRowKey(ix, val, rk)
		if err := keys.ValidateKey("RowKey", crk); err != nil {
			return nil, "", "", nil, tkerr.Errorf("tablekit: %s: index %q value %q: %w", x.t.describe(pk, rk), ix.Name, val, err)
		}
		if p == nil {
			if p, err = parseProps(body); err != nil {
				return nil, "", "", nil, err
			}
		}
		c := p.project(pk, crk, ix.Props)
		c.setString(PropPrimaryRowKey, rk)
		cb, err := c.bytes()
		if err != nil {
			return nil, "", "", nil, tkerr.Errorf("tablekit: %s: index %q copy: %w", x.t.describe(pk, rk), ix.Name, err)
		}
		copies = append(copies, intraCopy{index: ix.Name, value: val, rk: crk, body: cb, props: c})
	}
	return body, pk, rk, copies, nil
}

// conflict turns a failed transaction into an *IndexConflictError when a
// unique copy's insert failed.
func (x *IndexedTable[T]) conflict(err error, pk string, ops []Op, copies []intraCopy) error {
	return intraConflict(x.t.name, err, pk, ops, copies)
}

// intraConflict turns a failed transaction of table's ops into an
// *IndexConflictError when the insert of one of copies (a unique index's
// row in the entity's partition) failed.
func intraConflict(table string, err error, pk string, ops []Op, copies []intraCopy) error {
	i, ok := transactionIndex(err)
	if !ok || !errors.Is(err, tablekit.ErrAlreadyExists) || i == 0 || i >= len(ops) {
		return err
	}
	for _, c := range copies {
		if c.rk == ops[i].RowKey {
			return &IndexConflictError{Table: table, Index: c.index, PartitionKey: pk, Value: c.value, Err: err}
		}
	}
	return err
}

// Insert adds v and its index copies in one transaction (one request). It
// fails with tablekit.ErrAlreadyExists when v's keys exist, or with an
// *IndexConflictError (also ErrAlreadyExists) when a unique value is
// taken; either way nothing is written. On success v's ETag is set.
func (x *IndexedTable[T]) Insert(ctx context.Context, v *T, opts *InsertOptions) error {
	body, pk, rk, copies, err := x.encode(v)
	if err != nil {
		return err
	}
	ops := make([]Op, 0, 1+len(copies))
	ops = append(ops, Op{Type: OpInsert, PartitionKey: pk, RowKey: rk, Entity: body})
	for _, c := range copies {
		ops = append(ops, Op{Type: OpInsert, PartitionKey: pk, RowKey: c.rk, Entity: c.body, Owned: true})
	}
	res, err := x.t.SubmitOps(ctx, ops, nil)
	if err != nil {
		return x.conflict(err, pk, ops, copies)
	}
	x.t.setMeta(v, res[0].ETag)
	return nil
}

// Update reads the entity, calls fn on it, and writes it and its copies in
// one transaction conditional on the ETag read: copies whose value is
// unchanged are rewritten, changed ones are deleted and inserted under the
// new value. When another writer got there first it starts over, up to
// TableOptions.MaxAttempts times; fn must be safe to call again.
// Errors: those of fn, tablekit.ErrNotFound, *IndexConflictError, and
// tablekit.ErrOutcomeUnknown when a lost response leaves open whether the
// change landed (as for Table.Update). Two requests per attempt; one
// attempt more when a copy it deletes is already gone (an index added
// after the entity was written).
func (x *IndexedTable[T]) Update(ctx context.Context, pk, rk string, fn func(*T) error, opts *UpdateOptions) (T, error) {
	var sent []Op
	var copies []intraCopy
	missing := map[string]bool{}
	v, err := x.t.modify(ctx, pk, rk, fn, func(old, v *T) ([]Op, error) {
		body, _, _, cs, err := x.encode(v)
		if err != nil {
			return nil, err
		}
		copies = cs
		ops := []Op{{Type: OpReplace, PartitionKey: pk, RowKey: rk, Entity: body}}
		want := map[string]bool{}
		for _, c := range copies {
			want[c.rk] = true
		}
		for i := range x.indexes {
			ix := &x.indexes[i]
			if ov := ix.Key(old); ov != "" {
				if ork := intraRowKey(ix, ov, rk); !want[ork] && !missing[ork] {
					ops = append(ops, Op{Type: OpDelete, PartitionKey: pk, RowKey: ork})
				}
			}
		}
		for _, c := range copies {
			typ := OpInsert
			if ov := x.indexes[x.byName[c.index]].Key(old); ov == c.value {
				typ = OpUpsertReplace
			}
			ops = append(ops, Op{Type: typ, PartitionKey: pk, RowKey: c.rk, Entity: c.body})
		}
		sent = ops
		return ops, nil
	}, wire.ModifyOptions{MaxAttempts: updateAttempts(opts, 0), Race: func(err error) bool { return x.race(err, sent, missing) }})
	if err != nil {
		return v, x.conflict(err, pk, sent, copies)
	}
	return v, nil
}

// Delete removes the entity with v's keys and its copies in one
// transaction. As on Table.Delete it is conditional on v's ETag unless
// opts say otherwise (tablekit.ErrPreconditionFailed when the entity
// changed since v was read); a missing entity is tablekit.ErrNotFound.
// It reads the entity first to learn its copies: two requests.
func (x *IndexedTable[T]) Delete(ctx context.Context, v *T, opts *WriteOptions) error {
	pk, rk, etag, err := x.t.deleteTarget(v, opts)
	if err != nil {
		return err
	}
	var sent []Op
	missing := map[string]bool{}
	_, err = x.t.modify(ctx, pk, rk, nil, func(old, _ *T) ([]Op, error) {
		ops := []Op{{Type: OpDelete, PartitionKey: pk, RowKey: rk}}
		for i := range x.indexes {
			if ov := x.indexes[i].Key(old); ov != "" {
				if crk := intraRowKey(&x.indexes[i], ov, rk); !missing[crk] {
					ops = append(ops, Op{Type: OpDelete, PartitionKey: pk, RowKey: crk})
				}
			}
		}
		sent = ops
		return ops, nil
	}, wire.ModifyOptions{Verb: "delete", IfMatch: etag, Race: func(err error) bool { return x.race(err, sent, missing) }})
	return err
}

// race reports whether the failed write of ops lost a race and the
// read-modify-write should start over (see intraRace).
func (x *IndexedTable[T]) race(err error, ops []Op, missing map[string]bool) bool {
	return intraRace(err, ops, missing)
}

// intraRace reports whether the failed write of ops (an entity's
// operation first, then its rows in its partition) lost a race and the
// read-modify-write should start over: the entity changed since it was
// read (412 on the entity's own operation), or a row the write deletes
// does not exist (a view added after the entity was written, or a row
// already gone), which it records in missing so the next attempt leaves
// that deletion out: the row's absence is what the deletion wanted.
func intraRace(err error, ops []Op, missing map[string]bool) bool {
	i, ok := transactionIndex(err)
	switch {
	case !ok || i == 0:
		return errors.Is(err, tablekit.ErrPreconditionFailed)
	case i < len(ops) && ops[i].Type == OpDelete && errors.Is(err, tablekit.ErrNotFound):
		missing[ops[i].RowKey] = true
		return true
	}
	return false
}

// Get reads the primary (pk, rk): a point query, one request;
// tablekit.ErrNotFound when there is none.
func (x *IndexedTable[T]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (T, error) {
	return x.t.Get(ctx, pk, rk, opts)
}

// primaryRK is the primary RowKey of a value of the primary prefix
// ("000152" -> "empid_000152").
func (x *IndexedTable[T]) primaryRK(value string) string { return x.primary + "_" + value }

// index returns the index called name; primary is true for the primary
// prefix.
func (x *IndexedTable[T]) index(name string) (ix *Index[T], primary bool, err error) {
	if name != "" && name == x.primary {
		return nil, true, nil
	}
	i, ok := x.byName[name]
	if !ok {
		return nil, false, tkerr.Errorf("tablekit: %s: %w: no index named %q", x.t.name, tablekit.ErrInvalidArgument, name)
	}
	return &x.indexes[i], false, nil
}

// Lookup returns the entity whose value in the unique index (or the
// primary prefix: "000152" for RowKey "empid_000152") is value, in
// partition pk:
// the guide's point query "RowKey eq 'email_jonesj@contoso.com'". One
// request. The result has the primary's keys, the index's projected
// properties and no ETag (it is a copy; write through Update). Errors:
// tablekit.ErrNotFound; a non-unique index (use Find).
func (x *IndexedTable[T]) Lookup(ctx context.Context, index, pk, value string, opts *GetOptions) (T, error) {
	var zero T
	ix, primary, err := x.index(index)
	if err != nil {
		return zero, err
	}
	if primary {
		return x.t.Get(ctx, pk, x.primaryRK(value), opts)
	}
	if !ix.Unique {
		return zero, tkerr.Errorf("tablekit: %s: %w: index %q is not unique; use Find", x.t.name, tablekit.ErrInvalidArgument, index)
	}
	return getCopy(ctx, x.t, x.t.w, pk, intraRowKey(ix, value, ""))
}

// getCopy reads an index copy and decodes it as the primary it copies.
func getCopy[T any](ctx context.Context, t *Table[T], w *wire.Table, pk, rk string) (T, error) {
	var v T
	value, _, err := w.Get(ctx, pk, rk)
	if err != nil {
		return v, err
	}
	return decodeCopy(t, value)
}

func decodeCopy[T any](t *Table[T], row []byte) (T, error) {
	var v T
	b, err := asPrimary(row)
	if err == nil {
		err = t.codec.Unmarshal(b, &v)
	}
	if err != nil {
		return v, tkerr.Errorf("tablekit: %s: decode index copy: %w", t.name, err)
	}
	return v, nil
}

// Find returns, in partition pk, the entities whose value in index is
// value (any index; for a unique one at most one entity). One request per
// page.
func (x *IndexedTable[T]) Find(ctx context.Context, index, pk, value string, opts *QueryOptions) iter.Seq2[T, error] {
	return x.search(ctx, index, pk, opts, func() []keys.Filter {
		return []keys.Filter{keys.RK().Eq(x.primaryRK(value))}
	}, func(ix *Index[T]) []keys.Filter {
		if ix.Unique {
			return []keys.Filter{keys.RK().Eq(intraRowKey(ix, value, ""))}
		}
		return []keys.Filter{keys.RK().Prefix(ix.Name + "_" + keys.Join(value, ""))}
	})
}

// Prefix returns, in partition pk and in the index's order (on Cosmos DB,
// which does not sort, in the service's order, and a Limit is refused
// with tablekit.ErrUnsortedResults), the entities
// whose value in index (or the primary prefix) starts with prefix: the
// guide's "employees whose email starts with a". One request per page.
func (x *IndexedTable[T]) Prefix(ctx context.Context, index, pk, prefix string, opts *QueryOptions) iter.Seq2[T, error] {
	return x.search(ctx, index, pk, opts, func() []keys.Filter {
		return []keys.Filter{keys.RK().Prefix(x.primaryRK(prefix))}
	}, func(ix *Index[T]) []keys.Filter {
		p := prefix
		if !ix.Unique {
			p = keys.Compound{}.Part(prefix)
		}
		return []keys.Filter{keys.RK().Prefix(ix.Name + "_" + p)}
	})
}

// Between returns, in partition pk and in the index's order (on Cosmos DB
// as Prefix says), the entities whose value in index (or the primary
// prefix) lies between lo and hi, both included: the guide's "ids 000100
// to 000199". One request per page.
func (x *IndexedTable[T]) Between(ctx context.Context, index, pk, lo, hi string, opts *QueryOptions) iter.Seq2[T, error] {
	return x.search(ctx, index, pk, opts, func() []keys.Filter {
		return []keys.Filter{keys.RK().Ge(x.primaryRK(lo)), keys.RK().Le(x.primaryRK(hi))}
	}, func(ix *Index[T]) []keys.Filter {
		if ix.Unique {
			return []keys.Filter{keys.RK().Ge(ix.Name + "_" + lo), keys.RK().Le(ix.Name + "_" + hi)}
		}
		c := keys.Compound{}
		_, end := keys.PrefixRange(ix.Name + "_" + c.Part(hi) + string(c.Separator()))
		return []keys.Filter{keys.RK().Ge(ix.Name + "_" + c.Part(lo)), keys.RK().Lt(end)}
	})
}

// search runs a query in partition pk over index: when index is the
// primary prefix, over the primaries with the RowKey conditions primaryRK
// gives; else over the index's copies with those copyRK gives.
func (x *IndexedTable[T]) search(ctx context.Context, index, pk string, opts *QueryOptions, primaryRK func() []keys.Filter, copyRK func(ix *Index[T]) []keys.Filter) iter.Seq2[T, error] {
	ix, primary, err := x.index(index)
	if err != nil {
		return errSeq[T](err)
	}
	if opts != nil && opts.Limit > 0 {
		// The first n in the index's order: Cosmos DB does not sort.
		if err := x.t.requireSorted("IndexedTable's Find, Prefix or Between with a Limit"); err != nil {
			return errSeq[T](err)
		}
	}
	if primary {
		return x.t.Query(ctx, keys.And(append([]keys.Filter{keys.PK().Eq(pk)}, primaryRK()...)...), opts)
	}
	return x.copies(ctx, keys.And(append([]keys.Filter{keys.PK().Eq(pk)}, copyRK(ix)...)...), opts)
}

// copies runs a query over index copies, decoding each as its primary.
func (x *IndexedTable[T]) copies(ctx context.Context, f keys.Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return queryCopies(ctx, x.t, x.t, f, opts, x.sel)
}

// queryCopies runs a query over the index copies in table in and decodes
// each row as the primary of t it copies.
func queryCopies[T any](ctx context.Context, t, in *Table[T], f keys.Filter, opts *QueryOptions, sel []string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var o QueryOptions
		if opts != nil {
			o = *opts
		}
		if !o.SelectAll && len(o.Select) > 0 {
			o.Select = append(slices.Clone(o.Select), PropPrimaryRowKey, PropPrimaryPartitionKey)
		}
		q, err := prepareQuery(in.name, f, &o, sel)
		if err != nil {
			yield(zero, err)
			return
		}
		for row, err := range rawRows(ctx, in.w, q) {
			var v T
			if err == nil {
				v, err = decodeCopy(t, row)
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

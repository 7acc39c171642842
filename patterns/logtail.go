package patterns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"reflect"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// LogTailOptions configures a LogTail. A nil *LogTailOptions means the
// defaults.
type LogTailOptions struct {
	// Table passes options to the underlying Table.
	Table *TableOptions
	// Suffix returns the part of the RowKey after the inverted ticks, which
	// keeps two appends in the same 100 ns tick apart. The default is 16
	// random hex digits. Return a fixed-width value when you need rows
	// of the same tick to sort in a meaningful order.
	Suffix func() string
}

// LogTail is the guide's log tail pattern ("Retrieve the n entities most
// recently added to a partition by using a RowKey value that sorts in
// reverse date and time order"): entities are appended under the RowKey
// keys.Join(keys.InvertedTicks(at), suffix), so a partition lists its newest
// entities first and Latest reads the n newest with one request, the
// guide's "$top=10" query.
//
// The inverted ticks are exactly the guide's C# formula
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks),
// so rows appended by .NET code with that formula (with or without a
// suffix) interleave correctly with rows appended here.
//
// The pattern relies on the service returning rows in PartitionKey, RowKey
// order. Azure Table storage and Azurite do; the Azure Cosmos DB Table API
// does not sort results, as the guide warns, so LogTail is not suitable
// there. Mind the partition's scalability target too: one hot partition
// takes every append (see Bucketed for spreading).
//
// A LogTail is safe for concurrent use.
type LogTail[T any] struct {
	t      *Table[T]
	rk     patternKeyField
	suffix func() string
	// unique: the suffix is the default random one, so an appended
	// RowKey is this append's alone.
	unique bool
}

// NewLogTail returns the log tail repository of table name for rows of
// type T. T's RowKey field must be a string field the repository can set.
// It makes no request; call CreateIfNotExists to create the table.
func NewLogTail[T any](acct *tablekit.Account, name string, opts *LogTailOptions) (*LogTail[T], error) {
	o := optsOf(opts)
	t, err := NewTable[T](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	_, rk, err := patternKeyFields(t)
	if err != nil {
		return nil, err
	}
	unique := o.Suffix == nil
	if unique {
		o.Suffix = logTailSuffix
	}
	return &LogTail[T]{t: t, rk: rk, suffix: o.Suffix, unique: unique}, nil
}

// Table is the underlying typed table.
func (l *LogTail[T]) Table() *Table[T] { return l.t }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request.
func (l *LogTail[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return l.t.CreateIfNotExists(ctx, opts)
}

// RowKey returns a new RowKey for an entity appended at time at: the
// inverted ticks of at, the separator '_' and a fresh suffix.
func (l *LogTail[T]) RowKey(at time.Time) string {
	return keys.Join(keys.InvertedTicks(at), l.suffix())
}

// Append sets v's RowKey to RowKey(at) and inserts v (v's PartitionKey
// must be set). It returns the RowKey; on success v's ETag and Timestamp
// are set. One request. With the default random suffix the RowKey is this
// append's alone, so an append whose answer was lost is settled by reading
// it back; with your own Suffix it is settled as Table.Insert settles it
// (tablekit.ErrOutcomeUnknown when the entity is there).
func (l *LogTail[T]) Append(ctx context.Context, v *T, at time.Time, opts *InsertOptions) (string, error) {
	if v == nil {
		return "", tkerr.Errorf("tablekit: log tail %s: %w: nil *%s", l.t.name, tablekit.ErrInvalidEntity, l.t.codec.Type())
	}
	rk := l.RowKey(at)
	l.rk.set(reflect.ValueOf(v).Elem(), rk)
	return rk, l.t.insert(ctx, v, l.unique)
}

// Latest returns the n entities of partition pk appended most recently,
// newest first: the guide's "$top=n" query. n must be 1 to 1000; one
// request.
func (l *LogTail[T]) Latest(ctx context.Context, pk string, n int, opts *LatestOptions) ([]T, error) {
	if n < 1 || n > MaxPageSize {
		return nil, tkerr.Errorf("tablekit: log tail %s: %w: n %d is outside 1..%d", l.t.name, tablekit.ErrInvalidArgument, n, MaxPageSize)
	}
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return nil, err
	}
	// The n newest are the first n by RowKey: a service that does not
	// sort (Cosmos DB) would answer with any n.
	if err := l.t.requireSorted("LogTail.Latest"); err != nil {
		return nil, err
	}
	return Collect(l.t.Query(ctx, keys.PK().Eq(pk), &QueryOptions{Top: n, Limit: n}))
}

// Range returns the entities of partition pk appended at times in
// [from, to), newest first, as a range query on the inverted-ticks
// RowKeys (one request per 1,000 entities). opts may set Select, Top and
// Limit.
//
// A RowKey records its time in 100 ns ticks, so from and to are cut to
// ticks the same way before they are compared: an entry appended at
// exactly to (time.Now() has digits below 100 ns on Linux) is left out,
// one appended at exactly from is included, and from and to within one
// tick make an empty span.
func (l *LogTail[T]) Range(ctx context.Context, pk string, from, to time.Time, opts *QueryOptions) iter.Seq2[T, error] {
	from, to = keys.TimeFromTicks(keys.Ticks(from)), keys.TimeFromTicks(keys.Ticks(to))
	// Inverted: a later time has a smaller key. Every key of a time t in
	// [from, to) starts with InvertedTicks(t), so it is > InvertedTicks(to)
	// followed by anything, and below the first key after the prefix
	// InvertedTicks(from).
	_, hi := keys.PrefixRange(keys.InvertedTicks(from))
	lo := keys.InvertedTicks(to)
	f := keys.And(keys.PK().Eq(pk), keys.RK().Ge(lo), keys.RK().Lt(hi))
	return func(yield func(T, error) bool) {
		// Newest first, and a Limit keeps the newest: both need the
		// service's RowKey order.
		if err := l.t.requireSorted("LogTail.Range"); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		if !to.After(from) {
			return // an empty span: no request
		}
		for v, err := range l.t.Query(ctx, f, opts) {
			if err != nil {
				yield(v, err)
				return
			}
			// Rows of the tick InvertedTicks(to) itself belong to to,
			// which the range excludes.
			if at, ok := l.timeOf(&v); ok && !at.Before(to) {
				continue
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

func (l *LogTail[T]) timeOf(v *T) (time.Time, bool) {
	_, rk := l.t.codec.Keys(v)
	at, err := LogTailTime(rk)
	return at, err == nil
}

// LogTailTime returns the time a log tail RowKey was made for: the
// inverted ticks before the first separator (or the whole key, for rows
// written by the guide's C# code without a suffix), read back as the
// guide's new DateTime(DateTime.MaxValue.Ticks - Int64.Parse(invertedTicks)).
func LogTailTime(rowKey string) (time.Time, error) {
	if len(rowKey) > 19 && rowKey[19] == keys.DefaultSeparator {
		rowKey = rowKey[:19]
	}
	return keys.ParseInvertedTicks(rowKey)
}

func logTailSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// patternKeyField is a string field of a struct type found by its index path.
type patternKeyField struct{ index []int }

// set stores s in the field of struct value rv, allocating nil embedded
// pointers on the way.
func (k patternKeyField) set(rv reflect.Value, s string) {
	patternFieldAlloc(rv, k.index).SetString(s)
}

func patternFieldAlloc(rv reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv
}

// patternKeyFields finds T's PartitionKey and RowKey fields by asking T's codec:
// every settable string field gets a distinct marker and Codec.Keys tells
// which ones it reads, so the codec's rules (names, tags, embedding) are
// followed exactly.
func patternKeyFields[T any](t *Table[T]) (pk, rk patternKeyField, err error) {
	typ := t.codec.Type()
	probe := reflect.New(typ).Elem()
	var paths [][]int
	for _, sf := range reflect.VisibleFields(typ) {
		if !sf.IsExported() || sf.Type.Kind() != reflect.String || !patternSettable(typ, sf.Index) {
			continue
		}
		patternFieldAlloc(probe, sf.Index).SetString("\x00probe" + fmt.Sprint(len(paths)))
		paths = append(paths, sf.Index)
	}
	p, r := t.codec.Keys(probe.Addr().Interface())
	var okP, okR bool
	for i, path := range paths {
		m := "\x00probe" + fmt.Sprint(i)
		if p == m {
			pk, okP = patternKeyField{path}, true
		}
		if r == m {
			rk, okR = patternKeyField{path}, true
		}
	}
	if !okP || !okR {
		return pk, rk, tkerr.Errorf("tablekit: %w: type %s: the pattern sets keys itself and needs string PartitionKey and RowKey fields it can set", tablekit.ErrInvalidEntity, typ)
	}
	return pk, rk, nil
}

// patternSettable reports whether the field at index can be set through a
// value of typ: no unexported embedded struct on the way.
func patternSettable(typ reflect.Type, index []int) bool {
	for i, x := range index {
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		sf := typ.Field(x)
		if i < len(index)-1 && !sf.IsExported() {
			return false
		}
		typ = sf.Type
	}
	return true
}

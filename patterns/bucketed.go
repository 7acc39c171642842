package patterns

import (
	"context"
	"iter"
	"reflect"
	"sync"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// Bucketed spreads an append-heavy stream over several partitions: the
// guide's answer to the prepend/append anti-pattern ("When you have a high
// volume of inserts, increase scalability by spreading the inserts across
// multiple partitions"). An entity of stream s with RowKey rk lives in
// partition keys.BucketedKey(s, rk, n): its bucket is a documented hash of
// its RowKey (FNV-1a, see keys.Bucket), so a point read still needs only
// the stream and the RowKey, and inserts of one stream spread evenly over
// n partitions ("Sales_00" to "Sales_15" for 16 buckets) instead of
// heating one.
//
// Reading the whole stream fans out: Query reads all n buckets (their
// first pages concurrently) and merges them back into RowKey order, so a
// stream whose RowKeys are time keys (keys.TimeKey plus an event id) reads
// back in time order. A Bucketed is safe for concurrent use.
//
// Choose an odd (preferably prime) bucket count: keys.Bucket is FNV-1a
// modulo n, and modulo a power of two only the hash's low bits count, which
// barely vary over keys such as time keys with sequence numbers (measured:
// 120 such keys over 8 buckets used 2 of them; over 7 buckets, all 7).
type Bucketed[T any] struct {
	t  *Table[T]
	n  int
	pk patternKeyField
}

// NewBucketed returns the bucketed repository of table name with buckets
// partitions per stream (2 to 1000). T's PartitionKey field must be a
// string field the repository can set. It makes no request.
func NewBucketed[T any](acct *tablekit.Account, name string, buckets int, opts *BucketedOptions) (*Bucketed[T], error) {
	if buckets < 2 || buckets > 1000 {
		return nil, tkerr.Errorf("tablekit: bucketed %s: %w: %d buckets; use 2 to 1000 (one bucket is a plain Table)", name, tablekit.ErrInvalidArgument, buckets)
	}
	o := optsOf(opts)
	t, err := NewTable[T](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	pk, _, err := patternKeyFields(t)
	if err != nil {
		return nil, err
	}
	return &Bucketed[T]{t: t, n: buckets, pk: pk}, nil
}

// Table is the underlying typed table.
func (b *Bucketed[T]) Table() *Table[T] { return b.t }

// CreateIfNotExists creates the table that holds every bucket; an
// existing one is not an error. One request.
func (b *Bucketed[T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return b.t.CreateIfNotExists(ctx, opts)
}

// Buckets is the number of partitions per stream.
func (b *Bucketed[T]) Buckets() int { return b.n }

// PartitionKey returns the partition of the entity of stream with RowKey
// rowKey.
func (b *Bucketed[T]) PartitionKey(stream, rowKey string) string {
	return keys.BucketedKey(stream, rowKey, b.n)
}

func (b *Bucketed[T]) place(stream string, v *T) error {
	if v == nil {
		return tkerr.Errorf("tablekit: bucketed %s: %w: nil *%s", b.t.name, tablekit.ErrInvalidEntity, b.t.codec.Type())
	}
	_, rk := b.t.codec.Keys(v)
	b.pk.set(reflect.ValueOf(v).Elem(), b.PartitionKey(stream, rk))
	return nil
}

// Insert sets v's PartitionKey to its bucket of stream (by v's RowKey,
// which must be set) and inserts it. One request.
func (b *Bucketed[T]) Insert(ctx context.Context, stream string, v *T, opts *InsertOptions) error {
	if err := b.place(stream, v); err != nil {
		return err
	}
	return b.t.Insert(ctx, v, opts)
}

// Upsert is Insert as an insert-or-replace (or, with UpsertMerge,
// insert-or-merge). One request.
func (b *Bucketed[T]) Upsert(ctx context.Context, stream string, v *T, opts *UpsertOptions) error {
	if err := b.place(stream, v); err != nil {
		return err
	}
	return b.t.Upsert(ctx, v, opts)
}

// Get reads the entity of stream with RowKey rk: a point query in its
// bucket, one request; tablekit.ErrNotFound when there is none.
func (b *Bucketed[T]) Get(ctx context.Context, stream, rk string, opts *GetOptions) (T, error) {
	return b.t.Get(ctx, b.PartitionKey(stream, rk), rk, opts)
}

// Query returns the entities of stream that match rows (RowKey bounds and
// property conditions, never a PartitionKey condition; the zero Filter
// matches all), merged from every bucket in RowKey order. Each bucket is a
// partition query (one request per page of opts.Top); opts.Limit bounds
// the merged total.
//
//go:noinline
func (b *Bucketed[T]) Query(ctx context.Context, stream string, rows keys.Filter, opts *QueryOptions) iter.Seq2[T, error] {
	o := optsOf(opts)
	return func(yield func(T, error) bool) {
		var zero T
		if _, ok := rows.PartitionKey(); ok {
			yield(zero, tkerr.Errorf("tablekit: bucketed %s: %w: the row filter names a PartitionKey; Query picks the buckets", b.t.name, tablekit.ErrInvalidArgument))
			return
		}
		// The merge takes each bucket's rows as sorted; the buckets of a
		// stream are unbounded, so they are not sorted here instead.
		if err := b.t.requireSorted("Bucketed.Query"); err != nil {
			yield(zero, err)
			return
		}
		type head struct {
			next func() (T, error, bool)
			stop func()
			v    T
			rk   string
			ok   bool
		}
		heads := make([]*head, b.n)
		for i, pk := range keys.BucketKeys(stream, b.n) {
			f := keys.PK().Eq(pk)
			if !rows.IsZero() {
				f = keys.And(f, rows)
			}
			next, stop := iter.Pull2(b.t.Query(ctx, f, &o))
			heads[i] = &head{next: next, stop: stop}
		}
		defer func() {
			for _, h := range heads {
				h.stop()
			}
		}()
		var firstErr error
		var mu sync.Mutex
		advance := func(h *head) {
			v, err, ok := h.next()
			if ok && err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				ok = false
			}
			h.v, h.ok = v, ok
			if ok {
				_, h.rk = b.t.codec.Keys(&h.v)
			}
		}
		// The first page of every bucket, concurrently.
		var wg sync.WaitGroup
		for _, h := range heads {
			wg.Add(1)
			go func() { defer wg.Done(); advance(h) }()
		}
		wg.Wait()
		n := 0
		for {
			if firstErr != nil {
				yield(zero, firstErr)
				return
			}
			var best *head
			for _, h := range heads {
				if h.ok && (best == nil || bucketUTF16Less(h.rk, best.rk)) {
					best = h
				}
			}
			if best == nil {
				return
			}
			if !yield(best.v, nil) {
				return
			}
			n++
			if o.Limit > 0 && n >= o.Limit {
				return
			}
			advance(best)
		}
	}
}

// bucketUTF16Less orders strings as the Table service orders keys: by UTF-16
// code units (Go's string order is by UTF-8 bytes, which differs for
// characters from U+E000 to U+FFFF against supplementary ones).
func bucketUTF16Less(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < len(ra) && i < len(rb); i++ {
		if ra[i] == rb[i] {
			continue
		}
		ua, ub := bucketFirstUnit(ra[i]), bucketFirstUnit(rb[i])
		if ua != ub {
			return ua < ub
		}
		return ra[i] < rb[i]
	}
	return len(ra) < len(rb)
}

func bucketFirstUnit(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

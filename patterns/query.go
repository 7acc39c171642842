package patterns

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// MaxPageSize is the most entities the service returns in one page ($top):
// azrules.MaxTop, where its evidence is.
const MaxPageSize = azrules.MaxTop

// QueryOptions shapes a query. A nil *QueryOptions means the defaults: the
// struct's own properties, pages of up to 1,000, no total limit, and table
// scans refused.
type QueryOptions struct {
	// Select lists the properties to return (server-side projection, the
	// guide's $select). Empty means every property T has; SelectAll asks
	// for every stored property instead.
	Select []string
	// SelectAll sends no $select, so the service returns every property.
	SelectAll bool
	// Top is the page size: at most this many entities per request
	// (1 to 1000; 0 means 1000).
	Top int
	// Limit stops Query after this many entities in total (0 = no limit).
	// It never changes the page size; Page ignores it.
	Limit int
	// AllowTableScan lets a query that does not pin one partition run.
	// Without it such queries fail with tablekit.ErrTableScan before any
	// request: the guide ranks table scans last, and a scan reads every
	// partition of the table.
	AllowTableScan bool
	// AllowUnknownProperties lets a filter name properties T does not
	// have: rows of other types in a heterogeneous table, or a filter
	// parsed from elsewhere. Without it such a filter fails with
	// tablekit.ErrInvalidFilter, naming the property, before any request:
	// a typo would otherwise match nothing. Types whose entity hooks
	// (entity.EntityMarshaler, entity.EntityUnmarshaler) decide their
	// properties, such as entity.Entity, are never checked.
	AllowUnknownProperties bool
}

// Page is one page of a query.
type Page[T any] struct {
	// Items are the page's entities, in PartitionKey, RowKey order.
	Items []T
	// Token resumes the query after this page; empty on the last page. It
	// is opaque, URL-safe, survives a process restart, and is refused by
	// a query with another table, filter or projection.
	Token string
	// Class is the guide's category of the query (point, range, partition
	// scan, table scan).
	Class keys.Class
}

// query is a prepared query: validated, classified, with its wire options.
type query struct {
	table   string
	filter  string
	selects string
	top     int32
	limit   int
	class   keys.Class
	hash    [8]byte
}

func (t *tableOps) prepare(f keys.Filter, opts *QueryOptions) (query, error) {
	f, err := t.typedFilter(f, opts != nil && opts.AllowUnknownProperties)
	if err != nil {
		return query{}, err
	}
	return prepareQuery(t.name, f, opts, t.codec.Select())
}

// typedFilter refuses a filter naming a property T does not have, unless
// allowed or T's properties are its hooks' business, and writes its
// numeric literals in the EDM types of T's fields (keys.Filter.Retype),
// as the REST reference asks: `Age ge 45` with an int field (Edm.Int64) is
// sent as `Age ge 45L`. (Azure widens a narrower number literal itself;
// it does not compare a wider one, nor other types: keys.Filter.Match.)
func (t *tableOps) typedFilter(f keys.Filter, allow bool) (keys.Filter, error) {
	if t.props == nil || f.Err() != nil {
		return f, nil // an invalid filter reports its own error in prepareQuery
	}
	if !allow {
		if err := f.CheckProperties(func(name string) bool { return t.props[name] }); err != nil {
			return keys.Filter{}, tkerr.Errorf("tablekit: query %s: %w (type %s; set AllowUnknownProperties to send it anyway)", t.name, err, t.codec.Type())
		}
	}
	typed, err := f.Retype(func(name string) string { return string(t.codec.PropertyType(name)) })
	if err != nil {
		return keys.Filter{}, tkerr.Errorf("tablekit: query %s: %w (type %s)", t.name, err, t.codec.Type())
	}
	return typed, nil
}

// filterProps returns the property names a filter on c's type may name,
// or nil, meaning any, when the type's entity hooks decide its properties
// (entity.Entity and other dynamic types).
func filterProps(c *entity.Codec) map[string]bool {
	pt := reflect.PointerTo(c.Type())
	if pt.Implements(reflect.TypeFor[entity.EntityMarshaler]()) || pt.Implements(reflect.TypeFor[entity.EntityUnmarshaler]()) {
		return nil
	}
	props := make(map[string]bool, len(c.Select()))
	for _, name := range c.Select() {
		props[name] = true
	}
	return props
}

// prepareQuery validates and classifies a query on table; defaultSelect
// is the projection when opts name none.
func prepareQuery(table string, f keys.Filter, opts *QueryOptions, defaultSelect []string) (query, error) {
	o := optsOf(opts)
	text, err := f.Build()
	if err != nil {
		return query{}, err
	}
	q := query{table: table, filter: text, class: keys.Classify(f), limit: o.Limit}
	if q.class == keys.TableScan && !o.AllowTableScan {
		return query{}, fmt.Errorf("%w: %s filter %q", tablekit.ErrTableScan, table, text)
	}
	switch {
	case o.Top < 0 || o.Top > MaxPageSize:
		return query{}, tkerr.Errorf("tablekit: query %s: %w: Top %d is outside 1..%d", table, tablekit.ErrInvalidArgument, o.Top, MaxPageSize)
	case o.Top == 0:
		q.top = MaxPageSize
	default:
		q.top = int32(o.Top)
	}
	if o.Limit < 0 {
		return query{}, tkerr.Errorf("tablekit: query %s: %w: negative Limit %d", table, tablekit.ErrInvalidArgument, o.Limit)
	}
	if !o.SelectAll {
		sel := o.Select
		if len(sel) == 0 {
			sel = defaultSelect
		}
		for _, name := range sel {
			if name == "" || strings.ContainsAny(name, ",()'\"") {
				return query{}, tkerr.Errorf("tablekit: query %s: %w: invalid property name %q in Select", table, tablekit.ErrInvalidArgument, name)
			}
		}
		q.selects = strings.Join(sel, ",")
	}
	h := sha256.New()
	for _, s := range []string{table, q.filter, q.selects} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var top [4]byte
	binary.BigEndian.PutUint32(top[:], uint32(q.top))
	h.Write(top[:])
	copy(q.hash[:], h.Sum(nil))
	return q, nil
}

// wire is the query as the core sends it.
func (q *query) wire() wire.Query {
	return wire.Query{Filter: q.filter, Select: q.selects, Top: q.top, Limit: q.limit}
}

// Query returns the entities matching f, in PartitionKey, RowKey order,
// one request per page. Without a Limit, once the loop has taken a page's
// first entity and asks for more, the next page is requested while it
// works through the rest: a loop that stops at the first entity of a page
// sends no further request; one that stops later may leave one page
// request in flight, which is cancelled. Table scans are refused unless
// opts.AllowTableScan is set. The sequence yields at most one error, then
// stops; it stops early when ctx is cancelled.
func (t *Table[T]) Query(ctx context.Context, f keys.Filter, opts *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) { queryRows(t, ctx, f, opts, yield) }
}

// queryRows is Query's loop. It is not inlined: Query is, and its
// closures were compiled again at every call site, and a repository's call
// sites once for every entity type (931 functions, 335 KB of patterns'
// tests' code). Transaction, Scan, BulkWrite and BulkWriteSeq, which build
// closures too and allocate them anyway, are not inlined either, nor are
// the repositories' iterators whose closures are large (Bucketed.Query,
// PeriodTables.Query, CompoundKeys.Related).
//
//go:noinline
func queryRows[T any](t *Table[T], ctx context.Context, f keys.Filter, opts *QueryOptions, yield func(T, error) bool) {
	// Each row is decoded into the same T, copied out to yield: a fresh T
	// passed to Decode would be one allocation a row.
	var zero T
	v := new(T)
	t.ops().queryInto(ctx, f, opts, v, func() { *v = zero }, func(err error) bool {
		if err != nil {
			return yield(zero, err)
		}
		return yield(*v, nil)
	})
}

// queryInto runs Query's loop for every T: it decodes each row into v (a
// *T) once reset has zeroed it and calls yield(nil), and at the first
// error calls yield(err) and stops; it stops too when yield returns false.
func (t *tableOps) queryInto(ctx context.Context, f keys.Filter, opts *QueryOptions, v any, reset func(), yield func(error) bool) {
	q, err := t.prepare(f, opts)
	if err != nil {
		yield(err)
		return
	}
	// Rows are decoded straight from pooled page buffers, in one pass;
	// the next page is fetched while the loop works through this one.
	for r, err := range t.w.Entities(ctx, q.wire()) {
		if err != nil {
			yield(err)
			return
		}
		reset()
		if err := r.Decode(t.codec, v); err != nil {
			yield(tkerr.Errorf("tablekit: query %s: %w", t.name, err))
			return
		}
		if !yield(nil) {
			return
		}
	}
}

// rawRows runs a prepared query, yielding each row's JSON; it stops after
// q.limit rows, at the first error, or when ctx is cancelled. Not
// inlined, as scanRows is not: wire's iterator would be compiled again in
// every generic caller, for every entity type.
//
//go:noinline
func rawRows(ctx context.Context, w *wire.Table, q query) iter.Seq2[[]byte, error] {
	return w.Rows(ctx, q.wire())
}

// rawPage fetches one page of a prepared query after token.
func rawPage(ctx context.Context, w *wire.Table, q query, token string) (rows [][]byte, next string, err error) {
	var pos *wire.Continuation
	if token != "" {
		c, err := decodeToken(token, q.hash)
		if err != nil {
			return nil, "", err
		}
		pos = &wire.Continuation{PK: c.PK, RK: c.RK}
	}
	rows, c, err := w.Page(ctx, q.wire(), pos)
	if err != nil || c == nil {
		return rows, "", err
	}
	return rows, encodeToken(continuation{PK: c.PK, RK: c.RK}, q.hash), nil
}

// Collect gathers a query's entities into a slice, stopping at the first
// error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Page returns one page of the entities matching f: the first when token
// is empty, else the page after the one that handed out token. One
// request. A token from another query (table, filter, projection or page
// size) fails with tablekit.ErrInvalidToken.
func (t *Table[T]) Page(ctx context.Context, f keys.Filter, token string, opts *QueryOptions) (Page[T], error) {
	rows, class, next, err := t.ops().page(ctx, f, token, opts)
	if err != nil {
		return Page[T]{}, err
	}
	p := Page[T]{Items: make([]T, len(rows)), Class: class, Token: next}
	for i, raw := range rows {
		if err := t.ops().unmarshalRow(raw, &p.Items[i]); err != nil {
			return Page[T]{}, err
		}
	}
	return p, nil
}

// page fetches Page's rows, and says the query's class and the next
// page's token.
func (t *tableOps) page(ctx context.Context, f keys.Filter, token string, opts *QueryOptions) (rows [][]byte, class keys.Class, next string, err error) {
	q, err := t.prepare(f, opts)
	if err != nil {
		return nil, 0, "", err
	}
	rows, next, err = rawPage(ctx, t.w, q, token)
	return rows, q.class, next, err
}

// unmarshalRow decodes a query's row into v (a *T).
func (t *tableOps) unmarshalRow(raw []byte, v any) error {
	if err := t.codec.Unmarshal(raw, v); err != nil {
		return tkerr.Errorf("tablekit: query %s: %w", t.name, err)
	}
	return nil
}

// continuation is the service's position after a page.
type continuation struct {
	PK string `json:"p"`
	RK string `json:"r"`
	Q  []byte `json:"q"` // the first 8 bytes of the query's hash
	V  int    `json:"v"`
}

const tokenVersion = 1

// maxTokenLen bounds the tokens Page accepts. A position holds two key-
// sized strings; JSON escapes some characters six-fold ('<' is \u003c)
// and base64 adds a third, so a legitimate token of 1 KiB keys can pass
// 8 KiB (the fuzzer found one); 64 KiB leaves room and still refuses junk.
const maxTokenLen = 64 << 10

func encodeToken(c continuation, hash [8]byte) string {
	c.V = tokenVersion
	c.Q = hash[:]
	b, _ := json.Marshal(c) // cannot fail: strings and bytes only
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(token string, hash [8]byte) (continuation, error) {
	var c continuation
	if len(token) > maxTokenLen {
		return c, fmt.Errorf("%w: %d bytes is longer than any token tablekit issues", tablekit.ErrInvalidToken, len(token))
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return c, fmt.Errorf("%w: not URL-safe base64", tablekit.ErrInvalidToken)
	}
	if err := json.Unmarshal(b, &c); err != nil || c.V != tokenVersion || len(c.Q) != len(hash) {
		return c, fmt.Errorf("%w: not a tablekit continuation token", tablekit.ErrInvalidToken)
	}
	if [8]byte(c.Q) != hash {
		return c, fmt.Errorf("%w: the token belongs to another query (table, filter, projection or page size differ)", tablekit.ErrInvalidToken)
	}
	// The position is the service's own opaque continuation (on Azure it is
	// not a key); it only has to be text the SDK can put in a query string.
	if !utf8.ValidString(c.PK) || !utf8.ValidString(c.RK) || c.PK == "" {
		return c, fmt.Errorf("%w: the token's position is malformed", tablekit.ErrInvalidToken)
	}
	return c, nil
}

func quoteFilter(f string) string {
	if len(f) > 200 {
		f = f[:200] + "..."
	}
	return "\"" + f + "\""
}

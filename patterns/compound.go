package patterns

import (
	"context"
	"iter"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// CompoundKeys is the guide's compound key pattern ("Use compound RowKey
// values to enable a client to look up related data with a single point
// query"): entities related to a parent (an employee's yearly reviews) live
// in the parent's partition under RowKeys built by a keys.Template, such as
// "empid_{ID:6}_{Year}" giving "empid_000123_2012". One entity is a point
// query; all the related entities of one parent are one range query (the
// guide's "(PartitionKey eq 'Sales') and (RowKey ge 'empid_000123') and
// (RowKey lt 'empid_000124')"), one request for up to 1,000 of them, with
// the projection the caller asks for. Because parent and related entities
// share a partition, a Table.Transaction keeps them consistent in one EGT.
//
// The guide's projection "$select=RowKey,Manager Rating,Peer Rating,Comments"
// names properties with spaces, which Azure refuses (property names are C#
// identifiers, and Azurite does not check); use the nearest valid names,
// such as ManagerRating and PeerRating, as tablekit's tests do.
//
// K is the struct the template reads its placeholders from; T is the row
// type of the table. Use fixed-width numbers ({ID:6}) so that keys sort
// like the values. A CompoundKeys is immutable and safe for concurrent use.
type CompoundKeys[K, T any] struct {
	t    *Table[T]
	tmpl *keys.Template[K]
}

// NewCompoundKeys returns the compound key repository of table name with
// RowKeys built by pattern (see keys.NewTemplate); opts configures the
// table, nil means the defaults. Errors wrap tablekit.ErrInvalidKey (the
// pattern) or tablekit.ErrInvalidName. It makes no request.
func NewCompoundKeys[K, T any](acct *tablekit.Account, name, pattern string, opts *CompoundKeysOptions) (*CompoundKeys[K, T], error) {
	o := optsOf(opts)
	t, err := NewTable[T](acct, name, o.Table)
	if err != nil {
		return nil, err
	}
	tmpl, err := keys.NewTemplate[K](pattern)
	if err != nil {
		return nil, err
	}
	if tmpl.Parts() < 2 {
		return nil, tkerr.Errorf("tablekit: compound keys %q: %w: a compound key needs at least two parts", pattern, tablekit.ErrInvalidKey)
	}
	return &CompoundKeys[K, T]{t: t, tmpl: tmpl}, nil
}

// Table is the underlying typed table.
func (c *CompoundKeys[K, T]) Table() *Table[T] { return c.t }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request.
func (c *CompoundKeys[K, T]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return c.t.CreateIfNotExists(ctx, opts)
}

// Template is the RowKey template.
func (c *CompoundKeys[K, T]) Template() *keys.Template[K] { return c.tmpl }

// RowKey builds the compound RowKey of k ("empid_000123_2012").
func (c *CompoundKeys[K, T]) RowKey(k K) (string, error) { return c.tmpl.Key(k) }

// Parse reads a compound RowKey back into a K.
func (c *CompoundKeys[K, T]) Parse(rowKey string) (K, error) { return c.tmpl.Parse(rowKey) }

// Get reads the entity with k's compound RowKey in partition pk: a point
// query, one request; tablekit.ErrNotFound when there is none.
func (c *CompoundKeys[K, T]) Get(ctx context.Context, pk string, k K, opts *GetOptions) (T, error) {
	rk, err := c.tmpl.Key(k)
	if err != nil {
		var zero T
		return zero, err
	}
	return c.t.Get(ctx, pk, rk, opts)
}

// RelatedOptions shapes a Related query. A nil *RelatedOptions means the
// defaults.
type RelatedOptions struct {
	// Query holds the projection (the guide's $select), page size and
	// limit of the query.
	Query *QueryOptions
	// IncludeParent also returns the row whose RowKey is the parent's key
	// itself ("empid_000123"), as the guide's query does; otherwise only
	// the related rows ("empid_000123_2012", ...) are returned.
	IncludeParent bool
}

// RelatedFilter returns the range filter that selects, in partition pk, the
// rows whose first parts leading parts equal k's: with the pattern
// "empid_{ID:6}_{Year}" and parts 2, every review of employee k.ID. parts
// must be 1 to Template().Parts()-1.
func (c *CompoundKeys[K, T]) RelatedFilter(pk string, k K, parts int, includeParent bool) (keys.Filter, error) {
	prefix, err := c.tmpl.Prefix(k, parts)
	if err != nil {
		return keys.Filter{}, err
	}
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return keys.Filter{}, err
	}
	_, hi := keys.PrefixRange(prefix)
	lo := prefix
	if includeParent {
		lo = prefix[:len(prefix)-1] // the parent's key: the prefix without its separator
	}
	if hi == "" {
		return keys.And(keys.PK().Eq(pk), keys.RK().Ge(lo)), nil
	}
	return keys.And(keys.PK().Eq(pk), keys.RK().Ge(lo), keys.RK().Lt(hi)), nil
}

// Related returns the rows of partition pk related to k (see
// RelatedFilter), in RowKey order: one request for up to 1,000 rows.
//
//go:noinline
func (c *CompoundKeys[K, T]) Related(ctx context.Context, pk string, k K, parts int, opts *RelatedOptions) iter.Seq2[T, error] {
	o := optsOf(opts)
	return func(yield func(T, error) bool) {
		var zero T
		f, err := c.RelatedFilter(pk, k, parts, o.IncludeParent)
		if err != nil {
			yield(zero, err)
			return
		}
		prefix, _ := c.tmpl.Prefix(k, parts) // checked by RelatedFilter
		parent := prefix[:len(prefix)-1]
		// One parent's related rows, sorted here where the service
		// does not sort them (Cosmos DB).
		for v, err := range inKeyOrder(ctx, c.t, f, o.Query, "CompoundKeys.Related") {
			if err != nil {
				yield(zero, err)
				return
			}
			// With IncludeParent the range also holds keys that merely
			// extend the parent's last part ("empid_0001230" after
			// "empid_000123" when IDs are not fixed-width): drop them.
			// Rows whose projection left out RowKey are kept.
			if _, rk := c.t.codec.Keys(&v); rk != "" && rk != parent && !strings.HasPrefix(rk, prefix) {
				continue
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

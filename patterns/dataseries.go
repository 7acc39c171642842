package patterns

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
)

// SeriesNumber is the type of a data series' values: stored as Edm.Int32,
// Edm.Int64 or Edm.Double.
type SeriesNumber interface {
	~int32 | ~int64 | ~float64
}

// DataSeriesOptions configures a DataSeries. A nil *DataSeriesOptions means
// the defaults.
type DataSeriesOptions struct {
	// Prefix starts every slot's property name; the slot's index follows,
	// zero-padded to the width of the last index ("H00" to "H23" for the
	// guide's 24 hourly counts with Prefix "H"). Default "S". It must be a
	// C# identifier start (a letter or '_', then letters, digits or '_').
	Prefix string
	// Table passes options to the underlying Table: SDKPath, and
	// MaxAttempts, which bounds Add's read-modify-write loop on ETag
	// conflicts (default 64 here: a series is often a hot counter).
	Table *TableOptions
}

// DataSeries is the guide's data series pattern ("Store complete data
// series in a single entity to minimize the number of requests you make"):
// one entity per series, one property per slot, such as the number of IM
// messages an employee sent in each of the last 24 hours. Upsert writes
// slots with one request (UpsertMerge leaves the others as they are), Add increments one atomically with
// ETag-conditioned merges retried on conflict ("If you have multiple
// clients updating an entity simultaneously, use the ETag to implement
// optimistic concurrency"), and Get reads the whole series in one request.
//
// An entity holds at most 252 properties, one of which keeps Add's
// write-id log, so a series has at most 251 slots; longer series belong
// in a WideEntities (several physical entities written in one EGT) or,
// as the guide suggests, in a blob.
// A DataSeries is safe for concurrent use.
type DataSeries[V SeriesNumber] struct {
	t        *Table[entity.Entity]
	slots    int
	prefix   string
	width    int
	attempts int
	edm      entity.EDMType
}

// Series is a whole data series as read by Get.
type Series[V SeriesNumber] struct {
	PartitionKey string
	RowKey       string
	// ETag is the entity's version when it was read.
	ETag string
	// Values holds one value per slot; slots never written are zero.
	Values []V
}

// maxSeriesSlots is the most slots a series has: an entity's 252
// properties less the one that holds Add's write-id log
// (wire.UpdateLogProperty).
const maxSeriesSlots = entity.MaxProperties - 1

// NewDataSeries returns the data series repository of table name with
// slots slots per series. More than 251 slots is an error
// wrapping tablekit.ErrInvalidEntity that points to WideEntities. It
// makes no request; call CreateIfNotExists to create the table.
func NewDataSeries[V SeriesNumber](acct *tablekit.Account, name string, slots int, opts *DataSeriesOptions) (*DataSeries[V], error) {
	o := optsOf(opts)
	if o.Prefix == "" {
		o.Prefix = "S"
	}
	if slots < 1 {
		return nil, tkerr.Errorf("tablekit: data series %s: %w: %d slots; a series needs at least one", name, tablekit.ErrInvalidEntity, slots)
	}
	if slots > maxSeriesSlots {
		return nil, tkerr.Errorf("tablekit: data series %s: %w: %d slots do not fit one entity (at most %d properties, one of them Add's write-id log); store the series as a wide entity (NewWideEntities) or in a blob",
			name, tablekit.ErrInvalidEntity, slots, entity.MaxProperties)
	}
	if !seriesIdentifier(o.Prefix) {
		return nil, tkerr.Errorf("tablekit: data series %s: %w: slot prefix %q is not a C# identifier", name, tablekit.ErrInvalidEntity, o.Prefix)
	}
	var to TableOptions
	if o.Table != nil {
		to = *o.Table
	}
	if to.MaxAttempts <= 0 {
		to.MaxAttempts = 64
	}
	t, err := NewTable[entity.Entity](acct, name, &to)
	if err != nil {
		return nil, err
	}
	var edm entity.EDMType
	switch reflect.TypeFor[V]().Kind() {
	case reflect.Int32:
		edm = entity.EdmInt32
	case reflect.Int64:
		edm = entity.EdmInt64
	default:
		edm = entity.EdmDouble
	}
	return &DataSeries[V]{t: t, slots: slots, prefix: o.Prefix, width: len(fmt.Sprint(slots - 1)), attempts: to.MaxAttempts, edm: edm}, nil
}

// Table is the underlying table of dynamic entities.
func (d *DataSeries[V]) Table() *Table[entity.Entity] { return d.t }

// CreateIfNotExists creates the table; an existing one is not an error.
// One request.
func (d *DataSeries[V]) CreateIfNotExists(ctx context.Context, opts *CreateOptions) error {
	return d.t.CreateIfNotExists(ctx, opts)
}

// Slots is the number of slots of a series.
func (d *DataSeries[V]) Slots() int { return d.slots }

// Property returns the property name of slot i.
func (d *DataSeries[V]) Property(i int) string {
	return d.prefix + keys.PadUint(uint64(max(i, 0)), d.width)
}

func (d *DataSeries[V]) checkSlot(i int) error {
	if i < 0 || i >= d.slots {
		return tkerr.Errorf("tablekit: data series %s: %w: slot %d is outside 0..%d", d.t.name, tablekit.ErrInvalidArgument, i, d.slots-1)
	}
	return nil
}

func (d *DataSeries[V]) value(v V) entity.Value {
	switch d.edm {
	case entity.EdmInt32:
		return entity.Int32(int32(v))
	case entity.EdmInt64:
		return entity.Int64(int64(v))
	}
	return entity.Double(float64(v))
}

// Upsert writes values (slot index to value) into the series (pk, rk),
// creating it when it does not exist, with one request, whatever its
// version. As on Table.Upsert, the default mode replaces the stored
// series: slots values lacks read back as zero. With UpsertMerge only
// the given slots change, the others keep their values: the usual way to
// set one slot, Upsert(ctx, pk, rk, map[int]V{i: v},
// &UpsertOptions{Mode: UpsertMerge}).
func (d *DataSeries[V]) Upsert(ctx context.Context, pk, rk string, values map[int]V, opts *UpsertOptions) error {
	e := entity.Entity{PartitionKey: pk, RowKey: rk, Properties: make(map[string]entity.Value, len(values))}
	for i, v := range values {
		if err := d.checkSlot(i); err != nil {
			return err
		}
		e.Properties[d.Property(i)] = d.value(v)
	}
	return d.t.Upsert(ctx, &e, opts)
}

// Add adds delta to slot i of the series (pk, rk) and returns the slot's
// new value. It loses no concurrent update: it reads the series and merges
// the new value conditionally on the ETag it read, reading again when
// another writer got there first, up to TableOptions.MaxAttempts times
// (default 64; UpdateOptions.MaxAttempts for this call). A series that does not exist is created. Two requests per attempt.
//
// Add applies delta exactly once, or fails with an error wrapping
// tablekit.ErrOutcomeUnknown: as Table.Update, it keeps a write-id log in
// the series' entity (UpdateLogProperty, one of its 252 properties),
// which settles a write whose response was lost.
func (d *DataSeries[V]) Add(ctx context.Context, pk, rk string, i int, delta V, opts *UpdateOptions) (V, error) {
	if err := d.checkSlot(i); err != nil {
		return 0, err
	}
	name := d.Property(i)
	var next V
	_, err := d.t.w.Modify(ctx, pk, rk, func(stored []byte) (Op, error) {
		op := Op{Type: OpInsert, PartitionKey: pk, RowKey: rk}
		next = delta
		if stored != nil {
			var cur entity.Entity
			if err := d.t.codec.Unmarshal(stored, &cur); err != nil {
				return Op{}, tkerr.Errorf("tablekit: get %s: %w", d.t.describe(pk, rk), err)
			}
			old, err := d.slotValue(&cur, name)
			if err != nil {
				return Op{}, err
			}
			op.Type, next = OpMerge, old+delta
		}
		e := entity.Entity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{name: d.value(next)}}
		var err error
		op.Entity, _, _, err = d.t.marshal(&e)
		return op, err
	}, &wire.ModifyOptions{MaxAttempts: updateAttempts(opts, d.attempts), Verb: "add to"})
	if err != nil {
		return 0, err
	}
	return next, nil
}

// Get reads the whole series (pk, rk): one request. It fails with
// tablekit.ErrNotFound when the series does not exist.
func (d *DataSeries[V]) Get(ctx context.Context, pk, rk string, opts *GetOptions) (Series[V], error) {
	e, err := d.t.Get(ctx, pk, rk, opts)
	if err != nil {
		return Series[V]{}, err
	}
	s := Series[V]{PartitionKey: pk, RowKey: rk, ETag: e.ETag, Values: make([]V, d.slots)}
	for i := range s.Values {
		if s.Values[i], err = d.slotValue(&e, d.Property(i)); err != nil {
			return Series[V]{}, err
		}
	}
	return s, nil
}

// Delete removes the series s names, as Table.Delete does: conditional on
// s.ETag unless opts say otherwise; tablekit.ErrNotFound when it does not
// exist, tablekit.ErrPreconditionFailed when it changed since it was
// read. One request.
func (d *DataSeries[V]) Delete(ctx context.Context, s *Series[V], opts *WriteOptions) error {
	if s == nil {
		return tkerr.Errorf("tablekit: data series %s: %w: nil *Series", d.t.name, tablekit.ErrInvalidArgument)
	}
	if err := validateKeys(s.PartitionKey, s.RowKey); err != nil {
		return err
	}
	etag, err := condition(s.ETag, opts, d.t.describe(s.PartitionKey, s.RowKey))
	if err != nil {
		return err
	}
	return d.t.ops().deleteKeys(ctx, s.PartitionKey, s.RowKey, etag)
}

// slotValue converts a stored slot to V; an absent slot is zero.
func (d *DataSeries[V]) slotValue(e *entity.Entity, name string) (V, error) {
	p, ok := e.Properties[name]
	if !ok {
		return 0, nil
	}
	var f float64
	switch x := p.V.(type) {
	case int32:
		f = float64(x)
	case int64:
		if d.edm != entity.EdmDouble {
			return d.fitInt(x, name, e)
		}
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, tkerr.Errorf("tablekit: data series %s (PartitionKey %q, RowKey %q): %w: property %s is %s, not a number",
			d.t.name, e.PartitionKey, e.RowKey, tablekit.ErrInvalidEntity, name, p.Type)
	}
	if d.edm != entity.EdmDouble && (f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64) {
		return 0, tkerr.Errorf("tablekit: data series %s (PartitionKey %q, RowKey %q): %w: property %s holds %v, which is not an integer of the series' type",
			d.t.name, e.PartitionKey, e.RowKey, tablekit.ErrInvalidEntity, name, f)
	}
	if d.edm == entity.EdmDouble {
		return V(f), nil
	}
	return d.fitInt(int64(f), name, e)
}

func (d *DataSeries[V]) fitInt(x int64, name string, e *entity.Entity) (V, error) {
	if d.edm == entity.EdmInt32 && (x < math.MinInt32 || x > math.MaxInt32) {
		return 0, tkerr.Errorf("tablekit: data series %s (PartitionKey %q, RowKey %q): %w: property %s holds %d, which does not fit an Int32",
			d.t.name, e.PartitionKey, e.RowKey, tablekit.ErrInvalidEntity, name, x)
	}
	return V(x), nil
}

// seriesIdentifier reports whether s is a C# identifier in ASCII: a letter or
// '_', then letters, digits or '_' (property names must be).
func seriesIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

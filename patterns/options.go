package patterns

import (
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// The per-call options of the contract (see the package documentation):
// every method that does I/O takes one of these last, and nil means the
// defaults. Those without fields today exist so that a method can grow an
// option without changing its signature, as the Azure SDK's do.

// CreateOptions modifies CreateIfNotExists. It has no fields yet; pass nil.
type CreateOptions struct{}

// GetOptions modifies a read of one item (Get, Lookup, Members, GetLazy).
// It has no fields yet; pass nil.
type GetOptions struct{}

// InsertOptions modifies an Insert (or LogTail.Append). It has no fields
// yet; pass nil.
type InsertOptions struct{}

// DropOptions configures a call that deletes whole tables (Table.Drop,
// PeriodTables.Drop and DropBefore). It has no fields yet; pass nil.
type DropOptions struct{}

// DeleteIfExistsOptions configures Table.DeleteIfExists. It has no fields
// yet; pass nil.
type DeleteIfExistsOptions struct{}

// SubmitOptions configures the submission of an entity group transaction
// (Transaction.Submit, MixedTransaction.Submit, Table.SubmitOps). It has
// no fields yet; pass nil.
type SubmitOptions struct{}

// FlushOptions configures BlobLog.Flush and BlobLog.Close. It has no
// fields yet; pass nil.
type FlushOptions struct{}

// RefreshOptions configures EventualDenormalization.Refresh. It has no
// fields yet; pass nil.
type RefreshOptions struct{}

// LatestOptions configures LogTail.Latest. It has no fields yet; pass nil.
type LatestOptions struct{}

// ListOptions configures PeriodTables.List. It has no fields yet; pass
// nil.
type ListOptions struct{}

// UpsertOptions modifies an Upsert. A nil *UpsertOptions means
// UpsertReplace.
type UpsertOptions struct {
	// Mode is what the upsert does to an existing entity: UpsertReplace
	// (the default) or UpsertMerge.
	Mode UpsertMode
}

// UpdateOptions modifies a read-modify-write (Update, UpdateSource,
// UpdateTarget, DataSeries.Add). A nil *UpdateOptions means the defaults.
type UpdateOptions struct {
	// MaxAttempts bounds this call's attempts on ETag conflicts; zero
	// means TableOptions.MaxAttempts.
	MaxAttempts int
}

// UpsertMode chooses what an upsert does to an existing entity; it is
// tablekit.UpsertMode, the one upsert mode of tablekit (BulkOptions and
// the consistency package's upsert-entity step take it too).
type UpsertMode = tablekit.UpsertMode

const (
	// UpsertReplace replaces an existing entity (insert-or-replace).
	UpsertReplace = tablekit.UpsertReplace
	// UpsertMerge merges into an existing entity (insert-or-merge).
	UpsertMerge = tablekit.UpsertMerge
)

// upsertMode returns the mode opts ask for, refusing an invalid one.
func upsertMode(opts *UpsertOptions) (UpsertMode, error) {
	if opts == nil {
		return UpsertReplace, nil
	}
	if !opts.Mode.Valid() {
		return 0, tkerr.Errorf("tablekit: upsert: %w: mode %v is neither UpsertReplace nor UpsertMerge", tablekit.ErrInvalidArgument, opts.Mode)
	}
	return opts.Mode, nil
}

// updateAttempts returns the attempts opts ask for, or def.
func updateAttempts(opts *UpdateOptions, def int) int {
	if opts != nil && opts.MaxAttempts > 0 {
		return opts.MaxAttempts
	}
	return def
}

// BucketedOptions configures a Bucketed. Nil means the defaults.
type BucketedOptions struct {
	// Table configures the underlying Table.
	Table *TableOptions
}

// ListIndexedTableOptions configures a ListIndexedTable. Nil means the
// defaults.
type ListIndexedTableOptions struct {
	// Table configures the underlying Table.
	Table *TableOptions
}

// BlobIndexedTableOptions configures a BlobIndexedTable. Nil means the
// defaults.
type BlobIndexedTableOptions struct {
	// Table configures the underlying Table.
	Table *TableOptions
}

// MixedTableOptions configures a MixedTable. Nil means the defaults.
type MixedTableOptions struct {
	// Table configures the underlying table: the transport (SDKPath) and
	// the read-modify-write attempts; the registry's codecs hold the codec
	// options.
	Table *TableOptions
}

// WideEntitiesOptions configures a WideEntities. Nil means the defaults.
type WideEntitiesOptions struct {
	// Table configures the underlying table: the transport (SDKPath) and
	// the read-modify-write attempts.
	Table *TableOptions
}

// CompoundKeysOptions configures a CompoundKeys. Nil means the defaults.
type CompoundKeysOptions struct {
	// Table configures the underlying Table.
	Table *TableOptions
}

// optsOf returns *opts, or the zero options when opts is nil: a nil
// options pointer means the defaults everywhere.
func optsOf[O any](opts *O) O {
	if opts == nil {
		var zero O
		return zero
	}
	return *opts
}

// ReadOptions configures BlobLog.Read. It has no fields yet; pass nil.
type ReadOptions struct{}

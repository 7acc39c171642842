// Package patterns holds tablekit's typed repositories: Table[T], the base
// of all of them, and one repository per pattern of the Azure Table storage
// design guide.
//
// # Start here
//
// Table[T] stores a Go struct T as entities (encoded by the entity
// package), with optimistic concurrency on T's ETag field, a read-modify-
// write loop (Update), queries classified as the guide ranks them
// (point, range, partition scan; table scans only with AllowTableScan),
// resumable pages (Page, with an opaque URL-safe token), strict entity
// group transactions (Transaction, SubmitOps) and a bulk writer
// (BulkWrite) that groups by partition and splits at 100 operations and
// 4 MiB. MixedTable reads and writes several entity types in one table
// ("Work with heterogeneous entity types") through an entity.Registry.
//
// Every Table[T] operation talks REST through the account's azcore
// pipeline (tablekit.TableHTTP) and decodes pages straight into T; the
// SDK path (TableOptions.SDKPath, and Cosmos DB endpoints) behaves the
// same, slower.
//
// # The patterns, by guide section
//
//   - Intra-partition secondary index pattern: IndexedTable (copies under
//     prefixed RowKeys, one transaction, optional uniqueness).
//   - Inter-partition secondary index pattern: EventualIndexedTable (copies
//     in other partitions or tables, kept by the consistency worker;
//     Rebuild, Verify, Repair).
//   - Index entities pattern: BlobIndexedTable (option 1, a blob per
//     value), ListIndexedTable (option 2, same-partition transaction),
//     EventualListIndexedTable (option 3, kept by the worker).
//   - Denormalization pattern: Denormalization (co-located, one
//     transaction) and EventualDenormalization (targets in other
//     partitions or tables, kept by the worker's copy-props step).
//   - Compound key pattern: CompoundKeys.
//   - Log tail pattern: LogTail (inverted ticks, interleaving with .NET).
//   - High volume delete pattern: PeriodTables (a table per day or month).
//   - Data series pattern: DataSeries.
//   - Wide entities pattern: WideEntities.
//   - Large entities pattern: LargeEntities (fields tagged `table:",blob"`).
//   - Prepend/append anti-pattern: Bucketed (hot-partition spreading).
//   - Log data anti-pattern: BlobLog (logs in blobs named by time).
//   - Eventually consistent transactions pattern: package consistency.
//
// # Request budgets
//
// Each repository's documentation states how many requests each operation
// makes; the tests assert those numbers with a request counter.
//
// # Errors
//
// Errors wrap tablekit's sentinels (ErrNotFound, ErrAlreadyExists,
// ErrPreconditionFailed, ErrInvalidEntity, ErrInvalidKey, ErrTableScan,
// ErrInvalidTransaction, ...) and, for service errors, the SDK's
// *azcore.ResponseError. Bad input fails before any request.
package patterns

// Package patterns holds tablekit's typed repositories: Table[T], the base
// of all of them, and one repository per pattern of the Azure Table storage
// design guide. Every repository follows the contract below, so what you
// learn on one carries over to the next.
//
// # Start here
//
// Table[T] stores a Go struct T as entities (encoded by the entity
// package), with optimistic concurrency on T's ETag field, a
// read-modify-write loop (Update), queries classified as the guide ranks them
// (point, range, partition scan; table scans only with AllowTableScan),
// resumable pages (Page, with an opaque URL-safe token), strict entity
// group transactions (Transaction, SubmitOps), a bulk writer (BulkWrite)
// that groups by partition and splits at 100 operations and 4 MiB, and
// Count and DeleteWhere over a filter.
//
// Every repository has a runnable example (ExampleTable,
// ExampleIndexedTable, ExampleLogTail, ...) that plays the guide's own
// scenario for its pattern: connect, construct, CreateIfNotExists, write,
// read.
//
// Every repository reaches storage through one core transport: REST
// through the account's azcore pipeline (internal/tablehttp), decoding
// pages straight into T; the SDK path (TableOptions.SDKPath, and Cosmos DB
// endpoints) behaves the same, slower.
//
// # The contract
//
// Constructors. NewX(acct, name, required arguments..., opts *XOptions):
// a nil opts means the defaults, and a repository never writes into the
// caller's options. Every XOptions reaches the shared table options
// (codec, transport, MaxAttempts) through a field Table *TableOptions
// (NewTable takes the TableOptions themselves). A constructor checks its
// arguments and T's type at once (a bad tag fails here, not on the first
// write) and makes no request.
//
// Creating storage. CreateIfNotExists(ctx, opts) creates everything the
// repository uses: its tables, its blob containers and the consistency
// queue it was given (with that queue's poison queue and container). An
// existing resource is not an error, so it is safe at every start. Other
// methods create nothing, except PeriodTables, whose tables follow the
// calendar: a period's table is created by its first write.
//
// Verbs keep one meaning everywhere:
//   - Get(ctx, pk, rk, opts) returns one item, or an error wrapping
//     tablekit.ErrNotFound; Lookup(ctx, index, ..., opts) returns one item
//     through a unique index.
//   - Find and Query return many, as an iter.Seq2[T, error] (Collect
//     gathers them); Page returns one page and a token to resume from;
//     Members returns an index's []Member.
//   - Insert, Replace, Merge, Upsert and Delete take the item (a *T, or
//     the repository's item type) and behave as on Table[T]: Insert fails
//     with tablekit.ErrAlreadyExists on an existing entity; Replace, Merge
//     and Delete are conditional on the item's ETag
//     (tablekit.ErrPreconditionFailed when it is stale) unless
//     WriteOptions say otherwise (Unconditional, or another ETag);
//     Upsert writes whatever the stored version, replacing unless
//     UpsertOptions.Mode is UpsertMerge. A repository offers the verbs its
//     pattern allows: a merge that would break a pattern's layout (a wide
//     or large entity) is refused with tablekit.ErrInvalidArgument.
//   - Update(ctx, pk, rk, fn, opts) reads, applies fn and writes
//     conditionally, starting over on a concurrent change, up to
//     TableOptions.MaxAttempts (or UpdateOptions.MaxAttempts) times.
//
// Keys. A key has the same form in every method of a repository: the
// RowKey Insert stored is the RowKey Get, Update and Delete take, and an
// IndexedTable's primary prefix takes it too in Lookup, Find, Prefix and
// Between.
//
// Options on I/O. Every method that does I/O takes ctx first. Those that
// create storage or read or write items take a pointer to options last,
// nil meaning the defaults, as the Azure SDK's methods do: CreateOptions,
// GetOptions, InsertOptions, WriteOptions, UpsertOptions, UpdateOptions,
// QueryOptions (and BulkOptions, WhereOptions, MaintenanceOptions,
// RelatedOptions). Those without fields yet are there so that a method
// can grow without a new signature. Every other method that takes a ctx
// takes its options last too: DropOptions (Table.Drop, PeriodTables' Drop
// and DropBefore), DeleteIfExistsOptions, SubmitOptions (the transactions'
// Submit, SubmitOps), FlushOptions (BlobLog's Flush and Close),
// ReadOptions (BlobLog.Read), GetOptions (LargeEntities.Open),
// LatestOptions, ListOptions and RefreshOptions.
//
// Reserved properties. Plain writes (Insert, Replace, Merge, Upsert,
// Delete, BulkWrite, Transaction, SubmitOps) store exactly the caller's
// entity. Every property tablekit adds elsewhere starts with
// ReservedPrefix ("Tk"): the write-id log TkUpdates of the
// read-modify-writes it owns (Update and the patterns' updates; off with
// TableOptions.NoUpdateLog), a wide entity's TkChunks, the index
// patterns' TkPrimaryPK, TkPrimaryRK, TkCopies, TkIntent and TkList*. A
// type with a property of that prefix is refused by its constructor.
// docs/PROPERTIES.md lists each, on which operations and why, and how a
// plain write's lost answer is settled.
//
// One upsert mode. UpsertMode (tablekit.UpsertMode) is the one way to say
// replace or merge: UpsertOptions, BulkOptions and the consistency
// package's upsert-entity step take it.
//
// Errors. Every error wraps at most one of tablekit's sentinels; test them
// with errors.Is. An argument refused before any request wraps
// tablekit.ErrInvalidArgument (or a more specific sentinel that unwraps to
// it: ErrInvalidKey, ErrInvalidName, ErrInvalidFilter,
// ErrInvalidTransaction, ErrInvalidToken); a table scan without opt-in
// wraps tablekit.ErrTableScan; an entity that breaks a data-model rule
// wraps tablekit.ErrInvalidEntity. A request the service refused is a
// *tablekit.ServiceError (or *tablekit.TransactionError, naming the
// failing operation) that unwraps to its sentinel (ErrNotFound,
// ErrAlreadyExists, ErrPreconditionFailed, ErrBadRequest for a 400, ...)
// and to the SDK's *azcore.ResponseError. A write is applied once, or the
// error wraps tablekit.ErrOutcomeUnknown: its response was lost and
// reading back could not tell whether it landed.
//
// Requests. Each repository's documentation states how many requests each
// operation makes; the tests assert those numbers with a request counter.
//
// Throttling. Retries of transient failures are azcore's, with one
// exception: the bulk jobs (BulkWrite, BulkWriteSeq, DeleteWhere) see the
// service's throttling answers (503 ServerBusy, 500 OperationTimedOut,
// Cosmos DB's 429) themselves and adapt their pace to them, up to
// BulkOptions.Concurrency (WhereOptions.Concurrency) in flight: after such
// an answer, fewer transactions in flight and, below a few, a paced rate
// in entities per second for the account and for partitions (a partition's
// first transaction leaves at once), with a pause (the service's
// retry-after, exactly, else from 50 ms); faster again while the service
// keeps up. A throttled transaction is resent until applied, and never
// applied twice; BulkResult.Throttled and WhereResult.Throttled count the
// answers.
//
// # One entity, several patterns
//
// Model is one repository for one type and the guide's patterns that
// derive from it, declared as Views beside the struct: indexes in the
// entity's partition and log tails (Tail), written in the entity's entity
// group transaction; indexes in other partitions or tables, kept by the
// consistency worker; fields tagged `table:"F,blob"` in Blob storage.
// Every write of the Model keeps every view, Archive moves an entity with
// its views through the worker, and Verify and Repair cover every view.
// A per-pattern repository below is the easy way in for one pattern.
//
// # Queries and transactions ("Design for querying", "Entity group transactions")
//
// Table[T]: Get, Query, Page, Count, Transaction, SubmitOps, BulkWrite,
// DeleteWhere. Filters are keys.Filter trees; every query is classified as
// a point query, a range query, a partition scan or a table scan.
//
// # Whole tables
//
// Table.Scan reads a whole table, or any filter, as key ranges read
// concurrently (ScanOptions.Parallel), the shape DynamoDB users know as
// Segment/TotalSegments, without knowing the keys in advance: Azure has
// no split API, so ranges are split while they run, by PartitionKey and
// inside one partition by RowKey, where probes find keys: each probe reads
// the first page of the range it would start, so a new range starts with
// its first page in hand (SplitScan's probes ask for one key, $top=1).
// Every row comes once; rows of different ranges come in no
// particular order. ScanProgress.Token resumes a scan that stopped. Count,
// DeleteWhere and the indexes' Rebuild, Verify and Repair read table
// scans through it. On Cosmos DB, whose results are unsorted, a scan is
// one sequential range.
//
// # Heterogeneous entity types ("Work with heterogeneous entity types")
//
// MixedTable reads and writes several entity types in one table through an
// entity.Registry that names each row's type; MixedTable.Transaction
// writes several of them in one entity group transaction. A Table[T] over
// such a table refuses filters on properties T lacks unless
// QueryOptions.AllowUnknownProperties is set.
//
// # Secondary indexes
//
//   - Intra-partition secondary index pattern: IndexedTable (copies under
//     prefixed RowKeys, written in one transaction, optionally unique).
//   - Inter-partition secondary index pattern: EventualIndexedTable (copies
//     in other partitions or tables, kept by the consistency worker).
//   - Index entities pattern: BlobIndexedTable (option 1, a blob per
//     value), ListIndexedTable (option 2, same-partition transaction),
//     EventualListIndexedTable (option 3, kept by the worker).
//
// Every index repository has Rebuild (backfill an index added to existing
// data), Verify (report missing, stale and orphaned entries in an
// IndexReport, writing nothing) and Repair (fix them through the
// repository's own write path, skipping what a concurrent write wins),
// all configured by MaintenanceOptions.
//
// # Related data
//
//   - Denormalization pattern: Denormalization (co-located sources and
//     targets, one transaction; the target names its source, and
//     DenormalizationOptions.Link and Unlink keep the sources' lists in
//     step) and EventualDenormalization (targets in other partitions or
//     tables, kept by the worker's copy-props step). Either may find the
//     targets with a query instead of a list ("every employee of this
//     department"): DenormalizationOptions.TargetsWhere, at most 99 per
//     transaction, and NewEventualDenormalizationWhere, queried by the
//     worker when it applies the change.
//   - Compound key pattern: CompoundKeys (RowKeys such as
//     "empid_000123_2012" built from a template; related rows in one range
//     query).
//
// # Time-ordered data
//
//   - Log tail pattern: LogTail (inverted-ticks RowKeys, interleaving with
//     .NET's; Latest n in one request, Range over [from, to)).
//   - High volume delete pattern: PeriodTables (a table per hour, day or
//     month; dropping a period is one request).
//   - Prepend/append anti-pattern: Bucketed (a stream spread over several
//     partitions, read back merged).
//   - Log data anti-pattern: BlobLog (log records in blobs named by time,
//     written in batches).
//
// # Entity shape
//
//   - Data series pattern: DataSeries (one entity, one property per slot).
//   - Wide entities pattern: WideEntities (a logical entity over several
//     physical ones, written in one transaction).
//   - Large entities pattern: LargeEntities (fields tagged `table:",blob"`
//     stored in Blob storage, referenced from the entity).
//
// # Across partitions
//
// The eventually consistent transactions pattern lives in package
// consistency: queue messages of idempotent steps, carried out by a worker.
// EventualIndexedTable, EventualListIndexedTable, EventualDenormalization
// and LargeEntities (with a Queue) enqueue their steps there.
package patterns

// Package tablekit is a toolkit for Azure Table storage in Go: typed
// repositories over the official Azure SDK (aztables, azqueue, azblob) for
// every pattern of Microsoft's Table storage design guide, a queue worker
// for the guide's eventually consistent transactions, and the errors,
// limits and credentials all of them share.
//
// This package holds what every other package needs: the Account (one
// connection to a storage account's table, queue and blob endpoints, from
// a connection string, a shared key or an azcore.TokenCredential), the
// sentinel errors every error of tablekit wraps, MapError for raw SDK
// calls made beside tablekit, Redact for credentials in any text,
// RequestCounter, SAS helpers, and UpsertMode.
//
// The packages:
//   - patterns: Table[T], the typed base, and one repository per pattern
//     of the design guide (secondary indexes, index entities,
//     denormalization, compound keys, log tails, tables per period, data
//     series, wide and large entities, bucketed streams, logs in blobs).
//     Every repository follows one contract, stated in its documentation.
//   - entity: the codec between Go structs and entities, which keeps every
//     EDM type (an int64 stays an Int64, a time.Time a DateTime).
//   - keys: key encodings (inverted ticks, compound keys, buckets, periods)
//     and typed filters, each query classified as the guide ranks them.
//   - consistency: queue messages of idempotent steps and the worker that
//     carries them out (cmd tablekit-worker).
//   - integration/azurite: Azurite for tests, with a strict mode that
//     refuses what Azure refuses.
//
// A first program:
//
//	acct, err := tablekit.Connect(tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), nil)
//	if err != nil { ... }
//	employees, err := patterns.NewTable[Employee](acct, "Employees", nil)
//	if err != nil { ... }
//	if err := employees.CreateIfNotExists(ctx, nil); err != nil { ... }
//	if err := employees.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123", Name: "Jun Cao"}, nil); err != nil { ... }
//	e, err := employees.Get(ctx, "Sales", "000123", nil)
//
// Errors. Test errors with errors.Is against the sentinels: ErrNotFound,
// ErrAlreadyExists, ErrPreconditionFailed and ErrBadRequest for the
// service's answers (a *ServiceError or *TransactionError, which also
// unwraps to the SDK's *azcore.ResponseError); ErrInvalidArgument for an
// argument refused before any request; ErrOutcomeUnknown when a write's
// response was lost and reading back could not tell whether it landed.
// No error, log line or metric carries an account key or a SAS signature.
//
// Targets. tablekit checks Azure's limits before sending, so what passes
// on Azurite passes on Azure; Cosmos DB's Table API endpoints are detected
// and checked against their own rules (docs/COSMOS.md).
package tablekit

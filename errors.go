package tablekit

import "github.com/tablekit/tablekit/internal/errs"

// The errors are defined in internal/errs, below the client's core that
// returns them, and handed on here under the same names: the types are
// aliases, so errors.Is and errors.As see the very values and types the
// core returns.

// Sentinel errors. Every error tablekit returns wraps at most one of them;
// test with errors.Is. Service errors also unwrap to the SDK's
// *azcore.ResponseError (use errors.As).
var (
	// ErrNotFound: the entity, table, queue, container or blob does not exist (404).
	ErrNotFound = errs.ErrNotFound
	// ErrAlreadyExists: an insert or create met an existing entity or resource (409).
	ErrAlreadyExists = errs.ErrAlreadyExists
	// ErrPreconditionFailed: the ETag given as If-Match is stale (412).
	ErrPreconditionFailed = errs.ErrPreconditionFailed
	// ErrConflict: another 409, such as a table that is still being deleted.
	ErrConflict = errs.ErrConflict
	// ErrBadRequest: the service rejected the request as invalid (400,
	// 413). Arguments tablekit refuses itself wrap ErrInvalidArgument
	// instead.
	ErrBadRequest = errs.ErrBadRequest
	// ErrAuthorization: authentication or authorization failed (401, 403).
	ErrAuthorization = errs.ErrAuthorization
	// ErrUnavailable: the service was busy or failing (408, 429, 5xx), or
	// could not be reached (the connection was reset, refused or timed
	// out), after azcore's retries gave up.
	ErrUnavailable = errs.ErrUnavailable
	// ErrTableScan: a query would scan the whole table and the caller did
	// not opt in (the guide ranks table scans last).
	ErrTableScan = errs.ErrTableScan
	// ErrUnsortedResults: the call needs query results in PartitionKey,
	// RowKey order, and the table's service does not return them so (the
	// Azure Cosmos DB Table API; see docs/COSMOS.md). Refused before any
	// request. It is not an ErrInvalidArgument: the same call works on
	// Azure Table storage.
	ErrUnsortedResults = errs.ErrUnsortedResults
	// ErrInvalidArgument: an argument was refused before any request was
	// sent (a slot out of range, a page size over 1000, a missing
	// function); it never comes from the service, whose 400 is
	// ErrBadRequest. The more specific ErrInvalidKey, ErrInvalidName,
	// ErrInvalidFilter, ErrInvalidTransaction, ErrInvalidToken,
	// ErrInvalidConnectionString and ErrInvalidSAS unwrap to it, so one
	// errors.Is(err, ErrInvalidArgument) tells "my input was bad".
	// ErrInvalidEntity does not: it also reports a stored row that does
	// not decode into the destination type.
	ErrInvalidArgument = errs.ErrInvalidArgument
	// ErrInvalidTransaction: a transaction breaks an entity group
	// transaction rule (100 operations, one partition, 4 MiB, one
	// operation per entity). Checked before sending; it unwraps to
	// ErrInvalidArgument.
	ErrInvalidTransaction = errs.ErrInvalidTransaction
	// ErrInvalidToken: a continuation token is malformed or belongs to
	// another query. It unwraps to ErrInvalidArgument.
	ErrInvalidToken = errs.ErrInvalidToken
	// ErrOutcomeUnknown: a write may or may not have been applied. Its
	// response was lost (a dropped connection, a timeout, retries that met
	// the write's own first attempt) and reading the entity back could not
	// tell. The write was not repeated. Read the current state and decide;
	// retrying blindly may apply the change twice. See OutcomeUnknownError.
	ErrOutcomeUnknown = errs.ErrOutcomeUnknown

	// ErrInvalidEntity: an entity breaks a data-model rule (entity package).
	ErrInvalidEntity = errs.ErrInvalidEntity
	// ErrInvalidKey: a PartitionKey or RowKey breaks a key rule (keys package).
	ErrInvalidKey = errs.ErrInvalidKey
	// ErrInvalidName: a table, queue or container name is invalid (keys package).
	ErrInvalidName = errs.ErrInvalidName
	// ErrInvalidFilter: a filter cannot be built or parsed (keys package).
	ErrInvalidFilter = errs.ErrInvalidFilter
)

// ServiceError is a failed storage request, classified. It unwraps to its
// sentinel (when one applies) and to the SDK's *azcore.ResponseError.
//
//	type ServiceError struct {
//		Op         string // what tablekit was doing, e.g. "insert entity"
//		Resource   string // table/queue/blob name, and keys when known
//		StatusCode int
//		Code       string // the service's error code, e.g. "EntityAlreadyExists"
//		Message    string // the service's message, first line
//	}
type ServiceError = errs.ServiceError

// TransactionError reports the failed operation of an entity group
// transaction: the service applies none of the operations when one fails.
// Index is 0-based in the order the operations were submitted. It unwraps
// to the sentinel of the failing operation and to the SDK's error.
//
//	type TransactionError struct {
//		Index      int    // the failing operation, -1 when the service did not say
//		StatusCode int    // the operation's status, e.g. 409
//		Code       string // e.g. "EntityAlreadyExists"
//		Message    string
//	}
type TransactionError = errs.TransactionError

// OutcomeUnknownError is a write whose outcome tablekit could not settle:
// it may have been applied once, or not at all, never twice. It unwraps to
// ErrOutcomeUnknown and to the SDK's *azcore.ResponseError; when the last
// failure was transient or a cancelled context, it unwraps to that failure
// too (IsTransient and errors.Is(err, context.Canceled) still work). It
// never unwraps to ErrAlreadyExists, ErrPreconditionFailed or ErrNotFound:
// those would claim the write failed.
//
//	type OutcomeUnknownError struct {
//		Op       string // what tablekit was doing, e.g. "update"
//		Resource string // table and keys
//		Err      error  // the last failure seen
//	}
type OutcomeUnknownError = errs.OutcomeUnknownError

// NewOutcomeUnknown returns an *OutcomeUnknownError for op on resource
// after the failure err.
func NewOutcomeUnknown(op, resource string, err error) error {
	return errs.NewOutcomeUnknown(op, resource, err)
}

// IsNotFound reports whether err means "does not exist".
func IsNotFound(err error) bool { return errs.IsNotFound(err) }

// IsAlreadyExists reports whether err means "already exists".
func IsAlreadyExists(err error) bool { return errs.IsAlreadyExists(err) }

// IsPreconditionFailed reports whether err is a stale-ETag failure.
func IsPreconditionFailed(err error) bool { return errs.IsPreconditionFailed(err) }

// IsTransient reports whether err is worth retrying later: throttling,
// timeouts, server errors and failures to reach the service. 4xx errors
// other than 408 and 429 are not transient.
func IsTransient(err error) bool { return errs.IsTransient(err) }

// MapError is for code that calls the SDK's clients directly beside
// tablekit (an azblob download, an aztables or azqueue call tablekit does
// not wrap): it turns their errors into tablekit's typed errors, so that
// errors.Is(err, tablekit.ErrNotFound) and the other sentinels work the
// same on both, with credentials redacted.
//
// MapError classifies an error returned by the SDK. A failure to reach
// the service (a connection reset, refused or timed out, a truncated
// answer) becomes an error that is ErrUnavailable and unwraps to it. Other
// errors that are not *azcore.ResponseError are returned unchanged (nil
// stays nil), unless their text holds a credential: then they are wrapped
// with that text redacted. op and resource label the error, e.g. ("insert entity",
// "employees PK=Sales RK=1"); labels and the service's message go through
// Redact, so a label holding a SAS URL shows no signature.
// A batch failure (status 202 with the inner response in the body) becomes
// a *TransactionError.
func MapError(err error, op, resource string) error { return errs.MapError(err, op, resource) }

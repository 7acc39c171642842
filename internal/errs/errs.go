// Package errs defines the errors that every tablekit package shares: the
// sentinels, the typed errors (*ServiceError, *TransactionError,
// *OutcomeUnknownError) and MapError, which turns the SDK's errors into
// them.
//
// Users read them in the root package, which re-exports each one under
// the same name (its types are aliases of these, so errors.Is and
// errors.As see one and the same error). They are defined here, below
// the client's core, because the core (internal/wire) returns them and
// the root package imports the core's transport: defined in the root
// package, they would tie the two into a loop.
package errs

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/keys"
)

// The sentinels. Their documentation is the root package's, where users
// read them.
var (
	ErrNotFound           = errors.New("tablekit: not found")
	ErrAlreadyExists      = errors.New("tablekit: already exists")
	ErrPreconditionFailed = errors.New("tablekit: precondition failed (stale ETag)")
	ErrConflict           = errors.New("tablekit: conflict")
	ErrBadRequest         = errors.New("tablekit: bad request")
	ErrAuthorization      = errors.New("tablekit: not authorized")
	ErrUnavailable        = errors.New("tablekit: service unavailable")
	ErrTableScan          = errors.New("tablekit: query is a table scan; set AllowTableScan to run it")
	ErrUnsortedResults    = errors.New("tablekit: the service does not return query results in PartitionKey, RowKey order")
	ErrInvalidArgument    = keys.ErrInvalidArgument
	ErrInvalidTransaction = keys.NewArgumentSentinel("tablekit: invalid transaction")
	ErrInvalidToken       = keys.NewArgumentSentinel("tablekit: invalid continuation token")
	ErrOutcomeUnknown     = errors.New("tablekit: outcome unknown (the write may have been applied)")
	ErrInvalidEntity      = entity.ErrInvalidEntity
	ErrInvalidKey         = keys.ErrInvalidKey
	ErrInvalidName        = keys.ErrInvalidName
	ErrInvalidFilter      = keys.ErrInvalidFilter
)

// ServiceError is a failed storage request, classified. It unwraps to its
// sentinel (when one applies) and to the SDK's *azcore.ResponseError.
type ServiceError struct {
	Op         string // what tablekit was doing, e.g. "insert entity"
	Resource   string // table/queue/blob name, and keys when known
	StatusCode int
	Code       string // the service's error code, e.g. "EntityAlreadyExists"
	Message    string // the service's message, first line
	sentinel   error
	resp       *azcore.ResponseError
}

func (e *ServiceError) Error() string {
	var b strings.Builder
	b.WriteString("tablekit: ")
	if what := strings.TrimSpace(e.Op + " " + e.Resource); what != "" {
		b.WriteString(what)
		b.WriteString(": ")
	}
	writeAnswer(&b, e.StatusCode, e.Code, e.Message)
	return b.String()
}

// writeAnswer writes the service's answer as the errors show it:
// "409 EntityAlreadyExists: The specified entity already exists.", without
// the code or the message when the service gave none.
func writeAnswer(b *strings.Builder, status int, code, message string) {
	b.WriteString(strconv.Itoa(status))
	if code != "" {
		b.WriteString(" ")
		b.WriteString(code)
	}
	if message != "" {
		b.WriteString(": ")
		b.WriteString(message)
	}
}

// Unwrap returns the sentinel and the SDK error.
func (e *ServiceError) Unwrap() []error { return unwrapPair(e.sentinel, e.resp) }

// unwrapPair is what an error of the service wraps: its sentinel and the
// SDK's error, each when there is one.
func unwrapPair(sentinel error, resp *azcore.ResponseError) []error {
	errs := make([]error, 0, 2)
	if sentinel != nil {
		errs = append(errs, sentinel)
	}
	if resp != nil {
		errs = append(errs, resp)
	}
	return errs
}

// TransactionError reports the failed operation of an entity group
// transaction: the service applies none of the operations when one fails.
// Index is 0-based in the order the operations were submitted.
type TransactionError struct {
	Index      int    // the failing operation, -1 when the service did not say
	StatusCode int    // the operation's status, e.g. 409
	Code       string // e.g. "EntityAlreadyExists"
	Message    string
	sentinel   error
	resp       *azcore.ResponseError
}

func (e *TransactionError) Error() string {
	var b strings.Builder
	b.WriteString("tablekit: transaction failed at operation ")
	b.WriteString(strconv.Itoa(e.Index))
	b.WriteString(": ")
	writeAnswer(&b, e.StatusCode, e.Code, e.Message)
	b.WriteString(" (no operation was applied)")
	return b.String()
}

// Unwrap returns the sentinel of the failing operation and the SDK error.
func (e *TransactionError) Unwrap() []error { return unwrapPair(e.sentinel, e.resp) }

// IsNotFound reports whether err means "does not exist".
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsAlreadyExists reports whether err means "already exists".
func IsAlreadyExists(err error) bool { return errors.Is(err, ErrAlreadyExists) }

// IsPreconditionFailed reports whether err is a stale-ETag failure.
func IsPreconditionFailed(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// IsTransient reports whether err is worth retrying later: throttling,
// timeouts, server errors and failures to reach the service. 4xx errors
// other than 408 and 429 are not transient.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return transientStatus(re.StatusCode)
	}
	var te *TransactionError
	if errors.As(err, &te) {
		return transientStatus(te.StatusCode)
	}
	// Errors that never reached a response: connection resets, timeouts,
	// refused connections (not the caller's own cancellation).
	return unreachable(err)
}

// unreachable reports whether err is a failure to reach the service or to
// read its answer: a reset, refused or timed-out connection, a truncated
// response. The caller's own cancellation is not one.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

// unreachableError is a request that got no answer after azcore's retries
// (see unreachable): it is ErrUnavailable, and unwraps to its cause.
type unreachableError struct {
	op, resource string
	err          error
}

func (e *unreachableError) Error() string {
	return "tablekit: " + strings.TrimSpace(e.op+" "+e.resource) + ": service unreachable: " + e.err.Error()
}

func (e *unreachableError) Unwrap() []error { return []error{ErrUnavailable, e.err} }

func transientStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

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
func MapError(err error, op, resource string) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		if unreachable(err) && !errors.Is(err, ErrUnavailable) {
			return &unreachableError{op: redact.Redact(op), resource: redact.Redact(resource), err: redact.Error(err)}
		}
		return redact.Error(err)
	}
	if re.StatusCode == http.StatusAccepted && re.RawResponse != nil {
		if body, perr := runtime.Payload(re.RawResponse); perr == nil {
			if te := parseTransactionError(body); te != nil {
				te.resp = re
				return te
			}
		}
	}
	se := &ServiceError{Op: redact.Redact(op), Resource: redact.Redact(resource), StatusCode: re.StatusCode, Code: re.ErrorCode, resp: re}
	if re.RawResponse != nil {
		if body, perr := runtime.Payload(re.RawResponse); perr == nil {
			code, msg := parseODataError(body)
			if se.Code == "" {
				se.Code = code
			}
			se.Message = redact.Redact(msg)
		}
	}
	se.sentinel = sentinelFor(se.StatusCode, se.Code)
	return se
}

func sentinelFor(status int, code string) error {
	switch status {
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		if strings.HasSuffix(code, "AlreadyExists") {
			return ErrAlreadyExists
		}
		return ErrConflict
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusLengthRequired, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return ErrBadRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrAuthorization
	}
	if transientStatus(status) {
		return ErrUnavailable
	}
	return nil
}

// parseTransactionError reads a batch response body and returns the
// failure it reports, or nil when every operation succeeded (or the body
// is not a batch response). The service answers a failed entity group
// transaction with one inner response: its status line, and an OData error
// whose message starts with "N:", N the 0-based index of the failing
// operation.
func parseTransactionError(body []byte) *TransactionError {
	// Find the first inner HTTP status line that is not a success.
	rest := body
	for {
		i := bytes.Index(rest, []byte("HTTP/1.1 "))
		if i < 0 {
			return nil
		}
		rest = rest[i+len("HTTP/1.1 "):]
		if len(rest) < 3 {
			return nil
		}
		status, err := strconv.Atoi(string(rest[:3]))
		if err != nil || status < 400 {
			continue
		}
		te := &TransactionError{Index: -1, StatusCode: status}
		if j := bytes.IndexByte(rest, '{'); j >= 0 {
			code, msg := parseODataError(rest[j:])
			te.Code = code
			if k := strings.IndexByte(msg, ':'); k > 0 {
				if n, err := strconv.Atoi(msg[:k]); err == nil {
					te.Index = n
					msg = msg[k+1:]
				}
			}
			te.Message = redact.Redact(firstLine(msg))
		}
		te.sentinel = sentinelFor(status, te.Code)
		return te
	}
}

// parseODataError extracts code and message from a JSON error body
// ({"odata.error":{"code":..,"message":{"value":..}}}) or an XML one.
func parseODataError(body []byte) (code, msg string) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		var e struct {
			OData struct {
				Code    string `json:"code"`
				Message struct {
					Value string `json:"value"`
				} `json:"message"`
			} `json:"odata.error"`
		}
		// Decode stops after the first JSON value: batch bodies go on
		// with boundary lines.
		if json.NewDecoder(bytes.NewReader(body)).Decode(&e) == nil {
			return e.OData.Code, firstLine(e.OData.Message.Value)
		}
		return "", ""
	}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(body, &x) == nil {
		return x.Code, firstLine(x.Message)
	}
	return "", ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// OutcomeUnknownError is a write whose outcome tablekit could not settle:
// it may have been applied once, or not at all, never twice. It unwraps to
// ErrOutcomeUnknown and to the SDK's *azcore.ResponseError; when the last
// failure was transient or a cancelled context, it unwraps to that failure
// too (IsTransient and errors.Is(err, context.Canceled) still work). It
// never unwraps to ErrAlreadyExists, ErrPreconditionFailed or ErrNotFound:
// those would claim the write failed.
type OutcomeUnknownError struct {
	Op       string // what tablekit was doing, e.g. "update"
	Resource string // table and keys
	Err      error  // the last failure seen
}

// NewOutcomeUnknown returns an *OutcomeUnknownError for op on resource
// after the failure err.
func NewOutcomeUnknown(op, resource string, err error) error {
	return &OutcomeUnknownError{Op: op, Resource: resource, Err: err}
}

func (e *OutcomeUnknownError) Error() string {
	msg := "tablekit: " + strings.TrimSpace(e.Op+" "+e.Resource) + ": outcome unknown, the write may have been applied; read the entity before retrying"
	if e.Err != nil {
		msg += " (last failure: " + e.Err.Error() + ")"
	}
	return redact.Redact(msg)
}

// Unwrap returns ErrOutcomeUnknown and, as documented on the type, the
// last failure or its SDK error.
func (e *OutcomeUnknownError) Unwrap() []error {
	errs := []error{ErrOutcomeUnknown}
	if e.Err == nil {
		return errs
	}
	if errors.Is(e.Err, ErrAlreadyExists) || errors.Is(e.Err, ErrPreconditionFailed) || errors.Is(e.Err, ErrNotFound) {
		var re *azcore.ResponseError
		if errors.As(e.Err, &re) {
			errs = append(errs, re)
		}
		return errs
	}
	return append(errs, e.Err)
}

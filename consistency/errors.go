package consistency

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
)

// Sentinel errors of the package; test with errors.Is.
var (
	// ErrPermanent marks a failure that retrying cannot fix: a malformed
	// message, an unknown step kind, invalid arguments, or a 4xx answer
	// from the service other than 408, 409-in-a-retry-loop, 412 and 429.
	// The worker moves such a transaction to the poison queue at once.
	ErrPermanent = errors.New("consistency: permanent failure")
	// ErrMalformed: a queue message is not a transaction envelope this
	// version understands. It wraps ErrPermanent.
	ErrMalformed error = &sentinel{"consistency: malformed transaction message"}
	// ErrUnknownStep: no handler is registered for a step's kind. It wraps
	// ErrPermanent.
	ErrUnknownStep error = &sentinel{"consistency: unknown step kind"}
	// ErrInvalidArgs: a step's arguments do not decode or break a rule
	// (a missing table, an invalid key). It wraps ErrPermanent.
	ErrInvalidArgs error = &sentinel{"consistency: invalid step arguments"}
	// ErrRetry marks a failure worth retrying later even though it does
	// not look transient (for example a 412 loop that ran out of attempts).
	ErrRetry = errors.New("consistency: retry later")
	// ErrLandedUnsettled: a writer's write landed, but so late that the
	// worker may have applied the transaction announcing it to the source
	// as it was before, and the follow-up that makes the worker apply it
	// again (Announcement.Landed) could not be enqueued. The write
	// succeeded; the views it keeps may miss it until a Verify and Repair
	// or the source's next write.
	ErrLandedUnsettled = errors.New("consistency: the write landed, but its late follow-up was not enqueued")
)

// sentinel is a sentinel error that also matches ErrPermanent.
type sentinel struct{ msg string }

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return ErrPermanent }

// Permanent marks err as not worth retrying: a handler returns
// Permanent(err) to send its transaction to the poison queue at once.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &markedError{err: err, mark: ErrPermanent}
}

// Retryable marks err as worth retrying even if it does not look
// transient. Retryable(nil) is nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &markedError{err: err, mark: ErrRetry}
}

type markedError struct {
	err  error
	mark error
}

func (e *markedError) Error() string   { return e.err.Error() }
func (e *markedError) Unwrap() []error { return []error{e.err, e.mark} }

// IsPermanent reports whether the worker treats err as permanent. The
// rules, in order: ErrRetry (Retryable) means retry; ErrPermanent
// (Permanent, ErrMalformed, ErrUnknownStep, ErrInvalidArgs) means
// permanent; tablekit.ErrOutcomeUnknown (a write whose response was lost
// and whose outcome the core could not settle) means retry, whatever its
// last failure was; transient errors (tablekit.IsTransient: 5xx, 408, 429,
// connection failures, timeouts) mean retry; other service answers in the
// 4xx range mean permanent (a missing table, a rejected entity); anything
// else (an unclassified error from user code) is retried until the
// dequeue limit, so that nothing is lost to a misclassification.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrRetry) {
		return false
	}
	if errors.Is(err, ErrPermanent) {
		return true
	}
	if errors.Is(err, tablekit.ErrOutcomeUnknown) {
		// A lost response the core could not settle: the message comes
		// back and the idempotent step reads the state again.
		return false
	}
	if tablekit.IsTransient(err) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != http.StatusPreconditionFailed
	}
	return false
}

// StepError is the failure of one step of a transaction.
type StepError struct {
	TxID  string // the transaction's id
	Index int    // 0-based position of the step in the transaction
	Kind  string // the step's kind
	Err   error
}

func (e *StepError) Error() string {
	return "consistency: transaction " + strconv.Quote(e.TxID) + " step " + strconv.Itoa(e.Index) +
		" (" + e.Kind + "): " + e.Err.Error()
}

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// argsError builds an ErrInvalidArgs error naming the step kind and rule.
func argsError(kind, msg string) error {
	return &wrapped{msg: "consistency: " + kind + ": " + msg, err: ErrInvalidArgs}
}

// malformed builds an ErrMalformed error.
func malformed(msg string, cause error) error {
	m := "consistency: malformed transaction message: " + msg
	if cause != nil {
		m += ": " + cause.Error()
	}
	return &wrapped{msg: m, err: ErrMalformed, cause: cause}
}

type wrapped struct {
	msg   string
	err   error
	cause error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() []error {
	if e.cause != nil {
		return []error{e.err, e.cause}
	}
	return []error{e.err}
}

// invalidArgs wraps a validation error of one argument field.
func invalidArgs(kind, field string, cause error) error {
	return &wrapped{msg: "consistency: " + kind + ": " + field + ": " + cause.Error(), err: ErrInvalidArgs, cause: cause}
}

func asServiceError(err error, target **tablekit.ServiceError) bool {
	return errors.As(err, target)
}

package wire

// Throttling. Azure Table storage answers 503 ServerBusy, or 500
// OperationTimedOut, when a partition or the account is over its target;
// Cosmos DB answers 429 with x-ms-retry-after-ms. azcore's retry policy
// retries all three after its own delays, so a caller never sees them and
// cannot slow down. BatchLimited sends a transaction with azcore's retries
// off for exactly these answers (every other retry stays azcore's) and
// hands each to a throttle.Limiter, which lowers the concurrency of the
// job, pauses, and lets the transaction go again:
//   - 503 and 429 were not applied (the service refused the request before
//     doing anything), so the transaction is sent again. The attempt
//     counter spans the resends: should a refused attempt have landed after
//     all, the resend meets it (an insert's 409) as azcore's own retry
//     would, and the read-back settles it (see Table.Batch);
//   - 500 OperationTimedOut may have been applied: it is settled by reading
//     back, and sent again only when the read-back shows it did not land.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/throttle"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// azcoreStatusCodes are the statuses azcore retries when RetryOptions
// leaves StatusCodes nil.
var azcoreStatusCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// withoutThrottleRetries returns o with throttling answers (see
// throttlingResponse) left to the caller; azcore still retries everything
// else o retries.
func withoutThrottleRetries(o policy.RetryOptions) policy.RetryOptions {
	codes := o.StatusCodes
	if codes == nil {
		codes = azcoreStatusCodes
	}
	user := o.ShouldRetry
	o.ShouldRetry = func(resp *http.Response, err error) bool {
		if resp != nil && throttlingResponse(resp) {
			return false
		}
		if user != nil {
			return user(resp, err)
		}
		// azcore's own rule: any error, or a listed status.
		return err != nil || runtime.HasStatusCode(resp, codes...)
	}
	return o
}

// throttlingResponse reports whether resp says the service is over a
// target: 503, 429, or 500 OperationTimedOut.
func throttlingResponse(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return true
	case http.StatusInternalServerError:
		return resp.Header.Get("x-ms-error-code") == "OperationTimedOut"
	}
	return false
}

// throttleKind tells what a failure says about the service's load.
type throttleKind int

const (
	notThrottled throttleKind = iota
	throttledNotApplied
	throttledMaybeApplied
)

// throttleSignal is a throttling answer: its kind, what it points at, and
// the pause the service asked for (0: none).
type throttleSignal struct {
	kind       throttleKind
	scope      throttle.Scope
	retryAfter time.Duration
}

// throttlingOf classifies err, a transaction's failure. A failed
// transaction whose failing operation was throttled (a 202 with an inner
// 503, 429 or 500 OperationTimedOut) applied nothing: it is all or nothing.
func throttlingOf(err error) throttleSignal {
	var status int
	var code, msg string
	var te *errs.TransactionError
	var se *errs.ServiceError
	inner := false
	switch {
	case errors.As(err, &te):
		status, code, msg, inner = te.StatusCode, te.Code, te.Message, true
	case errors.As(err, &se):
		status, code, msg = se.StatusCode, se.Code, se.Message
	default:
		return throttleSignal{}
	}
	s := throttleSignal{kind: throttledNotApplied}
	switch {
	case status == http.StatusServiceUnavailable:
	case status == http.StatusTooManyRequests:
		// Cosmos DB: the table's provisioned throughput is spent.
		s.scope = throttle.Account
	case status == http.StatusInternalServerError && code == "OperationTimedOut":
		if !inner {
			s.kind = throttledMaybeApplied
		}
	default:
		return throttleSignal{}
	}
	if strings.Contains(strings.ToLower(msg), "account limit") {
		// "Operations per second is over the account limit."
		s.scope = throttle.Account
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		s.retryAfter = RetryAfter(re.RawResponse.Header)
	}
	return s
}

// RetryAfter is the pause a response's headers ask for, in azcore's order
// of preference: retry-after-ms, x-ms-retry-after-ms (Cosmos DB), then
// Retry-After in seconds or as an HTTP date; 0 when none is usable.
func RetryAfter(h http.Header) time.Duration {
	for _, name := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
				return time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(at))
	}
	return 0
}

// NewLimiter returns a limiter for the transactions of one job on this
// table (a bulk write, a delete over a filter): at most ceiling in flight.
// Its pauses start at throttle.DefaultBaseDelay (50 ms), or the account's
// retry delay when shorter, not at azcore's 0.8 s: a throttling answer
// means a bucket refilling within about 100 ms, not a failing server. They
// stay within the account's MaxRetryDelay.
func (t *Table) NewLimiter(ceiling int) *throttle.Limiter {
	base := throttle.DefaultBaseDelay
	if d := t.retry.RetryDelay; d > 0 && d < base {
		base = d
	}
	return throttle.New(throttle.Options{Ceiling: ceiling, BaseDelay: base, MaxDelay: t.retry.MaxRetryDelay})
}

// BatchLimited is Batch for a job that adapts to throttling: the
// transaction waits for a slot of lim, goes without azcore's retries of
// throttling answers, and reports each answer to lim, which slows the job
// on throttling (fewer in flight, then a paced rate per account and
// partition) and pauses, and speeds it up again while the service keeps
// up. A throttled transaction is sent again until it is
// applied, refused for another reason, or ctx ends (a 503 or 429 was not
// applied; a 500 OperationTimedOut is first settled by reading back, as
// Batch settles a lost answer). It is applied once, or fails as Batch
// fails. lim counts the sends (Limiter.Sent) and the throttling answers
// (Limiter.Throttled). A nil lim is Batch.
//
// slot, when not nil, is a slot of lim the caller already holds for
// ops' partition (from Limiter.TryAcquire): the first send goes in it
// without waiting. BatchLimited answers it in every case, releasing it
// when nothing was sent.
func (t *Table) BatchLimited(ctx context.Context, ops []Op, lim *throttle.Limiter, slot *throttle.Slot) ([]Result, error) {
	if lim == nil {
		if slot != nil {
			slot.Release()
		}
		return t.Batch(ctx, ops)
	}
	if err := t.prof.ValidateTransaction(ops); err != nil {
		if slot != nil {
			slot.Release()
		}
		return nil, tkerr.Errorf("tablekit: transaction on %s: %w", t.name, err)
	}
	pk := ops[0].PartitionKey
	label := t.name + " (PartitionKey " + strconv.Quote(pk) + ")"
	ops, marked, id := markBatch(ops)
	// One counter for every send of the transaction: a resend after an
	// attempt that reached the service counts as azcore's retry would.
	wctx, tries := attempts.With(policy.WithRetryOptions(ctx, t.bulk))
	held := slot
	for {
		slot := held
		held = nil
		if slot == nil {
			var err error
			if slot, err = lim.Acquire(ctx, pk, len(ops)); err != nil {
				return nil, err
			}
		}
		before := tries.Load()
		sctx, end := t.span(wctx, "Client.SubmitTransaction")
		results, err := t.tr.batch(sctx, ops, label)
		end(err)
		if err == nil {
			slot.OK()
			if tries.Load() == 1 {
				t.clock.observeBatch(tries.First(), time.Now(), results)
			}
			return results, nil
		}
		sig := throttlingOf(err)
		switch {
		case sig.kind == notThrottled:
			if errs.IsTransient(err) {
				slot.Release()
			} else {
				slot.OK() // the service answered, in time
			}
			return t.settleBatch(ctx, ops, marked, id, tries, label, err)
		case sig.kind == throttledNotApplied || tries.Load() == before:
			// Refused, or never reached the service: send it again.
			slot.Throttled(sig.scope, sig.retryAfter)
			continue
		}
		slot.Throttled(sig.scope, sig.retryAfter)
		if ctx.Err() != nil {
			return nil, outcomeUnknown("transaction on", label, err)
		}
		switch res, v := t.batchApplied(ctx, ops, marked, id, tries.First()); v {
		case yes:
			return res, nil
		case unknown:
			return nil, outcomeUnknown("transaction on", label, err)
		}
		// It did not land: send it again.
	}
}

// PageThrottled reads one page as Page does, except that a throttling
// answer (503 ServerBusy, 429, 500 OperationTimedOut) is not retried by
// azcore: it comes back at once, with the pause the service asked for
// (0: none) and throttled true, so the caller (a parallel scan's range)
// pauses as long as the target needs rather than azcore's 0.8 s doubling,
// and knows it read at a target. Reading applies nothing, so a throttled
// page is simply asked for again.
func (t *Table) PageThrottled(ctx context.Context, q Query, pos *Continuation) (rows [][]byte, next *Continuation, retryAfter time.Duration, throttled bool, err error) {
	rows, next, err = t.Page(policy.WithRetryOptions(ctx, t.bulk), q, pos)
	if err != nil {
		if s := throttlingOf(err); s.kind != notThrottled {
			return nil, nil, s.retryAfter, true, err
		}
	}
	return rows, next, 0, false, err
}

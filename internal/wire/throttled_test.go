package wire

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/throttle"
)

func TestRetryAfterHeaders(t *testing.T) {
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"X-Ms-Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"X-Ms-Retry-After-Ms": {"12.5"}}, 12500 * time.Microsecond},
		{http.Header{"Retry-After-Ms": {"40"}, "X-Ms-Retry-After-Ms": {"250"}}, 40 * time.Millisecond},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"X-Ms-Retry-After-Ms": {"nope"}, "Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"1e300"}}, 0},
	} {
		if got := RetryAfter(tc.header); got != tc.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
	// An HTTP date in the future.
	at := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
	if got := RetryAfter(http.Header{"Retry-After": {at}}); got < 8*time.Second || got > 10*time.Second {
		t.Errorf("Retry-After %s = %v, want about 10 s", at, got)
	}
}

// answer builds a service error as the REST path maps it.
func answer(status int, code, msg string, h http.Header) error {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/devstoreaccount1/$batch", nil)
	resp := &http.Response{StatusCode: status, Header: http.Header{}, Request: req}
	for k, v := range h {
		resp.Header[k] = v
	}
	resp.Header.Set("x-ms-error-code", code)
	body := `{"odata.error":{"code":"` + code + `","message":{"lang":"en-US","value":"` + msg + `"}}}`
	resp.Body = io.NopCloser(strings.NewReader(body))
	return tablekit.MapError(runtime.NewResponseError(resp), "transaction on", "t")
}

func TestThrottlingOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		kind  throttleKind
		scope throttle.Scope
		after time.Duration
	}{
		{"503 partition", answer(503, "ServerBusy", "The server is busy.", nil), throttledNotApplied, throttle.Partition, 0},
		{"503 account", answer(503, "ServerBusy", "Operations per second is over the account limit.", nil), throttledNotApplied, throttle.Account, 0},
		{"429 cosmos", answer(429, "TooManyRequests", "Request rate is large", http.Header{"X-Ms-Retry-After-Ms": {"30"}}), throttledNotApplied, throttle.Account, 30 * time.Millisecond},
		{"500 timeout", answer(500, "OperationTimedOut", "The operation could not be completed within the permitted time.", nil), throttledMaybeApplied, throttle.Partition, 0},
		{"500 internal", answer(500, "InternalError", "", nil), notThrottled, 0, 0},
		{"409", answer(409, "EntityAlreadyExists", "", nil), notThrottled, 0, 0},
		{"not a service error", errors.New("boom"), notThrottled, 0, 0},
	} {
		s := throttlingOf(tc.err)
		if s.kind != tc.kind || s.kind != notThrottled && (s.scope != tc.scope || s.retryAfter != tc.after) {
			t.Errorf("%s: throttlingOf = %+v, want kind %v scope %v after %v", tc.name, s, tc.kind, tc.scope, tc.after)
		}
	}
}

// The bulk path's retry options leave exactly the throttling answers to
// the caller and keep azcore's other retries, and a user's ShouldRetry.
func TestWithoutThrottleRetries(t *testing.T) {
	resp := func(status int, code string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		if code != "" {
			r.Header.Set("x-ms-error-code", code)
		}
		return r
	}
	o := withoutThrottleRetries(policy.RetryOptions{})
	for _, tc := range []struct {
		resp  *http.Response
		err   error
		retry bool
	}{
		{resp(503, "ServerBusy"), nil, false},
		{resp(429, ""), nil, false},
		{resp(500, "OperationTimedOut"), nil, false},
		{resp(500, "InternalError"), nil, true},
		{resp(408, ""), nil, true},
		{resp(502, ""), nil, true},
		{resp(409, ""), nil, false},
		{resp(204, ""), nil, false},
		{nil, io.ErrUnexpectedEOF, true},
	} {
		if got := o.ShouldRetry(tc.resp, tc.err); got != tc.retry {
			status := 0
			if tc.resp != nil {
				status = tc.resp.StatusCode
			}
			t.Errorf("status %d, err %v: retry %v, want %v", status, tc.err, got, tc.retry)
		}
	}
	user := withoutThrottleRetries(policy.RetryOptions{ShouldRetry: func(*http.Response, error) bool { return true }})
	if user.ShouldRetry(resp(503, "ServerBusy"), nil) || !user.ShouldRetry(resp(409, ""), nil) {
		t.Error("a user's ShouldRetry is not kept beside the throttling rule")
	}
	none := withoutThrottleRetries(policy.RetryOptions{StatusCodes: []int{}})
	if none.ShouldRetry(resp(500, "InternalError"), nil) {
		t.Error("StatusCodes: [] (no status retried) was not kept")
	}
}

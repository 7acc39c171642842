// Package attempts counts the HTTP attempts azcore makes for one logical
// operation, so tablekit can tell an ambiguous outcome from a plain one: a
// write whose first attempt reached the service but whose response was
// lost is retried by azcore, and the retry then fails with 409, 412 or 404
// because of the write's own first attempt.
package attempts

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

type key struct{}

// With returns a context whose requests are counted into the returned
// counter.
func With(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, key{}, n), n
}

// Count returns the attempts counted so far for ctx's operation, 0 when
// ctx did not come from With.
func Count(ctx context.Context) int32 {
	if n, ok := ctx.Value(key{}).(*atomic.Int32); ok {
		return n.Load()
	}
	return 0
}

// Policy counts each attempt of a request whose context came from With.
// Install it as the last per-retry policy, nearest the transport.
type Policy struct{}

// Do implements policy.Policy.
func (Policy) Do(req *policy.Request) (*http.Response, error) {
	if n, ok := req.Raw().Context().Value(key{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return req.Next()
}

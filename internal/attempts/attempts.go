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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

type key struct{}

// Counter holds the attempts of one operation.
type Counter struct {
	n     atomic.Int32
	first atomic.Int64 // wall-clock UnixNano of the first attempt's send
}

// Load returns the number of attempts sent so far.
func (c *Counter) Load() int32 { return c.n.Load() }

// First returns when the first attempt left for the transport (after
// every other policy, nearest the wire), the zero time before it has.
func (c *Counter) First() time.Time {
	if ns := c.first.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// With returns a context whose requests are counted into the returned
// counter.
func With(ctx context.Context) (context.Context, *Counter) {
	c := new(Counter)
	return context.WithValue(ctx, key{}, c), c
}

// Count returns the attempts counted so far for ctx's operation, 0 when
// ctx did not come from With.
func Count(ctx context.Context) int32 {
	if c, ok := ctx.Value(key{}).(*Counter); ok {
		return c.Load()
	}
	return 0
}

// Policy counts each attempt of a request whose context came from With.
// Install it as the last per-retry policy, nearest the transport.
type Policy struct{}

// Do implements policy.Policy.
func (Policy) Do(req *policy.Request) (*http.Response, error) {
	Note(req.Raw().Context())
	return req.Next()
}

// Note counts an attempt of a request whose context is ctx: what Policy
// does, for a policy that counts as part of its own work.
func Note(ctx context.Context) {
	if c, ok := ctx.Value(key{}).(*Counter); ok {
		if c.n.Add(1) == 1 {
			c.first.Store(time.Now().UnixNano())
		}
	}
}

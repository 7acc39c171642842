// Package reqcount counts the HTTP requests an SDK client sends, so tests
// can assert the request budget of each operation (DESIGN.md).
package reqcount

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Counter is an azcore policy. Installed as a per-retry policy it counts
// every HTTP attempt, retries included.
type Counter struct {
	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

// Do implements policy.Policy.
func (c *Counter) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	raw := req.Raw()
	c.mu.Lock()
	if len(c.log) < 1000 {
		c.log = append(c.log, raw.Method+" "+raw.URL.Path)
	}
	c.mu.Unlock()
	return req.Next()
}

// Count is the number of requests since the last Reset.
func (c *Counter) Count() int64 { return c.n.Load() }

// Reset sets the count to zero and forgets the request log.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.n.Store(0)
	c.log = c.log[:0]
	c.mu.Unlock()
}

// Requests describes the requests since the last Reset ("GET /path", one a
// line), for failure messages.
func (c *Counter) Requests() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.log, "\n")
}

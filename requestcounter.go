package tablekit

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// RequestCounter is an azcore policy that counts HTTP requests, to check an
// operation's request budget (each repository documents its own). Install
// it as a per-call policy to count each request once, however often azcore
// tried it: the budget then holds on a real service, where a transient
// failure (a pooled connection the server closed as idle, a 503) makes
// azcore send a request again. Install it as a per-retry policy to count
// every attempt, retries included:
//
//	c := &tablekit.RequestCounter{}
//	acct, err := tablekit.Connect(cs, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
//		PerCallPolicies: []policy.Policy{c},
//	}})
//	// ... one lookup ...
//	fmt.Println(c.Take(), "requests")
//
// It is safe for concurrent use.
type RequestCounter struct {
	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

// Do implements policy.Policy.
func (c *RequestCounter) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	raw := req.Raw()
	c.mu.Lock()
	if len(c.log) < 1000 {
		c.log = append(c.log, raw.Method+" "+raw.URL.Path)
	}
	c.mu.Unlock()
	return req.Next()
}

// Count is the number of requests since the last Reset or Take.
func (c *RequestCounter) Count() int64 { return c.n.Load() }

// Take returns Count and resets the counter.
func (c *RequestCounter) Take() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = c.log[:0]
	return c.n.Swap(0)
}

// Reset sets the count to zero and forgets the request log.
func (c *RequestCounter) Reset() { c.Take() }

// Requests describes the requests since the last Reset or Take ("GET
// /path", one a line, at most 1,000), for failure messages and logs.
func (c *RequestCounter) Requests() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.log, "\n")
}

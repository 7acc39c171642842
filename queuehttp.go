package tablekit

import (
	"github.com/tablekit/tablekit/internal/queuehttp"
)

func init() {
	queuehttp.Of = func(acct any) *queuehttp.Client { return acct.(*Account).queueHTTP() }
}

// queueHTTP returns the account's raw transport for queue messages (built
// on first use), or nil when the account has no queue endpoint.
func (a *Account) queueHTTP() *queuehttp.Client {
	if a.urls.queue == "" {
		return nil
	}
	a.httpMu.Lock()
	defer a.httpMu.Unlock()
	if a.qhttp == nil {
		auth := a.auth
		auth.Account = a.name
		a.qhttp = queuehttp.New(a.urls.queue, auth, a.callerOptions(), redactTry)
	}
	return a.qhttp
}

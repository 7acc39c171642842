package tablekit

import (
	"github.com/tablekit/tablekit/internal/tablehttp"
)

// TableServiceVersion is the REST API version of the table requests
// tablekit sends itself (the one aztables uses).
const TableServiceVersion = tablehttp.ServiceVersion

func init() {
	tablehttp.Of = func(acct any) *tablehttp.Client { return acct.(*Account).tableHTTP() }
}

// tableHTTP returns the account's raw table transport (built on first
// use), or nil when the account has no table endpoint.
func (a *Account) tableHTTP() *tablehttp.Client {
	if a.urls.table == "" {
		return nil
	}
	a.httpMu.Lock()
	defer a.httpMu.Unlock()
	if a.http == nil {
		auth := a.auth
		auth.Account = a.name
		a.http = tablehttp.New(a.urls.table, auth, a.callerOptions(), redactTry)
	}
	return a.http
}

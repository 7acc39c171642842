package emulator

import (
	"net/http"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
)

// NewestServiceVersion is the newest x-ms-version the emulator answers;
// it answers every published version up to it (azrules.ServiceVersions).
const NewestServiceVersion = azrules.NewestServiceVersion

// versionChecked answers a request whose x-ms-version is not a published
// service version (azrules.IsServiceVersion) as Azure does, before it
// reads anything else of it: 400 InvalidHeaderValue naming the header and
// its value, in the service's error format (write), with no x-ms-version
// in the answer (a real Blob service's, quoted in Azure/azure-sdk-for-net
// 45302, lists none). A request without the header passes: Azure serves
// anonymous requests, which carry none.
func versionChecked(h http.Handler, write func(http.ResponseWriter, *http.Request, *answer.Error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, sent := r.Header["X-Ms-Version"]
		if !sent || len(v) == 1 && azrules.IsServiceVersion(v[0]) {
			h.ServeHTTP(w, r)
			return
		}
		value := ""
		if len(v) > 0 {
			value = v[0]
		}
		// The answer echoes no version: SetHeaders echoes the request's.
		r2 := *r
		r2.Header = r.Header.Clone()
		r2.Header.Del("X-Ms-Version")
		write(w, &r2, answer.InvalidHeader("x-ms-version", value))
	})
}

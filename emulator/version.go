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
// reads anything else of it (answer.WriteUnknownVersion; table: in the
// Table service's JSON). A request without the header passes: Azure
// serves anonymous requests, which carry none.
func versionChecked(h http.Handler, table bool) http.Handler {
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
		answer.WriteUnknownVersion(w, r, value, table)
	})
}

package blobs

import "net/http"

// sasOverrides are the SAS query parameters that set Get Blob's and Get
// Blob Properties' response headers, and the headers they set ("Specify
// query parameters to override response headers", REST "Create a service
// SAS" and "Create a user delegation SAS"). The SAS signs them, so only a
// request the Authenticator admitted as a SAS carries them as sent.
var sasOverrides = [...]struct{ param, header string }{
	{"rscc", "Cache-Control"},
	{"rscd", "Content-Disposition"},
	{"rsce", "Content-Encoding"},
	{"rscl", "Content-Language"},
	{"rsct", "Content-Type"},
}

// setOverrides sets the response headers a service or user delegation
// SAS on q overrides (a request with an Authorization header is not
// authorized by its SAS, whose overrides then do not apply).
func setOverrides(h http.Header, q *request) {
	if !q.query.Has("sig") || len(q.r.Header["Authorization"]) > 0 {
		return
	}
	for _, o := range sasOverrides {
		if v := q.query.Get(o.param); v != "" {
			h.Set(o.header, v)
		}
	}
}

package auth_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// FuzzAuthorize feeds Authorize arbitrary Authorization headers, dates,
// paths and queries: it must answer (a grant or an error, never both or
// neither) and never panic.
func FuzzAuthorize(f *testing.F) {
	now := time.Now().UTC().Format(http.TimeFormat)
	f.Add("SharedKey devstoreaccount1:"+otherKey[:43]+"=", now, "/devstoreaccount1/t", "comp=list&a=%41&b=", uint8(1), "x-ms-meta-a")
	f.Add("SharedKeyLite devstoreaccount1:abc", "", "/devstoreaccount1/t(PartitionKey='a',RowKey='b')", "", uint8(3), "x-ms-date")
	f.Add("", "", "/devstoreaccount1/q", "sv=2020-02-10&ss=bqt&srt=sco&sp=rl&se=2099-01-01&sig=AAAA", uint8(2), "")
	f.Add("", "", "/devstoreaccount1/c/b", "sv=2019-02-02&sr=b&sp=r&se=2099-01-01T00:00Z&sip=1.2.3.4-1.2.3.9&spr=https&sig=%2B%2B", uint8(1), "")
	f.Add("", "", "/devstoreaccount1/t", "sv=2019-02-02&tn=t&sp=r&se=2099-01-01&spk=a&epk=b&si=x&sig=", uint8(3), "")
	f.Add("Bearer x", now, "/", "%zz", uint8(9), "X-MS-")
	a := auth.New(auth.Account{Name: account, Keys: [][]byte{devKeyBytes()}})
	f.Fuzz(func(t *testing.T, authz, date, path, query string, svc uint8, hdr string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL.Path, r.URL.RawQuery = path, query
		r.RequestURI = (&url.URL{Path: path, RawQuery: query}).RequestURI()
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		if date != "" {
			r.Header.Set("x-ms-date", date)
		}
		if hdr != "" {
			r.Header[hdr] = []string{date}
		}
		for _, op := range []auth.Operation{
			{Service: auth.Service(svc), ResourceType: 'o', Permission: 'r', Name: "t", Blob: "b", PartitionKey: "a", RowKey: "b", HasKeys: true},
			{Service: auth.Service(svc)},
		} {
			g, err := a.Authorize(r, op)
			if (g == nil) == (err == nil) {
				t.Fatalf("Authorize answered grant %v and error %v", g, err)
			}
		}
	})
}

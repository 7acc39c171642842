//go:build !race

// The race detector makes sync.Pool drop what it holds at random, so
// allocation counts are measured without it.

package auth_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
)

type hotCase struct {
	name string
	req  captured
	op   auth.Operation
}

// hotRequests are requests as the SDKs sign them, captured by the test
// service: a point read signed by aztables (Shared Key Lite) and a blob
// listing signed by azblob (Shared Key, x-ms- headers and query
// parameters).
func hotRequests(t testing.TB) []hotCase {
	t.Helper()
	c := ctx(t)
	ts := newService(t, auth.Table, false)
	_, tc := tableClients(t, ts, azurite.AccountKey, nil)
	table := ts.expect(t, auth.Operation{Service: auth.Table}, "", func() error { _, err := tc.GetEntity(c, "p1", "r1", nil); return err })
	bs := newService(t, auth.Blob, false)
	bc := blobClient(t, bs, azurite.AccountKey, nil)
	blob := bs.expect(t, auth.Operation{Service: auth.Blob}, "", func() error {
		_, err := bc.NewListBlobsFlatPager("cont1", &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("dir/"), MaxResults: to.Ptr(int32(3))}).NextPage(c)
		return err
	})
	return []hotCase{
		{"table shared key lite", table.req, auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'r'}},
		{"blob shared key", blob.req, auth.Operation{Service: auth.Blob, ResourceType: 'c', Permission: 'l'}},
	}
}

// serverRequest rebuilds c as a server hands it to a handler.
func serverRequest(c captured) *http.Request {
	r := httptest.NewRequest(c.method, c.uri, bytes.NewReader(c.body))
	r.Header = c.header.Clone()
	return r
}

func TestAuthorizeAllocations(t *testing.T) {
	a := auth.New(auth.Account{Name: account, Keys: [][]byte{devKey(t)}})
	for _, tc := range hotRequests(t) {
		r := serverRequest(tc.req)
		if _, err := a.Authorize(r, tc.op); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := testing.AllocsPerRun(200, func() { a.Authorize(r, tc.op) }); n != 0 {
			t.Errorf("%s: %v allocations per Authorize, want none", tc.name, n)
		}
	}
}

func BenchmarkAuthorize(b *testing.B) {
	a := auth.New(auth.Account{Name: account, Keys: [][]byte{devKey(b)}})
	for _, tc := range hotRequests(b) {
		r := serverRequest(tc.req)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.Authorize(r, tc.op); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

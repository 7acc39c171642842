package azurite

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// TestStrictProxyForwardsUntouched: a request the rules accept reaches the
// upstream byte for byte (method, path, query, headers, body, Host), and
// the upstream's answer reaches the client unchanged. The upstream here
// records what it receives; the rules themselves are tested on Azurite
// (strict_test.go).
func TestStrictProxyForwardsUntouched(t *testing.T) {
	type seen struct {
		method, uri, host string
		header            http.Header
		body              []byte
	}
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.Header.Clone(), b}
		w.Header().Set("ETag", `W/"datetime'2024'"`)
		w.Header().Set("x-ms-request-id", "upstream-id")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"odata.metadata":"m","PartitionKey":"p"}`))
	}))
	defer up.Close()
	p, base, err := startProxy(up.URL, proxyConfig{strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	entity := []byte(`{"PartitionKey":"p","RowKey":"r","Name":"x y","N@odata.type":"Edm.Int64","N":"5"}`)
	requests := []struct {
		method, path string
		body         []byte
	}{
		{http.MethodPost, "/devstoreaccount1/orders", entity},
		{"MERGE", "/devstoreaccount1/orders(PartitionKey='p',RowKey='it''s%20r')", entity},
		{http.MethodGet, "/devstoreaccount1/orders()?$filter=PartitionKey%20eq%20'a''b'&$top=1000&NextRowKey=1%2152", nil},
		{http.MethodDelete, "/devstoreaccount1/Tables('orders')", nil},
	}
	for _, rq := range requests {
		req, _ := http.NewRequest(rq.method, base+rq.path, bytes.NewReader(rq.body))
		req.Header.Set("Authorization", "SharedKey devstoreaccount1:sig")
		req.Header.Set("x-ms-date", "Sun, 22 Nov 2026 10:00:00 GMT")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || string(body) != `{"odata.metadata":"m","PartitionKey":"p"}` ||
			resp.Header.Get("ETag") != `W/"datetime'2024'"` || resp.Header.Get("x-ms-request-id") != "upstream-id" {
			t.Errorf("%s %s: the answer changed on the way: %d %v %s", rq.method, rq.path, resp.StatusCode, resp.Header, body)
		}
		s := <-got
		u, _ := url.Parse(base)
		if s.method != rq.method || s.uri != rq.path || s.host != u.Host || !bytes.Equal(s.body, rq.body) {
			t.Errorf("%s %s reached the upstream as %s %s (Host %s), body %q", rq.method, rq.path, s.method, s.uri, s.host, s.body)
		}
		for _, h := range []string{"Authorization", "X-Ms-Date", "Content-Type"} {
			if s.header.Get(h) != req.Header.Get(h) {
				t.Errorf("%s %s: header %s = %q upstream, sent %q", rq.method, rq.path, h, s.header.Get(h), req.Header.Get(h))
			}
		}
		if s.header.Get("X-Forwarded-For") != "" {
			t.Errorf("%s %s: the proxy added X-Forwarded-For", rq.method, rq.path)
		}
	}
}

func TestStrictHelpers(t *testing.T) {
	// The paths, the rules and a batch's body are read by emulator/answer
	// (tested there) and entity; here, the range a SAS names reaches the
	// query's $filter.
	u := &url.URL{RawQuery: "$filter=RowKey%20ge%20'1'&$top=5"}
	if !narrowQuery(u, &answer.KeyRange{StartPK: "a'b", HasStart: true}) {
		t.Fatal("narrowQuery refused a plain filter")
	}
	if got := u.Query().Get("$filter"); got != "(RowKey ge '1') and (PartitionKey ge 'a''b')" || u.Query().Get("$top") != "5" {
		t.Errorf("narrowed query %q", u.RawQuery)
	}
	// $top=0 reaches Azurite, which ignores it, as a query of one entity
	// that no entity meets.
	u = &url.URL{RawQuery: "%24top=0&$filter=RowKey%20ge%20'1'&$select=A"}
	if !emptyPage(u, false) {
		t.Fatal("emptyPage refused a plain filter")
	}
	if got := u.Query(); got.Get("$filter") != "(RowKey ge '1') and (PartitionKey lt '')" || got.Get("$top") != "1" || got.Get("$select") != "A" {
		t.Errorf("$top=0 query became %q", u.RawQuery)
	}
	u = &url.URL{RawQuery: "$top=0"}
	if !emptyPage(u, true) || u.Query().Get("$filter") != "TableName lt ''" || u.Query().Get("$top") != "1" {
		t.Errorf("$top=0 table listing became %q", u.RawQuery)
	}
}

package azurite

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
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
	res, ok := parseResource(&url.URL{Path: "/acct/t(PartitionKey='a''b',RowKey='c,d)')", RawPath: "/acct/t(PartitionKey='a''b',RowKey='c%2Cd)')"})
	if !ok || !res.hasKeys || res.name != "t" || res.pk != "a'b" || res.rk != "c,d)" {
		t.Errorf("parseResource: %+v %v", res, ok)
	}
	for f, want := range map[string]bool{
		"PartitionKey eq 'a'":                false,
		"PartitionKey eq 'a":                 true,
		"RowKey eq 'it''s'":                  false,
		"RowKey eq 'it''s":                   true,
		"RowKey eq ''":                       false,
		"A eq 'x' and B eq 'y''' or C eq 'z": true,
	} {
		if unterminatedLiteral(f) != want {
			t.Errorf("unterminatedLiteral(%q) = %v", f, !want)
		}
	}
	r := &sasRange{spk: "b", srk: "5", epk: "d", erk: "2", hasStart: true, hasEnd: true}
	for _, c := range []struct {
		pk, rk string
		in     bool
	}{{"a", "9", false}, {"b", "4", false}, {"b", "5", true}, {"c", "0", true}, {"d", "2", true}, {"d", "3", false}, {"e", "", false}} {
		if r.contains(c.pk, c.rk) != c.in {
			t.Errorf("range [b/5, d/2] contains (%s, %s) = %v", c.pk, c.rk, !c.in)
		}
	}
	if got := r.filter(); !strings.Contains(got, "RowKey ge '5'") || !strings.Contains(got, "RowKey le '2'") {
		t.Errorf("range filter %q", got)
	}
	for name, want := range map[string]bool{"_a": true, "Ünï1": true, "a_b": true, "1a": false, "a-b": false, "a b": false, "": false, "a.b": false} {
		if isIdentifier(name) != want {
			t.Errorf("isIdentifier(%q) = %v", name, !want)
		}
	}
	// 4 + 2*1 + 2*1, then S: 8+2 + 4+2*3, I: 8+2 + 4, B: 8+2 + 4+3, L: 8+2 + 8.
	e, err := parseEntity([]byte(`{"PartitionKey":"p","RowKey":"r","S":"abc","I":7,"B":"AAAA","B@odata.type":"Edm.Binary","L":"1","L@odata.type":"Edm.Int64","Z":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.size("p", "r"), 8+20+14+17+18; got != want {
		t.Errorf("size = %d, want %d", got, want)
	}
}

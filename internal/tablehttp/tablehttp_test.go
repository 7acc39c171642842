package tablehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The string to sign of Shared Key Lite for the Table service, as the REST
// specification ("Authorize with Shared Key": Shared Key Lite and Table
// service) builds it: the x-ms-date value, a newline, then "/" + account +
// the escaped URI path, plus "?comp=" when that parameter is present and
// no other query parameter.
// wrongKey is the emulator's well-known key; the test alters its first bytes.
const wrongKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestSharedKeyLiteStringToSign(t *testing.T) {
	date := "Sat, 21 Nov 2026 10:00:00 GMT"
	cases := []struct {
		url, want string
	}{
		{"https://myaccount.table.core.windows.net/mytable()?$filter=PartitionKey%20eq%20'a'&$top=5",
			date + "\n/myaccount/mytable()"},
		{"https://myaccount.table.core.windows.net/Tables",
			date + "\n/myaccount/Tables"},
		{"https://myaccount.table.core.windows.net/mytable?comp=acl",
			date + "\n/myaccount/mytable?comp=acl"},
		{"https://myaccount.table.core.windows.net",
			date + "\n/myaccount/"},
		// Path-style (Azurite): the account appears twice.
		{"http://127.0.0.1:10002/devstoreaccount1/t1(PartitionKey='a%20b',RowKey='it''s')",
			date + "\n/devstoreaccount1/devstoreaccount1/t1(PartitionKey='a%20b',RowKey='it''s')"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		account := "myaccount"
		if u.Port() != "" {
			account = "devstoreaccount1"
		}
		if got := tablehttp.StringToSign(account, date, u); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.url, got, c.want)
		}
	}
}

// The signature is accepted by the service (Azurite checks it), and a
// wrong key is refused with ErrAuthorization.
func TestTableHTTPAuthenticates(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
	testenv.Table(t, acct)
	h := tablehttp.Of(acct)
	req, err := h.NewRequest(ctx, http.MethodGet, "/Tables", url.Values{"$top": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Do(req)
	if err != nil || !runtime.HasStatusCode(resp, http.StatusOK) {
		t.Fatalf("signed request: %v %v", resp.Status, err)
	}

	bad, err := tablekit.NewAccountWithSharedKey(acct.Name(), "AAAA"+wrongKey[4:], tablekit.Endpoints{Table: acct.TableEndpoint()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ = tablehttp.Of(bad).NewRequest(ctx, http.MethodGet, "/Tables", nil)
	resp, err = tablehttp.Of(bad).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.HasStatusCode(resp, http.StatusOK) {
		t.Fatal("a request signed with the wrong key was accepted")
	}
	mapped := tablekit.MapError(runtime.NewResponseError(resp), "list tables", "")
	if !errors.Is(mapped, tablekit.ErrAuthorization) {
		t.Errorf("wrong key: %v, want ErrAuthorization", mapped)
	}
}

// The comp parameter is found in the raw query as url.Values would find
// it, whatever surrounds it.
func TestCompParamMatchesParsedQuery(t *testing.T) {
	for _, q := range []string{
		"", "comp=acl", "restype=table&comp=properties", "a=1&comp=stats&comp=other",
		"%24filter=PartitionKey%20eq%20%27comp%3Dx%27&%24top=1000", "comp=a%2Fb", "compx=1&comp=", "xcomp=1",
	} {
		u, err := url.Parse("http://h/acct/t()?" + q)
		if err != nil {
			t.Fatal(err)
		}
		want := "d\n/acct" + u.EscapedPath()
		if comp := u.Query().Get("comp"); comp != "" {
			want += "?comp=" + comp
		}
		if got := tablehttp.StringToSign("acct", "d", u); got != want {
			t.Errorf("StringToSign of query %q = %q, want %q", q, got, want)
		}
	}
}

// A request's URL is the one url.Parse makes of the endpoint, the path and
// the query, whether NewRequest parses it or extends the parsed endpoint:
// the same path on the wire, the same string to sign, the same URL in logs
// and errors.
func TestNewRequestURLMatchesParse(t *testing.T) {
	endpoints := []string{
		"http://127.0.0.1:10002/devstoreaccount1", "https://acct.table.core.windows.net",
		"https://acct.table.core.windows.net/", "http://localhost:8902/", "https://h/a%20b", "http://h:/x",
	}
	paths := []string{
		"/t1(PartitionKey='a',RowKey='b')", "/t1(PartitionKey='a%20b',RowKey='it''s')", "/Tables", "/$batch",
		"/t1()", "/t1(PartitionKey='a b',RowKey='x')", "/t1(PartitionKey='a!*',RowKey='[x]{y}|^`\"<>\\\\')",
		"/t1(PartitionKey='%2f',RowKey='%2F')", "/t?x=1", "/t#f", "/t\x01", "",
	}
	// Every printable byte, alone in a key.
	for b := byte(0x20); b < 0x7f; b++ {
		paths = append(paths, "/t(PartitionKey='"+string(b)+"',RowKey='')")
	}
	queries := []url.Values{nil, {"$filter": {"PartitionKey eq 'a+b'"}, "$top": {"5"}}, {"comp": {"acl"}}}
	for _, ep := range endpoints {
		c := tablehttp.New(ep, tablehttp.Auth{}, azcore.ClientOptions{}, nil)
		for _, p := range paths {
			for _, q := range queries {
				full := ep + p
				if len(q) > 0 {
					full += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
				}
				want, werr := runtime.NewRequest(context.Background(), http.MethodGet, full)
				got, gerr := c.NewRequest(context.Background(), http.MethodGet, p, q)
				if (werr != nil) != (gerr != nil) {
					t.Errorf("%q: error %v, parsing gives %v", full, gerr, werr)
					continue
				}
				if werr != nil {
					continue
				}
				if !reflect.DeepEqual(got.Raw().URL, want.Raw().URL) || got.Raw().Host != want.Raw().Host {
					t.Errorf("%q: URL %#v (host %q), parsing gives %#v (host %q)", full, got.Raw().URL, got.Raw().Host, want.Raw().URL, want.Raw().Host)
				}
			}
		}
	}
}

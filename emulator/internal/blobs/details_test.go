package blobs_test

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tablekit/tablekit/integration/azurite"
)

// accountSAS is an account SAS allowing every blob operation, for
// requests a test sends itself.
func accountSAS(t *testing.T) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	perms := sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true}
	types := sas.AccountResourceTypes{Service: true, Container: true, Object: true}
	qp, err := sas.AccountSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions: perms.String(), ResourceTypes: types.String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

// detailCase is a request the service refuses and the elements its XML
// error carries after Code and Message ("Name=Value").
type detailCase struct {
	method, path string
	headers      map[string]string
	body         string
	status       int
	want         []string
	// azurite, when set, is what Azurite names where it departs from
	// Azure.
	azurite []string
}

// errorElements sends c to endpoint and returns the answer's status and
// the elements of its XML error after Code and Message.
func errorElements(t *testing.T, endpoint, query string, c detailCase) (int, []string) {
	t.Helper()
	sep := "?"
	if strings.Contains(c.path, "?") {
		sep = "&"
	}
	var body io.Reader
	if c.method == http.MethodPut {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, endpoint+c.path+sep+query, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2023-11-03")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Elements []struct {
			XMLName xml.Name
			Value   string `xml:",chardata"`
		} `xml:",any"`
	}
	if err := xml.Unmarshal(answer, &e); err != nil {
		t.Fatalf("%s %s: %d, body %q: %v", c.method, c.path, resp.StatusCode, answer, err)
	}
	var out []string
	for _, el := range e.Elements {
		if el.XMLName.Local != "Code" && el.XMLName.Local != "Message" {
			out = append(out, el.XMLName.Local+"="+el.Value)
		}
	}
	return resp.StatusCode, out
}

// TestErrorDetails checks that an answer refusing a header or a query
// parameter names it after Message, as Azure does (a recorded Queue
// service session shows the form; real Blob service answers quoted in
// public repositories show MissingRequiredHeader naming x-ms-blob-type
// and InvalidHeaderValue naming Content-Length, so capitalized), and as
// Azurite does for the same requests where it names them.
func TestErrorDetails(t *testing.T) {
	ctx := context.Background()
	both := []detailCase{
		{method: http.MethodPut, path: "/details/ab?comp=appendblock", status: 400,
			want:    []string{"HeaderName=Content-Length", "HeaderValue=0"},
			azurite: []string{"HeaderName=content-length", "HeaderValue=0"}},
	}
	emulatorOnly := []detailCase{
		{method: http.MethodPut, path: "/details/b", body: "x", status: 400,
			want: []string{"HeaderName=x-ms-blob-type"}},
		{method: http.MethodPut, path: "/details/b", body: "x", headers: map[string]string{"x-ms-blob-type": "Nope"}, status: 400,
			want: []string{"HeaderName=x-ms-blob-type", "HeaderValue=Nope"}},
		{method: http.MethodPut, path: "/details/b?comp=block", body: "x", status: 400,
			want: []string{"QueryParameterName=blockid"}},
		{method: http.MethodPut, path: "/details/b?comp=block&blockid=%21%21", body: "x", status: 400,
			want: []string{"QueryParameterName=blockid", "QueryParameterValue=!!"}},
		{method: http.MethodGet, path: "/details?restype=container&comp=list&maxresults=many", status: 400,
			want: []string{"QueryParameterName=maxresults", "QueryParameterValue=many"}},
		{method: http.MethodGet, path: "/details?restype=container&comp=list&maxresults=0", status: 400,
			want: []string{"QueryParameterName=maxresults", "QueryParameterValue=0", "MinimumAllowed=1", "MaximumAllowed=2147483647"}},
		{method: http.MethodGet, path: "/details?restype=container&comp=list&include=nosuch", status: 400,
			want: []string{"QueryParameterName=include", "QueryParameterValue=nosuch"}},
		{method: http.MethodGet, path: "/details/b?comp=blocklist&blocklisttype=nosuch", status: 400,
			want: []string{"QueryParameterName=blocklisttype", "QueryParameterValue=nosuch"}},
		{method: http.MethodPut, path: "/details/ab?comp=appendblock", body: "x", headers: map[string]string{"x-ms-blob-condition-appendpos": "x"}, status: 400,
			want: []string{"HeaderName=x-ms-blob-condition-appendpos", "HeaderValue=x"}},
		{method: http.MethodPut, path: "/other?restype=container", headers: map[string]string{"x-ms-blob-public-access": "everyone"}, status: 400,
			want: []string{"HeaderName=x-ms-blob-public-access", "HeaderValue=everyone"}},
		{method: http.MethodGet, path: "/details/b?comp=nosuch", status: 400,
			want: []string{"QueryParameterName=comp", "QueryParameterValue=nosuch"}},
	}
	az := startAzurite(t)
	emu := startEmulator(t)
	query := accountSAS(t)
	for _, target := range []struct {
		name, url string
		cases     []detailCase
	}{{"emulator", emu, append(both, emulatorOnly...)}, {"azurite", az.BlobURL, both}} {
		c := newClient(t, target.url)
		// Azurite is shared by the package's tests (and by -count runs).
		if _, err := c.CreateContainer(ctx, "details", nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			t.Fatalf("%s: create container: %v", target.name, err)
		}
		if _, err := c.ServiceClient().NewContainerClient("details").NewAppendBlobClient("ab").Create(ctx, nil); err != nil {
			t.Fatalf("%s: create append blob: %v", target.name, err)
		}
		for _, dc := range target.cases {
			if target.name == "azurite" && dc.azurite != nil {
				dc.want = dc.azurite
			}
			status, got := errorElements(t, target.url, query, dc)
			if status != dc.status || strings.Join(got, "|") != strings.Join(dc.want, "|") {
				t.Errorf("%s: %s %s: %d %q, want %d %q", target.name, dc.method, dc.path, status, got, dc.status, dc.want)
			}
		}
	}
}

package emulator_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit/emulator"
)

// Azure keeps the case a metadata name was written with and compares
// names ignoring it ("metadata names preserve the case with which they
// were created, but are case-insensitive when set or read": the REST
// docs' naming pages for blobs and for queues; Azurite 3.37 reads names
// from the raw headers "the same as Azure Storage"). These requests go
// over raw TCP, pipelined, so the test sees the bytes: a lowercase and a
// mixed-case name, read back exactly, and a body that looks like a head
// stored as sent.

// rawResponse is one response as it came: its status, its header lines
// as written and its body.
type rawResponse struct {
	status int
	lines  []string
	body   string
}

func (r rawResponse) has(line string) bool { return slices.Contains(r.lines, line) }

// readRaw reads one response from r without canonicalizing anything.
func readRaw(t *testing.T, r *bufio.Reader) rawResponse {
	t.Helper()
	status, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading a status line: %v", err)
	}
	f := strings.Fields(status)
	if len(f) < 2 {
		t.Fatalf("status line %q", status)
	}
	var resp rawResponse
	resp.status, _ = strconv.Atoi(f[1])
	length, chunked := 0, false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a header line: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		resp.lines = append(resp.lines, line)
		name, value, _ := strings.Cut(line, ": ")
		switch strings.ToLower(name) {
		case "content-length":
			length, _ = strconv.Atoi(value)
		case "transfer-encoding":
			chunked = value == "chunked"
		}
	}
	var body io.Reader = io.LimitReader(r, int64(length))
	if chunked {
		body = httputil.NewChunkedReader(r)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("reading a body: %v", err)
	}
	if chunked {
		r.ReadString('\n') // the empty trailer
	}
	resp.body = string(b)
	return resp
}

// pipeline sends every request in one write on a new connection to the
// service at base and returns the responses in order.
func pipeline(t *testing.T, base string, reqs ...string) []rawResponse {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.Join(reqs, "")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	out := make([]rawResponse, len(reqs))
	for i := range reqs {
		out[i] = readRaw(t, r)
	}
	return out
}

// rawRequest is one HTTP/1.1 request's text: headers as given, a
// Content-Length for body.
func rawRequest(method, target string, headers []string, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-version: 2021-08-06\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

func TestMetadataNamesKeepTheirCase(t *testing.T) {
	em := emulator.StartTB(t, nil)
	expiry := time.Now().Add(time.Hour)
	acct := "/" + em.AccountName

	t.Run("blobs and containers", func(t *testing.T) {
		cred, err := azblob.NewSharedKeyCredential(em.AccountName, em.AccountKey)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := blobsas.AccountSignatureValues{
			Protocol: blobsas.ProtocolHTTPSandHTTP, ExpiryTime: expiry,
			Permissions:   (&blobsas.AccountPermissions{Read: true, Write: true, Create: true, List: true}).String(),
			ResourceTypes: (&blobsas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		sas := qp.Encode()
		// A body that looks like a head holding metadata: it is stored as sent.
		body := "PUT /x HTTP/1.1\r\nx-ms-meta-MixedCase: evil\r\n\r\n"
		got := pipeline(t, em.BlobURL,
			rawRequest("PUT", acct+"/casecontainer?restype=container&"+sas, []string{"x-ms-meta-owner: a", "X-MS-META-OwnerID: b"}, ""),
			rawRequest("PUT", acct+"/casecontainer/b.txt?"+sas, []string{"x-ms-blob-type: BlockBlob", "x-ms-meta-lower: 1", "x-ms-meta-MixedCase: 2"}, body),
			rawRequest("GET", acct+"/casecontainer/b.txt?"+sas, nil, ""),
			rawRequest("GET", acct+"/casecontainer?restype=container&"+sas, nil, ""),
			rawRequest("GET", acct+"/casecontainer?restype=container&comp=list&include=metadata&"+sas, nil, ""),
			rawRequest("PUT", acct+"/casecontainer/b.txt?comp=metadata&"+sas, []string{"x-ms-meta-camelCase: 3"}, ""),
			rawRequest("GET", acct+"/casecontainer/b.txt?comp=metadata&"+sas, nil, ""),
		)
		for i, want := range []int{201, 201, 200, 200, 200, 200, 200} {
			if got[i].status != want {
				t.Fatalf("request %d: status %d, want %d: %q %s", i, got[i].status, want, got[i].lines, got[i].body)
			}
		}
		for _, c := range []struct {
			what  string
			resp  rawResponse
			lines []string
		}{
			{"Get Blob", got[2], []string{"x-ms-meta-lower: 1", "x-ms-meta-MixedCase: 2"}},
			{"Get Container Properties", got[3], []string{"x-ms-meta-owner: a", "x-ms-meta-OwnerID: b"}},
			{"Get Blob Metadata after Set Blob Metadata", got[6], []string{"x-ms-meta-camelCase: 3"}},
		} {
			for _, l := range c.lines {
				if !c.resp.has(l) {
					t.Errorf("%s: no header line %q in %q", c.what, l, c.resp.lines)
				}
			}
		}
		if got[2].body != body {
			t.Errorf("Get Blob: body %q, want %q as sent", got[2].body, body)
		}
		if want := "<Metadata><MixedCase>2</MixedCase><lower>1</lower></Metadata>"; !strings.Contains(got[4].body, want) {
			t.Errorf("List Blobs: no %s in %s", want, got[4].body)
		}
	})

	t.Run("queues", func(t *testing.T) {
		cred, err := azqueue.NewSharedKeyCredential(em.AccountName, em.AccountKey)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := queuesas.AccountSignatureValues{
			Protocol: queuesas.ProtocolHTTPSandHTTP, ExpiryTime: expiry,
			Permissions:   (&queuesas.AccountPermissions{Read: true, Write: true, Create: true, List: true}).String(),
			ResourceTypes: (&queuesas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		sas := qp.Encode()
		got := pipeline(t, em.QueueURL,
			rawRequest("PUT", acct+"/casequeue?"+sas, []string{"x-ms-meta-lower: 1", "x-ms-meta-MixedCase: 2"}, ""),
			// The same names in another case are the same metadata: 204.
			rawRequest("PUT", acct+"/casequeue?"+sas, []string{"x-ms-meta-LOWER: 1", "x-ms-meta-mixedcase: 2"}, ""),
			rawRequest("GET", acct+"/casequeue?comp=metadata&"+sas, nil, ""),
			rawRequest("GET", acct+"?comp=list&include=metadata&prefix=casequeue&"+sas, nil, ""),
		)
		for i, want := range []int{201, 204, 200, 200} {
			if got[i].status != want {
				t.Fatalf("request %d: status %d, want %d: %q %s", i, got[i].status, want, got[i].lines, got[i].body)
			}
		}
		for _, l := range []string{"x-ms-meta-lower: 1", "x-ms-meta-MixedCase: 2"} {
			if !got[2].has(l) {
				t.Errorf("Get Queue Metadata: no header line %q in %q", l, got[2].lines)
			}
		}
		if !strings.Contains(got[3].body, "<MixedCase>2</MixedCase>") || !strings.Contains(got[3].body, "<lower>1</lower>") {
			t.Errorf("List Queues: the metadata's names are not as sent: %s", got[3].body)
		}
	})
}

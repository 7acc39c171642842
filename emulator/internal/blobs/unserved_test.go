package blobs_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit/integration/azurite"
)

// withHeader adds a header to every request, before it is signed.
type withHeader struct{ name, value string }

func (h withHeader) Do(req *policy.Request) (*http.Response, error) {
	req.Raw().Header.Set(h.name, h.value)
	return req.Next()
}

// headerClient is newClient whose requests all carry the header name.
func headerClient(t *testing.T, endpoint, name, value string) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(endpoint, cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1},
			PerCallPolicies: []policy.Policy{withHeader{name, value}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUnservedHeadersRefusedBeforeAnyWrite: a request carrying a header
// that changes what it does, and that the emulator does not serve, is
// 501 NotImplemented, and nothing is written: Create Container leaves no
// container, Put Blob no blob and the blob it would replace unchanged;
// a read is refused too. Served without the header, each would be
// answered as if it had done what the header asks.
func TestUnservedHeadersRefusedBeforeAnyWrite(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "box", nil))
	must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "box", "kept", []byte("before"), nil))
	for i, c := range []struct{ name, value string }{
		{"x-ms-source-if-tags", `"project" = 'x'`},
		{"x-ms-copy-source-tag-option", "COPY"},
		{"x-ms-rehydrate-priority", "High"},
		{"x-ms-immutability-policy-until-date", "Fri, 01 Jan 2100 00:00:00 GMT"},
		{"x-ms-immutability-policy-mode", "Locked"},
		{"x-ms-legal-hold", "true"},
		{"x-ms-immutable-storage-with-versioning-enabled", "true"},
		{"x-ms-encryption-scope", "scope1"},
		{"x-ms-default-encryption-scope", "scope1"},
		{"x-ms-deny-encryption-scope-override", "true"},
		{"x-ms-encryption-key", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
		{"x-ms-encryption-key-sha256", "bm90IGEgcmVhbCBzaGEyNTYgYnV0IDMyIGJ5dGVzISE="},
		{"x-ms-encryption-algorithm", "AES256"},
		{"x-ms-range-get-content-crc64", "true"},
		{"x-ms-structured-body", "XSM/1.0; properties=crc64"},
		{"x-ms-expiry-option", "NeverExpire"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hc := headerClient(t, endpoint, c.name, c.value)
			cname := "box" + strconv.Itoa(i)
			_, err := hc.CreateContainer(ctx, cname, nil)
			wantFailure(t, "Create Container", err, http.StatusNotImplemented, "NotImplemented")
			_, err = cl.ServiceClient().NewContainerClient(cname).GetProperties(ctx, nil)
			wantFailure(t, "the container after", err, http.StatusNotFound, "ContainerNotFound")

			_, err = hc.UploadBuffer(ctx, "box", "new"+strconv.Itoa(i), []byte("data"), nil)
			wantFailure(t, "Put Blob", err, http.StatusNotImplemented, "NotImplemented")
			_, err = cl.ServiceClient().NewContainerClient("box").NewBlobClient("new"+strconv.Itoa(i)).GetProperties(ctx, nil)
			wantFailure(t, "the blob after", err, http.StatusNotFound, "BlobNotFound")

			_, err = hc.UploadBuffer(ctx, "box", "kept", []byte("after"), nil)
			wantFailure(t, "Put Blob over a blob", err, http.StatusNotImplemented, "NotImplemented")
			_, err = hc.DownloadStream(ctx, "box", "kept", nil)
			wantFailure(t, "Get Blob", err, http.StatusNotImplemented, "NotImplemented")
			if !strings.Contains(err.Error(), c.name) {
				t.Errorf("the refusal does not name %s: %v", c.name, err)
			}
		})
	}
	got := make([]byte, 6)
	must[int64](t, "download")(cl.DownloadBuffer(ctx, "box", "kept", got, nil))
	if string(got) != "before" {
		t.Errorf("kept holds %q, want %q", got, "before")
	}
}

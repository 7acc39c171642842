package blobs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tablekit/tablekit/emulator/internal/blobs"
	"github.com/tablekit/tablekit/integration/azurite"
)

// TestRootContainer: a blob addressed with no container
// (/ACCOUNT/BLOB) is a blob of $root (REST "Working with the root
// container"): written there, it is read back through $root, and one
// written to $root is read at the short URL.
func TestRootContainer(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	root := newContainer(t, newClient(t, endpoint), "$root")
	cred, err := azblob.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	opts := &blockblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}
	short := must[*blockblob.Client](t, "client")(blockblob.NewClientWithSharedKeyCredential(endpoint+"/short", cred, opts))
	must[blockblob.UploadResponse](t, "upload at /ACCOUNT/short")(short.Upload(ctx, rsc("at the root"), nil))
	resp := must[blob.DownloadStreamResponse](t, "download $root/short")(root.NewBlobClient("short").DownloadStream(ctx, nil))
	if b := body(resp.Body); b != "at the root" {
		t.Errorf("$root/short holds %q", b)
	}
	must[blockblob.UploadResponse](t, "upload $root/long")(root.NewBlockBlobClient("long").Upload(ctx, rsc("in $root"), nil))
	long := must[*blockblob.Client](t, "client")(blockblob.NewClientWithSharedKeyCredential(endpoint+"/long", cred, opts))
	resp = must[blob.DownloadStreamResponse](t, "download /ACCOUNT/long")(long.DownloadStream(ctx, nil))
	if b := body(resp.Body); b != "in $root" {
		t.Errorf("/ACCOUNT/long holds %q", b)
	}
	missing := must[*blockblob.Client](t, "client")(blockblob.NewClientWithSharedKeyCredential(endpoint+"/missing", cred, opts))
	_, err = missing.DownloadStream(ctx, nil)
	wantFailure(t, "a missing root blob", err, http.StatusNotFound, "BlobNotFound")
}

// TestAccountInfoAnywhere: Get Account Information answers at a
// container's and a blob's URL as at the account's.
func TestAccountInfoAnywhere(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	cc := cl.ServiceClient().NewContainerClient("box")
	must[container.CreateResponse](t, "create")(cc.Create(ctx, nil))
	want := must[service.GetAccountInfoResponse](t, "at the account")(cl.ServiceClient().GetAccountInfo(ctx, nil))
	c := must[container.GetAccountInfoResponse](t, "at a container")(cc.GetAccountInfo(ctx, nil))
	b := must[blob.GetAccountInfoResponse](t, "at a blob")(cc.NewBlobClient("no-such-blob").GetAccountInfo(ctx, nil))
	for what, got := range map[string][2]*string{
		"container": {(*string)(c.SKUName), (*string)(c.AccountKind)},
		"blob":      {(*string)(b.SKUName), (*string)(b.AccountKind)},
	} {
		if got[0] == nil || got[1] == nil || *got[0] != string(*want.SKUName) || *got[1] != string(*want.AccountKind) {
			t.Errorf("at a %s: %v %v, want %s %s", what, got[0], got[1], *want.SKUName, *want.AccountKind)
		}
	}
}

// TestUnservedOperations: Query Blob Contents is 501 NotImplemented, not
// a 400 that says the request is wrong. (Find Blobs by Tags, once 501
// too, is served: TestFindBlobsByTags.)
func TestUnservedOperations(t *testing.T) {
	svc := blobs.New(blobs.Config{Account: azurite.AccountName})
	for _, target := range []string{"/box/b?comp=query", "/b?comp=query"} {
		r := httptest.NewRequest(http.MethodPost, "/"+azurite.AccountName+target,
			strings.NewReader(`<QueryRequest><QueryType>SQL</QueryType><Expression>SELECT * from BlobStorage</Expression></QueryRequest>`))
		w := httptest.NewRecorder()
		svc.ServeHTTP(w, r)
		if w.Code != http.StatusNotImplemented || !strings.Contains(w.Body.String(), "<Code>NotImplemented</Code>") {
			t.Errorf("Query Blob Contents at %s: %d %s", target, w.Code, w.Body)
		}
	}
}

package blobs_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestPublicAccess sets containers' public access levels with azblob
// (Create Container, Set Container ACL) and reads them with an anonymous
// azblob client: a "blob" container serves its blobs but not its
// listing, a "container" one both, a private one neither, and no level
// lets an anonymous client write.
func TestPublicAccess(t *testing.T) { testPublicAccess(t, startEmulator(t), "") }

func testPublicAccess(t *testing.T, endpoint, prefix string) {
	ctx := context.Background()
	c := newClient(t, endpoint)
	anon, err := azblob.NewClientWithNoCredential(endpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"pub-blob", &azblob.CreateContainerOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}))
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"pub-all", nil))
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"private", nil))
	must[container.SetAccessPolicyResponse](t, "set ACL")(c.ServiceClient().NewContainerClient(prefix+"pub-all").SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		Access: to.Ptr(container.PublicAccessTypeContainer),
		ContainerACL: []*container.SignedIdentifier{{ID: to.Ptr("read-only"), AccessPolicy: &container.AccessPolicy{
			Permission: to.Ptr("r")}}}}))
	for _, n := range []string{prefix + "pub-blob", prefix + "pub-all", prefix + "private"} {
		must[azblob.UploadBufferResponse](t, "upload")(c.UploadBuffer(ctx, n, "b", []byte("hello"), nil))
	}

	acl := must[container.GetAccessPolicyResponse](t, "get ACL")(c.ServiceClient().NewContainerClient(prefix+"pub-all").GetAccessPolicy(ctx, nil))
	if deref(acl.BlobPublicAccess) != container.PublicAccessTypeContainer || len(acl.SignedIdentifiers) != 1 || val(acl.SignedIdentifiers[0].ID) != "read-only" {
		t.Errorf("Get Container ACL: access %v, %d identifiers; want container and the one set", deref(acl.BlobPublicAccess), len(acl.SignedIdentifiers))
	}
	page := must[azblob.ListContainersResponse](t, "list containers")(c.NewListContainersPager(&azblob.ListContainersOptions{Prefix: to.Ptr(prefix)}).NextPage(ctx))
	levels := map[string]container.PublicAccessType{}
	for _, it := range page.ContainerItems {
		levels[val(it.Name)] = val(it.Properties.PublicAccess)
	}
	if levels[prefix+"pub-blob"] != container.PublicAccessTypeBlob || levels[prefix+"pub-all"] != container.PublicAccessTypeContainer || levels[prefix+"private"] != container.PublicAccessType("") {
		t.Errorf("listed access levels %v", levels)
	}

	for _, n := range []string{prefix + "pub-blob", prefix + "pub-all"} {
		got := must[azblob.DownloadStreamResponse](t, "anonymous read of "+n)(anon.DownloadStream(ctx, n, "b", nil))
		if b := body(got.Body); b != "hello" {
			t.Errorf("anonymous read of %s: %q", n, b)
		}
		must[blob.GetPropertiesResponse](t, "anonymous properties of "+n)(anon.ServiceClient().NewContainerClient(n).NewBlobClient("b").GetProperties(ctx, nil))
		_, err := anon.UploadBuffer(ctx, n, "w", []byte("x"), nil)
		wantAnonRefused(t, "anonymous write to "+n, err, prefix)
	}
	must[azblob.ListBlobsFlatResponse](t, "anonymous listing of a container-level container")(anon.NewListBlobsFlatPager(prefix+"pub-all", nil).NextPage(ctx))
	_, err = anon.NewListBlobsFlatPager(prefix+"pub-blob", nil).NextPage(ctx)
	wantAnonRefused(t, "anonymous listing of a blob-level container", err, prefix)
	_, err = anon.DownloadStream(ctx, prefix+"private", "b", nil)
	wantAnonRefused(t, "anonymous read of a private container", err, prefix)

	// Set Container ACL without the header makes the container private.
	must[container.SetAccessPolicyResponse](t, "set ACL")(c.ServiceClient().NewContainerClient(prefix+"pub-blob").SetAccessPolicy(ctx, nil))
	_, err = anon.DownloadStream(ctx, prefix+"pub-blob", "b", nil)
	wantAnonRefused(t, "anonymous read once private", err, prefix)

	// Before version 2019-12-12 Azure answers a refused anonymous read 404
	// ResourceNotFound (Azurite: 403 AuthorizationFailure).
	if prefix != "" {
		return
	}
	req, err := http.NewRequest(http.MethodGet, endpoint+"/"+prefix+"private/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2019-02-02")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("x-ms-error-code") != "ResourceNotFound" {
		t.Errorf("anonymous read of a private blob at 2019-02-02: %d %s, want 404 ResourceNotFound", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
}

// wantAnonRefused fails the test unless err is the refusal of an
// anonymous request: 401 NoAuthenticationInformation, or on Azurite
// (prefix not empty) its 403 AuthorizationFailure (docs/EMULATOR.md,
// known differences: no credentials).
func wantAnonRefused(t *testing.T, what string, err error, prefix string) {
	t.Helper()
	if prefix != "" {
		wantFailure(t, what, err, http.StatusForbidden, "AuthorizationFailure")
		return
	}
	wantFailure(t, what, err, http.StatusUnauthorized, "NoAuthenticationInformation")
}

// TestContainerPolicy: a stored access policy set with Set Container ACL
// is what Policy finds for a SAS naming it.
func TestContainerPolicy(t *testing.T) {
	ctx := context.Background()
	svc, endpoint := startService(t)
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "pol", nil))
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	must[container.SetAccessPolicyResponse](t, "set ACL")(c.ServiceClient().NewContainerClient("pol").SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		ContainerACL: []*container.SignedIdentifier{{ID: to.Ptr("p1"), AccessPolicy: &container.AccessPolicy{
			Expiry: to.Ptr(expiry), Permission: to.Ptr("rl")}}}}))
	p, ok := svc.Policy("pol", "p1")
	if !ok || p.Permission != "rl" || !p.Expiry.Equal(expiry) {
		t.Errorf("Policy(pol, p1) = %+v, %v; want rl until %v", p, ok, expiry)
	}
	if _, ok := svc.Policy("pol", "p2"); ok {
		t.Error("Policy found an identifier never set")
	}
}

package blobs_test

import (
	"context"
	"crypto/md5"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestETagListsLeasesAndMD5Details: Get Blob takes a list of ETags in
// If-Match (any) and If-None-Match (none), a write does not; a lease ID
// on a blob or container with no lease is 412 LeaseNotPresentWith...;
// Md5Mismatch names both sums, as Azure's answers do.
func TestETagListsLeasesAndMD5Details(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[container.CreateResponse](t, "create")(c.ServiceClient().NewContainerClient("answers").Create(ctx, nil))
	bb := c.ServiceClient().NewContainerClient("answers").NewBlockBlobClient("b")
	up := must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rsc("hello"), nil))
	etag := string(*up.ETag)

	var status int
	read := func(ifMatch, ifNoneMatch string) error {
		mac := &blob.ModifiedAccessConditions{}
		if ifMatch != "" {
			mac.IfMatch = to.Ptr(azcore.ETag(ifMatch))
		}
		if ifNoneMatch != "" {
			mac.IfNoneMatch = to.Ptr(azcore.ETag(ifNoneMatch))
		}
		var raw *http.Response
		resp, err := bb.DownloadStream(policy.WithCaptureResponse(ctx, &raw), &blob.DownloadStreamOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: mac}})
		if err == nil {
			resp.Body.Close()
			status = raw.StatusCode
		}
		return err
	}
	if err := read(`"0x8D000000000000A", `+etag, ""); err != nil {
		t.Errorf("If-Match naming the blob's ETag second in a list: %v", err)
	}
	wantFailureSoft(t, "If-Match list naming none", read(`"0x8D000000000000A", "0x8D000000000000B"`, ""), http.StatusPreconditionFailed, "ConditionNotMet")
	if err := read("", `"0x8D000000000000A", "0x8D000000000000B"`); err != nil {
		t.Errorf("If-None-Match list naming none: %v", err)
	}
	// azblob takes a 304 for a success.
	if err := read("", `"0x8D000000000000A", `+etag); err != nil || status != http.StatusNotModified {
		t.Errorf("If-None-Match list naming it: %d, %v; want 304", status, err)
	}
	_, err := bb.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag(`"0x8D000000000000A", ` + etag))}}})
	wantFailureSoft(t, "a write with an If-Match list", err, http.StatusBadRequest, "MultipleConditionHeadersNotSupported")

	lease := &blob.LeaseAccessConditions{LeaseID: to.Ptr("8b8a1f7e-2c7d-4d9e-9a57-2c2f0b3f5a11")}
	_, err = bb.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, &blob.SetMetadataOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: lease}})
	wantFailureSoft(t, "set metadata with a lease ID, no lease", err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	_, err = bb.Upload(ctx, rsc("again"), &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: lease}})
	wantFailureSoft(t, "overwrite with a lease ID, no lease", err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	_, err = bb.Delete(ctx, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: lease}})
	wantFailureSoft(t, "delete with a lease ID, no lease", err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	_, err = c.ServiceClient().NewContainerClient("answers").Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: lease.LeaseID}}})
	wantFailureSoft(t, "delete container with a lease ID, no lease", err, http.StatusPreconditionFailed, "LeaseNotPresentWithContainerOperation")

	wrong := md5.Sum([]byte("not hello"))
	_, err = bb.Upload(ctx, rsc("hello"), &blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
	wantFailureSoft(t, "upload with a wrong MD5", err, http.StatusBadRequest, "Md5Mismatch")
	if err != nil && !strings.Contains(err.Error(), "<UserSpecifiedMd5>PQnC7PuepR9vrYLucbI63A==</UserSpecifiedMd5><ServerCalculatedMd5>XUFAKrxLKna5cZ2REBfFkg==</ServerCalculatedMd5>") {
		t.Errorf("Md5Mismatch without both sums: %v", err)
	}
}

// wantFailureSoft is wantFailure without stopping the test; code "" asks
// for the status alone.
func wantFailureSoft(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want %d %s", what, status, code)
		return
	}
	gotStatus, gotCode := failure(err)
	if gotStatus != status || code != "" && gotCode != code {
		t.Errorf("%s: got %d %q, want %d %s", what, gotStatus, gotCode, status, code)
	}
}

// rsc is s as an upload's body.
func rsc(s string) *readSeekCloser { return &readSeekCloser{strings.NewReader(s)} }

type readSeekCloser struct{ *strings.Reader }

func (readSeekCloser) Close() error { return nil }

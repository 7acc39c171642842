package blobs_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// TestCopyBlob copies within the account with azblob's StartCopyFromURL
// and CopyFromURL: the copy is complete when the call answers, the
// destination has the source's content, properties and metadata and
// the copy's properties, a copy onto a leased blob needs its lease, and
// Abort Copy finds no pending copy.
func TestCopyBlob(t *testing.T) { testCopyBlob(t, startEmulator(t), "") }

func testCopyBlob(t *testing.T, endpoint, prefix string) {
	ctx := context.Background()
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"src", nil))
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"dst", nil))
	src := c.ServiceClient().NewContainerClient(prefix + "src").NewBlockBlobClient("a")
	must[blockblob.UploadResponse](t, "upload")(src.Upload(ctx, rs("copied bytes"), &blockblob.UploadOptions{
		Metadata: map[string]*string{"Origin": to.Ptr("src")}, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}}))
	dst := c.ServiceClient().NewContainerClient(prefix + "dst").NewBlobClient("b")

	r := must[blob.StartCopyFromURLResponse](t, "copy")(dst.StartCopyFromURL(ctx, src.URL(), nil))
	if deref(r.CopyStatus) != blob.CopyStatusTypeSuccess || val(r.CopyID) == "" {
		t.Fatalf("copy answered status %v id %q, want success and an id", deref(r.CopyStatus), val(r.CopyID))
	}
	got := must[azblob.DownloadStreamResponse](t, "download")(dst.DownloadStream(ctx, nil))
	if b := body(got.Body); b != "copied bytes" || deref(got.ContentType) != "text/plain" || deref(got.Metadata["Origin"]) != "src" {
		t.Errorf("copy: %q %v %v, want the source's bytes, type and metadata", b, deref(got.ContentType), metaS(got.Metadata))
	}
	if val(got.CopyID) != val(r.CopyID) || deref(got.CopyStatus) != blob.CopyStatusTypeSuccess || deref(got.CopySource) != src.URL() || deref(got.CopyProgress) != "12/12" {
		t.Errorf("copy properties: id %q status %v source %q progress %q", val(got.CopyID), deref(got.CopyStatus), deref(got.CopySource), deref(got.CopyProgress))
	}
	_, err := dst.AbortCopyFromURL(ctx, val(r.CopyID), nil)
	wantFailure(t, "abort a finished copy", err, http.StatusConflict, "NoPendingCopyOperation")
	_, err = dst.AbortCopyFromURL(ctx, "00000000-0000-0000-0000-000000000000", nil)
	wantFailure(t, "abort another copy", err, http.StatusConflict, "CopyIdMismatch")

	pager := c.NewListBlobsFlatPager(prefix+"dst", &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Copy: true}})
	page := must[azblob.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
	if it := page.Segment.BlobItems; len(it) != 1 || val(it[0].Properties.CopyID) != val(r.CopyID) {
		t.Errorf("include=copy does not list the copy: %+v", it)
	}

	// The destination's lease holds against a copy onto it.
	l, err := lease.NewBlobClient(dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	must[lease.BlobAcquireResponse](t, "acquire")(l.AcquireLease(ctx, -1, nil))
	_, err = dst.StartCopyFromURL(ctx, src.URL(), nil)
	wantFailure(t, "copy onto a leased blob", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	// A synchronous copy reads its source with a SAS even within the
	// account (fromurl.go, authorizeSource).
	srcSAS, err := src.BlobClient().GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	must[blob.CopyFromURLResponse](t, "synchronous copy with the lease")(dst.CopyFromURL(ctx, srcSAS, &blob.CopyFromURLOptions{
		Metadata: map[string]*string{"Mine": to.Ptr("1")}, BlobAccessConditions: withLease(*l.LeaseID())}))
	p := must[blob.GetPropertiesResponse](t, "properties")(dst.GetProperties(ctx, nil))
	if deref(p.LeaseState) != lease.StateTypeLeased || deref(p.Metadata["Mine"]) != "1" || p.Metadata["Origin"] != nil {
		t.Errorf("after copying with metadata onto a leased blob: lease %v metadata %v, want leased and the request's metadata only", deref(p.LeaseState), metaS(p.Metadata))
	}

	_, err = dst.StartCopyFromURL(ctx, c.ServiceClient().NewContainerClient(prefix+"src").NewBlobClient("none").URL(), &blob.StartCopyFromURLOptions{AccessConditions: withLease(*l.LeaseID())})
	wantFailure(t, "copy of a missing blob", err, http.StatusNotFound, "BlobNotFound")
}

// val is *p, or T's zero value for nil.
func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

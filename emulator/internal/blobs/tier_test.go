package blobs_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
)

// listedTier is the AccessTier List Blobs shows for the blob name.
func listedTier(t *testing.T, cc *container.Client, name string) (tier string, archive string) {
	t.Helper()
	p := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: to.Ptr(name)})
	page := must[container.ListBlobsFlatResponse](t, "list")(p.NextPage(context.Background()))
	for _, b := range page.Segment.BlobItems {
		if *b.Name == name {
			if b.Properties.AccessTier != nil {
				tier = string(*b.Properties.AccessTier)
			}
			if b.Properties.ArchiveStatus != nil {
				archive = string(*b.Properties.ArchiveStatus)
			}
			return tier, archive
		}
	}
	t.Fatalf("%s is not listed", name)
	return "", ""
}

// TestSetBlobTier: a block blob written without a tier is Hot, inferred,
// with no change time; Set Blob Tier (200) sets the tier Get Blob
// Properties and List Blobs show, with its change time, and leaves the
// ETag; Put Blob and Put Block List write a blob in the tier
// x-ms-access-tier names. A tier Azure does not know is 400
// InvalidHeaderValue, an append blob's tier 400
// AccessTierNotSupportedForBlobType, a leased blob's without the lease
// 412 LeaseIdMissing; Copy Blob's tier is still refused, 501.
func TestSetBlobTier(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "tiers", nil))
	cc := cl.ServiceClient().NewContainerClient("tiers")
	must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "tiers", "b", []byte("data"), nil))
	bc := cc.NewBlobClient("b")
	p := must[blob.GetPropertiesResponse](t, "properties")(bc.GetProperties(ctx, nil))
	if *p.AccessTier != "Hot" || p.AccessTierInferred == nil || !*p.AccessTierInferred || p.AccessTierChangeTime != nil {
		t.Fatalf("a new blob: tier %v inferred %v changed %v, want Hot, inferred, no change time",
			*p.AccessTier, p.AccessTierInferred, p.AccessTierChangeTime)
	}

	var resp *http.Response
	must[blob.SetTierResponse](t, "set tier")(bc.SetTier(runtime.WithCaptureResponse(ctx, &resp), blob.AccessTierCool, nil))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Set Blob Tier Cool: status %d, want 200", resp.StatusCode)
	}
	q := must[blob.GetPropertiesResponse](t, "properties")(bc.GetProperties(ctx, nil))
	if *q.AccessTier != "Cool" || q.AccessTierInferred != nil || q.AccessTierChangeTime == nil {
		t.Errorf("after Set Blob Tier: tier %v inferred %v changed %v, want Cool, not inferred, a change time",
			*q.AccessTier, q.AccessTierInferred, q.AccessTierChangeTime)
	}
	if *q.ETag != *p.ETag || !q.LastModified.Equal(*p.LastModified) {
		t.Errorf("Set Blob Tier changed the ETag or Last-Modified: %v %v, was %v %v", *q.ETag, q.LastModified, *p.ETag, p.LastModified)
	}
	if got, _ := listedTier(t, cc, "b"); got != "Cool" {
		t.Errorf("List Blobs shows tier %q, want Cool", got)
	}
	must[azblob.DownloadStreamResponse](t, "download a cool blob")(cl.DownloadStream(ctx, "tiers", "b", nil))

	must[azblob.UploadBufferResponse](t, "upload cold")(cl.UploadBuffer(ctx, "tiers", "cold", []byte("data"),
		&azblob.UploadBufferOptions{AccessTier: to.Ptr(blob.AccessTierCold)}))
	if got, _ := listedTier(t, cc, "cold"); got != "Cold" {
		t.Errorf("Put Blob with Cold: listed tier %q", got)
	}
	bb := cc.NewBlockBlobClient("listed")
	id := "YmxvY2sx"
	must[blockblob.StageBlockResponse](t, "stage")(bb.StageBlock(ctx, id, rs("abc"), nil))
	must[blockblob.CommitBlockListResponse](t, "commit")(bb.CommitBlockList(ctx, []string{id},
		&blockblob.CommitBlockListOptions{Tier: to.Ptr(blob.AccessTierCool)}))
	if got, _ := listedTier(t, cc, "listed"); got != "Cool" {
		t.Errorf("Put Block List with Cool: listed tier %q", got)
	}

	_, err := bc.SetTier(ctx, blob.AccessTier("Lukewarm"), nil)
	wantFailure(t, "an unknown tier", err, http.StatusBadRequest, "InvalidHeaderValue")
	_, err = cc.NewBlobClient("missing").SetTier(ctx, blob.AccessTierCool, nil)
	wantFailure(t, "a missing blob", err, http.StatusNotFound, "BlobNotFound")
	ab := cc.NewAppendBlobClient("log")
	must[appendblob.CreateResponse](t, "append create")(ab.Create(ctx, nil))
	_, err = cc.NewBlobClient("log").SetTier(ctx, blob.AccessTierCool, nil)
	wantFailure(t, "an append blob", err, http.StatusBadRequest, "AccessTierNotSupportedForBlobType")

	_, err = headerClient(t, cl.URL(), "x-ms-access-tier", "Cool").ServiceClient().NewContainerClient("tiers").
		NewAppendBlobClient("log2").Create(ctx, nil)
	wantFailure(t, "an append blob created with a tier", err, http.StatusBadRequest, "AccessTierNotSupportedForBlobType")

	l := must[*lease.BlobClient](t, "lease client")(lease.NewBlobClient(bc, nil))
	must[lease.BlobAcquireResponse](t, "acquire")(l.AcquireLease(ctx, -1, nil))
	_, err = bc.SetTier(ctx, blob.AccessTierHot, nil)
	wantFailure(t, "a leased blob without its lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	must[blob.SetTierResponse](t, "set tier with the lease")(bc.SetTier(ctx, blob.AccessTierHot,
		&blob.SetTierOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: l.LeaseID()}}}))

	_, err = cc.NewBlobClient("copy").StartCopyFromURL(ctx, bc.URL(), &blob.StartCopyFromURLOptions{Tier: to.Ptr(blob.AccessTierCool)})
	wantFailure(t, "Copy Blob with a tier", err, http.StatusNotImplemented, "NotImplemented")
}

// TestArchivedBlobAndRehydration: an archived blob's content is offline:
// Get Blob, Set Blob Metadata, Snapshot Blob and an overwrite are 409
// BlobArchived, while its properties are read. Setting it Hot is 202 and
// a rehydration: the blob stays archived (rehydrate-pending-to-hot in Get
// Blob Properties and List Blobs), a different tier meanwhile is 409
// BlobBeingRehydrated, and it is Hot and readable once the service's
// clock has gone past the rehydration's hours (one at High priority).
func TestArchivedBlobAndRehydration(t *testing.T) {
	ctx := context.Background()
	var offset atomic.Int64
	_, endpoint := startServiceNow(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	cl := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(cl.CreateContainer(ctx, "cold", nil))
	cc := cl.ServiceClient().NewContainerClient("cold")
	for _, c := range []struct {
		name     string
		priority *blob.RehydratePriority
		wait     time.Duration
	}{
		{"standard", nil, 15 * time.Hour},
		{"high", to.Ptr(blob.RehydratePriorityHigh), time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "cold", c.name, []byte("data"), nil))
			bc := cc.NewBlobClient(c.name)
			must[blob.SetTierResponse](t, "archive")(bc.SetTier(ctx, blob.AccessTierArchive, nil))

			_, err := cl.DownloadStream(ctx, "cold", c.name, nil)
			wantFailure(t, "Get Blob", err, http.StatusConflict, "BlobArchived")
			_, err = bc.SetMetadata(ctx, map[string]*string{"a": to.Ptr("b")}, nil)
			wantFailure(t, "Set Blob Metadata", err, http.StatusConflict, "BlobArchived")
			_, err = bc.CreateSnapshot(ctx, nil)
			wantFailure(t, "Snapshot Blob", err, http.StatusConflict, "BlobArchived")
			_, err = cl.UploadBuffer(ctx, "cold", c.name, []byte("new"), nil)
			wantFailure(t, "Put Blob over it", err, http.StatusConflict, "BlobArchived")
			_, err = cc.NewBlobClient(c.name+"-copy").StartCopyFromURL(ctx, bc.URL(), nil)
			wantFailure(t, "Copy Blob from it", err, http.StatusConflict, "BlobArchived")
			_, err = cc.NewBlockBlobClient(c.name+"-fromurl").UploadBlobFromURL(ctx, readSAS(t, bc), nil)
			wantFailure(t, "Put Blob From URL from it", err, http.StatusConflict, "BlobArchived")
			p := must[blob.GetPropertiesResponse](t, "properties")(bc.GetProperties(ctx, nil))
			if *p.AccessTier != "Archive" {
				t.Fatalf("tier %s, want Archive", *p.AccessTier)
			}

			var resp *http.Response
			must[blob.SetTierResponse](t, "rehydrate")(bc.SetTier(runtime.WithCaptureResponse(ctx, &resp), blob.AccessTierHot,
				&blob.SetTierOptions{RehydratePriority: c.priority}))
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("rehydration: status %d, want 202", resp.StatusCode)
			}
			p = must[blob.GetPropertiesResponse](t, "properties")(bc.GetProperties(ctx, nil))
			if *p.AccessTier != "Archive" || p.ArchiveStatus == nil || *p.ArchiveStatus != "rehydrate-pending-to-hot" {
				t.Errorf("rehydrating: tier %v archive status %v, want Archive, rehydrate-pending-to-hot", *p.AccessTier, p.ArchiveStatus)
			}
			if tier, st := listedTier(t, cc, c.name); tier != "Archive" || st != "rehydrate-pending-to-hot" {
				t.Errorf("rehydrating: listed %q %q", tier, st)
			}
			_, err = bc.SetTier(ctx, blob.AccessTierCool, nil)
			wantFailure(t, "another tier while rehydrating", err, http.StatusConflict, "BlobBeingRehydrated")
			_, err = cl.DownloadStream(ctx, "cold", c.name, nil)
			wantFailure(t, "Get Blob while rehydrating", err, http.StatusConflict, "BlobArchived")

			offset.Add(int64(c.wait - time.Minute))
			_, err = cl.DownloadStream(ctx, "cold", c.name, nil)
			wantFailure(t, "Get Blob a minute before", err, http.StatusConflict, "BlobArchived")
			offset.Add(int64(2 * time.Minute))
			must[azblob.DownloadStreamResponse](t, "download rehydrated")(cl.DownloadStream(ctx, "cold", c.name, nil))
			p = must[blob.GetPropertiesResponse](t, "properties")(bc.GetProperties(ctx, nil))
			if *p.AccessTier != "Hot" || p.ArchiveStatus != nil || p.AccessTierInferred != nil {
				t.Errorf("rehydrated: tier %v archive status %v inferred %v, want Hot, none, not inferred",
					*p.AccessTier, p.ArchiveStatus, p.AccessTierInferred)
			}
		})
	}
}

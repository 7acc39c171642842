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
)

// withLease is a blob write's access conditions naming lease id.
func withLease(id string) *blob.AccessConditions {
	return &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: to.Ptr(id)}}
}

// TestBlobLeases drives a blob's lease through azblob's lease client as
// a checkpoint store does: one holder, a second refused, writes and
// deletes locked to the holder, renew, change, release, and break with
// and without a period, with Azure's codes for each refusal.
func TestBlobLeases(t *testing.T) {
	endpoint, pass := startEmulatorClock(t)
	testBlobLeases(t, endpoint, "", pass)
}

// testBlobLeases is TestBlobLeases on the service at endpoint, whose
// clock pass moves forward (time.Sleep where it cannot be moved).
func testBlobLeases(t *testing.T, endpoint, prefix string, pass func(time.Duration)) {
	ctx := context.Background()
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, prefix+"leases", nil))
	bb := c.ServiceClient().NewContainerClient(prefix + "leases").NewBlockBlobClient("ckpt")
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rs("0"), nil))
	newLease := func(id string) *lease.BlobClient {
		t.Helper()
		var o *lease.BlobClientOptions
		if id != "" {
			o = &lease.BlobClientOptions{LeaseID: to.Ptr(id)}
		}
		l, err := lease.NewBlobClient(bb, o)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newLease("11111111-1111-1111-1111-111111111111"), newLease("")

	_, err := a.AcquireLease(ctx, 10, nil)
	wantFailure(t, "acquire for 10 s", err, http.StatusBadRequest, "InvalidHeaderValue")
	got := must[lease.BlobAcquireResponse](t, "acquire")(a.AcquireLease(ctx, 15, nil))
	if *got.LeaseID != *a.LeaseID() {
		t.Errorf("acquire answered lease %s, proposed %s", *got.LeaseID, *a.LeaseID())
	}
	_, err = b.AcquireLease(ctx, -1, nil)
	wantFailure(t, "a second lease", err, http.StatusConflict, "LeaseAlreadyPresent")
	must[lease.BlobAcquireResponse](t, "acquire again by the holder")(a.AcquireLease(ctx, 20, nil))

	_, err = bb.Upload(ctx, rs("1"), nil)
	wantFailure(t, "write without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	_, err = bb.Upload(ctx, rs("1"), &blockblob.UploadOptions{AccessConditions: withLease(*b.LeaseID())})
	wantFailure(t, "write with another lease", err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	_, err = bb.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
	wantFailure(t, "set metadata without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	_, err = bb.StageBlock(ctx, blockID("b1"), rs("x"), nil)
	wantFailure(t, "put block without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	_, err = bb.Delete(ctx, nil)
	wantFailure(t, "delete without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	_, err = bb.GetProperties(ctx, &blob.GetPropertiesOptions{AccessConditions: withLease(*b.LeaseID())})
	wantFailure(t, "read with another lease", err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	must[blockblob.UploadResponse](t, "write with the lease")(bb.Upload(ctx, rs("1"), &blockblob.UploadOptions{AccessConditions: withLease(*a.LeaseID())}))

	p := must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
	if st := [3]any{deref(p.LeaseState), deref(p.LeaseStatus), deref(p.LeaseDuration)}; st != [3]any{lease.StateTypeLeased, lease.StatusTypeLocked, lease.DurationTypeFixed} {
		t.Errorf("leased blob's properties %v, want leased locked fixed (the write kept the lease)", st)
	}
	pager := c.NewListBlobsFlatPager(prefix+"leases", nil)
	page := must[azblob.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
	if it := page.Segment.BlobItems; len(it) != 1 || deref(it[0].Properties.LeaseState) != lease.StateTypeLeased || deref(it[0].Properties.LeaseDuration) != lease.DurationTypeFixed {
		t.Errorf("listing does not show the lease: %+v", it)
	}

	_, err = b.RenewLease(ctx, nil)
	wantFailure(t, "renew another's lease", err, http.StatusConflict, "LeaseIdMismatchWithLeaseOperation")
	must[lease.BlobRenewResponse](t, "renew")(a.RenewLease(ctx, nil))
	changed := "22222222-2222-2222-2222-222222222222"
	must[lease.BlobChangeResponse](t, "change")(a.ChangeLease(ctx, changed, nil))
	_, err = bb.Upload(ctx, rs("2"), &blockblob.UploadOptions{AccessConditions: withLease("11111111-1111-1111-1111-111111111111")})
	wantFailure(t, "write with the old ID", err, http.StatusPreconditionFailed, "LeaseIdMismatchWithBlobOperation")
	must[lease.BlobReleaseResponse](t, "release")(a.ReleaseLease(ctx, nil))
	_, err = bb.Upload(ctx, rs("3"), &blockblob.UploadOptions{AccessConditions: withLease(changed)})
	wantFailure(t, "write with a released lease", err, http.StatusPreconditionFailed, "LeaseNotPresentWithBlobOperation")
	_, err = b.BreakLease(ctx, nil)
	wantFailure(t, "break without a lease", err, http.StatusConflict, "LeaseNotPresentWithLeaseOperation")

	// An infinite lease breaks at once; a broken lease cannot be renewed,
	// but another holder may acquire.
	must[lease.BlobAcquireResponse](t, "acquire infinite")(a.AcquireLease(ctx, -1, nil))
	p = must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
	if deref(p.LeaseDuration) != lease.DurationTypeInfinite {
		t.Errorf("lease duration %v, want infinite", deref(p.LeaseDuration))
	}
	must[lease.BlobBreakResponse](t, "break")(a.BreakLease(ctx, nil))
	_, err = a.RenewLease(ctx, nil)
	wantFailure(t, "renew a broken lease", err, http.StatusConflict, "LeaseIsBrokenAndCannotBeRenewed")
	must[blockblob.UploadResponse](t, "write after the break")(bb.Upload(ctx, rs("4"), nil))
	must[lease.BlobAcquireResponse](t, "acquire after the break")(b.AcquireLease(ctx, 15, nil))

	// A break with a period leaves the lease breaking (still locked) until
	// it ends.
	r := must[lease.BlobBreakResponse](t, "break in 1 s")(b.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr[int32](1)}))
	if deref(r.LeaseTime) != int32(1) {
		t.Errorf("x-ms-lease-time %v, want 1", deref(r.LeaseTime))
	}
	_, err = b.AcquireLease(ctx, 15, nil)
	wantFailure(t, "acquire a breaking lease", err, http.StatusConflict, "LeaseIsBreakingAndCannotBeAcquired")
	_, err = a.AcquireLease(ctx, 15, nil)
	wantFailure(t, "another acquires a breaking lease", err, http.StatusConflict, "LeaseAlreadyPresent")
	_, err = bb.Upload(ctx, rs("5"), nil)
	wantFailure(t, "write to a breaking lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	pass(1100 * time.Millisecond)
	p = must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
	if deref(p.LeaseState) != lease.StateTypeBroken || deref(p.LeaseStatus) != lease.StatusTypeUnlocked {
		t.Errorf("after the break period: %v %v, want broken unlocked", deref(p.LeaseState), deref(p.LeaseStatus))
	}
	must[lease.BlobAcquireResponse](t, "acquire once broken")(a.AcquireLease(ctx, 15, nil))
}

// TestContainerLeases: a leased container is deleted only with its
// lease ID, and shows its lease in properties and listings.
func TestContainerLeases(t *testing.T) { testContainerLeases(t, startEmulator(t), "") }

func testContainerLeases(t *testing.T, endpoint, prefix string) {
	ctx := context.Background()
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, prefix+"held", nil))
	cc := c.ServiceClient().NewContainerClient(prefix + "held")
	l, err := lease.NewContainerClient(cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	must[lease.ContainerAcquireResponse](t, "acquire")(l.AcquireLease(ctx, -1, nil))
	l2, err := lease.NewContainerClient(cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l2.AcquireLease(ctx, -1, nil)
	wantFailure(t, "a second lease", err, http.StatusConflict, "LeaseAlreadyPresent")
	p := must[container.GetPropertiesResponse](t, "properties")(cc.GetProperties(ctx, nil))
	if deref(p.LeaseState) != lease.StateTypeLeased || deref(p.LeaseDuration) != lease.DurationTypeInfinite {
		t.Errorf("container lease %v %v, want leased infinite", deref(p.LeaseState), deref(p.LeaseDuration))
	}
	page := must[azblob.ListContainersResponse](t, "list")(c.NewListContainersPager(&azblob.ListContainersOptions{Prefix: to.Ptr(prefix + "held")}).NextPage(ctx))
	if it := page.ContainerItems; len(it) != 1 || deref(it[0].Properties.LeaseStatus) != lease.StatusTypeLocked {
		t.Errorf("listing does not show the lease: %+v", it)
	}
	_, err = cc.Delete(ctx, nil)
	wantFailure(t, "delete without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	_, err = cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: l2.LeaseID()}}})
	wantFailure(t, "delete with another lease", err, http.StatusPreconditionFailed, "LeaseIdMismatchWithContainerOperation")
	must[azblob.UploadBufferResponse](t, "a blob write is not held by the container's lease")(c.UploadBuffer(ctx, prefix+"held", "b", []byte("x"), nil))
	must[container.DeleteResponse](t, "delete with the lease")(cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{LeaseAccessConditions: &container.LeaseAccessConditions{LeaseID: l.LeaseID()}}}))
}

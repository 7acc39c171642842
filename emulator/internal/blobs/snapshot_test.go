package blobs_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// TestSnapshots takes snapshots with azblob, reads one after the blob
// changed, lists them with include=snapshots, and deletes: 409
// SnapshotsPresent without x-ms-delete-snapshots, only the snapshots
// with "only", one snapshot by its name, all with "include".
func TestSnapshots(t *testing.T) { testSnapshots(t, startEmulator(t), "") }

func testSnapshots(t *testing.T, endpoint, prefix string) {
	ctx := context.Background()
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, prefix+"snaps", nil))
	bb := c.ServiceClient().NewContainerClient(prefix + "snaps").NewBlockBlobClient("b")
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rs("v1"), nil))
	s1 := must[blob.CreateSnapshotResponse](t, "snapshot")(bb.CreateSnapshot(ctx, nil))
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rs("v2"), nil))
	s2 := must[blob.CreateSnapshotResponse](t, "snapshot")(bb.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{Metadata: map[string]*string{"Tag": to.Ptr("two")}}))
	if val(s1.Snapshot) == "" || val(s1.Snapshot) >= val(s2.Snapshot) {
		t.Fatalf("snapshot names %q, %q: want increasing", val(s1.Snapshot), val(s2.Snapshot))
	}
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rs("v3"), nil))

	snap1, err := bb.WithSnapshot(val(s1.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	if got := body(must[blob.DownloadStreamResponse](t, "read snapshot")(snap1.DownloadStream(ctx, nil)).Body); got != "v1" {
		t.Errorf("snapshot 1 reads %q, want v1", got)
	}
	if prefix == "" {
		// Azurite sets the metadata of the blob itself (see
		// docs/EMULATOR.md, known differences).
		_, err = snap1.SetMetadata(ctx, map[string]*string{"k": to.Ptr("v")}, nil)
		wantFailure(t, "write to a snapshot", err, http.StatusBadRequest, "InvalidQueryParameterValue")
	}

	pager := c.NewListBlobsFlatPager(prefix+"snaps", &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true, Metadata: true}})
	page := must[azblob.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
	var listed []string
	for _, it := range page.Segment.BlobItems {
		listed = append(listed, val(it.Snapshot)+"|"+metaS(it.Metadata))
	}
	// Azure lists a blob's snapshots oldest first, then the blob (the
	// Python SDK's recorded test_list_blobs_with_include_snapshots);
	// Azurite lists the blob first, then its snapshots newest first.
	if want := []string{val(s1.Snapshot) + "|" + metaS(nil), val(s2.Snapshot) + "|" + metaS(map[string]*string{"Tag": to.Ptr("two")}), "|" + metaS(nil)}; prefix == "" && (len(listed) != 3 || listed[0] != want[0] || listed[1] != want[1] || listed[2] != want[2]) {
		t.Errorf("listing %q, want %q", listed, want)
	}
	if prefix == "" {
		// Pages of one entry: a page may end among a blob's snapshots.
		var paged []string
		pager := c.NewListBlobsFlatPager(prefix+"snaps", &azblob.ListBlobsFlatOptions{MaxResults: to.Ptr[int32](1), Include: container.ListBlobsInclude{Snapshots: true}})
		for pager.More() {
			pg := must[azblob.ListBlobsFlatResponse](t, "list a page")(pager.NextPage(ctx))
			var entries []string
			for _, it := range pg.Segment.BlobItems {
				entries = append(entries, val(it.Snapshot))
			}
			paged = append(paged, strings.Join(entries, "+"))
		}
		if want := []string{val(s1.Snapshot), val(s2.Snapshot), ""}; !slices.Equal(paged, want) {
			t.Errorf("pages of one entry list snapshots %q, want %q", paged, want)
		}
	}
	page = must[azblob.ListBlobsFlatResponse](t, "list")(c.NewListBlobsFlatPager(prefix+"snaps", nil).NextPage(ctx))
	if n := len(page.Segment.BlobItems); n != 1 {
		t.Errorf("listing without include=snapshots has %d entries, want 1", n)
	}

	_, err = bb.Delete(ctx, nil)
	wantFailure(t, "delete a blob with snapshots", err, http.StatusConflict, "SnapshotsPresent")
	must[blob.DeleteResponse](t, "delete snapshot 1")(snap1.Delete(ctx, nil))
	_, err = snap1.GetProperties(ctx, nil)
	wantFailure(t, "read a deleted snapshot", err, http.StatusNotFound, "BlobNotFound")
	must[blob.DeleteResponse](t, "delete only the snapshots")(bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeOnly)}))
	if got := body(must[blob.DownloadStreamResponse](t, "read blob")(bb.DownloadStream(ctx, nil)).Body); got != "v3" {
		t.Errorf("blob reads %q after its snapshots went, want v3", got)
	}
	must[blob.CreateSnapshotResponse](t, "snapshot")(bb.CreateSnapshot(ctx, nil))
	must[blob.DeleteResponse](t, "delete with snapshots")(bb.Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: to.Ptr(blob.DeleteSnapshotsOptionTypeInclude)}))
	page = must[azblob.ListBlobsFlatResponse](t, "list")(c.NewListBlobsFlatPager(prefix+"snaps", &azblob.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Snapshots: true}}).NextPage(ctx))
	if n := len(page.Segment.BlobItems); n != 0 {
		t.Errorf("%d entries left after deleting the blob with its snapshots", n)
	}
}

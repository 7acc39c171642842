package blobs_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// tagsOf reads a blob's tags through Get Blob Tags.
func tagsOf(t *testing.T, b *blob.Client) map[string]string {
	t.Helper()
	resp, err := b.GetTags(context.Background(), nil)
	if err != nil {
		t.Fatalf("Get Blob Tags: %v", err)
	}
	out := map[string]string{}
	for _, tag := range resp.BlobTagSet {
		out[*tag.Key] = *tag.Value
	}
	return out
}

// TestBlobIndexTags: tags set by x-ms-tags on Put Blob, Put Block List
// and Copy Blob and by Set Blob Tags read back by Get Blob Tags, counted
// by Get Blob Properties and shown by List Blobs with include=tags; Set
// Blob Tags changes neither ETag nor Last-Modified; a write that replaces
// the blob replaces its tags, Copy Blob does not copy the source's.
func TestBlobIndexTags(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "box")
	bb := cc.NewBlockBlobClient("tagged")
	tags := map[string]string{"project": "x", "Path/To:a=b_c-d.e+f g": ""}
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rsc("data"), &blockblob.UploadOptions{Tags: tags}))
	if got := tagsOf(t, bb.BlobClient()); !maps.Equal(got, tags) {
		t.Errorf("after Put Blob: tags %v, want %v", got, tags)
	}
	props := must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
	if props.TagCount == nil || *props.TagCount != 2 {
		t.Errorf("x-ms-tag-count %v, want 2", props.TagCount)
	}

	set := map[string]string{"a": "1", "b": "2", "c": "3"}
	must[blob.SetTagsResponse](t, "set tags")(bb.SetTags(ctx, set, nil))
	if got := tagsOf(t, bb.BlobClient()); !maps.Equal(got, set) {
		t.Errorf("after Set Blob Tags: tags %v, want %v", got, set)
	}
	after := must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
	if *after.ETag != *props.ETag || !after.LastModified.Equal(*props.LastModified) {
		t.Errorf("Set Blob Tags changed ETag or Last-Modified: %v %v, then %v %v", *props.ETag, props.LastModified, *after.ETag, after.LastModified)
	}

	snap := must[blob.CreateSnapshotResponse](t, "snapshot")(bb.CreateSnapshot(ctx, nil))
	snapClient := must[*blob.Client](t, "snapshot client")(bb.BlobClient().WithSnapshot(*snap.Snapshot))
	if got := tagsOf(t, snapClient); !maps.Equal(got, set) {
		t.Errorf("the snapshot's tags: %v, want %v", got, set)
	}
	_, err := snapClient.SetTags(ctx, map[string]string{"on": "snapshot"}, nil)
	wantFailure(t, "Set Blob Tags on a snapshot", err, http.StatusNotImplemented, "NotImplemented")

	pager := cc.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Include: container.ListBlobsInclude{Tags: true}})
	page := must[container.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
	if n := len(page.Segment.BlobItems); n != 1 {
		t.Fatalf("listed %d blobs, want 1", n)
	}
	item := page.Segment.BlobItems[0]
	if item.BlobTags == nil || len(item.BlobTags.BlobTagSet) != 3 || *item.BlobTags.BlobTagSet[0].Key != "a" {
		t.Errorf("listed tags %+v, want a, b, c", item.BlobTags)
	}
	if item.Properties.TagCount == nil || *item.Properties.TagCount != 3 {
		t.Errorf("listed TagCount %v, want 3", item.Properties.TagCount)
	}

	must[blob.SetTagsResponse](t, "set no tags")(bb.SetTags(ctx, nil, nil))
	if got := tagsOf(t, bb.BlobClient()); len(got) != 0 {
		t.Errorf("after Set Blob Tags with none: %v", got)
	}

	must[blob.SetTagsResponse](t, "set tags")(bb.SetTags(ctx, set, nil))
	must[blockblob.UploadResponse](t, "overwrite")(bb.Upload(ctx, rsc("new"), nil))
	if got := tagsOf(t, bb.BlobClient()); len(got) != 0 {
		t.Errorf("a Put Blob without x-ms-tags kept the tags %v", got)
	}

	committed := cc.NewBlockBlobClient("committed")
	must[blockblob.StageBlockResponse](t, "stage")(committed.StageBlock(ctx, blockID("b1"), rsc("block"), nil))
	must[blockblob.CommitBlockListResponse](t, "commit")(committed.CommitBlockList(ctx, []string{blockID("b1")},
		&blockblob.CommitBlockListOptions{Tags: map[string]string{"from": "blocklist"}}))
	if got := tagsOf(t, committed.BlobClient()); !maps.Equal(got, map[string]string{"from": "blocklist"}) {
		t.Errorf("after Put Block List: %v", got)
	}

	copied := cc.NewBlobClient("copied")
	must[blob.StartCopyFromURLResponse](t, "copy")(copied.StartCopyFromURL(ctx, committed.URL(),
		&blob.StartCopyFromURLOptions{BlobTags: map[string]string{"copy": "yes"}}))
	if got := tagsOf(t, copied); !maps.Equal(got, map[string]string{"copy": "yes"}) {
		t.Errorf("after Copy Blob with x-ms-tags: %v", got)
	}
	plain := cc.NewBlobClient("plain-copy")
	must[blob.StartCopyFromURLResponse](t, "copy")(plain.StartCopyFromURL(ctx, committed.URL(), nil))
	if got := tagsOf(t, plain); len(got) != 0 {
		t.Errorf("Copy Blob copied the source's tags: %v", got)
	}

	_, err = cc.NewBlobClient("missing").GetTags(ctx, nil)
	wantFailure(t, "Get Blob Tags of a missing blob", err, http.StatusNotFound, "BlobNotFound")
	_, err = cc.NewBlobClient("missing").SetTags(ctx, set, nil)
	wantFailure(t, "Set Blob Tags of a missing blob", err, http.StatusNotFound, "BlobNotFound")
}

// TestBlobIndexTagLimits: Azure's limits on tags (at most 10; a key of 1
// to 128 characters, a value of at most 256; letters, digits, space and
// + - . / : = _), refused with 400 and Azure's code by Set Blob Tags and
// by Put Blob before it writes anything.
func TestBlobIndexTagLimits(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "box")
	bb := cc.NewBlockBlobClient("b")
	must[blockblob.UploadResponse](t, "upload")(bb.Upload(ctx, rsc("data"), nil))
	eleven := map[string]string{}
	ten := map[string]string{}
	for i := range 11 {
		eleven[string(rune('a'+i))] = "v"
		if i < 10 {
			ten[string(rune('a'+i))] = "v"
		}
	}
	for _, c := range []struct {
		name string
		tags map[string]string
		code string // "" when accepted
	}{
		{"ten tags", ten, ""},
		{"eleven tags", eleven, "TagsTooLarge"},
		{"a key of 128", map[string]string{strings.Repeat("k", 128): strings.Repeat("v", 256)}, ""},
		{"a key of 129", map[string]string{strings.Repeat("k", 129): "v"}, "TagsTooLarge"},
		{"a value of 257", map[string]string{"k": strings.Repeat("v", 257)}, "TagsTooLarge"},
		{"an empty key", map[string]string{"": "v"}, "EmptyTagName"},
		{"a key with !", map[string]string{"a!": "v"}, "InvalidTag"},
		{"a value with é", map[string]string{"k": "é"}, "InvalidTag"},
		{"a value with &", map[string]string{"k": "a&b"}, "InvalidTag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := bb.SetTags(ctx, c.tags, nil)
			name := "new-" + strings.ReplaceAll(c.name, " ", "-")
			_, uerr := cc.NewBlockBlobClient(name).Upload(ctx, rsc("data"), &blockblob.UploadOptions{Tags: c.tags})
			if c.code == "" {
				if err != nil || uerr != nil {
					t.Fatalf("refused: %v; %v", err, uerr)
				}
				if got := tagsOf(t, bb.BlobClient()); !maps.Equal(got, c.tags) {
					t.Errorf("tags %v, want %v", got, c.tags)
				}
				return
			}
			wantFailure(t, "Set Blob Tags", err, http.StatusBadRequest, c.code)
			wantFailure(t, "Put Blob", uerr, http.StatusBadRequest, c.code)
			_, err = cc.NewBlobClient(name).GetProperties(ctx, nil)
			wantFailure(t, "the blob after", err, http.StatusNotFound, "BlobNotFound")
		})
	}
}

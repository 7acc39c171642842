package blobs_test

import (
	"context"
	"crypto/md5"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
)

// readSAS is a read SAS URL of b, signed with the development key.
func readSAS(t *testing.T, b *blob.Client) string {
	t.Helper()
	u, err := b.GetSASURL(sas.BlobPermissions{Read: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPutBlobFromURL: Put Blob From URL (azblob's UploadBlobFromURL) makes
// a block blob of its source's bytes, with the source's content headers
// unless the request sets them or asks for none, the request's metadata
// only, and an MD5 of the content; its source needs a SAS even within the
// account (401 CannotVerifyCopySource without), x-ms-source-content-md5
// must match, and If-None-Match: * keeps an existing blob.
func TestPutBlobFromURL(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "box")
	src := cc.NewBlockBlobClient("src")
	must[blockblob.UploadResponse](t, "upload")(src.Upload(ctx, rs("from a url"), &blockblob.UploadOptions{
		Metadata:    map[string]*string{"Origin": to.Ptr("src")},
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobContentLanguage: to.Ptr("en")}}))
	srcURL := readSAS(t, src.BlobClient())

	dst := cc.NewBlockBlobClient("dst")
	r := must[blockblob.UploadBlobFromURLResponse](t, "put blob from url")(dst.UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{
		Metadata: map[string]*string{"Mine": to.Ptr("1")}, HTTPHeaders: &blob.HTTPHeaders{BlobContentLanguage: to.Ptr("fr")}}))
	sum := md5.Sum([]byte("from a url"))
	if string(r.ContentMD5) != string(sum[:]) {
		t.Errorf("Content-MD5 %x, want %x", r.ContentMD5, sum)
	}
	got := must[blob.DownloadStreamResponse](t, "download")(dst.DownloadStream(ctx, nil))
	if b := body(got.Body); b != "from a url" || deref(got.ContentType) != "text/plain" || deref(got.ContentLanguage) != "fr" ||
		deref(got.Metadata["Mine"]) != "1" || got.Metadata["Origin"] != nil || deref(got.BlobType) != blob.BlobTypeBlockBlob {
		t.Errorf("put blob from url: %q type %v language %v metadata %s blob type %v, want the source's bytes and type, the request's language and metadata",
			b, deref(got.ContentType), deref(got.ContentLanguage), metaS(got.Metadata), deref(got.BlobType))
	}

	bare := cc.NewBlockBlobClient("bare")
	must[blockblob.UploadBlobFromURLResponse](t, "without the source's properties")(bare.UploadBlobFromURL(ctx, srcURL,
		&blockblob.UploadBlobFromURLOptions{CopySourceBlobProperties: to.Ptr(false)}))
	p := must[blob.GetPropertiesResponse](t, "properties")(bare.GetProperties(ctx, nil))
	if deref(p.ContentType) != "application/octet-stream" || p.ContentLanguage != nil {
		t.Errorf("x-ms-copy-source-blob-properties false: type %v language %v, want Put Blob's defaults", deref(p.ContentType), deref(p.ContentLanguage))
	}

	_, err := cc.NewBlockBlobClient("nosas").UploadBlobFromURL(ctx, src.URL(), nil)
	wantFailure(t, "a source without a SAS", err, http.StatusUnauthorized, "CannotVerifyCopySource")
	_, err = cc.NewBlockBlobClient("md5").UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{SourceContentMD5: make([]byte, md5.Size)})
	wantFailure(t, "a wrong x-ms-source-content-md5", err, http.StatusBadRequest, "Md5Mismatch")
	_, err = dst.UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}})
	wantFailure(t, "If-None-Match: * on an existing blob", err, http.StatusConflict, "BlobAlreadyExists")
	_, err = cc.NewBlockBlobClient("x").UploadBlobFromURL(ctx, readSAS(t, cc.NewBlobClient("missing")), nil)
	wantFailure(t, "a missing source", err, http.StatusNotFound, "BlobNotFound")

	// Tag conditions: x-ms-source-if-tags on the source, x-ms-if-tags on
	// the blob replaced.
	must[blob.SetTagsResponse](t, "tag the source")(src.SetTags(ctx, map[string]string{"project": "x"}, nil))
	_, err = cc.NewBlockBlobClient("x").UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{
		SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfTags: to.Ptr(`"project"='y'`)}})
	wantFailure(t, "x-ms-source-if-tags not met", err, http.StatusPreconditionFailed, "SourceConditionNotMet")
	must[blockblob.UploadBlobFromURLResponse](t, "x-ms-source-if-tags met")(cc.NewBlockBlobClient("x").UploadBlobFromURL(ctx, srcURL,
		&blockblob.UploadBlobFromURLOptions{SourceModifiedAccessConditions: &blob.SourceModifiedAccessConditions{SourceIfTags: to.Ptr(`"project"='x'`)}}))
	_, err = dst.UploadBlobFromURL(ctx, srcURL, &blockblob.UploadBlobFromURLOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(`"project"='x'`)}}})
	wantFailure(t, "x-ms-if-tags not met by the blob replaced", err, http.StatusPreconditionFailed, "ConditionNotMet")

	// A page blob's pages, read as its bytes.
	pb := cc.NewPageBlobClient("pages")
	must[pageblob.CreateResponse](t, "create a page blob")(pb.Create(ctx, 1024, nil))
	page := strings.Repeat("p", 512)
	must[pageblob.UploadPagesResponse](t, "put a page")(pb.UploadPages(ctx, rs(page), blob.HTTPRange{Offset: 512, Count: 512}, nil))
	fromPages := cc.NewBlockBlobClient("frompages")
	must[blockblob.UploadBlobFromURLResponse](t, "from a page blob")(fromPages.UploadBlobFromURL(ctx, readSAS(t, pb.BlobClient()), nil))
	got = must[blob.DownloadStreamResponse](t, "download")(fromPages.DownloadStream(ctx, nil))
	if b := body(got.Body); b != strings.Repeat("\x00", 512)+page || deref(got.BlobType) != blob.BlobTypeBlockBlob {
		t.Errorf("from a page blob: %d bytes (%q...), type %v; want its 1,024 bytes as a block blob", len(b), b[:min(len(b), 8)], deref(got.BlobType))
	}
}

// TestPutBlockFromURL: Put Block From URL (azblob's StageBlockFromURL)
// stages a range of its source, or all of it, as an uncommitted block; a
// range past the source's end and a source without a SAS are refused.
func TestPutBlockFromURL(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "box")
	src := cc.NewBlockBlobClient("src")
	must[blockblob.UploadResponse](t, "upload")(src.Upload(ctx, rs("0123456789"), nil))
	srcURL := readSAS(t, src.BlobClient())

	dst := cc.NewBlockBlobClient("dst")
	ids := []string{"YmxvY2sx", "YmxvY2sy"} // block1, block2
	must[blockblob.StageBlockFromURLResponse](t, "stage a range")(dst.StageBlockFromURL(ctx, ids[0], srcURL,
		&blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: 2, Count: 3}}))
	must[blockblob.StageBlockFromURLResponse](t, "stage the whole source")(dst.StageBlockFromURL(ctx, ids[1], srcURL, nil))
	bl := must[blockblob.GetBlockListResponse](t, "block list")(dst.GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil))
	if n := len(bl.UncommittedBlocks); n != 2 || deref(bl.UncommittedBlocks[0].Size) != int64(3) {
		t.Fatalf("uncommitted blocks %d (first %v bytes), want 2, the first of 3 bytes", n, deref(bl.UncommittedBlocks[0].Size))
	}
	must[blockblob.CommitBlockListResponse](t, "commit")(dst.CommitBlockList(ctx, ids, nil))
	got := must[blob.DownloadStreamResponse](t, "download")(dst.DownloadStream(ctx, nil))
	if b := body(got.Body); b != "2340123456789" {
		t.Errorf("committed blocks read %q, want %q", b, "2340123456789")
	}

	_, err := dst.StageBlockFromURL(ctx, ids[0], srcURL, &blockblob.StageBlockFromURLOptions{Range: blob.HTTPRange{Offset: 10, Count: 1}})
	wantFailure(t, "a range past the source's end", err, http.StatusRequestedRangeNotSatisfiable, "CannotVerifyCopySource")
	_, err = dst.StageBlockFromURL(ctx, ids[0], src.URL(), nil)
	wantFailure(t, "a source without a SAS", err, http.StatusUnauthorized, "CannotVerifyCopySource")
}

// TestCopySourceAuthorization: who may read a copy's source. Copy Blob
// From URL needs a SAS on its source even within the account (401
// CannotVerifyCopySource); Copy Blob authorized by a SAS reads a private
// source only through a SAS of its own (404 CannotVerifyCopySource), a
// public one without; x-ms-copy-source-authorization on Copy Blob is not
// served (501).
func TestCopySourceAuthorization(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "private", nil))
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "public", &container.CreateOptions{Access: to.Ptr(container.PublicAccessTypeBlob)}))
	priv := c.ServiceClient().NewContainerClient("private").NewBlockBlobClient("a")
	must[blockblob.UploadResponse](t, "upload")(priv.Upload(ctx, rs("private"), nil))
	pub := c.ServiceClient().NewContainerClient("public").NewBlockBlobClient("a")
	must[blockblob.UploadResponse](t, "upload")(pub.Upload(ctx, rs("public"), nil))

	dst := c.ServiceClient().NewContainerClient("private").NewBlobClient("copy")
	_, err := dst.CopyFromURL(ctx, priv.URL(), nil)
	wantFailure(t, "Copy Blob From URL of a private source without a SAS", err, http.StatusUnauthorized, "CannotVerifyCopySource")
	must[blob.CopyFromURLResponse](t, "Copy Blob From URL of a public source")(dst.CopyFromURL(ctx, pub.URL(), nil))
	must[blob.StartCopyFromURLResponse](t, "Copy Blob of a private source, Shared Key")(dst.StartCopyFromURL(ctx, priv.URL(), nil))

	// The destination authorized by a SAS: the source needs its own.
	dstSAS, err := dst.GetSASURL(sas.BlobPermissions{Read: true, Write: true, Create: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	bySAS, err := blob.NewClientWithNoCredential(dstSAS, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bySAS.StartCopyFromURL(ctx, priv.URL(), nil)
	wantFailure(t, "Copy Blob by a SAS of a private source without one", err, http.StatusNotFound, "CannotVerifyCopySource")
	must[blob.StartCopyFromURLResponse](t, "Copy Blob by a SAS of a source with one")(bySAS.StartCopyFromURL(ctx, readSAS(t, priv.BlobClient()), nil))
	must[blob.StartCopyFromURLResponse](t, "Copy Blob by a SAS of a public source")(bySAS.StartCopyFromURL(ctx, pub.URL(), nil))

	req, err := http.NewRequest(http.MethodPut, dstSAS, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2025-01-05")
	req.Header.Set("x-ms-copy-source", pub.URL())
	req.Header.Set("x-ms-copy-source-authorization", "Bearer x.y.z")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("x-ms-copy-source-authorization on Copy Blob: %d, want 501", resp.StatusCode)
	}
}

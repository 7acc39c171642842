package blobs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// azureETag is the form of Azure's ETags: .NET ticks in hex, "0x8D..."
// in this century.
var azureETag = regexp.MustCompile(`^"0x8D[0-9A-F]{13}"$`)

// TestETagsChangeOnEveryWrite checks that every write gives the blob or
// container a new ETag in Azure's form, and that the answer's ETag is
// the one reads then see.
func TestETagsChangeOnEveryWrite(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	cc := c.ServiceClient().NewContainerClient("etags")
	seen := map[azcore.ETag]string{}
	note := func(what string, e *azcore.ETag) {
		t.Helper()
		if e == nil || !azureETag.MatchString(string(*e)) {
			t.Fatalf("%s: ETag %v is not in Azure's form", what, deref(e))
		}
		if prev, ok := seen[*e]; ok {
			t.Fatalf("%s: ETag %s again (first from %s)", what, *e, prev)
		}
		seen[*e] = what
	}
	check := func(what string, e *azcore.ETag) {
		t.Helper()
		note(what, e)
		p, err := cc.NewBlobClient("b").GetProperties(ctx, nil)
		if err != nil {
			t.Fatalf("%s: properties: %v", what, err)
		}
		if *p.ETag != *e {
			t.Fatalf("%s: answered ETag %s, properties say %s", what, *e, *p.ETag)
		}
	}
	r1 := must[container.CreateResponse](t, "create container")(cc.Create(ctx, nil))
	note("create container", r1.ETag)
	r2 := must[container.SetMetadataResponse](t, "container metadata")(cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: map[string]*string{"a": to.Ptr("b")}}))
	note("container metadata", r2.ETag)
	bb := cc.NewBlockBlobClient("b")
	for i := range 3 {
		r := must[blockblob.UploadResponse](t, "put blob")(bb.Upload(ctx, rs("same content"), nil))
		check("put blob "+strconv.Itoa(i), r.ETag)
	}
	r3 := must[blob.SetMetadataResponse](t, "set metadata")(bb.SetMetadata(ctx, map[string]*string{"x": to.Ptr("y")}, nil))
	check("set metadata", r3.ETag)
	r4 := must[blob.SetHTTPHeadersResponse](t, "set headers")(bb.SetHTTPHeaders(ctx, blob.HTTPHeaders{BlobContentType: to.Ptr("a/b")}, nil))
	check("set headers", r4.ETag)
	must[blockblob.StageBlockResponse](t, "put block")(bb.StageBlock(ctx, blockID("1"), rs("x"), nil))
	r5 := must[blockblob.CommitBlockListResponse](t, "put block list")(bb.CommitBlockList(ctx, []string{blockID("1")}, nil))
	check("put block list", r5.ETag)
	ab := cc.NewAppendBlobClient("b")
	r6 := must[appendblob.CreateResponse](t, "create append blob")(ab.Create(ctx, nil))
	check("create append blob", r6.ETag)
	for i := range 3 {
		r := must[appendblob.AppendBlockResponse](t, "append block")(ab.AppendBlock(ctx, rs("x"), nil))
		check("append block "+strconv.Itoa(i), r.ETag)
	}
	r7 := must[appendblob.SealResponse](t, "seal")(ab.Seal(ctx, nil))
	check("seal", r7.ETag)
}

// TestAppendBlobBlockLimit appends Azure's limit of 50,000 blocks to one
// append blob; the next block is refused with 409
// BlockCountExceedsLimit and leaves the blob as it was. All but the last
// blocks go straight to the service's ServeHTTP, signed with an account
// SAS, from several goroutines at once (the SDK and loopback HTTP would
// cost 50,000 round trips, over a minute under the race detector); the
// last ones, and every check, go through azblob.
func TestAppendBlobBlockLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, endpoint := startService(t)
	c := newClient(t, endpoint)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "limit", nil))
	ab := c.ServiceClient().NewContainerClient("limit").NewAppendBlobClient("log")
	must[appendblob.CreateResponse](t, "create")(ab.Create(ctx, nil))
	const workers, limit = 8, 50000
	target := ab.URL() + "?comp=appendblock&" + accountSAS(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < limit-1; i += workers {
				req, err := http.NewRequest(http.MethodPut, target, strings.NewReader("x"))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("x-ms-version", "2023-11-03")
				rec := httptest.NewRecorder()
				svc.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					errs <- fmt.Errorf("append %d: %d %s", i, rec.Code, rec.Header().Get("x-ms-error-code"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r := must[appendblob.AppendBlockResponse](t, "block 50,000")(ab.AppendBlock(ctx, rs("x"), nil))
	if *r.BlobCommittedBlockCount != limit || *r.BlobAppendOffset != strconv.Itoa(limit-1) {
		t.Fatalf("block 50,000: count %d, offset %s; want %d, %d", *r.BlobCommittedBlockCount, *r.BlobAppendOffset, limit, limit-1)
	}
	_, err := ab.AppendBlock(ctx, rs("y"), nil)
	wantFailure(t, "block 50,001", err, http.StatusConflict, "BlockCountExceedsLimit")
	p := must[blob.GetPropertiesResponse](t, "properties")(ab.GetProperties(ctx, nil))
	if *p.BlobCommittedBlockCount != limit || *p.ContentLength != limit {
		t.Fatalf("after the refused block: %d blocks, %d bytes; want %d of each", *p.BlobCommittedBlockCount, *p.ContentLength, limit)
	}
}

// TestConcurrentAppendsAtPositions has writers race to append at the
// blob's end with x-ms-blob-condition-appendpos, as tablecopy does:
// every block lands exactly once, each where its writer was told.
func TestConcurrentAppendsAtPositions(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "race", nil))
	ab := c.ServiceClient().NewContainerClient("race").NewAppendBlobClient("log")
	must[appendblob.CreateResponse](t, "create")(ab.Create(ctx, nil))
	const writers, blocks = 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	// A reader meanwhile sees whole blocks only, and the blob's length
	// in its headers matches the body it gets.
	done := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			resp, err := ab.DownloadStream(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			b := body(resp.Body)
			if int64(len(b)) != *resp.ContentLength || b != "" && !strings.HasSuffix(b, ";") {
				errs <- fmt.Errorf("read %d bytes (%q...) with Content-Length %d", len(b), b[max(0, len(b)-10):], *resp.ContentLength)
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range blocks {
				rec := fmt.Sprintf("w%d-%03d;", w, i)
				for {
					p, err := ab.GetProperties(ctx, nil)
					if err != nil {
						errs <- err
						return
					}
					r, err := ab.AppendBlock(ctx, rs(rec), &appendblob.AppendBlockOptions{
						AppendPositionAccessConditions: &appendblob.AppendPositionAccessConditions{AppendPosition: p.ContentLength}})
					if bloberror.HasCode(err, bloberror.AppendPositionConditionNotMet) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					if *r.BlobAppendOffset != strconv.FormatInt(*p.ContentLength, 10) {
						errs <- fmt.Errorf("appended at %s, asked for %d", *r.BlobAppendOffset, *p.ContentLength)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-readerDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	resp := must[blob.DownloadStreamResponse](t, "download")(ab.DownloadStream(ctx, nil))
	recs := strings.Split(strings.TrimSuffix(body(resp.Body), ";"), ";")
	if len(recs) != writers*blocks {
		t.Fatalf("%d records, want %d", len(recs), writers*blocks)
	}
	next := make([]int, writers)
	for _, r := range recs {
		var w, i int
		if _, err := fmt.Sscanf(r, "w%d-%03d", &w, &i); err != nil || w >= writers {
			t.Fatalf("record %q: %v", r, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: record %d where %d was due", w, i, next[w])
		}
		next[w]++
	}
	if *resp.BlobCommittedBlockCount != writers*blocks {
		t.Fatalf("%d committed blocks, want %d", *resp.BlobCommittedBlockCount, writers*blocks)
	}
}

// TestParallelTransfers uploads through staged blocks (UploadStream,
// several at once) and downloads in parallel ranges (DownloadBuffer), as
// the SDK does for large blobs.
func TestParallelTransfers(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "big", nil))
	data := make([]byte, 5<<20+12345)
	rand.Read(data)
	must[azblob.UploadStreamResponse](t, "upload stream")(c.UploadStream(ctx, "big", "blob", bytes.NewReader(data),
		&azblob.UploadStreamOptions{BlockSize: 1 << 20, Concurrency: 4}))
	bl := must[blockblob.GetBlockListResponse](t, "block list")(c.ServiceClient().NewContainerClient("big").NewBlockBlobClient("blob").
		GetBlockList(ctx, blockblob.BlockListTypeAll, nil))
	if n := len(bl.BlockList.CommittedBlocks); n != 6 || len(bl.BlockList.UncommittedBlocks) != 0 {
		t.Fatalf("%d committed and %d uncommitted blocks, want 6 and 0", n, len(bl.BlockList.UncommittedBlocks))
	}
	var sum int64
	for _, b := range bl.BlockList.CommittedBlocks {
		sum += *b.Size
	}
	if sum != int64(len(data)) || *bl.BlobContentLength != sum {
		t.Fatalf("blocks of %d bytes, blob of %d, want %d", sum, *bl.BlobContentLength, len(data))
	}
	got := make([]byte, len(data))
	n := must[int64](t, "download buffer")(c.DownloadBuffer(ctx, "big", "blob", got, &azblob.DownloadBufferOptions{BlockSize: 300 << 10, Concurrency: 4}))
	if n != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes, not the %d uploaded", n, len(data))
	}
	// One request: the single-shot path.
	must[azblob.UploadBufferResponse](t, "upload buffer")(c.UploadBuffer(ctx, "big", "one", data, nil))
	resp := must[azblob.DownloadStreamResponse](t, "download")(c.DownloadStream(ctx, "big", "one", nil))
	if b := body(resp.Body); b != string(data) {
		t.Fatalf("single-shot blob: %d bytes back", len(b))
	}
}

// TestNamesAndMarkers lists blobs whose names need care (non-ASCII,
// spaces, percent signs, characters XML cannot carry) one per page,
// following the markers: every name comes back exactly, in byte order.
func TestNamesAndMarkers(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "names", nil))
	names := []string{"a b", "ü", "日本/語", "%41", "x+y", "ctl\x01char", "tab\tname", "q?#", "end."}
	for _, n := range names {
		must[azblob.UploadBufferResponse](t, "upload "+n)(c.UploadBuffer(ctx, "names", n, []byte(n), nil))
		resp := must[azblob.DownloadStreamResponse](t, "download "+n)(c.DownloadStream(ctx, "names", n, nil))
		if b := body(resp.Body); b != n {
			t.Fatalf("blob %q holds %q", n, b)
		}
	}
	var got []string
	pager := c.NewListBlobsFlatPager("names", &container.ListBlobsFlatOptions{MaxResults: to.Ptr(int32(1))})
	for pager.More() {
		page := must[azblob.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
		for _, b := range page.Segment.BlobItems {
			got = append(got, *b.Name)
		}
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %q, want %q", got, want)
	}
}

// TestDeletedContainer checks that a deleted container takes its blobs
// and that one created again under the name is empty.
func TestDeletedContainer(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "gone", nil))
	must[azblob.UploadBufferResponse](t, "upload")(c.UploadBuffer(ctx, "gone", "b", []byte("x"), nil))
	must[azblob.DeleteContainerResponse](t, "delete")(c.DeleteContainer(ctx, "gone", nil))
	_, err := c.UploadBuffer(ctx, "gone", "b", []byte("x"), nil)
	wantFailure(t, "upload after delete", err, http.StatusNotFound, "ContainerNotFound")
	must[azblob.CreateContainerResponse](t, "create again")(c.CreateContainer(ctx, "gone", nil))
	_, err = c.DownloadStream(ctx, "gone", "b", nil)
	wantFailure(t, "old blob", err, http.StatusNotFound, "BlobNotFound")
}

// TestUnsupportedAnswers checks what the emulator says of features it
// leaves out: 501 NotImplemented, never a silent success; a blob batch
// and page blobs, once among them, are served.
func TestUnsupportedAnswers(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create")(c.CreateContainer(ctx, "nope", nil))
	// Page blobs are served (page_test.go); incremental copy is not.
	_, err := c.ServiceClient().NewContainerClient("nope").NewPageBlobClient("p").StartCopyIncremental(ctx,
		"https://127.0.0.1/devstoreaccount1/nope/src", "2020-01-01T00:00:00.0000000Z", nil)
	wantFailure(t, "incremental copy", err, http.StatusNotImplemented, "NotImplemented")
	snap, err := c.ServiceClient().NewContainerClient("nope").NewBlobClient("p").WithSnapshot("2020-01-01T00:00:00.0000000Z")
	if err != nil {
		t.Fatal(err)
	}
	_, err = snap.SetTier(ctx, blob.AccessTierCool, nil)
	wantFailure(t, "a snapshot's tier", err, http.StatusNotImplemented, "NotImplemented")
	// Blob batch (issue #52) is served: the batch deletes the blob.
	must[azblob.UploadBufferResponse](t, "upload")(c.UploadBuffer(ctx, "nope", "gone", []byte("x"), nil))
	cc := c.ServiceClient().NewContainerClient("nope")
	bb, err := cc.NewBatchBuilder()
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.Delete("gone", nil); err != nil {
		t.Fatal(err)
	}
	br := must[container.SubmitBatchResponse](t, "blob batch")(cc.SubmitBatch(ctx, bb, nil))
	if len(br.Responses) != 1 || br.Responses[0].Error != nil {
		t.Fatalf("blob batch: %+v", br.Responses)
	}
	_, err = cc.NewBlobClient("gone").GetProperties(ctx, nil)
	wantFailure(t, "the blob the batch deleted", err, http.StatusNotFound, "BlobNotFound")
	bc := c.ServiceClient().NewContainerClient("nope").NewBlobClient("copy")
	_, err = bc.StartCopyFromURL(ctx, "https://elsewhere.blob.core.windows.net/c/b", nil)
	wantFailure(t, "copy from another account", err, http.StatusNotImplemented, "NotImplemented")
}

package blobs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/pageblob"

	"github.com/tablekit/tablekit/emulator/internal/blobs"
)

// pageRanges lists a page blob's page ranges as "start-end", all pages
// of the pager.
func pageRanges(t *testing.T, pb *pageblob.Client, o *pageblob.GetPageRangesOptions) []string {
	t.Helper()
	var out []string
	pager := pb.NewGetPageRangesPager(o)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("get page ranges: %v", err)
		}
		for _, r := range page.PageRange {
			out = append(out, fmt.Sprintf("%d-%d", *r.Start, *r.End))
		}
	}
	return out
}

// pages is n bytes of the byte c, as a request body.
func pages(c byte, n int) io.ReadSeekCloser {
	return streaming.NopCloser(bytes.NewReader(bytes.Repeat([]byte{c}, n)))
}

// readRange downloads bytes [off, off+n) of a blob.
func readRange(t *testing.T, c *blob.Client, off, n int64) []byte {
	t.Helper()
	d, err := c.DownloadStream(context.Background(), &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: off, Count: n}})
	if err != nil {
		t.Fatalf("download %d+%d: %v", off, n, err)
	}
	defer d.Body.Close()
	b, err := io.ReadAll(d.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// want is the content expected: runs of (byte, length).
func want(runs ...any) []byte {
	var b []byte
	for i := 0; i < len(runs); i += 2 {
		b = append(b, bytes.Repeat([]byte{runs[i].(byte)}, runs[i+1].(int))...)
	}
	return b
}

// TestPageBlobs: create, write, clear and list pages, resize, sequence
// numbers and their conditions, as azblob 1.6.4 drives them and Azure
// answers (docs/EMULATOR.md, "Page blobs").
func TestPageBlobs(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "pages")
	pb := cc.NewPageBlobClient("disk")
	must[pageblob.CreateResponse](t, "create")(pb.Create(ctx, 4096, &pageblob.CreateOptions{
		SequenceNumber: to.Ptr(int64(3)), Metadata: map[string]*string{"role": to.Ptr("disk")},
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/x-disk")}}))
	props := must[blob.GetPropertiesResponse](t, "properties")(pb.GetProperties(ctx, nil))
	if *props.BlobType != blob.BlobTypePageBlob || *props.ContentLength != 4096 || *props.BlobSequenceNumber != 3 ||
		*props.Metadata["Role"] != "disk" || props.AccessTier != nil {
		t.Fatalf("created: type %v, length %d, sequence %d, metadata %v, tier %v", *props.BlobType, *props.ContentLength,
			*props.BlobSequenceNumber, props.Metadata, props.AccessTier)
	}
	if got := readRange(t, pb.BlobClient(), 0, 4096); !bytes.Equal(got, make([]byte, 4096)) {
		t.Fatal("a new page blob does not read as zeros")
	}
	if got := pageRanges(t, pb, nil); len(got) != 0 {
		t.Fatalf("a new page blob has page ranges %v", got)
	}

	// Writes; ranges that meet are listed as one.
	up := must[pageblob.UploadPagesResponse](t, "upload 512-1535")(pb.UploadPages(ctx, pages('a', 1024), blob.HTTPRange{Offset: 512, Count: 1024}, nil))
	if *up.BlobSequenceNumber != 3 || up.ContentCRC64 == nil || up.ContentMD5 != nil {
		t.Fatalf("upload answered sequence %d, crc64 %v, md5 %v", *up.BlobSequenceNumber, up.ContentCRC64, up.ContentMD5)
	}
	must[pageblob.UploadPagesResponse](t, "upload 1536-2047")(pb.UploadPages(ctx, pages('b', 512), blob.HTTPRange{Offset: 1536, Count: 512}, nil))
	must[pageblob.UploadPagesResponse](t, "upload 3072-3583")(pb.UploadPages(ctx, pages('c', 512), blob.HTTPRange{Offset: 3072, Count: 512}, nil))
	if got := pageRanges(t, pb, nil); !slices.Equal(got, []string{"512-2047", "3072-3583"}) {
		t.Fatalf("ranges %v", got)
	}
	if got := readRange(t, pb.BlobClient(), 500, 2100); !bytes.Equal(got, want(byte(0), 12, byte('a'), 1024, byte('b'), 512, byte(0), 552)) {
		t.Fatal("download of bytes 500-2599 differs")
	}

	// A clear releases the pages: zeros, and gone from the ranges.
	must[pageblob.ClearPagesResponse](t, "clear")(pb.ClearPages(ctx, blob.HTTPRange{Offset: 1024, Count: 512}, nil))
	if got := pageRanges(t, pb, nil); !slices.Equal(got, []string{"512-1023", "1536-2047", "3072-3583"}) {
		t.Fatalf("ranges after the clear %v", got)
	}
	if got := readRange(t, pb.BlobClient(), 1024, 512); !bytes.Equal(got, make([]byte, 512)) {
		t.Fatal("cleared pages do not read as zeros")
	}
	// A range widens to whole pages (Azure: bytes=0-1022 lists 0-1023).
	if got := pageRanges(t, pb, &pageblob.GetPageRangesOptions{Range: blob.HTTPRange{Offset: 1000, Count: 600}}); !slices.Equal(got, []string{"512-1023", "1536-2047"}) {
		t.Fatalf("ranges of bytes 1000-1599 %v", got)
	}
	// maxresults pages the list.
	if got := pageRanges(t, pb, &pageblob.GetPageRangesOptions{MaxResults: to.Ptr(int32(1))}); !slices.Equal(got, []string{"512-1023", "1536-2047", "3072-3583"}) {
		t.Fatalf("ranges one a page %v", got)
	}

	// Refusals.
	_, err := pb.UploadPages(ctx, pages('x', 511), blob.HTTPRange{Offset: 0, Count: 511}, nil)
	wantFailure(t, "a write off the page boundaries", err, http.StatusBadRequest, "InvalidHeaderValue")
	_, err = pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Offset: 4096, Count: 512}, nil)
	wantFailure(t, "a write past the end", err, http.StatusRequestedRangeNotSatisfiable, "InvalidPageRange")
	_, err = pb.ClearPages(ctx, blob.HTTPRange{Offset: 0, Count: 513}, nil)
	wantFailure(t, "a clear off the page boundaries", err, http.StatusBadRequest, "InvalidHeaderValue")
	_, err = pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512}, &pageblob.UploadPagesOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: to.Ptr(azcore.ETag("0x1"))}}})
	wantFailure(t, "a write with a stale ETag", err, http.StatusPreconditionFailed, "ConditionNotMet")
	_, err = pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512}, &pageblob.UploadPagesOptions{
		TransactionalValidation: blob.TransferValidationTypeMD5(make([]byte, 16))})
	wantFailure(t, "a write with a wrong MD5", err, http.StatusBadRequest, "Md5Mismatch")

	// Sequence numbers and the conditions on them.
	sn := must[pageblob.UpdateSequenceNumberResponse](t, "update")(pb.UpdateSequenceNumber(ctx, &pageblob.UpdateSequenceNumberOptions{
		ActionType: to.Ptr(pageblob.SequenceNumberActionTypeUpdate), SequenceNumber: to.Ptr(int64(10))}))
	if *sn.BlobSequenceNumber != 10 {
		t.Fatalf("update answered %d", *sn.BlobSequenceNumber)
	}
	for _, c := range []struct {
		action pageblob.SequenceNumberActionType
		n      *int64
		want   int64
	}{
		{pageblob.SequenceNumberActionTypeMax, to.Ptr(int64(7)), 10},
		{pageblob.SequenceNumberActionTypeMax, to.Ptr(int64(12)), 12},
		{pageblob.SequenceNumberActionTypeIncrement, nil, 13},
		{pageblob.SequenceNumberActionTypeUpdate, to.Ptr(int64(10)), 10},
	} {
		r := must[pageblob.UpdateSequenceNumberResponse](t, string(c.action))(pb.UpdateSequenceNumber(ctx, &pageblob.UpdateSequenceNumberOptions{ActionType: &c.action, SequenceNumber: c.n}))
		if *r.BlobSequenceNumber != c.want {
			t.Fatalf("%s %v: %d, want %d", c.action, c.n, *r.BlobSequenceNumber, c.want)
		}
	}
	for _, c := range []struct {
		cond pageblob.SequenceNumberAccessConditions
		ok   bool
	}{
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThan: to.Ptr(int64(10))}, false},
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThan: to.Ptr(int64(11))}, true},
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThanOrEqualTo: to.Ptr(int64(9))}, false},
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberLessThanOrEqualTo: to.Ptr(int64(10))}, true},
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberEqualTo: to.Ptr(int64(9))}, false},
		{pageblob.SequenceNumberAccessConditions{IfSequenceNumberEqualTo: to.Ptr(int64(10))}, true},
	} {
		_, err := pb.UploadPages(ctx, pages('s', 512), blob.HTTPRange{Count: 512}, &pageblob.UploadPagesOptions{SequenceNumberAccessConditions: &c.cond})
		if c.ok && err != nil {
			t.Fatalf("%+v: %v", c.cond, err)
		}
		if !c.ok {
			wantFailure(t, fmt.Sprintf("%+v", c.cond), err, http.StatusPreconditionFailed, "SequenceNumberConditionNotMet")
		}
	}

	// Resize: the pages past a smaller size go; a larger size reads as
	// zeros; the content headers stay.
	must[pageblob.ResizeResponse](t, "shrink")(pb.Resize(ctx, 1024, nil))
	must[pageblob.ResizeResponse](t, "grow")(pb.Resize(ctx, 8192, nil))
	props = must[blob.GetPropertiesResponse](t, "properties")(pb.GetProperties(ctx, nil))
	if *props.ContentLength != 8192 || *props.ContentType != "application/x-disk" || *props.BlobSequenceNumber != 10 {
		t.Fatalf("resized: length %d, type %q, sequence %d", *props.ContentLength, *props.ContentType, *props.BlobSequenceNumber)
	}
	if got := pageRanges(t, pb, nil); !slices.Equal(got, []string{"0-1023"}) {
		t.Fatalf("ranges after the resizes %v", got)
	}
	if got := readRange(t, pb.BlobClient(), 1024, 7168); !bytes.Equal(got, make([]byte, 7168)) {
		t.Fatal("pages released by a smaller size came back")
	}
	_, err = pb.Resize(ctx, 1000, nil)
	wantFailure(t, "a size off the page boundaries", err, http.StatusBadRequest, "InvalidHeaderValue")

	// Listings show the type, size and sequence number.
	pager := cc.NewListBlobsFlatPager(nil)
	lp := must[container.ListBlobsFlatResponse](t, "list")(pager.NextPage(ctx))
	if len(lp.Segment.BlobItems) != 1 {
		t.Fatalf("listed %d blobs", len(lp.Segment.BlobItems))
	}
	if it := lp.Segment.BlobItems[0].Properties; *it.BlobType != blob.BlobTypePageBlob || *it.ContentLength != 8192 ||
		*it.BlobSequenceNumber != 10 || it.IsSealed != nil {
		t.Fatalf("listed type %v, length %d, sequence %d, sealed %v", *it.BlobType, *it.ContentLength, *it.BlobSequenceNumber, it.IsSealed)
	}

	// A snapshot keeps the pages it was taken with; a copy is a page blob
	// with the same pages.
	snap := must[blob.CreateSnapshotResponse](t, "snapshot")(pb.CreateSnapshot(ctx, nil))
	must[pageblob.UploadPagesResponse](t, "upload after the snapshot")(pb.UploadPages(ctx, pages('z', 512), blob.HTTPRange{Offset: 4096, Count: 512}, nil))
	sp, err := pb.WithSnapshot(*snap.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if got := pageRanges(t, sp, nil); !slices.Equal(got, []string{"0-1023"}) {
		t.Fatalf("the snapshot's ranges %v", got)
	}
	cp := cc.NewPageBlobClient("copy")
	must[blob.StartCopyFromURLResponse](t, "copy")(cp.StartCopyFromURL(ctx, pb.URL(), nil))
	cprops := must[blob.GetPropertiesResponse](t, "copy's properties")(cp.GetProperties(ctx, nil))
	if *cprops.BlobType != blob.BlobTypePageBlob || *cprops.ContentLength != 8192 || *cprops.BlobSequenceNumber != 10 {
		t.Fatalf("copy: type %v, length %d, sequence %d", *cprops.BlobType, *cprops.ContentLength, *cprops.BlobSequenceNumber)
	}
	if got := pageRanges(t, cp, nil); !slices.Equal(got, []string{"0-1023", "4096-4607"}) {
		t.Fatalf("the copy's ranges %v", got)
	}
	if got := readRange(t, cp.BlobClient(), 4096, 512); !bytes.Equal(got, want(byte('z'), 512)) {
		t.Fatal("the copy's pages differ")
	}
}

// TestPageBlobTypesAndLeases: page operations on a block blob and block
// operations on a page blob are 409 InvalidBlobType; a leased page blob
// takes writes only with its lease.
func TestPageBlobTypesAndLeases(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(cl.CreateContainer(ctx, "types", nil))
	cc := cl.ServiceClient().NewContainerClient("types")
	must[azblob.UploadBufferResponse](t, "block blob")(cl.UploadBuffer(ctx, "types", "block", make([]byte, 1024), nil))
	asPage := cc.NewPageBlobClient("block")
	_, err := asPage.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512}, nil)
	wantFailure(t, "Put Page on a block blob", err, http.StatusConflict, "InvalidBlobType")
	_, err = asPage.NewGetPageRangesPager(nil).NextPage(ctx)
	wantFailure(t, "Get Page Ranges of a block blob", err, http.StatusConflict, "InvalidBlobType")
	_, err = asPage.Resize(ctx, 512, nil)
	wantFailure(t, "resize of a block blob", err, http.StatusConflict, "InvalidBlobType")

	pb := cc.NewPageBlobClient("page")
	must[pageblob.CreateResponse](t, "create")(pb.Create(ctx, 1024, nil))
	asBlock := cc.NewBlockBlobClient("page")
	_, err = asBlock.StageBlock(ctx, "QUFB", streaming.NopCloser(strings.NewReader("x")), nil)
	wantFailure(t, "Put Block on a page blob", err, http.StatusConflict, "InvalidBlobType")
	_, err = asBlock.CommitBlockList(ctx, nil, nil)
	wantFailure(t, "Put Block List on a page blob", err, http.StatusConflict, "InvalidBlobType")
	_, err = asBlock.GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
	wantFailure(t, "Get Block List of a page blob", err, http.StatusConflict, "InvalidBlobType")

	lc, err := lease.NewBlobClient(pb, nil)
	if err != nil {
		t.Fatal(err)
	}
	must[lease.BlobAcquireResponse](t, "lease")(lc.AcquireLease(ctx, -1, nil))
	_, err = pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512}, nil)
	wantFailure(t, "a write without the lease", err, http.StatusPreconditionFailed, "LeaseIdMissing")
	must[pageblob.UploadPagesResponse](t, "a write with the lease")(pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512},
		&pageblob.UploadPagesOptions{AccessConditions: &blob.AccessConditions{LeaseAccessConditions: &blob.LeaseAccessConditions{LeaseID: lc.LeaseID()}}}))
}

// TestPageBlobUnserved: what the emulator leaves out of page blobs is
// 501 at once: the differences since a snapshot, incremental copy,
// premium page blob tiers and Put Page From URL.
func TestPageBlobUnserved(t *testing.T) {
	ctx := context.Background()
	cc := emulatorContainer(t, "unserved")
	pb := cc.NewPageBlobClient("p")
	must[pageblob.CreateResponse](t, "create")(pb.Create(ctx, 1024, nil))
	snap := must[blob.CreateSnapshotResponse](t, "snapshot")(pb.CreateSnapshot(ctx, nil))
	_, err := pb.NewGetPageRangesDiffPager(&pageblob.GetPageRangesDiffOptions{PrevSnapshot: snap.Snapshot}).NextPage(ctx)
	wantFailure(t, "page ranges since a snapshot", err, http.StatusNotImplemented, "NotImplemented")
	_, err = cc.NewPageBlobClient("inc").StartCopyIncremental(ctx, pb.URL(), *snap.Snapshot, nil)
	wantFailure(t, "incremental copy", err, http.StatusNotImplemented, "NotImplemented")
	_, err = cc.NewPageBlobClient("premium").Create(ctx, 1024, &pageblob.CreateOptions{Tier: to.Ptr(pageblob.PremiumPageBlobAccessTierP10)})
	wantFailure(t, "a premium tier", err, http.StatusNotImplemented, "NotImplemented")
	_, err = pb.SetTier(ctx, blob.AccessTierP4, nil)
	wantFailure(t, "Set Blob Tier P4", err, http.StatusNotImplemented, "NotImplemented")
	_, err = pb.UploadPagesFromURL(ctx, pb.URL(), 0, 0, 512, nil)
	wantFailure(t, "Put Page From URL", err, http.StatusNotImplemented, "NotImplemented")
	if _, err := cc.NewBlobClient("premium").GetProperties(ctx, nil); err == nil {
		t.Fatal("the refused premium page blob was created")
	}
}

// TestPageBlobSparse: a 1 TiB page blob with one page written holds one
// 64 KiB segment, serves the page at its end and lists it, and a clear of
// the whole terabyte costs what the blob holds.
func TestPageBlobSparse(t *testing.T) {
	ctx := context.Background()
	svc, endpoint := startService(t)
	pb := newContainer(t, newClient(t, endpoint), "sparse").NewPageBlobClient("tib")
	const tib = int64(1) << 40
	must[pageblob.CreateResponse](t, "create")(pb.Create(ctx, tib, nil))
	must[pageblob.UploadPagesResponse](t, "last page")(pb.UploadPages(ctx, pages('e', 512), blob.HTTPRange{Offset: tib - 512, Count: 512}, nil))
	if held, size := svc.PageBlobHeld("sparse", "tib"); held != 64<<10 || size != tib {
		t.Fatalf("holds %d bytes for a blob of %d", held, size)
	}
	if got := readRange(t, pb.BlobClient(), tib-1024, 1024); !bytes.Equal(got, want(byte(0), 512, byte('e'), 512)) {
		t.Fatal("the last KiB differs")
	}
	if got := pageRanges(t, pb, nil); !slices.Equal(got, []string{fmt.Sprintf("%d-%d", tib-512, tib-1)}) {
		t.Fatalf("ranges %v", got)
	}
	start := time.Now()
	must[pageblob.ClearPagesResponse](t, "clear the terabyte")(pb.ClearPages(ctx, blob.HTTPRange{Offset: 0, Count: tib}, nil))
	if held, _ := svc.PageBlobHeld("sparse", "tib"); held != 0 {
		t.Fatalf("holds %d bytes after the clear", held)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("clearing a terabyte of one page took %v", d)
	}
}

// TestPageBlobsReopened: a location opened again serves the pages it
// was answered for, the pages a smaller size released stay released, and
// snapshots keep theirs.
func TestPageBlobsReopened(t *testing.T) {
	dir := t.TempDir()
	cfg := blobs.Config{Account: rawAccount, Location: dir}
	do := func(s *blobs.Service, method, path string, h map[string]string, body string) (int, string, http.Header) {
		w := serve(s, method, path, h, body)
		return w.Code, w.Body.String(), w.Result().Header
	}
	s, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	page := func(s *blobs.Service, rng, c string) {
		t.Helper()
		n := 512 * (strings.Count(rng, ",") + 1)
		if code, body, _ := do(s, "PUT", "box/disk?comp=page", map[string]string{"x-ms-page-write": "update", "x-ms-range": rng}, strings.Repeat(c, n)); code != 201 {
			t.Fatalf("put page %s: %d %s", rng, code, body)
		}
	}
	do(s, "PUT", "box?restype=container", nil, "")
	if code, body, _ := do(s, "PUT", "box/disk", map[string]string{"x-ms-blob-type": "PageBlob", "x-ms-blob-content-length": "262144", "x-ms-blob-sequence-number": "5"}, ""); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	page(s, "bytes=0-511", "a")
	page(s, "bytes=131072-131583", "b") // segment 2
	page(s, "bytes=196608-197119", "c") // segment 3
	if code, body, h := do(s, "PUT", "box/disk?comp=snapshot", nil, ""); code != 201 {
		t.Fatalf("snapshot: %d %s", code, body)
	} else {
		defer func(at string) {
			again, err := blobs.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if _, body, _ := do(again, "GET", "box/disk?comp=pagelist&snapshot="+at, nil, ""); !strings.Contains(body, "<Start>196608</Start>") {
				t.Errorf("the snapshot's pages after reopening: %s", body)
			}
		}(h.Get("x-ms-snapshot"))
	}
	do(s, "PUT", "box/disk?comp=properties", map[string]string{"x-ms-blob-content-length": "131584"}, "") // cuts segment 2, drops 3
	do(s, "PUT", "box/disk?comp=properties", map[string]string{"x-ms-blob-content-length": "262144"}, "")
	do(s, "PUT", "box/disk?comp=page", map[string]string{"x-ms-page-write": "clear", "x-ms-range": "bytes=0-511"}, "")
	page(s, "bytes=512-1023", "d")
	_, wantList, _ := do(s, "GET", "box/disk?comp=pagelist", nil, "")
	_, wantBody, _ := do(s, "GET", "box/disk", nil, "")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, gotList, _ := do(again, "GET", "box/disk?comp=pagelist", nil, "")
	_, gotBody, h := do(again, "GET", "box/disk", nil, "")
	again.Close()
	if gotList != wantList || gotBody != wantBody || h.Get("x-ms-blob-sequence-number") != "5" {
		t.Fatalf("reopened: ranges %s (want %s), content equal %v, sequence %q", gotList, wantList, gotBody == wantBody, h.Get("x-ms-blob-sequence-number"))
	}
	if !strings.Contains(gotList, "<Start>512</Start><End>1023</End></PageRange><PageRange><Start>131072</Start><End>131583</End>") ||
		strings.Contains(gotList, "196608") {
		t.Fatalf("reopened ranges %s", gotList)
	}
}

// TestPageBlobRefusals: the requests azblob never sends, each refused
// before anything is written, as docs/EMULATOR.md says.
func TestPageBlobRefusals(t *testing.T) {
	s := blobs.New(blobs.Config{Account: rawAccount})
	var last string // the last answer's body
	do := func(method, path string, h map[string]string, body string) (int, string) {
		w := serve(s, method, path, h, body)
		last = w.Body.String()
		return w.Code, w.Result().Header.Get("x-ms-error-code")
	}
	do("PUT", "box?restype=container", nil, "")
	page := map[string]string{"x-ms-blob-type": "PageBlob", "x-ms-blob-content-length": "4096"}
	if code, _ := do("PUT", "box/p", page, ""); code != 201 {
		t.Fatalf("create: %d", code)
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	update := map[string]string{"x-ms-page-write": "update", "x-ms-range": "bytes=0-511"}
	for _, c := range []struct {
		name, method, path string
		h                  map[string]string
		body               string
		status             int
		code               string
	}{
		{"create without a size", "PUT", "box/q", with(page, "x-ms-blob-content-length", ""), "", 400, "MissingRequiredHeader"},
		{"create past 8 TiB", "PUT", "box/q", with(page, "x-ms-blob-content-length", "8796093022720"), "", 400, "InvalidHeaderValue"},
		{"create with a body", "PUT", "box/q", page, "x", 400, "InvalidHeaderValue"},
		{"create in a premium tier", "PUT", "box/q", with(page, "x-ms-access-tier", "P10"), "", 501, "NotImplemented"},
		{"create in a tier", "PUT", "box/q", with(page, "x-ms-access-tier", "Hot"), "", 400, "AccessTierNotSupportedForBlobType"},
		{"no x-ms-page-write", "PUT", "box/p?comp=page", with(update, "x-ms-page-write", ""), strings.Repeat("x", 512), 400, "MissingRequiredHeader"},
		{"an unknown x-ms-page-write", "PUT", "box/p?comp=page", with(update, "x-ms-page-write", "append"), strings.Repeat("x", 512), 400, "InvalidHeaderValue"},
		{"no range", "PUT", "box/p?comp=page", with(update, "x-ms-range", ""), strings.Repeat("x", 512), 400, "MissingRequiredHeader"},
		{"a body shorter than the range", "PUT", "box/p?comp=page", update, strings.Repeat("x", 500), 416, "InvalidPageRange"},
		{"more than 4 MiB", "PUT", "box/p?comp=page", with(update, "x-ms-range", "bytes=0-4194815"), "", 413, "RequestBodyTooLarge"},
		{"a clear with a body", "PUT", "box/p?comp=page", with(update, "x-ms-page-write", "clear"), "x", 400, "InvalidHeaderValue"},
		{"a clear with Content-MD5", "PUT", "box/p?comp=page", with(update, "x-ms-page-write", "clear", "Content-MD5", "AAAAAAAAAAAAAAAAAAAAAA=="), "", 400, "UnsupportedHeader"},
		{"a page of a snapshot", "PUT", "box/p?comp=page&snapshot=2020-01-01T00:00:00.0000000Z", update, strings.Repeat("x", 512), 400, "InvalidQueryParameterValue"},
		{"a page of no blob", "PUT", "box/none?comp=page", update, strings.Repeat("x", 512), 404, "BlobNotFound"},
		{"a sequence number without an action", "PUT", "box/p?comp=properties", map[string]string{"x-ms-blob-sequence-number": "4"}, "", 400, "MissingRequiredHeader"},
		{"max without a sequence number", "PUT", "box/p?comp=properties", map[string]string{"x-ms-sequence-number-action": "max"}, "", 400, "MissingRequiredHeader"},
		{"increment with a sequence number", "PUT", "box/p?comp=properties", map[string]string{"x-ms-sequence-number-action": "increment", "x-ms-blob-sequence-number": "4"}, "", 400, "InvalidHeaderValue"},
		{"a condition that cannot be read", "PUT", "box/p?comp=page", with(update, "x-ms-if-sequence-number-eq", "x"), strings.Repeat("x", 512), 400, "InvalidHeaderValue"},
		{"ranges past the end", "GET", "box/p?comp=pagelist", map[string]string{"x-ms-range": "bytes=4096-8191"}, "", 416, "InvalidPageRange"},
		{"ranges since a snapshot", "GET", "box/p?comp=pagelist&prevsnapshot=2020-01-01T00:00:00.0000000Z", nil, "", 501, "NotImplemented"},
		{"ranges since a snapshot's URL", "GET", "box/p?comp=pagelist", map[string]string{"x-ms-previous-snapshot-url": "http://x/acct/box/p?snapshot=1"}, "", 501, "NotImplemented"},
		{"a page list deleted", "DELETE", "box/p?comp=pagelist", nil, "", 405, "UnsupportedHttpVerb"},
	} {
		if code, ec := do(c.method, c.path, c.h, c.body); code != c.status || ec != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, ec, c.status, c.code)
		}
	}
	if code, _ := do("HEAD", "box/q", nil, ""); code != 404 {
		t.Errorf("a refused create left a blob (%d)", code)
	}
	// The sequence number's last increment is refused, not wrapped.
	do("PUT", "box/p?comp=properties", map[string]string{"x-ms-sequence-number-action": "update", "x-ms-blob-sequence-number": "9223372036854775807"}, "")
	if code, ec := do("PUT", "box/p?comp=properties", map[string]string{"x-ms-sequence-number-action": "increment"}, ""); code != 409 || ec != "SequenceNumberIncrementTooLarge" {
		t.Errorf("increment past 2^63-1: %d %s", code, ec)
	}
	if code, _ := do("GET", "box/p?comp=pagelist", nil, ""); code != 200 || strings.Contains(last, "PageRange") {
		t.Errorf("a refused write wrote pages: %d %s", code, last)
	}
}

// TestPageBlobTagConditions: Put Page, Get Page Ranges and Put Blob of a
// page blob take x-ms-if-tags (the blob swagger's IfTags on each): a blob
// whose tags do not meet it is 412 ConditionNotMet, and nothing is
// written.
func TestPageBlobTagConditions(t *testing.T) {
	testPageBlobTagConditions(t, startEmulator(t), "")
}

// testPageBlobTagConditions is TestPageBlobTagConditions on the Blob
// service at endpoint, its container's name after prefix (Azurite's is
// shared: TestFeaturesOnAzurite).
func testPageBlobTagConditions(t *testing.T, endpoint, prefix string) {
	ctx := context.Background()
	pb := newContainer(t, newClient(t, endpoint), prefix+"tagged").NewPageBlobClient("p")
	must[pageblob.CreateResponse](t, "create")(pb.Create(ctx, 1024, &pageblob.CreateOptions{Tags: map[string]string{"state": "open"}}))
	closed := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(`"state" = 'closed'`)}}
	_, err := pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512}, &pageblob.UploadPagesOptions{AccessConditions: closed})
	wantFailure(t, "a write whose tag condition fails", err, http.StatusPreconditionFailed, "ConditionNotMet")
	_, err = pb.NewGetPageRangesPager(&pageblob.GetPageRangesOptions{AccessConditions: closed}).NextPage(ctx)
	wantFailure(t, "ranges whose tag condition fails", err, http.StatusPreconditionFailed, "ConditionNotMet")
	_, err = pb.Create(ctx, 2048, &pageblob.CreateOptions{AccessConditions: closed})
	wantFailure(t, "Put Blob over it whose tag condition fails", err, http.StatusPreconditionFailed, "ConditionNotMet")
	open := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfTags: to.Ptr(`"state" = 'open'`)}}
	must[pageblob.UploadPagesResponse](t, "a write whose tag condition holds")(pb.UploadPages(ctx, pages('x', 512), blob.HTTPRange{Count: 512},
		&pageblob.UploadPagesOptions{AccessConditions: open}))
	if got := pageRanges(t, pb, &pageblob.GetPageRangesOptions{AccessConditions: open}); !slices.Equal(got, []string{"0-511"}) {
		t.Fatalf("ranges %v", got)
	}
	must[pageblob.CreateResponse](t, "Put Blob over it whose tag condition holds")(pb.Create(ctx, 2048, &pageblob.CreateOptions{AccessConditions: open}))
	if p := must[blob.GetPropertiesResponse](t, "properties")(pb.GetProperties(ctx, nil)); *p.ContentLength != 2048 {
		t.Fatalf("replaced: length %d, want 2048", *p.ContentLength)
	}
}

package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	blobservice "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
)

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func download(t *testing.T, c *blob.Client) []byte {
	t.Helper()
	d := must[blob.DownloadStreamResponse](t, "download "+c.URL())(c.DownloadStream(context.Background(), nil))
	defer d.Body.Close()
	b, err := io.ReadAll(d.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// With Options.Location the Blob service keeps, across Stop and Start,
// containers (metadata, public access, stored access policies, a lease),
// blobs of both kinds with their properties, metadata, leases, copy
// properties and uncommitted blocks, snapshots with the content they were
// taken with (a large one in a file of its own, kept after the blob is
// overwritten), contents past 64 KiB (files) and the service's CORS
// rules; deleted blobs and containers stay deleted, and ETags keep rising.
func TestLocationKeepsBlobsAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	em, err := emulator.Start(ctx, &emulator.Options{Location: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := must[*azblob.Client](t, "client")(azblob.NewClientFromConnectionString(em.ConnectionString, nil))
	cc := c.ServiceClient().NewContainerClient("box")
	must[container.CreateResponse](t, "create container")(cc.Create(ctx, &container.CreateOptions{Metadata: map[string]*string{"Kind": to.Ptr("test")}}))
	must[container.SetAccessPolicyResponse](t, "set ACL")(cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{
		Access: to.Ptr(container.PublicAccessTypeBlob),
		ContainerACL: []*container.SignedIdentifier{{ID: to.Ptr("readers"), AccessPolicy: &container.AccessPolicy{
			Permission: to.Ptr("rl")}}}}))
	cl := must[*lease.ContainerClient](t, "container lease client")(lease.NewContainerClient(cc, nil))
	must[lease.ContainerAcquireResponse](t, "container lease")(cl.AcquireLease(ctx, -1, nil))

	small := cc.NewBlockBlobClient("small.txt")
	must[blockblob.UploadResponse](t, "upload")(small.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("hello, disk"))), &blockblob.UploadOptions{
		Metadata: map[string]*string{"Colour": to.Ptr("blue")}, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain")}}))
	bl := must[*lease.BlobClient](t, "blob lease client")(lease.NewBlobClient(small, nil))
	must[lease.BlobAcquireResponse](t, "blob lease")(bl.AcquireLease(ctx, -1, nil))

	// A large blob (a file of its own), snapshotted, then overwritten:
	// the snapshot keeps the first content.
	first, second := bytes.Repeat([]byte("first "), 20000), bytes.Repeat([]byte("second "), 15000)
	big := cc.NewBlockBlobClient("big.bin")
	must[blockblob.UploadResponse](t, "upload big")(big.Upload(ctx, streaming.NopCloser(bytes.NewReader(first)), nil))
	snap := must[blob.CreateSnapshotResponse](t, "snapshot")(big.CreateSnapshot(ctx, &blob.CreateSnapshotOptions{Metadata: map[string]*string{"Of": to.Ptr("first")}}))
	must[blockblob.UploadResponse](t, "overwrite big")(big.Upload(ctx, streaming.NopCloser(bytes.NewReader(second)), nil))

	// Committed and uncommitted blocks.
	blocks := cc.NewBlockBlobClient("blocks.bin")
	ids := []string{base64.StdEncoding.EncodeToString([]byte("b-01")), base64.StdEncoding.EncodeToString([]byte("b-02")), base64.StdEncoding.EncodeToString([]byte("b-03"))}
	for i, id := range ids {
		must[blockblob.StageBlockResponse](t, "stage")(blocks.StageBlock(ctx, id, streaming.NopCloser(bytes.NewReader(bytes.Repeat([]byte{byte('a' + i)}, 1000))), nil))
	}
	must[blockblob.CommitBlockListResponse](t, "commit")(blocks.CommitBlockList(ctx, ids[:2], nil))
	must[blockblob.StageBlockResponse](t, "stage")(blocks.StageBlock(ctx, ids[2], streaming.NopCloser(bytes.NewReader([]byte("staged"))), nil))

	// An append blob that outgrows the database (past 64 KiB), sealed.
	ab := cc.NewAppendBlobClient("log.txt")
	must[any](t, "create append blob")(ab.Create(ctx, nil))
	var log []byte
	for i := range 3 {
		line := bytes.Repeat([]byte{byte('0' + i)}, 30000)
		log = append(log, line...)
		must[any](t, "append")(ab.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(line)), nil))
	}
	must[any](t, "seal")(ab.Seal(ctx, nil))

	// A copy, a deleted blob and a deleted container.
	cp := cc.NewBlobClient("copy.txt")
	cr := must[blob.StartCopyFromURLResponse](t, "copy")(cp.StartCopyFromURL(ctx, cc.NewBlobClient("blocks.bin").URL(), nil))
	must[blockblob.UploadResponse](t, "upload")(cc.NewBlockBlobClient("deleted.txt").Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("x"))), nil))
	must[blob.DeleteResponse](t, "delete")(cc.NewBlobClient("deleted.txt").Delete(ctx, nil))
	must[container.CreateResponse](t, "create")(c.ServiceClient().NewContainerClient("gone").Create(ctx, nil))
	must[container.DeleteResponse](t, "delete container")(c.ServiceClient().NewContainerClient("gone").Delete(ctx, nil))
	must[blobservice.SetPropertiesResponse](t, "service properties")(c.ServiceClient().SetProperties(ctx, &blobservice.SetPropertiesOptions{
		CORS: []*blobservice.CORSRule{{AllowedOrigins: to.Ptr("https://example.com"), AllowedMethods: to.Ptr("GET"),
			AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("*"), MaxAgeInSeconds: to.Ptr[int32](60)}}}))

	names := []string{"small.txt", "big.bin", "blocks.bin", "log.txt", "copy.txt"}
	before := map[string]blob.GetPropertiesResponse{}
	contents := map[string][]byte{}
	for _, n := range names {
		before[n] = must[blob.GetPropertiesResponse](t, "properties")(cc.NewBlobClient(n).GetProperties(ctx, nil))
		contents[n] = download(t, cc.NewBlobClient(n))
	}
	cpBefore := must[container.GetPropertiesResponse](t, "container properties")(cc.GetProperties(ctx, nil))
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}

	em = emulator.StartTB(t, &emulator.Options{Location: dir})
	c = must[*azblob.Client](t, "client")(azblob.NewClientFromConnectionString(em.ConnectionString, nil))
	cc = c.ServiceClient().NewContainerClient("box")
	cp2 := must[container.GetPropertiesResponse](t, "container properties")(cc.GetProperties(ctx, nil))
	if *cp2.ETag != *cpBefore.ETag || !cp2.LastModified.Equal(*cpBefore.LastModified) || *cp2.Metadata["Kind"] != "test" ||
		*cp2.LeaseState != lease.StateTypeLeased || *cp2.BlobPublicAccess != container.PublicAccessTypeBlob {
		t.Errorf("container after restart: ETag %s, %v, %v, lease %s, access %s; before %s %v", *cp2.ETag, cp2.LastModified,
			cp2.Metadata, *cp2.LeaseState, *cp2.BlobPublicAccess, *cpBefore.ETag, cpBefore.LastModified)
	}
	acl := must[container.GetAccessPolicyResponse](t, "ACL")(cc.GetAccessPolicy(ctx, nil))
	if len(acl.SignedIdentifiers) != 1 || *acl.SignedIdentifiers[0].ID != "readers" || *acl.SignedIdentifiers[0].AccessPolicy.Permission != "rl" {
		t.Errorf("stored access policies after restart: %+v", acl.SignedIdentifiers)
	}
	// The container's lease still holds: deleting without it is refused.
	if _, err := cc.Delete(ctx, nil); !isStatus(err, http.StatusPreconditionFailed) {
		t.Errorf("deleting the leased container without its lease after restart: %v, want 412", err)
	}
	for _, n := range names {
		p := must[blob.GetPropertiesResponse](t, "properties "+n)(cc.NewBlobClient(n).GetProperties(ctx, nil))
		b := before[n]
		if *p.ETag != *b.ETag || !p.LastModified.Equal(*b.LastModified) || !p.CreationTime.Equal(*b.CreationTime) ||
			*p.ContentType != *b.ContentType || !bytes.Equal(p.ContentMD5, b.ContentMD5) || len(p.Metadata) != len(b.Metadata) ||
			*p.LeaseState != *b.LeaseState || val(p.CopyID) != val(b.CopyID) {
			t.Errorf("%s after restart: %s %v %s lease %s copy %q; before %s %v %s lease %s copy %q", n, *p.ETag, p.LastModified,
				*p.ContentType, *p.LeaseState, val(p.CopyID), *b.ETag, b.LastModified, *b.ContentType, *b.LeaseState, val(b.CopyID))
		}
		if got := download(t, cc.NewBlobClient(n)); !bytes.Equal(got, contents[n]) {
			t.Errorf("%s after restart: %d bytes, not the %d it held", n, len(got), len(contents[n]))
		}
	}
	if val(before["copy.txt"].CopyID) != *cr.CopyID {
		t.Errorf("copy ID %q, the copy answered %q", val(before["copy.txt"].CopyID), *cr.CopyID)
	}
	if p := before["log.txt"]; p.IsSealed == nil || !*p.IsSealed || !bytes.Equal(contents["log.txt"], log) {
		t.Error("the append blob was not as written before the restart")
	}
	if _, err := cc.NewBlockBlobClient("small.txt").Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("x"))), nil); !isStatus(err, http.StatusPreconditionFailed) {
		t.Errorf("writing the leased blob without its lease after restart: %v, want 412", err)
	}
	sc := must[*blob.Client](t, "snapshot client")(cc.NewBlobClient("big.bin").WithSnapshot(*snap.Snapshot))
	if got := download(t, sc); !bytes.Equal(got, first) {
		t.Errorf("the snapshot after restart holds %d bytes, not the %d it was taken with", len(got), len(first))
	}
	sp := must[blob.GetPropertiesResponse](t, "snapshot properties")(sc.GetProperties(ctx, nil))
	if v := sp.Metadata["Of"]; v == nil || *v != "first" {
		t.Errorf("the snapshot's metadata after restart: %v", sp.Metadata)
	}
	list := must[blockblob.GetBlockListResponse](t, "block list")(cc.NewBlockBlobClient("blocks.bin").GetBlockList(ctx, blockblob.BlockListTypeAll, nil))
	if len(list.CommittedBlocks) != 2 || *list.CommittedBlocks[1].Name != ids[1] || len(list.UncommittedBlocks) != 1 || *list.UncommittedBlocks[0].Size != 6 {
		t.Errorf("block list after restart: %d committed, %d uncommitted", len(list.CommittedBlocks), len(list.UncommittedBlocks))
	}
	if _, err := cc.NewBlobClient("deleted.txt").GetProperties(ctx, nil); !isStatus(err, http.StatusNotFound) {
		t.Errorf("a deleted blob after restart: %v, want 404", err)
	}
	if _, err := c.ServiceClient().NewContainerClient("gone").GetProperties(ctx, nil); !isStatus(err, http.StatusNotFound) {
		t.Errorf("a deleted container after restart: %v, want 404", err)
	}
	props := must[blobservice.GetPropertiesResponse](t, "service properties")(c.ServiceClient().GetProperties(ctx, nil))
	if len(props.CORS) != 1 || *props.CORS[0].AllowedOrigins != "https://example.com" {
		t.Errorf("CORS rules after restart: %+v", props.CORS)
	}
	// ETags keep rising across the restart.
	sm := must[blob.SetMetadataResponse](t, "set metadata")(cc.NewBlobClient("big.bin").SetMetadata(ctx, nil, nil))
	if *sm.ETag <= *before["big.bin"].ETag {
		t.Errorf("ETag after restart %s, not after %s", *sm.ETag, *before["big.bin"].ETag)
	}
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

func val(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Several accounts with a location: each keeps its own tables, queues
// and blobs across a restart, the development account in the location
// itself and any other in a directory of its name; ResetLocation empties
// them all.
func TestLocationKeepsEachAccount(t *testing.T) {
	t.Parallel()
	const key2 = "YWNjb3VudDIta2V5MS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkw"
	dir := t.TempDir()
	opts := &emulator.Options{Location: dir, Accounts: []emulator.Account{
		{Name: emulator.DevAccountName, Keys: []string{emulator.DevAccountKey}}, {Name: "account2", Keys: []string{key2}}}}
	ctx := context.Background()
	em, err := emulator.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{emulator.DevAccountName, "account2"} {
		cs, err := em.ConnectionStringFor(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := openTable(t, cs, nil).Insert(ctx, &row{PartitionKey: "p", RowKey: "r", N: i + 1}, nil); err != nil {
			t.Fatal(err)
		}
		a := must[*tablekit.Account](t, "connect")(tablekit.Connect(cs, nil))
		must[any](t, "create container")(a.Blobs().CreateContainer(ctx, "files", nil))
		must[any](t, "upload")(a.Blobs().UploadBuffer(ctx, "files", "f", []byte(name), nil))
	}
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tables.db", "blobs.db", "queues.db", filepath.Join("account2", "tables.db"), filepath.Join("account2", "blobs.db")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the location holds no %s: %v", f, err)
		}
	}
	em = emulator.StartTB(t, opts)
	for i, name := range []string{emulator.DevAccountName, "account2"} {
		cs, _ := em.ConnectionStringFor(name)
		if got, err := openTable(t, cs, nil).Get(ctx, "p", "r", nil); err != nil || got.N != i+1 {
			t.Errorf("%s's entity after restart: %+v, %v; want N=%d", name, got, err, i+1)
		}
		a := must[*tablekit.Account](t, "connect")(tablekit.Connect(cs, nil))
		if got := download(t, a.Blobs().ServiceClient().NewContainerClient("files").NewBlobClient("f")); string(got) != name {
			t.Errorf("%s's blob after restart holds %q", name, got)
		}
	}
	if err := emulator.ResetLocation(dir); err == nil {
		t.Error("ResetLocation emptied a location in use")
	}
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := emulator.ResetLocation(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tables.db", filepath.Join("account2", "tables.db"), filepath.Join("account2", "blobs.db")} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after ResetLocation: %v", f, err)
		}
	}
}

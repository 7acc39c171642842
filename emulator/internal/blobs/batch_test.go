package blobs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"

	"github.com/tablekit/tablekit/integration/azurite"
)

// batchOutcome is what each sub-response of a batch says: "ok", or the
// status and error code of its failure, by Content-ID.
func batchOutcome(t *testing.T, items []*container.BatchResponseItem) []string {
	t.Helper()
	var got []string
	for i, it := range items {
		if it.ContentID == nil || *it.ContentID != i {
			t.Fatalf("sub-response %d has Content-ID %v", i, it.ContentID)
		}
		if it.RequestID == nil || it.Version == nil {
			t.Errorf("sub-response %d: x-ms-request-id %v, x-ms-version %v", i, it.RequestID, it.Version)
		}
		if it.Error == nil {
			got = append(got, "ok")
			continue
		}
		status, code := failure(it.Error)
		got = append(got, fmt.Sprint(status, " ", code))
	}
	return got
}

// TestBlobBatchDelete: a container's batch of three Delete Blob, one of
// a blob that is not there, answers 202 with a sub-response for each:
// 202 for the two deleted, 404 BlobNotFound for the missing one; an
// account's batch deletes across containers, and a batch under a SAS
// (the SAS on every sub-request's URL) is served too.
func TestBlobBatchDelete(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	cc := cl.ServiceClient().NewContainerClient("batch")
	must[container.CreateResponse](t, "create")(cc.Create(ctx, nil))
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "batch", name, []byte(name), nil))
	}
	bb := must[*container.BatchBuilder](t, "builder")(cc.NewBatchBuilder())
	for _, name := range []string{"a", "missing", "b"} {
		if err := bb.Delete(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	resp := must[container.SubmitBatchResponse](t, "submit")(cc.SubmitBatch(ctx, bb, nil))
	if got, want := strings.Join(batchOutcome(t, resp.Responses), ", "), "ok, 404 BlobNotFound, ok"; got != want {
		t.Fatalf("sub-responses: %s, want %s", got, want)
	}
	if resp.ContentType == nil || !strings.HasPrefix(*resp.ContentType, "multipart/mixed; boundary=batchresponse_") {
		t.Errorf("Content-Type %v", resp.ContentType)
	}
	for name, want := range map[string]bool{"a": false, "b": false, "c": true} {
		_, err := cc.NewBlobClient(name).GetProperties(ctx, nil)
		if (err == nil) != want {
			t.Errorf("%s exists %v after the batch, want %v", name, err == nil, want)
		}
	}

	sb := must[*service.BatchBuilder](t, "account builder")(cl.ServiceClient().NewBatchBuilder())
	if err := sb.Delete("batch", "c", nil); err != nil {
		t.Fatal(err)
	}
	sr := must[service.SubmitBatchResponse](t, "account batch")(cl.ServiceClient().SubmitBatch(ctx, sb, nil))
	if len(sr.Responses) != 1 || sr.Responses[0].Error != nil {
		t.Fatalf("account batch: %+v", sr.Responses)
	}

	sasc := must[*container.Client](t, "SAS client")(container.NewClientWithNoCredential(endpoint+"/batch?"+accountSAS(t), nil))
	bb = must[*container.BatchBuilder](t, "SAS builder")(sasc.NewBatchBuilder())
	if err := bb.Delete("d", nil); err != nil {
		t.Fatal(err)
	}
	resp = must[container.SubmitBatchResponse](t, "SAS batch")(sasc.SubmitBatch(ctx, bb, nil))
	if got := strings.Join(batchOutcome(t, resp.Responses), ", "); got != "ok" {
		t.Fatalf("SAS batch: %s", got)
	}
	for name, want := range map[string]bool{"c": false, "d": false, "e": true} {
		_, err := cc.NewBlobClient(name).GetProperties(ctx, nil)
		if (err == nil) != want {
			t.Errorf("%s exists %v after the batches, want %v", name, err == nil, want)
		}
	}
}

// TestBlobBatchSetTier: a batch of Set Blob Tier sets each blob's tier
// (200 each), and a tier for a blob that is not there is that
// sub-request's 404.
func TestBlobBatchSetTier(t *testing.T) {
	ctx := context.Background()
	cl := emulatorClient(t)
	cc := cl.ServiceClient().NewContainerClient("tiers")
	must[container.CreateResponse](t, "create")(cc.Create(ctx, nil))
	for _, name := range []string{"cool", "archive"} {
		must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "tiers", name, []byte(name), nil))
	}
	bb := must[*container.BatchBuilder](t, "builder")(cc.NewBatchBuilder())
	if err := bb.SetTier("cool", blob.AccessTierCool, nil); err != nil {
		t.Fatal(err)
	}
	if err := bb.SetTier("archive", blob.AccessTierArchive, nil); err != nil {
		t.Fatal(err)
	}
	if err := bb.SetTier("missing", blob.AccessTierCool, nil); err != nil {
		t.Fatal(err)
	}
	resp := must[container.SubmitBatchResponse](t, "submit")(cc.SubmitBatch(ctx, bb, nil))
	if got, want := strings.Join(batchOutcome(t, resp.Responses), ", "), "ok, ok, 404 BlobNotFound"; got != want {
		t.Fatalf("sub-responses: %s, want %s", got, want)
	}
	for name, want := range map[string]string{"cool": "Cool", "archive": "Archive"} {
		p := must[blob.GetPropertiesResponse](t, "properties")(cc.NewBlobClient(name).GetProperties(ctx, nil))
		if p.AccessTier == nil || *p.AccessTier != want {
			t.Errorf("%s: tier %v, want %s", name, p.AccessTier, want)
		}
	}
}

// TestBlobBatchRefused: a batch of more than 256 sub-requests is 400
// ExceedsMaxBatchRequestCount, one mixing Delete Blob and Set Blob Tier
// 400 AllBatchSubRequestsShouldBeSameApi, a body that is not a batch 400
// InvalidInput, one over 4 MiB 413 RequestBodyTooLarge; none of them
// deletes anything.
func TestBlobBatchRefused(t *testing.T) {
	// Parallel: closing its server waits 0.5 s for the connection its
	// refused 4 MiB body leaves lingering (net/http's guard against a
	// reset), while TestAppendBlobBlockLimit works.
	t.Parallel()
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	cc := cl.ServiceClient().NewContainerClient("refused")
	must[container.CreateResponse](t, "create")(cc.Create(ctx, nil))
	must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "refused", "kept", []byte("x"), nil))

	bb := must[*container.BatchBuilder](t, "builder")(cc.NewBatchBuilder())
	for i := range 257 {
		name := fmt.Sprint("b", i)
		if i == 0 {
			name = "kept"
		}
		if err := bb.Delete(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := cc.SubmitBatch(ctx, bb, nil)
	wantFailure(t, "257 sub-requests", err, http.StatusBadRequest, "ExceedsMaxBatchRequestCount")

	sas := accountSAS(t)
	sub := func(id int, line string) string {
		return "--batch_x\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: " +
			fmt.Sprint(id) + "\r\n\r\n" + line + "\r\nx-ms-date: Thu, 01 Jan 2026 00:00:00 GMT\r\n\r\n"
	}
	blobPath := "/" + azurite.AccountName + "/refused/kept?" + sas
	for _, c := range []struct {
		what, contentType, body, code string
	}{
		{"over 4 MiB", "multipart/mixed; boundary=batch_x", sub(0, "DELETE "+blobPath+" HTTP/1.1") +
			"--batch_x\r\n" + strings.Repeat("x", 4<<20) + "--batch_x--\r\n", "RequestBodyTooLarge"},
		{"mixed", "multipart/mixed; boundary=batch_x",
			sub(0, "DELETE "+blobPath+" HTTP/1.1") + sub(1, "PUT "+blobPath+"&comp=tier HTTP/1.1") + "--batch_x--\r\n",
			"AllBatchSubRequestsShouldBeSameApi"},
		{"not multipart", "text/plain", "DELETE " + blobPath + " HTTP/1.1\r\n\r\n", "InvalidInput"},
		{"no request line", "multipart/mixed; boundary=batch_x",
			"--batch_x\r\nContent-Type: application/http\r\nContent-ID: 0\r\n\r\nnonsense\r\n\r\n--batch_x--\r\n", "InvalidInput"},
		{"no parts", "multipart/mixed; boundary=batch_x", "--batch_x--\r\n", "InvalidInput"},
		{"another container", "multipart/mixed; boundary=batch_x",
			sub(0, "DELETE /"+azurite.AccountName+"/other/kept?"+sas+" HTTP/1.1") + "--batch_x--\r\n", "InvalidInput"},
		{"another operation", "multipart/mixed; boundary=batch_x",
			sub(0, "GET "+blobPath+" HTTP/1.1") + "--batch_x--\r\n", "InvalidInput"},
	} {
		req, err := http.NewRequest(http.MethodPost, endpoint+"/refused?restype=container&comp=batch&"+sas, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-ms-version", "2023-11-03")
		req.Header.Set("Content-Type", c.contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status := http.StatusBadRequest
		if c.code == "RequestBodyTooLarge" {
			status = http.StatusRequestEntityTooLarge
		}
		if resp.StatusCode != status || resp.Header.Get("x-ms-error-code") != c.code {
			t.Errorf("%s: %d %s %.300s, want %d %s", c.what, resp.StatusCode, resp.Header.Get("x-ms-error-code"), body, status, c.code)
		}
	}
	must[blob.GetPropertiesResponse](t, "the blob the batches would delete")(cc.NewBlobClient("kept").GetProperties(ctx, nil))
}

// TestBlobBatchSubRequestAuthorized: each sub-request is authorized on
// its own: sub-requests signed with a wrong key are each 403
// AuthenticationFailed in a batch whose own signature is good, and
// delete nothing.
func TestBlobBatchSubRequestAuthorized(t *testing.T) {
	ctx := context.Background()
	endpoint := startEmulator(t)
	cl := newClient(t, endpoint)
	cc := cl.ServiceClient().NewContainerClient("auth")
	must[container.CreateResponse](t, "create")(cc.Create(ctx, nil))
	must[azblob.UploadBufferResponse](t, "upload")(cl.UploadBuffer(ctx, "auth", "kept", []byte("x"), nil))

	wrong := must[*azblob.SharedKeyCredential](t, "credential")(azblob.NewSharedKeyCredential(azurite.AccountName, "d3Jvbmcga2V5IGZvciB0aGUgYmF0Y2g="))
	wc := must[*container.Client](t, "wrong client")(container.NewClientWithSharedKeyCredential(endpoint+"/auth", wrong, nil))
	bb := must[*container.BatchBuilder](t, "builder")(wc.NewBatchBuilder())
	if err := bb.Delete("kept", nil); err != nil {
		t.Fatal(err)
	}
	if err := bb.Delete("missing", nil); err != nil {
		t.Fatal(err)
	}
	resp := must[container.SubmitBatchResponse](t, "submit")(cc.SubmitBatch(ctx, bb, nil))
	if got, want := strings.Join(batchOutcome(t, resp.Responses), ", "), "403 AuthenticationFailed, 403 AuthenticationFailed"; got != want {
		t.Fatalf("sub-responses: %s, want %s", got, want)
	}
	must[blob.GetPropertiesResponse](t, "the blob a wrong key would delete")(cc.NewBlobClient("kept").GetProperties(ctx, nil))
}

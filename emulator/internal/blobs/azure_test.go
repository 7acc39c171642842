package blobs_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/appendblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// The tests in this file hold the emulator to answers real Azure gave in
// sessions the Azure SDK for Go recorded (emulator's
// testdata/recordings/azblob), where Azurite answers otherwise.

// TestPutBlobChecksums uploads the recorded body of azblob's
// TestBlobDownloadDataOffsetOutOfRange, sending no checksum: Azure
// answered with both its MD5 and its CRC-64.
func TestPutBlobChecksums(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "sums", nil))
	bb := c.ServiceClient().NewContainerClient("sums").NewBlockBlobClient("b")
	r := must[blockblob.UploadResponse](t, "put blob")(bb.Upload(ctx, rs("GoBlockBlobData"), nil))
	if got := base64.StdEncoding.EncodeToString(r.ContentCRC64); got != "+JGsS7CR5kg=" {
		t.Errorf("x-ms-content-crc64 %q, Azure answered +JGsS7CR5kg=", got)
	}
	if got := base64.StdEncoding.EncodeToString(r.ContentMD5); got != "ebncwguMQu9sgPmr0GazhA==" {
		t.Errorf("Content-MD5 %q, Azure answered ebncwguMQu9sgPmr0GazhA==", got)
	}
}

// TestAppendToSealedBlob appends to a sealed append blob, as azblob's
// TestSeal did: 409 BlobIsSealed in Azure's words.
func TestAppendToSealedBlob(t *testing.T) {
	ctx := context.Background()
	c := emulatorClient(t)
	must[azblob.CreateContainerResponse](t, "create container")(c.CreateContainer(ctx, "sealed", nil))
	ab := c.ServiceClient().NewContainerClient("sealed").NewAppendBlobClient("log")
	must[appendblob.CreateResponse](t, "create")(ab.Create(ctx, nil))
	must[appendblob.AppendBlockResponse](t, "append")(ab.AppendBlock(ctx, rs("x"), nil))
	must[appendblob.SealResponse](t, "seal")(ab.Seal(ctx, nil))
	_, err := ab.AppendBlock(ctx, rs("y"), nil)
	wantFailure(t, "append to a sealed blob", err, http.StatusConflict, "BlobIsSealed")
	if got, want := errorMessage(err), "The blob is sealed and its contents cannot be modified."; got != want {
		t.Errorf("message %q, Azure's is %q", got, want)
	}
}

// TestNoCredentials checks Azure's answer to a request with neither a
// signature nor a SAS: 401 NoAuthenticationInformation with the
// WWW-Authenticate challenge.
func TestNoCredentials(t *testing.T) {
	url := startEmulator(t)
	for _, path := range []string{"?comp=list", "/ccc?restype=container", "/ccc/b"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("x-ms-error-code") != "NoAuthenticationInformation" || resp.Header.Get("WWW-Authenticate") != auth.WWWAuthenticate {
			t.Errorf("GET %s: %d %s, WWW-Authenticate %q; want 401 NoAuthenticationInformation with %q", path, resp.StatusCode, resp.Header.Get("x-ms-error-code"), resp.Header.Get("WWW-Authenticate"), auth.WWWAuthenticate)
		}
	}
}

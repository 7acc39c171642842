package emulator_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
)

// A service SAS naming a container's stored access policy (si) gets the
// policy's permissions and times; an identifier the container does not
// have gets 403.
func TestBlobSASNamesAStoredAccessPolicy(t *testing.T) {
	em := emulator.StartTB(t, nil)
	ctx := context.Background()
	svc, err := azblob.NewClientFromConnectionString(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateContainer(ctx, "policies", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.UploadBuffer(ctx, "policies", "b", []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	cc := svc.ServiceClient().NewContainerClient("policies")
	now := time.Now().UTC()
	if _, err := cc.SetAccessPolicy(ctx, &container.SetAccessPolicyOptions{ContainerACL: []*container.SignedIdentifier{{
		ID:           to.Ptr("readers"),
		AccessPolicy: &container.AccessPolicy{Start: to.Ptr(now.Add(-time.Hour)), Expiry: to.Ptr(now.Add(time.Hour)), Permission: to.Ptr("r")},
	}}}); err != nil {
		t.Fatal(err)
	}
	cred, err := azblob.NewSharedKeyCredential(em.AccountName, em.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) int {
		t.Helper()
		qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ContainerName: "policies", BlobName: "b", Identifier: id}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, em.BlobURL+"/policies/b?"+qp.Encode(), nil)
		req.Header.Set("x-ms-version", "2025-11-05")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && string(body) != "hello" {
			t.Errorf("Get Blob with si=%s: body %q", id, body)
		}
		return resp.StatusCode
	}
	if got := get("readers"); got != http.StatusOK {
		t.Errorf("Get Blob with a SAS naming the container's policy: %d, want 200", got)
	}
	if got := get("nobody"); got != http.StatusForbidden {
		t.Errorf("Get Blob with a SAS naming no policy of the container: %d, want 403", got)
	}
}

// A queue SAS naming the queue's stored access policy (si) gets the
// policy's permissions: peek with read, not put without add; an
// identifier the queue does not have gets 403.
func TestQueueSASNamesAStoredAccessPolicy(t *testing.T) {
	em := emulator.StartTB(t, nil)
	ctx := context.Background()
	svc, err := azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := svc.NewQueueClient("policies")
	if _, err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := q.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: []*azqueue.SignedIdentifier{{
		ID:           to.Ptr("readers"),
		AccessPolicy: &azqueue.AccessPolicy{Start: to.Ptr(now.Add(-time.Hour)), Expiry: to.Ptr(now.Add(time.Hour)), Permission: to.Ptr("r")},
	}}}); err != nil {
		t.Fatal(err)
	}
	cred, err := azqueue.NewSharedKeyCredential(em.AccountName, em.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, id string) int {
		t.Helper()
		qp, err := queuesas.QueueSignatureValues{Protocol: queuesas.ProtocolHTTPSandHTTP, QueueName: "policies", Identifier: id}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, method, em.QueueURL+"/policies/messages?"+path+qp.Encode(), strings.NewReader("<QueueMessage><MessageText>x</MessageText></QueueMessage>"))
		req.Header.Set("x-ms-version", "2018-03-28")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do(http.MethodGet, "peekonly=true&", "readers"); got != http.StatusOK {
		t.Errorf("Peek Messages with a SAS naming the queue's read policy: %d, want 200", got)
	}
	if got := do(http.MethodPost, "", "readers"); got != http.StatusForbidden {
		t.Errorf("Put Message with a SAS naming the queue's read policy: %d, want 403", got)
	}
	if got := do(http.MethodGet, "peekonly=true&", "nobody"); got != http.StatusForbidden {
		t.Errorf("Peek Messages with a SAS naming no policy of the queue: %d, want 403", got)
	}
}

// A table SAS naming the table's stored access policy (si) gets the
// policy's permissions: a read with read, not an insert without add; an
// identifier the table does not have gets 403. Set Table ACL refuses a
// letter a table's policy cannot hold, 400 InvalidXmlDocument, as Azurite
// does.
func TestTableSASNamesAStoredAccessPolicy(t *testing.T) {
	em := emulator.StartTB(t, nil)
	ctx := context.Background()
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := acct.Tables().NewClient("policies")
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	policy := func(id, perm string) *aztables.SignedIdentifier {
		return &aztables.SignedIdentifier{ID: to.Ptr(id), AccessPolicy: &aztables.AccessPolicy{
			Start: to.Ptr(now.Add(-time.Hour)), Expiry: to.Ptr(now.Add(time.Hour)), Permission: to.Ptr(perm)}}
	}
	// (aztables refuses six policies itself, before any request.)
	_, err = tc.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{policy("w", "rw")}})
	if !isCode(err, http.StatusBadRequest, "InvalidXmlDocument") {
		t.Errorf("Set Table ACL with the letter w: %v, want 400 InvalidXmlDocument", err)
	}
	if _, err := tc.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{policy("readers", "r")}}); err != nil {
		t.Fatal(err)
	}
	client := func(id string) *aztables.Client {
		t.Helper()
		s, err := acct.TableSAS("policies", tablekit.TableSASPermissions{}, time.Time{}, time.Time{}, &tablekit.TableSASOptions{Identifier: id})
		if err != nil {
			t.Fatal(err)
		}
		c, err := aztables.NewClientWithNoCredential(s.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := client("readers").GetEntity(ctx, "p", "r", nil); err != nil {
		t.Errorf("a read with a SAS naming the table's read policy: %v", err)
	}
	if _, err := client("readers").AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r2"}`), nil); !isStatus(err, http.StatusForbidden) {
		t.Errorf("an insert with a SAS naming the table's read policy: %v, want 403", err)
	}
	if _, err := client("nobody").GetEntity(ctx, "p", "r", nil); !isStatus(err, http.StatusForbidden) {
		t.Errorf("a read with a SAS naming no policy of the table: %v, want 403", err)
	}
}

func isCode(err error, status int, code string) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status && re.ErrorCode == code
}

package auth_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestAgainstAzurite sends the same signed requests to the Authenticator
// and to Azurite and checks that both accept or both refuse each one.
// Azurite refuses with 403 AuthorizationFailure where Azure (and the
// emulator) answer AuthenticationFailed or a specific Authorization*
// code, so only the decision is compared, and the codes are logged.
func TestAgainstAzurite(t *testing.T) {
	testenv.Tier(t, testenv.TierAzurite)
	inst := azurite.StartTB(t, nil)
	origin := func(u string) string {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return p.Scheme + "://" + p.Host
	}
	azuriteOrigin := map[auth.Service]string{
		auth.Table: origin(inst.DirectTableURL),
		auth.Queue: origin(inst.QueueURL),
		auth.Blob:  origin(inst.BlobURL),
	}
	services := map[auth.Service]*service{
		auth.Table: newService(t, auth.Table, false),
		auth.Queue: newService(t, auth.Queue, false),
		auth.Blob:  newService(t, auth.Blob, false),
	}
	c := ctx(t)
	ts, qs, bs := services[auth.Table], services[auth.Queue], services[auth.Blob]
	hour := time.Now().Add(time.Hour)

	// Table clients.
	_, tableKey := tableClients(t, ts, azurite.AccountKey, nil)
	_, tableWrongKey := tableClients(t, ts, otherKey, nil)
	tableSASURL, err := tableKey.GetTableSASURL(aztables.SASPermissions{Read: true, Add: true}, time.Now().Add(-time.Minute), hour)
	if err != nil {
		t.Fatal(err)
	}
	tableSAS := mustQuery(t, tableSASURL)
	expiredURL, err := tableKey.GetTableSASURL(aztables.SASPermissions{Read: true}, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ranged, err := tablekitAccount(t, ts).TableSAS("mytable", tablekit.TableSASPermissions{Read: true}, time.Time{}, hour,
		&tablekit.TableSASOptions{StartPartitionKey: "p0", EndPartitionKey: "p5"})
	if err != nil {
		t.Fatal(err)
	}

	// Queue clients.
	qKey := queueClient(t, qs, azurite.AccountKey, nil)
	qWrongKey := queueClient(t, qs, otherKey, nil)
	qcred, err := azqueue.NewSharedKeyCredential(account, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qsas, err := queuesas.QueueSignatureValues{QueueName: "queue1", ExpiryTime: hour, Permissions: (&queuesas.QueuePermissions{Read: true}).String()}.SignWithSharedKey(qcred)
	if err != nil {
		t.Fatal(err)
	}
	qaccount, err := queuesas.AccountSignatureValues{ExpiryTime: hour, Permissions: (&queuesas.AccountPermissions{Read: true}).String(),
		ResourceTypes: (&queuesas.AccountResourceTypes{Object: true}).String()}.SignWithSharedKey(qcred)
	if err != nil {
		t.Fatal(err)
	}
	queueSAS := func(query string) *azqueue.QueueClient {
		q, err := azqueue.NewQueueClientWithNoCredential(qs.base()+"/queue1?"+query, &azqueue.ClientOptions{ClientOptions: opts(nil)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}

	// Blob clients.
	bKey := blobClient(t, bs, azurite.AccountKey, nil)
	bTampered := blobClient(t, bs, azurite.AccountKey, func(r *http.Request) {
		r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "prefix=dir", "prefix=etc", 1)
	})
	bAccount := sasBlob(t, bs, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{}), nil)
	bExpired := sasBlob(t, bs, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{ExpiryTime: time.Now().Add(-time.Minute)}), nil)
	bObjectsOnly := sasBlob(t, bs, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{ResourceTypes: (&blobsas.AccountResourceTypes{Object: true}).String()}), nil)
	bIP := sasBlob(t, bs, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{IPRange: blobsas.IPRange{Start: net.ParseIP("127.0.0.1")}}), nil)
	blobServiceSAS, err := blobsas.BlobSignatureValues{ContainerName: "cont1", BlobName: "b1", ExpiryTime: hour,
		Permissions: (&blobsas.BlobPermissions{Read: true}).String(), ContentType: "text/plain", CacheControl: "no-cache"}.SignWithSharedKey(blobCred(t, azurite.AccountKey))
	if err != nil {
		t.Fatal(err)
	}
	bService := sasBlob(t, bs, blobServiceSAS.Encode(), nil)

	entityOp := func(perm byte) auth.Operation {
		return auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: perm, Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
	}
	queueOp := func(perm byte) auth.Operation {
		return auth.Operation{Service: auth.Queue, ResourceType: 'o', Permission: perm, Name: "queue1"}
	}
	blobOp := func(rt, perm byte) auth.Operation {
		return auth.Operation{Service: auth.Blob, ResourceType: rt, Permission: perm, Name: "cont1", Blob: "b1"}
	}
	cases := []struct {
		name string
		s    *service
		op   auth.Operation
		do   func() error
	}{
		{"table shared key lite", ts, entityOp('r'), func() error { _, err := tableKey.GetEntity(c, "p1", "r1", nil); return err }},
		{"table shared key lite query", ts, entityOp('r'), func() error {
			_, err := tableKey.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p1'")}).NextPage(c)
			return err
		}},
		{"table shared key lite, wrong key", ts, entityOp('r'), func() error { _, err := tableWrongKey.GetEntity(c, "p1", "r1", nil); return err }},
		{"table shared key MERGE", ts, entityOp('u'), func() error {
			return sendSigned(ts, "MERGE", "/mytable(PartitionKey='p1',RowKey='r1')", "application/json", false)
		}},
		{"table shared key, content type changed", ts, entityOp('u'), func() error {
			return sendSigned(ts, "MERGE", "/mytable(PartitionKey='p1',RowKey='r1')", "application/json", true)
		}},
		{"table shared key, resource without the account segment", ts, entityOp('r'), func() error {
			// Path-style requests are signed over /account/account/...;
			// the path without its account segment does not verify.
			r, err := http.NewRequest(http.MethodGet, ts.base()+"/mytable(PartitionKey='p1',RowKey='r1')", nil)
			if err != nil {
				return err
			}
			tableSharedKeyPath(t, r, devKeyBytes(), "/mytable(PartitionKey='p1',RowKey='r1')")
			return do(r)
		}},
		{"table SAS", ts, entityOp('r'), func() error {
			_, err := sasTable(t, ts, ts.base()+"/mytable?"+tableSAS).GetEntity(c, "p1", "r1", nil)
			return err
		}},
		{"table SAS, tampered permission", ts, entityOp('d'), func() error {
			_, err := sasTable(t, ts, ts.base()+"/mytable?"+strings.Replace(tableSAS, "sp=ra", "sp=rad", 1)).DeleteEntity(c, "p1", "r1", nil)
			return err
		}},
		{"table SAS, expired", ts, entityOp('r'), func() error {
			_, err := sasTable(t, ts, ts.base()+"/mytable?"+mustQuery(t, expiredURL)).GetEntity(c, "p1", "r1", nil)
			return err
		}},
		{"table SAS with a key range, inside", ts, entityOp('r'), func() error {
			_, err := sasTable(t, ts, ranged.URL()).GetEntity(c, "p1", "r1", nil)
			return err
		}},
		{"queue shared key with metadata", qs, queueOp('c'), func() error {
			_, err := qKey.Create(c, &azqueue.CreateOptions{Metadata: map[string]*string{"Owner": to.Ptr("tablekit")}})
			return err
		}},
		{"queue shared key enqueue", qs, queueOp('a'), func() error { _, err := qKey.EnqueueMessage(c, "hello", nil); return err }},
		{"queue shared key, wrong key", qs, queueOp('r'), func() error { _, err := qWrongKey.PeekMessage(c, nil); return err }},
		{"queue shared key lite", qs, queueOp('r'), func() error { return sendLite(qs, "/queue1?comp=metadata") }},
		{"queue SAS", qs, queueOp('r'), func() error { _, err := queueSAS(qsas.Encode()).PeekMessage(c, nil); return err }},
		{"queue SAS, wrong permission", qs, queueOp('a'), func() error { _, err := queueSAS(qsas.Encode()).EnqueueMessage(c, "m", nil); return err }},
		{"queue account SAS, wrong permission", qs, queueOp('a'), func() error { _, err := queueSAS(qaccount.Encode()).EnqueueMessage(c, "m", nil); return err }},
		{"blob shared key create container", bs, blobOp('c', 'c'), func() error {
			_, err := bKey.CreateContainer(c, "cont1", &azblob.CreateContainerOptions{Metadata: map[string]*string{"Owner": to.Ptr("tablekit")}})
			return err
		}},
		{"blob shared key upload", bs, blobOp('o', 'w'), func() error { _, err := bKey.UploadBuffer(c, "cont1", "b1", []byte("hello"), nil); return err }},
		{"blob shared key list", bs, blobOp('c', 'l'), func() error {
			_, err := bKey.NewListBlobsFlatPager("cont1", &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("dir/"), MaxResults: to.Ptr(int32(2))}).NextPage(c)
			return err
		}},
		{"blob shared key, tampered query", bs, blobOp('c', 'l'), func() error {
			_, err := bTampered.NewListBlobsFlatPager("cont1", &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("dir/")}).NextPage(c)
			return err
		}},
		{"blob account SAS", bs, blobOp('o', 'r'), func() error { _, err := bAccount.DownloadStream(c, "cont1", "b1", nil); return err }},
		{"blob account SAS with sip", bs, blobOp('o', 'r'), func() error { _, err := bIP.DownloadStream(c, "cont1", "b1", nil); return err }},
		{"blob account SAS, expired", bs, blobOp('o', 'r'), func() error { _, err := bExpired.DownloadStream(c, "cont1", "b1", nil); return err }},
		{"blob account SAS, wrong permission", bs, blobOp('o', 'd'), func() error { _, err := bAccount.DeleteBlob(c, "cont1", "b1", nil); return err }},
		{"blob account SAS, wrong resource type", bs, auth.Operation{Service: auth.Blob, ResourceType: 's', Permission: 'l'}, func() error {
			_, err := bObjectsOnly.NewListContainersPager(nil).NextPage(c)
			return err
		}},
		{"blob service SAS", bs, blobOp('o', 'r'), func() error { _, err := bService.DownloadStream(c, "cont1", "b1", nil); return err }},
		{"blob service SAS, other blob", bs, auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: "cont1", Blob: "b2"}, func() error {
			_, err := bService.DownloadStream(c, "cont1", "b2", nil)
			return err
		}},
	}
	var accepted, refused int
	for _, tc := range cases {
		out, _ := tc.s.call(t, tc.op, tc.do)
		status, code := replay(t, azuriteOrigin[tc.s.svc], out.req)
		azuriteOK := status != http.StatusForbidden && status != http.StatusUnauthorized
		mine := "accepted"
		if out.err != nil {
			mine = out.err.Code
			refused++
		} else {
			accepted++
		}
		t.Logf("%-45s emulator: %-33s Azurite: %d %s", tc.name, mine, status, code)
		if azuriteOK != (out.err == nil) {
			t.Errorf("%s: emulator %s, Azurite %d %s", tc.name, mine, status, code)
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d accepted and %d refused: the comparison needs both", accepted, refused)
	}
}

// mustQuery is the query of a URL.
func mustQuery(t testing.TB, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.RawQuery
}

// replay sends req to origin (Azurite's scheme and host) and returns the
// status and error code.
func replay(t testing.TB, origin string, req captured) (int, string) {
	t.Helper()
	r, err := req.request(origin)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("x-ms-error-code")
}

// sendSigned sends a Table Shared Key request (tableSharedKey) to s;
// changeType alters Content-Type after signing.
func sendSigned(s *service, method, path, contentType string, changeType bool) error {
	r, err := http.NewRequest(method, s.base()+path, strings.NewReader(string(entity)))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("Accept", "application/json;odata=nometadata")
	r.Header.Set("If-Match", "*")
	tableSharedKey(nil, r, devKeyBytes())
	if changeType {
		r.Header.Set("Content-Type", "application/xml")
	}
	return do(r)
}

// sendLite sends a Shared Key Lite GET (liteRequest) to s.
func sendLite(s *service, path string) error {
	r, err := http.NewRequest(http.MethodGet, s.base()+path, nil)
	if err != nil {
		return err
	}
	liteRequest(nil, r, devKeyBytes())
	return do(r)
}

func do(r *http.Request) error {
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

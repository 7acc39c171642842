package auth_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
)

// clientOpts are opts for s: over TLS, the test server's client.
func (s *service) clientOpts(alter func(*http.Request)) azcore.ClientOptions {
	o := opts(alter)
	if s.srv.TLS != nil {
		client := s.srv.Client()
		if alter != nil {
			o.Transport = alterTransportWith{alter, client}
		} else {
			o.Transport = client
		}
	}
	return o
}

type alterTransportWith struct {
	alter  func(*http.Request)
	client *http.Client
}

func (a alterTransportWith) Do(r *http.Request) (*http.Response, error) {
	a.alter(r)
	return a.client.Do(r)
}

func blobCred(t *testing.T, key string) *azblob.SharedKeyCredential {
	t.Helper()
	c, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// blobSAS signs an account SAS with azblob's sas package (ss=b).
func blobAccountSAS(t *testing.T, key string, v blobsas.AccountSignatureValues) string {
	t.Helper()
	if v.ExpiryTime.IsZero() {
		v.ExpiryTime = time.Now().Add(time.Hour)
	}
	if v.Permissions == "" {
		v.Permissions = (&blobsas.AccountPermissions{Read: true, List: true}).String()
	}
	if v.ResourceTypes == "" {
		v.ResourceTypes = (&blobsas.AccountResourceTypes{Service: true, Container: true, Object: true}).String()
	}
	qp, err := v.SignWithSharedKey(blobCred(t, key))
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

// sasBlob is an azblob client of s authorized by the SAS query.
func sasBlob(t *testing.T, s *service, query string, alter func(*http.Request)) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientWithNoCredential(s.base()+"/?"+query, &azblob.ClientOptions{ClientOptions: s.clientOpts(alter)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAccountSASBlob(t *testing.T) {
	s := newService(t, auth.Blob, false)
	c := ctx(t)
	read := auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: "cont1", Blob: "b1"}
	getProps := func(bc *azblob.Client) func() error {
		return func() error {
			_, err := bc.ServiceClient().NewContainerClient("cont1").NewBlobClient("b1").GetProperties(c, nil)
			return err
		}
	}
	cases := []struct {
		name  string
		sas   blobsas.AccountSignatureValues
		key   string
		op    auth.Operation
		code  string
		alter func(*http.Request)
	}{
		{name: "valid", op: read},
		{name: "version with encryption scope", sas: blobsas.AccountSignatureValues{EncryptionScope: "scope1"}, op: read},
		{name: "start in the past", sas: blobsas.AccountSignatureValues{StartTime: time.Now().Add(-time.Minute)}, op: read},
		{name: "wrong key", key: otherKey, op: read, code: "AuthenticationFailed"},
		{name: "expired", sas: blobsas.AccountSignatureValues{ExpiryTime: time.Now().Add(-time.Minute)}, op: read, code: "AuthenticationFailed"},
		{name: "not yet valid", sas: blobsas.AccountSignatureValues{StartTime: time.Now().Add(10 * time.Minute)}, op: read, code: "AuthenticationFailed"},
		{name: "wrong permission", op: auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'd', Name: "cont1", Blob: "b1"}, code: "AuthorizationPermissionMismatch"},
		{name: "wrong resource type", sas: blobsas.AccountSignatureValues{ResourceTypes: (&blobsas.AccountResourceTypes{Container: true}).String()}, op: read, code: "AuthorizationResourceTypeMismatch"},
		{name: "https only", sas: blobsas.AccountSignatureValues{Protocol: blobsas.ProtocolHTTPS}, op: read, code: "AuthorizationProtocolMismatch"},
		{name: "https or http", sas: blobsas.AccountSignatureValues{Protocol: blobsas.ProtocolHTTPSandHTTP}, op: read},
		{name: "IP outside", sas: blobsas.AccountSignatureValues{IPRange: blobsas.IPRange{Start: net.ParseIP("10.0.0.1")}}, op: read, code: "AuthorizationSourceIPMismatch"},
		{name: "IP range outside", sas: blobsas.AccountSignatureValues{IPRange: blobsas.IPRange{Start: net.ParseIP("10.0.0.1"), End: net.ParseIP("10.0.0.9")}}, op: read, code: "AuthorizationSourceIPMismatch"},
		{name: "IP itself", sas: blobsas.AccountSignatureValues{IPRange: blobsas.IPRange{Start: net.ParseIP("127.0.0.1")}}, op: read},
		{name: "IP range inside", sas: blobsas.AccountSignatureValues{IPRange: blobsas.IPRange{Start: net.ParseIP("127.0.0.0"), End: net.ParseIP("127.0.0.255")}}, op: read},
		{name: "tampered permission", op: read, code: "AuthenticationFailed", alter: func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "sp=rl", "sp=rdl", 1)
		}},
		{name: "tampered expiry", op: read, code: "AuthenticationFailed", alter: func(r *http.Request) {
			q := r.URL.Query()
			q.Set("se", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339))
			r.URL.RawQuery = q.Encode()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key
			if key == "" {
				key = azurite.AccountKey
			}
			bc := sasBlob(t, s, blobAccountSAS(t, key, tc.sas), tc.alter)
			out := s.expect(t, tc.op, tc.code, getProps(bc))
			if tc.code == "" && (out.grant == nil || !out.grant.SAS || out.grant.KeyRange != nil) {
				t.Fatalf("grant %+v, want a SAS grant without key range", out.grant)
			}
			if tc.code == "AuthorizationSourceIPMismatch" && !strings.Contains(out.err.Message, "127.0.0.1") {
				t.Fatalf("message %q does not name the source IP", out.err.Message)
			}
		})
	}
	t.Run("list containers needs the service resource type", func(t *testing.T) {
		q := blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{ResourceTypes: (&blobsas.AccountResourceTypes{Container: true, Object: true}).String()})
		bc := sasBlob(t, s, q, nil)
		s.expect(t, auth.Operation{Service: auth.Blob, ResourceType: 's', Permission: 'l'}, "AuthorizationResourceTypeMismatch", func() error {
			_, err := bc.NewListContainersPager(nil).NextPage(c)
			return err
		})
	})
	t.Run("https only over https", func(t *testing.T) {
		tlsSrv := newService(t, auth.Blob, true)
		bc := sasBlob(t, tlsSrv, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{Protocol: blobsas.ProtocolHTTPS}), nil)
		tlsSrv.expect(t, read, "", getProps(bc))
	})
}

func TestAccountSASQueueAndTable(t *testing.T) {
	c := ctx(t)
	qs := newService(t, auth.Queue, false)
	peek := auth.Operation{Service: auth.Queue, ResourceType: 'o', Permission: 'r', Name: "queue1"}
	queueWith := func(query string) *azqueue.QueueClient {
		q, err := azqueue.NewQueueClientWithNoCredential(qs.base()+"/queue1?"+query, &azqueue.ClientOptions{ClientOptions: opts(nil)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	t.Run("queue", func(t *testing.T) {
		cred, err := azqueue.NewSharedKeyCredential(account, azurite.AccountKey)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := queuesas.AccountSignatureValues{
			ExpiryTime:    time.Now().Add(time.Hour),
			Permissions:   (&queuesas.AccountPermissions{Read: true, Process: true}).String(),
			ResourceTypes: (&queuesas.AccountResourceTypes{Object: true}).String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		q := queueWith(qp.Encode())
		qs.expect(t, peek, "", func() error { _, err := q.PeekMessage(c, nil); return err })
		qs.expect(t, auth.Operation{Service: auth.Queue, ResourceType: 'o', Permission: 'a', Name: "queue1"}, "AuthorizationPermissionMismatch", func() error {
			_, err := q.EnqueueMessage(c, "m", nil)
			return err
		})
	})
	t.Run("blob SAS on the queue service", func(t *testing.T) {
		q := queueWith(blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{}))
		qs.expect(t, peek, "AuthorizationServiceMismatch", func() error { _, err := q.PeekMessage(c, nil); return err })
	})
	t.Run("table", func(t *testing.T) {
		// aztables signs account SAS tokens with spr=https (and sv
		// 2019-02-02, the layout without an encryption scope): an http
		// request fails, an https one passes.
		plain := newService(t, auth.Table, false)
		ts := newService(t, auth.Table, true)
		sc, _ := tableClients(t, ts, azurite.AccountKey, nil)
		sasURL, err := sc.GetAccountSASURL(aztables.AccountSASResourceTypes{Object: true, Container: true},
			aztables.AccountSASPermissions{Read: true, Add: true}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(sasURL)
		if err != nil {
			t.Fatal(err)
		}
		if u.Query().Get("spr") != "https" {
			t.Fatalf("aztables signed spr=%q; the test expects https", u.Query().Get("spr"))
		}
		client := func(s *service, path string) *aztables.Client {
			c, err := aztables.NewClientWithNoCredential(s.base()+path+"?"+u.RawQuery, &aztables.ClientOptions{ClientOptions: s.clientOpts(nil)})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		add := auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'a', Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
		plain.expect(t, add, "AuthorizationProtocolMismatch", func() error { _, err := client(plain, "/mytable").AddEntity(c, entity, nil); return err })
		tc := client(ts, "/mytable")
		ts.expect(t, add, "", func() error { _, err := tc.AddEntity(c, entity, nil); return err })
		del := auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'd', Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
		ts.expect(t, del, "AuthorizationPermissionMismatch", func() error { _, err := tc.DeleteEntity(c, "p1", "r1", nil); return err })
		list := auth.Operation{Service: auth.Table, ResourceType: 's', Permission: 'l'}
		tsc, err := aztables.NewServiceClientWithNoCredential(ts.base()+"?"+u.RawQuery, &aztables.ClientOptions{ClientOptions: ts.clientOpts(nil)})
		if err != nil {
			t.Fatal(err)
		}
		ts.expect(t, list, "AuthorizationResourceTypeMismatch", func() error { _, err := tsc.NewListTablesPager(nil).NextPage(c); return err })
	})
}

func TestServiceSASBlob(t *testing.T) {
	s := newService(t, auth.Blob, false)
	c := ctx(t)
	sign := func(v blobsas.BlobSignatureValues) string {
		t.Helper()
		v.ExpiryTime = time.Now().Add(time.Hour)
		qp, err := v.SignWithSharedKey(blobCred(t, azurite.AccountKey))
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}
	containerSAS := sign(blobsas.BlobSignatureValues{ContainerName: "cont1", Permissions: (&blobsas.ContainerPermissions{Read: true, List: true}).String()})
	blobSAS := sign(blobsas.BlobSignatureValues{
		ContainerName: "cont1", BlobName: "dir/b 1.txt", Permissions: (&blobsas.BlobPermissions{Read: true}).String(),
		CacheControl: "no-cache", ContentDisposition: "attachment; filename=b.txt", ContentEncoding: "identity", ContentLanguage: "en", ContentType: "text/plain",
	})
	blobIn := func(query, containerName, blobName string, alter func(*http.Request)) *blob.Client {
		bc := sasBlob(t, s, query, alter)
		return bc.ServiceClient().NewContainerClient(containerName).NewBlobClient(blobName)
	}
	readOp := func(cn, bn string) auth.Operation {
		return auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: cn, Blob: bn}
	}
	download := func(b *blob.Client) func() error {
		return func() error { _, err := b.DownloadStream(c, nil); return err }
	}
	t.Run("container SAS lists", func(t *testing.T) {
		bc := sasBlob(t, s, containerSAS, nil)
		s.expect(t, auth.Operation{Service: auth.Blob, ResourceType: 'c', Permission: 'l', Name: "cont1"}, "", func() error {
			_, err := bc.NewListBlobsFlatPager("cont1", nil).NextPage(c)
			return err
		})
	})
	t.Run("container SAS reads a blob", func(t *testing.T) {
		s.expect(t, readOp("cont1", "x"), "", download(blobIn(containerSAS, "cont1", "x", nil)))
	})
	t.Run("container SAS on another container", func(t *testing.T) {
		s.expect(t, readOp("cont2", "x"), "AuthenticationFailed", download(blobIn(containerSAS, "cont2", "x", nil)))
	})
	t.Run("container SAS without the permission", func(t *testing.T) {
		s.expect(t, auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'd', Name: "cont1", Blob: "x"}, "AuthorizationPermissionMismatch", func() error {
			_, err := blobIn(containerSAS, "cont1", "x", nil).Delete(c, nil)
			return err
		})
	})
	t.Run("blob SAS with response headers", func(t *testing.T) {
		out := s.expect(t, readOp("cont1", "dir/b 1.txt"), "", download(blobIn(blobSAS, "cont1", "dir/b 1.txt", nil)))
		for _, p := range []string{"rscc", "rscd", "rsce", "rscl", "rsct"} {
			if !strings.Contains(out.req.uri, p+"=") {
				t.Fatalf("request %s lacks %s", out.req.uri, p)
			}
		}
	})
	t.Run("blob SAS on another blob", func(t *testing.T) {
		s.expect(t, readOp("cont1", "other"), "AuthenticationFailed", download(blobIn(blobSAS, "cont1", "other", nil)))
	})
	t.Run("blob SAS with a tampered response header", func(t *testing.T) {
		tamper := func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "rsct=text%2Fplain", "rsct=text%2Fhtml", 1)
		}
		s.expect(t, readOp("cont1", "dir/b 1.txt"), "AuthenticationFailed", download(blobIn(blobSAS, "cont1", "dir/b 1.txt", tamper)))
	})
}

func TestServiceSASQueue(t *testing.T) {
	s := newService(t, auth.Queue, false)
	c := ctx(t)
	cred, err := azqueue.NewSharedKeyCredential(account, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := queuesas.QueueSignatureValues{
		QueueName: "queue1", ExpiryTime: time.Now().Add(time.Hour),
		Permissions: (&queuesas.QueuePermissions{Read: true, Process: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	queue := func(name string) *azqueue.QueueClient {
		q, err := azqueue.NewQueueClientWithNoCredential(s.base()+"/"+name+"?"+qp.Encode(), &azqueue.ClientOptions{ClientOptions: opts(nil)})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	op := func(name string, perm byte) auth.Operation {
		return auth.Operation{Service: auth.Queue, ResourceType: 'o', Permission: perm, Name: name}
	}
	s.expect(t, op("queue1", 'r'), "", func() error { _, err := queue("queue1").PeekMessage(c, nil); return err })
	s.expect(t, op("queue1", 'p'), "", func() error { _, err := queue("queue1").DequeueMessage(c, nil); return err })
	s.expect(t, op("queue1", 'a'), "AuthorizationPermissionMismatch", func() error { _, err := queue("queue1").EnqueueMessage(c, "m", nil); return err })
	s.expect(t, op("queue2", 'r'), "AuthenticationFailed", func() error { _, err := queue("queue2").PeekMessage(c, nil); return err })
}

// tablekitAccount is a tablekit Account of the test service, to sign
// table SAS tokens with Account.TableSAS.
func tablekitAccount(t *testing.T, s *service) *tablekit.Account {
	t.Helper()
	a, err := tablekit.NewAccountWithSharedKey(account, azurite.AccountKey, tablekit.Endpoints{Table: s.base()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func sasTable(t *testing.T, s *service, sasURL string) *aztables.Client {
	t.Helper()
	c, err := aztables.NewClientWithNoCredential(sasURL, &aztables.ClientOptions{ClientOptions: opts(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServiceSASTable(t *testing.T) {
	s := newService(t, auth.Table, false)
	c := ctx(t)
	_, tc := tableClients(t, s, azurite.AccountKey, nil)
	sdkURL, err := tc.GetTableSASURL(aztables.SASPermissions{Read: true, Add: true}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(sdkURL)
	if err != nil {
		t.Fatal(err)
	}
	// GetTableSASURL drops the '/' before the table on a path-style
	// endpoint (docs/SAS.md): keep its query, not its path.
	query := u.RawQuery
	ent := func(name string, perm byte) auth.Operation {
		return auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: perm, Name: name, PartitionKey: "p1", RowKey: "r1", HasKeys: true}
	}
	mine := sasTable(t, s, s.base()+"/mytable?"+query)
	s.expect(t, ent("mytable", 'a'), "", func() error { _, err := mine.AddEntity(c, entity, nil); return err })
	s.expect(t, ent("mytable", 'r'), "", func() error { _, err := mine.GetEntity(c, "p1", "r1", nil); return err })
	s.expect(t, ent("mytable", 'd'), "AuthorizationPermissionMismatch", func() error { _, err := mine.DeleteEntity(c, "p1", "r1", nil); return err })
	s.expect(t, auth.Operation{Service: auth.Table, ResourceType: 'c', Permission: 'd', Name: "mytable"}, "AuthorizationFailure", func() error {
		_, err := mine.Delete(c, nil)
		return err
	})
	other := sasTable(t, s, s.base()+"/othertable?"+query)
	s.expect(t, ent("othertable", 'r'), "AuthorizationFailure", func() error { _, err := other.GetEntity(c, "p1", "r1", nil); return err })
	tampered := sasTable(t, s, s.base()+"/mytable?"+strings.Replace(query, "sp=ra", "sp=raud", 1))
	s.expect(t, ent("mytable", 'd'), "AuthenticationFailed", func() error { _, err := tampered.DeleteEntity(c, "p1", "r1", nil); return err })
}

func TestStoredAccessPolicy(t *testing.T) {
	c := ctx(t)
	policies := map[string]auth.AccessPolicy{
		"readers": {Expiry: time.Now().Add(time.Hour), Permission: "r"},
		"expired": {Expiry: time.Now().Add(-time.Hour), Permission: "r"},
		"open":    {},
	}
	s := newService(t, auth.Table, false, func(a *auth.Authenticator) {
		a.SetPolicies(func(svc auth.Service, name, id string) (auth.AccessPolicy, bool) {
			p, ok := policies[id]
			return p, ok && svc == auth.Table && name == "mytable"
		})
	})
	a := tablekitAccount(t, s)
	get := auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'r', Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
	for _, tc := range []struct {
		id     string
		perms  tablekit.TableSASPermissions
		expiry time.Time
		code   string
	}{
		{id: "readers"},
		{id: "expired", code: "AuthenticationFailed"},
		{id: "unknown", code: "AuthenticationFailed"},
		{id: "open", perms: tablekit.TableSASPermissions{Read: true}, expiry: time.Now().Add(time.Hour)},
		{id: "open", code: "AuthenticationFailed"}, // neither the SAS nor the policy has an expiry
		{id: "readers", perms: tablekit.TableSASPermissions{Read: true}, code: "InvalidQueryParameterValue"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			tok, err := a.TableSAS("mytable", tc.perms, time.Time{}, tc.expiry, &tablekit.TableSASOptions{Identifier: tc.id})
			if err != nil {
				t.Fatal(err)
			}
			client := sasTable(t, s, tok.URL())
			s.expect(t, get, tc.code, func() error { _, err := client.GetEntity(c, "p1", "r1", nil); return err })
		})
	}
}

func TestTableSASKeyRange(t *testing.T) {
	s := newService(t, auth.Table, false)
	c := ctx(t)
	a := tablekitAccount(t, s)
	perms := tablekit.TableSASPermissions{Read: true, Add: true, Update: true, Delete: true}
	expiry := time.Now().Add(time.Hour)
	full, err := a.TableSAS("mytable", perms, time.Time{}, expiry, &tablekit.TableSASOptions{
		StartPartitionKey: "p2", StartRowKey: "r5", EndPartitionKey: "p4", EndRowKey: "r5",
	})
	if err != nil {
		t.Fatal(err)
	}
	utf16, err := a.TableSAS("mytable", perms, time.Time{}, expiry, &tablekit.TableSASOptions{
		StartPartitionKey: "a", EndPartitionKey: "\ue000",
	})
	if err != nil {
		t.Fatal(err)
	}
	client := sasTable(t, s, full.URL())
	get := func(pk, rk string) auth.Operation {
		return auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'r', Name: "mytable", PartitionKey: pk, RowKey: rk, HasKeys: true}
	}
	for _, tc := range []struct {
		pk, rk string
		in     bool
	}{
		{"p1", "r9", false},
		{"p2", "r4", false},
		{"p2", "r5", true}, // start boundary
		{"p2", "zzz", true},
		{"p3", "", true},
		{"p3", "anything", true},
		{"p4", "r5", true}, // end boundary
		{"p4", "r50", false},
		{"p4", "r6", false},
		{"p5", "a", false},
	} {
		code := ""
		if !tc.in {
			code = "AuthorizationFailure"
		}
		t.Run(tc.pk+"/"+tc.rk, func(t *testing.T) {
			s.expect(t, get(tc.pk, tc.rk), code, func() error { _, err := client.GetEntity(c, tc.pk, tc.rk, nil); return err })
		})
	}
	t.Run("query gets the range", func(t *testing.T) {
		out := s.expect(t, auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'r', Name: "mytable"}, "", func() error {
			_, err := client.NewListEntitiesPager(nil).NextPage(c)
			return err
		})
		want := auth.KeyRange{StartPK: "p2", StartRK: "r5", EndPK: "p4", EndRK: "r5", HasStart: true, HasEnd: true}
		if out.grant == nil || !out.grant.SAS || out.grant.KeyRange == nil || *out.grant.KeyRange != want {
			t.Fatalf("grant %+v, want SAS with range %+v", out.grant, want)
		}
	})
	t.Run("keys compare as UTF-16", func(t *testing.T) {
		// U+1F600 is below U+E000 in UTF-16 (a surrogate pair, 0xD83D...)
		// and above it in UTF-8: inside the range [a, U+E000].
		u := sasTable(t, s, utf16.URL())
		s.expect(t, get("\U0001F600", "r"), "", func() error { _, err := u.GetEntity(c, "\U0001F600", "r", nil); return err })
		s.expect(t, get("\ue001", "r"), "AuthorizationFailure", func() error { _, err := u.GetEntity(c, "\ue001", "r", nil); return err })
	})
}

func TestKeyRangeContains(t *testing.T) {
	r := auth.KeyRange{StartPK: "b", EndPK: "d", HasStart: true, HasEnd: true}
	for _, tc := range []struct {
		pk, rk string
		in     bool
	}{{"a", "z", false}, {"b", "", true}, {"c", "x", true}, {"d", "zzz", true}, {"d\x00", "", false}, {"e", "", false}} {
		if got := r.Contains(tc.pk, tc.rk); got != tc.in {
			t.Errorf("[b, d].Contains(%q, %q) = %v, want %v", tc.pk, tc.rk, got, tc.in)
		}
	}
	open := auth.KeyRange{StartPK: "m", StartRK: "5", HasStart: true}
	if open.Contains("m", "4") || !open.Contains("m", "5") || !open.Contains("zz", "0") {
		t.Error("a range without end: start row key applies within the start partition only")
	}
}

func TestSetClock(t *testing.T) {
	// The service's clock, not the client's, decides a SAS's window.
	later := time.Now().Add(2 * time.Hour)
	s := newService(t, auth.Blob, false, func(a *auth.Authenticator) {
		a.SetClock(func() time.Time { return later })
	})
	c := ctx(t)
	read := auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: "cont1", Blob: "b1"}
	valid := sasBlob(t, s, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{ExpiryTime: time.Now().Add(3 * time.Hour)}), nil)
	s.expect(t, read, "", func() error { _, err := valid.DownloadStream(c, "cont1", "b1", nil); return err })
	expired := sasBlob(t, s, blobAccountSAS(t, azurite.AccountKey, blobsas.AccountSignatureValues{ExpiryTime: time.Now().Add(time.Hour)}), nil)
	s.expect(t, read, "AuthenticationFailed", func() error { _, err := expired.DownloadStream(c, "cont1", "b1", nil); return err })
	// Shared Key requests dated by the client's clock are two hours off.
	bc := blobClient(t, s, azurite.AccountKey, nil)
	s.expect(t, read, "AuthenticationFailed", func() error { _, err := bc.DownloadStream(c, "cont1", "b1", nil); return err })
}

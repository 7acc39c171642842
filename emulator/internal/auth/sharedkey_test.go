package auth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
)

// tableClients are aztables' clients (Shared Key Lite) of the test
// service, signed with key, the transport altering requests after
// signing when alter is set.
func tableClients(t testing.TB, s *service, key string, alter func(*http.Request)) (*aztables.ServiceClient, *aztables.Client) {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := aztables.NewServiceClientWithSharedKey(s.base(), cred, &aztables.ClientOptions{ClientOptions: opts(alter)})
	if err != nil {
		t.Fatal(err)
	}
	return sc, sc.NewClient("mytable")
}

var entity = []byte(`{"PartitionKey":"p1","RowKey":"r1","Value":1}`)

func TestSharedKeyLiteTable(t *testing.T) {
	s := newService(t, auth.Table, false)
	sc, tc := tableClients(t, s, azurite.AccountKey, nil)
	c := ctx(t)
	tableOp := auth.Operation{Service: auth.Table, ResourceType: 'c', Permission: 'a', Name: "mytable"}
	entOp := auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'r', Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
	calls := []struct {
		name, method string
		do           func() error
	}{
		{"create table", http.MethodPost, func() error { _, err := sc.CreateTable(c, "mytable", nil); return err }},
		{"insert", http.MethodPost, func() error { _, err := tc.AddEntity(c, entity, nil); return err }},
		{"get", http.MethodGet, func() error { _, err := tc.GetEntity(c, "p1", "r1", nil); return err }},
		{"merge", http.MethodPatch, func() error {
			_, err := tc.UpdateEntity(c, entity, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: to.Ptr(azcore.ETagAny)})
			return err
		}},
		{"upsert", http.MethodPut, func() error {
			_, err := tc.UpsertEntity(c, entity, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			return err
		}},
		{"delete", http.MethodDelete, func() error { _, err := tc.DeleteEntity(c, "p1", "r1", nil); return err }},
		{"query", http.MethodGet, func() error {
			_, err := tc.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p1'"), Top: to.Ptr(int32(5))}).NextPage(c)
			return err
		}},
		{"service properties (comp)", http.MethodGet, func() error { _, err := sc.GetProperties(c, nil); return err }},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			op := entOp
			if strings.HasPrefix(call.name, "create") {
				op = tableOp
			}
			out := s.expect(t, op, "", call.do)
			if out.req.method != call.method || !strings.HasPrefix(out.req.header.Get("Authorization"), "SharedKeyLite ") {
				t.Fatalf("request %s %q, want %s signed with SharedKeyLite", out.req.method, out.req.header.Get("Authorization"), call.method)
			}
			if out.grant == nil || out.grant.SAS || out.grant.KeyRange != nil {
				t.Fatalf("grant %+v, want Shared Key's", out.grant)
			}
		})
	}

	t.Run("wrong key", func(t *testing.T) {
		_, bad := tableClients(t, s, otherKey, nil)
		s.expect(t, entOp, "AuthenticationFailed", func() error { _, err := bad.GetEntity(c, "p1", "r1", nil); return err })
	})
	t.Run("tampered path", func(t *testing.T) {
		_, tampered := tableClients(t, s, azurite.AccountKey, func(r *http.Request) {
			r.URL.Path = strings.Replace(r.URL.Path, "mytable", "yourtable", 1)
		})
		s.expect(t, entOp, "AuthenticationFailed", func() error { _, err := tampered.GetEntity(c, "p1", "r1", nil); return err })
	})
	t.Run("tampered comp", func(t *testing.T) {
		tampered, _ := tableClients(t, s, azurite.AccountKey, func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "comp=properties", "comp=stats", 1)
		})
		s.expect(t, tableOp, "AuthenticationFailed", func() error { _, err := tampered.GetProperties(c, nil); return err })
	})
	t.Run("other query parameters are not signed", func(t *testing.T) {
		// The Table service signs only ?comp=; Azure accepts a changed
		// $filter under the same signature, and so does the emulator.
		_, changed := tableClients(t, s, azurite.AccountKey, func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "p1", "p2", 1)
		})
		s.expect(t, entOp, "", func() error {
			_, err := changed.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p1'")}).NextPage(c)
			return err
		})
	})
}

// tableSharedKey signs r with the Table service's Shared Key: VERB,
// Content-MD5, Content-Type, date, /account/path?comp=.
func tableSharedKey(t testing.TB, r *http.Request, key []byte) {
	tableSharedKeyPath(t, r, key, r.URL.EscapedPath())
}

// tableSharedKeyPath signs r as tableSharedKey does, with path in the
// canonicalized resource.
func tableSharedKeyPath(t testing.TB, r *http.Request, key []byte, path string) {
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("x-ms-version", "2019-02-02")
	res := "/" + account + path
	if c := r.URL.Query().Get("comp"); c != "" {
		res += "?comp=" + c
	}
	sts := r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + date + "\n" + res
	r.Header.Set("Authorization", "SharedKey "+account+":"+sign(t, key, sts))
}

// liteRequest signs r with the Blob and Queue services' Shared Key Lite:
// VERB, Content-MD5, Content-Type, Date, x-ms- headers, /account/path?comp=.
func liteRequest(t testing.TB, r *http.Request, key []byte) {
	date := time.Now().UTC().Format(http.TimeFormat)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("x-ms-version", "2020-02-10")
	res := "/" + account + r.URL.EscapedPath()
	if c := r.URL.Query().Get("comp"); c != "" {
		res += "?comp=" + c
	}
	sts := r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n\n" +
		"x-ms-date:" + date + "\nx-ms-version:2020-02-10\n" + res
	r.Header.Set("Authorization", "SharedKeyLite "+account+":"+sign(t, key, sts))
}

// send sends r to s for op and returns the decision.
func (s *service) send(t testing.TB, op auth.Operation, r *http.Request) outcome {
	t.Helper()
	out, err := s.call(t, op, func() error {
		resp, err := http.DefaultClient.Do(r)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSharedKeyTableHandSigned(t *testing.T) {
	s := newService(t, auth.Table, false)
	op := auth.Operation{Service: auth.Table, ResourceType: 'o', Permission: 'u', Name: "mytable", PartitionKey: "p1", RowKey: "r1", HasKeys: true}
	for _, method := range []string{"MERGE", http.MethodPut, http.MethodDelete, http.MethodGet} {
		r, _ := http.NewRequest(method, s.base()+"/mytable(PartitionKey='p1',RowKey='r1')", strings.NewReader(string(entity)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("If-Match", "*")
		tableSharedKey(t, r, devKey(t))
		if out := s.send(t, op, r); out.err != nil {
			t.Errorf("%s: refused with %s", method, out.err.Code)
		}
		r, _ = http.NewRequest(method, s.base()+"/mytable(PartitionKey='p1',RowKey='r1')", strings.NewReader(string(entity)))
		r.Header.Set("Content-Type", "application/json")
		tableSharedKey(t, r, devKey(t))
		r.Header.Set("Content-Type", "application/xml") // signed as JSON
		if out := s.send(t, op, r); out.err == nil || out.err.Code != "AuthenticationFailed" {
			t.Errorf("%s with a changed Content-Type: %+v, want AuthenticationFailed", method, out.err)
		}
	}
}

func TestSharedKeyLiteBlobQueueHandSigned(t *testing.T) {
	for _, svc := range []auth.Service{auth.Blob, auth.Queue} {
		s := newService(t, svc, false)
		op := auth.Operation{Service: svc, ResourceType: 'c', Permission: 'r', Name: "queue1"}
		r, _ := http.NewRequest(http.MethodGet, s.base()+"/queue1?comp=metadata&restype=container", nil)
		liteRequest(t, r, devKey(t))
		if out := s.send(t, op, r); out.err != nil {
			t.Errorf("service %d: refused with %s", svc, out.err.Code)
		}
		r, _ = http.NewRequest(http.MethodGet, s.base()+"/queue1?comp=metadata", nil)
		liteRequest(t, r, devKey(t))
		r.Header.Set("x-ms-version", "2019-02-02") // signed with another version
		if out := s.send(t, op, r); out.err == nil || out.err.Code != "AuthenticationFailed" {
			t.Errorf("service %d: changed x-ms- header: %+v, want AuthenticationFailed", svc, out.err)
		}
	}
}

func blobClient(t testing.TB, s *service, key string, alter func(*http.Request), perCall ...policy.Policy) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	o := opts(alter)
	o.PerCallPolicies = perCall
	c, err := azblob.NewClientWithSharedKeyCredential(s.base(), cred, &azblob.ClientOptions{ClientOptions: o})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSharedKeyBlob(t *testing.T) {
	s := newService(t, auth.Blob, false)
	bc := blobClient(t, s, azurite.AccountKey, nil)
	c := ctx(t)
	blobOp := auth.Operation{Service: auth.Blob, ResourceType: 'o', Permission: 'r', Name: "cont1", Blob: "dir/b 1.txt"}
	b := bc.ServiceClient().NewContainerClient("cont1").NewBlobClient("dir/b 1.txt")
	etag := azcore.ETag(`"0x8D0"`)
	calls := []struct {
		name, method string
		do           func() error
	}{
		{"create container with metadata", http.MethodPut, func() error {
			_, err := bc.CreateContainer(c, "cont1", &azblob.CreateContainerOptions{Metadata: map[string]*string{"Owner": to.Ptr("tablekit"), "a_b": to.Ptr("1")}})
			return err
		}},
		{"upload", http.MethodPut, func() error {
			_, err := bc.UploadBuffer(c, "cont1", "dir/b 1.txt", []byte("hello, world"), &azblob.UploadBufferOptions{
				HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("text/plain"), BlobContentLanguage: to.Ptr("en")},
				Metadata:    map[string]*string{"Kind": to.Ptr("greeting")},
			})
			return err
		}},
		{"properties", http.MethodHead, func() error { _, err := b.GetProperties(c, nil); return err }},
		{"range download", http.MethodGet, func() error {
			_, err := b.DownloadStream(c, &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: 2, Count: 5}})
			return err
		}},
		{"list with query parameters", http.MethodGet, func() error {
			_, err := bc.NewListBlobsFlatPager("cont1", &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("dir/"), MaxResults: to.Ptr(int32(3)), Include: azblob.ListBlobsInclude{Metadata: true, Snapshots: true}}).NextPage(c)
			return err
		}},
		{"conditional delete", http.MethodDelete, func() error {
			_, err := b.Delete(c, &blob.DeleteOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag, IfUnmodifiedSince: to.Ptr(time.Now())}}})
			return err
		}},
		{"list containers", http.MethodGet, func() error {
			_, err := bc.NewListContainersPager(&azblob.ListContainersOptions{Prefix: to.Ptr("c")}).NextPage(c)
			return err
		}},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			out := s.expect(t, blobOp, "", call.do)
			if out.req.method != call.method || !strings.HasPrefix(out.req.header.Get("Authorization"), "SharedKey ") {
				t.Fatalf("request %s %q, want %s signed with SharedKey", out.req.method, out.req.header.Get("Authorization"), call.method)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		bad := blobClient(t, s, otherKey, nil)
		s.expect(t, blobOp, "AuthenticationFailed", func() error {
			_, err := bad.ServiceClient().NewContainerClient("cont1").NewBlobClient("b").GetProperties(c, nil)
			return err
		})
	})
	t.Run("tampered query parameter", func(t *testing.T) {
		tampered := blobClient(t, s, azurite.AccountKey, func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "prefix=dir", "prefix=etc", 1)
		})
		s.expect(t, blobOp, "AuthenticationFailed", func() error {
			_, err := tampered.NewListBlobsFlatPager("cont1", &azblob.ListBlobsFlatOptions{Prefix: to.Ptr("dir/")}).NextPage(c)
			return err
		})
	})
	t.Run("added x-ms- header", func(t *testing.T) {
		tampered := blobClient(t, s, azurite.AccountKey, func(r *http.Request) { r.Header.Set("x-ms-meta-extra", "1") })
		s.expect(t, blobOp, "AuthenticationFailed", func() error {
			_, err := tampered.CreateContainer(c, "cont2", nil)
			return err
		})
	})
	t.Run("date", func(t *testing.T) {
		// Azure refuses a Shared Key request dated more than 15 minutes
		// from its clock.
		for _, tc := range []struct {
			d    time.Duration
			code string
		}{{-10 * time.Minute, ""}, {10 * time.Minute, ""}, {-20 * time.Minute, "AuthenticationFailed"}, {20 * time.Minute, "AuthenticationFailed"}} {
			dated := blobClient(t, s, azurite.AccountKey, nil, datePolicy{tc.d})
			s.expect(t, blobOp, tc.code, func() error {
				_, err := dated.ServiceClient().NewContainerClient("cont1").GetProperties(c, nil)
				return err
			})
		}
	})
}

func queueClient(t testing.TB, s *service, key string, alter func(*http.Request)) *azqueue.QueueClient {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential(account, key)
	if err != nil {
		t.Fatal(err)
	}
	q, err := azqueue.NewQueueClientWithSharedKeyCredential(s.base()+"/queue1", cred, &azqueue.ClientOptions{ClientOptions: opts(alter)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestSharedKeyQueue(t *testing.T) {
	s := newService(t, auth.Queue, false)
	q := queueClient(t, s, azurite.AccountKey, nil)
	c := ctx(t)
	op := auth.Operation{Service: auth.Queue, ResourceType: 'o', Permission: 'p', Name: "queue1"}
	calls := []struct {
		name, method string
		do           func() error
	}{
		{"create", http.MethodPut, func() error {
			_, err := q.Create(c, &azqueue.CreateOptions{Metadata: map[string]*string{"Purpose": to.Ptr("test")}})
			return err
		}},
		{"enqueue", http.MethodPost, func() error {
			_, err := q.EnqueueMessage(c, "hello", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(1)), TimeToLive: to.Ptr(int32(60))})
			return err
		}},
		{"dequeue", http.MethodGet, func() error {
			_, err := q.DequeueMessages(c, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(3)), VisibilityTimeout: to.Ptr(int32(30))})
			return err
		}},
		{"peek", http.MethodGet, func() error { _, err := q.PeekMessage(c, nil); return err }},
		{"delete message", http.MethodDelete, func() error { _, err := q.DeleteMessage(c, "id-1", "AgAAAA+/=", nil); return err }},
		{"properties", http.MethodGet, func() error { _, err := q.GetProperties(c, nil); return err }},
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			out := s.expect(t, op, "", call.do)
			if out.req.method != call.method {
				t.Fatalf("request %s, want %s", out.req.method, call.method)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		bad := queueClient(t, s, otherKey, nil)
		s.expect(t, op, "AuthenticationFailed", func() error { _, err := bad.PeekMessage(c, nil); return err })
	})
	t.Run("tampered pop receipt", func(t *testing.T) {
		tampered := queueClient(t, s, azurite.AccountKey, func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "popreceipt=", "popreceipt=X", 1)
		})
		s.expect(t, op, "AuthenticationFailed", func() error { _, err := tampered.DeleteMessage(c, "id-1", "AgAAAA", nil); return err })
	})
}

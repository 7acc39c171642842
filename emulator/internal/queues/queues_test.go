package queues_test

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/queues"
	"github.com/tablekit/tablekit/integration/azurite"
)

// clock is a test's clock: the service reads it, the test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// server starts the Queue service on loopback; a nil clock means the real
// one. It returns the service's base URL.
func server(t *testing.T, c *clock) string {
	t.Helper()
	cfg := queues.Config{
		Account: azurite.AccountName,
		Auth:    auth.New(auth.Account{Name: azurite.AccountName, Keys: [][]byte{devKey(t)}}),
	}
	if c != nil {
		cfg.Now = c.Now
	}
	srv := httptest.NewServer(queues.New(cfg))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + azurite.AccountName
}

func devKey(t *testing.T) []byte {
	k, err := base64.StdEncoding.DecodeString(azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// client is azqueue's service client for url with the development key,
// retries off (a test that provokes a 5xx wants to see it).
func client(t *testing.T, url string) *azqueue.ServiceClient {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azqueue.NewServiceClientWithSharedKeyCredential(url, cred, &azqueue.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newClock is a clock at a whole second near now.
func newClock() *clock { return &clock{t: time.Now().UTC().Truncate(time.Second)} }

// wantCode fails t unless err is the service's answer status/code.
func wantCode(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%s: got %v, want %d %s", what, err, status, code)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("%s: got %d %s, want %d %s", what, re.StatusCode, re.ErrorCode, status, code)
	}
}

var (
	guidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	ctx      = context.Background()
)

func TestQueueLifecycle(t *testing.T) {
	sc := client(t, server(t, nil))
	qc := sc.NewQueueClient("life")
	if _, err := qc.Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("ops")}}); err != nil {
		t.Fatal(err)
	}
	// Same metadata: 204, which the client takes as success.
	if _, err := qc.Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("ops")}}); err != nil {
		t.Fatalf("create again with the same metadata: %v", err)
	}
	_, err := qc.Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("dev")}})
	wantCode(t, "create with other metadata", err, 409, "QueueAlreadyExists")
	_, err = qc.Create(ctx, nil)
	wantCode(t, "create without metadata", err, 409, "QueueAlreadyExists")

	if _, err := qc.EnqueueMessage(ctx, "one", nil); err != nil {
		t.Fatal(err)
	}
	props, err := qc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := *props.ApproximateMessagesCount; got != 1 {
		t.Fatalf("approximate count %d, want 1", got)
	}
	if v := props.Metadata["Owner"]; v == nil || *v != "ops" {
		t.Fatalf("metadata %v, want owner=ops", props.Metadata)
	}
	if _, err := qc.SetMetadata(ctx, &azqueue.SetMetadataOptions{Metadata: map[string]*string{"stage": to.Ptr("2")}}); err != nil {
		t.Fatal(err)
	}
	props, err = qc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props.Metadata) != 1 || props.Metadata["Stage"] == nil || *props.Metadata["Stage"] != "2" {
		t.Fatalf("metadata after set %v, want only stage=2", props.Metadata)
	}
	// Metadata names are C# identifiers.
	_, err = qc.SetMetadata(ctx, &azqueue.SetMetadataOptions{Metadata: map[string]*string{"1st": to.Ptr("x")}})
	wantCode(t, "metadata name starting with a digit", err, 400, "InvalidMetadata")
	_, err = sc.NewQueueClient("life2").Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"a-b": to.Ptr("x")}})
	wantCode(t, "create with a hyphen in a metadata name", err, 400, "InvalidMetadata")
	if _, err := qc.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = qc.Delete(ctx, nil)
	wantCode(t, "delete a deleted queue", err, 404, "QueueNotFound")
	_, err = qc.GetProperties(ctx, nil)
	wantCode(t, "properties of a deleted queue", err, 404, "QueueNotFound")
	_, err = qc.EnqueueMessage(ctx, "x", nil)
	wantCode(t, "put into a deleted queue", err, 404, "QueueNotFound")
	// A queue created again starts empty.
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	props, err = qc.GetProperties(ctx, nil)
	if err != nil || *props.ApproximateMessagesCount != 0 {
		t.Fatalf("recreated queue: %v, %v", props.ApproximateMessagesCount, err)
	}
}

func TestQueueNames(t *testing.T) {
	sc := client(t, server(t, nil))
	for _, tc := range []struct {
		name, code string
	}{
		{"ab", "OutOfRangeInput"},
		{strings.Repeat("a", 64), "OutOfRangeInput"},
		{"Abc", "InvalidResourceName"},
		{"a--b", "InvalidResourceName"},
		{"-ab", "InvalidResourceName"},
		{"ab-", "InvalidResourceName"},
		{"a_b", "InvalidResourceName"},
		{"abc", ""},
		{strings.Repeat("a", 63), ""},
		{"a-1-b", ""},
		{"123", ""},
	} {
		_, err := sc.NewQueueClient(tc.name).Create(ctx, nil)
		if tc.code == "" {
			if err != nil {
				t.Errorf("create %q: %v", tc.name, err)
			}
			continue
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 400 || re.ErrorCode != tc.code {
			t.Errorf("create %q: %v, want 400 %s", tc.name, err, tc.code)
		}
	}
}

func TestListQueues(t *testing.T) {
	sc := client(t, server(t, nil))
	names := []string{"list-a", "list-b", "list-c", "list-d", "list-e", "list-f", "list-g"}
	for i := len(names) - 1; i >= 0; i-- {
		md := map[string]*string{"n": to.Ptr(names[i])}
		if _, err := sc.CreateQueue(ctx, names[i], &azqueue.CreateOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sc.CreateQueue(ctx, "other", nil); err != nil {
		t.Fatal(err)
	}
	pager := sc.NewListQueuesPager(&azqueue.ListQueuesOptions{Prefix: to.Ptr("list-"), MaxResults: to.Ptr(int32(3)), Include: azqueue.ListQueuesInclude{Metadata: true}})
	var got []string
	var markers []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Queues) > 3 {
			t.Fatalf("page of %d queues, asked for 3", len(page.Queues))
		}
		for _, q := range page.Queues {
			got = append(got, *q.Name)
			if v := q.Metadata["n"]; v == nil || *v != *q.Name {
				t.Fatalf("queue %s listed with metadata %v", *q.Name, q.Metadata)
			}
		}
		if page.NextMarker != nil && *page.NextMarker != "" {
			markers = append(markers, *page.NextMarker)
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("listed %v, want %v", got, names)
	}
	if want := "/devstoreaccount1/list-d,/devstoreaccount1/list-g"; strings.Join(markers, ",") != want {
		t.Fatalf("next markers %v, want %s (Azure's /account/queue form)", markers, want)
	}
	// Without include=metadata, no metadata.
	page, err := sc.NewListQueuesPager(nil).NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Queues) != 8 || page.Queues[0].Metadata != nil {
		t.Fatalf("default listing: %d queues, first metadata %v", len(page.Queues), page.Queues[0].Metadata)
	}
}

func TestMessages(t *testing.T) {
	c := newClock()
	sc := client(t, server(t, c))
	qc := sc.NewQueueClient("msgs")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	start := c.Now()
	put, err := qc.EnqueueMessage(ctx, "hello <world> & you", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))})
	if err != nil {
		t.Fatal(err)
	}
	pm := put.Messages[0]
	if !guidForm.MatchString(*pm.MessageID) {
		t.Fatalf("message id %q is not a GUID", *pm.MessageID)
	}
	if !receiptForm(*pm.PopReceipt, 20) {
		t.Fatalf("pop receipt %q is not of Azure's form", *pm.PopReceipt)
	}
	if !put.Date.Equal(start) {
		t.Fatalf("Date %v, want the service's clock %v", put.Date, start)
	}
	if !pm.InsertionTime.Equal(start) || !pm.TimeNextVisible.Equal(start) {
		t.Fatalf("insertion %v, next visible %v, want both %v", pm.InsertionTime, pm.TimeNextVisible, start)
	}
	if want := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC); !pm.ExpirationTime.Equal(want) {
		t.Fatalf("messagettl -1: expiration %v, want %v", pm.ExpirationTime, want)
	}

	peek, err := qc.PeekMessage(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(peek.Messages) != 1 || *peek.Messages[0].MessageText != "hello <world> & you" || *peek.Messages[0].DequeueCount != 0 {
		t.Fatalf("peek: %+v", peek.Messages)
	}

	c.Add(2 * time.Second)
	got, err := qc.DequeueMessage(ctx, &azqueue.DequeueMessageOptions{VisibilityTimeout: to.Ptr(int32(10))})
	if err != nil {
		t.Fatal(err)
	}
	dm := got.Messages[0]
	if *dm.MessageID != *pm.MessageID || *dm.DequeueCount != 1 || *dm.PopReceipt == *pm.PopReceipt {
		t.Fatalf("dequeued %s count %d receipt %s", *dm.MessageID, *dm.DequeueCount, *dm.PopReceipt)
	}
	if want := start.Add(12 * time.Second); !dm.TimeNextVisible.Equal(want) {
		t.Fatalf("next visible %v, want %v", dm.TimeNextVisible, want)
	}
	// Invisible: neither peek nor get sees it.
	if got, err := qc.DequeueMessage(ctx, nil); err != nil || len(got.Messages) != 0 {
		t.Fatalf("dequeue while invisible: %d messages, %v", len(got.Messages), err)
	}
	_, err = qc.DeleteMessage(ctx, *pm.MessageID, *pm.PopReceipt, nil)
	// A stale receipt: Azure answers 404 MessageNotFound (see find).
	wantCode(t, "delete with the put's receipt after a get", err, 404, "MessageNotFound")

	// Back after its timeout, counted again, under a new receipt.
	c.Add(10 * time.Second)
	again, err := qc.DequeueMessage(ctx, nil)
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("dequeue after the timeout: %v, %v", again.Messages, err)
	}
	am := again.Messages[0]
	if *am.DequeueCount != 2 || *am.PopReceipt == *dm.PopReceipt {
		t.Fatalf("second get: count %d, receipt %s (first %s)", *am.DequeueCount, *am.PopReceipt, *dm.PopReceipt)
	}
	_, err = qc.UpdateMessage(ctx, *am.MessageID, *dm.PopReceipt, "x", nil)
	wantCode(t, "update with a stale receipt", err, 404, "MessageNotFound")

	up, err := qc.UpdateMessage(ctx, *am.MessageID, *am.PopReceipt, "changed", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(5))})
	if err != nil {
		t.Fatal(err)
	}
	if !receiptForm(*up.PopReceipt, 24) || *up.PopReceipt == *am.PopReceipt {
		t.Fatalf("update's receipt %q", *up.PopReceipt)
	}
	if want := c.Now().Add(5 * time.Second); !up.TimeNextVisible.Equal(want) {
		t.Fatalf("update's next visible %v, want %v", up.TimeNextVisible, want)
	}
	c.Add(5 * time.Second)
	peek, err = qc.PeekMessage(ctx, nil)
	if err != nil || len(peek.Messages) != 1 || *peek.Messages[0].MessageText != "changed" || *peek.Messages[0].DequeueCount != 2 {
		t.Fatalf("peek after update: %+v, %v", peek.Messages, err)
	}
	_, err = qc.DeleteMessage(ctx, *am.MessageID, *am.PopReceipt, nil)
	wantCode(t, "delete with the receipt the update replaced", err, 404, "MessageNotFound")
	if _, err := qc.DeleteMessage(ctx, *am.MessageID, *up.PopReceipt, nil); err != nil {
		t.Fatal(err)
	}
	_, err = qc.DeleteMessage(ctx, *am.MessageID, *up.PopReceipt, nil)
	wantCode(t, "delete a deleted message", err, 404, "MessageNotFound")
	_, err = qc.UpdateMessage(ctx, *am.MessageID, *up.PopReceipt, "x", nil)
	wantCode(t, "update a deleted message", err, 404, "MessageNotFound")
	_, err = qc.DeleteMessage(ctx, *am.MessageID, "invalid", nil)
	wantCode(t, "delete with a receipt of the wrong form", err, 400, "InvalidQueryParameterValue")
}

// receiptForm reports whether p is a pop receipt of Azure's form, n bytes
// once decoded.
func receiptForm(p string, n int) bool {
	b, err := base64.StdEncoding.DecodeString(p)
	return err == nil && len(b) == n && (b[0] == 2 || b[0] == 3) && b[4] == 3
}

func TestUpdateWithoutContentKeepsText(t *testing.T) {
	url := server(t, nil)
	sc := client(t, url)
	qc := sc.NewQueueClient("keep")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	put, err := qc.EnqueueMessage(ctx, "original", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := put.Messages[0]
	// azqueue always sends a text; an update without a body is REST's
	// "update the visibility only".
	req, _ := http.NewRequest(http.MethodPut, url+"/keep/messages/"+*m.MessageID+"?visibilitytimeout=0&popreceipt="+urlEscape(*m.PopReceipt)+"&"+sasQuery(t), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("x-ms-popreceipt") == "" || resp.Header.Get("x-ms-time-next-visible") == "" {
		t.Fatalf("update without body: %d %v", resp.StatusCode, resp.Header)
	}
	peek, err := qc.PeekMessage(ctx, nil)
	if err != nil || *peek.Messages[0].MessageText != "original" {
		t.Fatalf("text after an update without content: %v %v", peek.Messages, err)
	}
}

// sasQuery is an account SAS over http and https allowing every queue
// operation, for requests the test sends itself (azqueue signs its own).
func sasQuery(t *testing.T) string {
	t.Helper()
	cred, err := azqueue.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	perms := sas.AccountPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true, Process: true}
	types := sas.AccountResourceTypes{Service: true, Container: true, Object: true}
	qp, err := sas.AccountSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour).UTC(),
		Permissions: perms.String(), ResourceTypes: types.String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

func urlEscape(s string) string {
	return strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(s)
}

func TestExpiry(t *testing.T) {
	c := newClock()
	sc := client(t, server(t, c))
	qc := sc.NewQueueClient("expiry")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	short, err := qc.EnqueueMessage(ctx, "short", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(10))})
	if err != nil {
		t.Fatal(err)
	}
	if want := c.Now().Add(10 * time.Second); !short.Messages[0].ExpirationTime.Equal(want) {
		t.Fatalf("expiration %v, want %v", short.Messages[0].ExpirationTime, want)
	}
	// Azure lets an update's timeout run past the message's expiry.
	if _, err := qc.UpdateMessage(ctx, *short.Messages[0].MessageID, *short.Messages[0].PopReceipt, "short", &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(20))}); err != nil {
		t.Fatalf("update past expiry: %v", err)
	}
	if _, err := qc.EnqueueMessage(ctx, "default", nil); err != nil {
		t.Fatal(err)
	}
	c.Add(9 * time.Second)
	if p, _ := qc.GetProperties(ctx, nil); *p.ApproximateMessagesCount != 2 {
		t.Fatalf("before expiry: %d messages, want 2", *p.ApproximateMessagesCount)
	}
	c.Add(time.Second)
	p, err := qc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
	if err != nil || len(p.Messages) != 1 || *p.Messages[0].MessageText != "default" {
		t.Fatalf("at expiry: %v, %v", p.Messages, err)
	}
	props, err := qc.GetProperties(ctx, nil)
	if err != nil || *props.ApproximateMessagesCount != 1 {
		t.Fatalf("count after expiry: %v, %v", props.ApproximateMessagesCount, err)
	}
	_, err = qc.DeleteMessage(ctx, *short.Messages[0].MessageID, *short.Messages[0].PopReceipt, nil)
	wantCode(t, "delete an expired message", err, 404, "MessageNotFound")
	// The default time to live is 7 days.
	c.Add(7*24*time.Hour - 10*time.Second)
	if p, _ := qc.PeekMessage(ctx, nil); len(p.Messages) != 0 {
		t.Fatalf("after 7 days: %d messages", len(p.Messages))
	}
}

func TestMessageLimits(t *testing.T) {
	sc := client(t, server(t, nil))
	qc := sc.NewQueueClient("limits")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := qc.EnqueueMessage(ctx, strings.Repeat("a", 64<<10), nil); err != nil {
		t.Fatalf("a 64 KiB message: %v", err)
	}
	_, err := qc.EnqueueMessage(ctx, strings.Repeat("a", 64<<10+1), nil)
	wantCode(t, "a message of 64 KiB + 1", err, 413, "RequestBodyTooLarge")
	// Azure names the limit (<MaxLimit>): the text's, or the body's when
	// the whole document is over 131,584 bytes.
	if !strings.Contains(err.Error(), "<MaxLimit>65536</MaxLimit>") {
		t.Errorf("a message of 64 KiB + 1: no <MaxLimit>65536: %v", err)
	}
	_, err = qc.EnqueueMessage(ctx, strings.Repeat("a", 132<<10), nil)
	wantCode(t, "a message of 132 KiB", err, 413, "RequestBodyTooLarge")
	if err != nil && !strings.Contains(err.Error(), "<MaxLimit>131584</MaxLimit>") {
		t.Errorf("a message of 132 KiB: no <MaxLimit>131584: %v", err)
	}
	// UTF-8 bytes count, not characters.
	_, err = qc.EnqueueMessage(ctx, strings.Repeat("é", 32<<10+1), nil)
	wantCode(t, "64 KiB + 2 bytes of 2-byte characters", err, 413, "RequestBodyTooLarge")
	_, err = qc.EnqueueMessage(ctx, "x", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(30)), TimeToLive: to.Ptr(int32(10))})
	wantCode(t, "visibility timeout past the time to live", err, 400, "InvalidQueryParameterValue")
	_, err = qc.EnqueueMessage(ctx, "x", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(0))})
	wantCode(t, "messagettl 0", err, 400, "InvalidQueryParameterValue")
	_, err = qc.EnqueueMessage(ctx, "x", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(7*24*3600 + 1))})
	wantCode(t, "visibility timeout over 7 days", err, 400, "OutOfRangeQueryParameterValue")
	_, err = qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(33))})
	wantCode(t, "get 33 messages", err, 400, "OutOfRangeQueryParameterValue")
	_, err = qc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(33))})
	wantCode(t, "peek 33 messages", err, 400, "OutOfRangeQueryParameterValue")
	_, err = qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(0))})
	wantCode(t, "get 0 messages", err, 400, "OutOfRangeQueryParameterValue")
	_, err = qc.DequeueMessage(ctx, &azqueue.DequeueMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
	wantCode(t, "get with visibility timeout 0", err, 400, "OutOfRangeQueryParameterValue")

	if _, err := qc.ClearMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := qc.EnqueueMessage(ctx, string(rune('A'+i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
	if err != nil || len(got.Messages) != 32 {
		t.Fatalf("get 32: %d, %v", len(got.Messages), err)
	}
	for i, m := range got.Messages {
		if *m.MessageText != string(rune('A'+i)) {
			t.Fatalf("message %d is %q: not in insertion order", i, *m.MessageText)
		}
		// One get hands all its messages one receipt, as Azure does.
		if *m.PopReceipt != *got.Messages[0].PopReceipt {
			t.Fatalf("receipts differ within one get")
		}
	}
	if _, err := qc.ClearMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := qc.GetProperties(ctx, nil); *p.ApproximateMessagesCount != 0 {
		t.Fatalf("count after clear: %d", *p.ApproximateMessagesCount)
	}
	_, err = sc.NewQueueClient("nosuch").ClearMessages(ctx, nil)
	wantCode(t, "clear a missing queue", err, 404, "QueueNotFound")
}

// TestWorkerPool has many receivers empty one queue at once: each message
// is handed to exactly one of them while it is invisible.
func TestWorkerPool(t *testing.T) {
	c := newClock()
	sc := client(t, server(t, c))
	qc := sc.NewQueueClient("pool")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const n = 600
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/6; i++ {
				if _, err := qc.EnqueueMessage(ctx, "m", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var mu sync.Mutex
	seen := map[string]int{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(7)), VisibilityTimeout: to.Ptr(int32(60))})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got.Messages) == 0 {
					return
				}
				for _, m := range got.Messages {
					mu.Lock()
					seen[*m.MessageID]++
					mu.Unlock()
					if _, err := qc.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d distinct messages received, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("message %s received %d times", id, k)
		}
	}
	if p, _ := qc.GetProperties(ctx, nil); *p.ApproximateMessagesCount != 0 {
		t.Fatalf("count after the pool: %d", *p.ApproximateMessagesCount)
	}
}

func TestServiceProperties(t *testing.T) {
	url := server(t, nil)
	sc := client(t, url)
	p, err := sc.GetServiceProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Logging == nil || *p.Logging.Version != "1.0" || *p.Logging.Read || p.HourMetrics == nil || *p.HourMetrics.Enabled || len(p.CORS) != 0 {
		t.Fatalf("default properties: %+v", p)
	}
	rule := &azqueue.CORSRule{AllowedOrigins: to.Ptr("*"), AllowedMethods: to.Ptr("GET,PUT"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("*"), MaxAgeInSeconds: to.Ptr(int32(60))}
	_, err = sc.SetProperties(ctx, &azqueue.SetPropertiesOptions{
		Logging: &azqueue.Logging{Version: to.Ptr("1.0"), Read: to.Ptr(true), Write: to.Ptr(false), Delete: to.Ptr(true), RetentionPolicy: &azqueue.RetentionPolicy{Enabled: to.Ptr(true), Days: to.Ptr(int32(3))}},
		CORS:    []*azqueue.CORSRule{rule},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err = sc.GetServiceProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !*p.Logging.Read || !*p.Logging.Delete || *p.Logging.RetentionPolicy.Days != 3 || len(p.CORS) != 1 || *p.CORS[0].AllowedMethods != "GET,PUT" {
		t.Fatalf("properties after set: logging %+v, cors %d", p.Logging, len(p.CORS))
	}
	// What a set leaves out stays.
	if p.HourMetrics == nil || *p.HourMetrics.Version != "1.0" {
		t.Fatalf("hour metrics after a set without them: %+v", p.HourMetrics)
	}
	// Statistics are the secondary endpoint's to give, as on Azure; the
	// secondary serves reads of the same data and refuses writes.
	secondary := client(t, url+"-secondary")
	stats, err := secondary.GetStatistics(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.GeoReplication == nil || stats.GeoReplication.Status == nil || *stats.GeoReplication.Status != azqueue.GeoReplicationStatusLive {
		t.Fatalf("statistics: %+v", stats.GeoReplication)
	}
	_, err = sc.GetStatistics(ctx, nil)
	wantCode(t, "statistics from the primary", err, 400, "InvalidQueryParameterValue")
	if sp, err := secondary.GetServiceProperties(ctx, nil); err != nil || !*sp.Logging.Read {
		t.Fatalf("properties from the secondary: %v", err)
	}
	_, err = secondary.SetProperties(ctx, &azqueue.SetPropertiesOptions{CORS: []*azqueue.CORSRule{}})
	wantCode(t, "set properties on the secondary", err, 403, "AuthorizationFailure")

	// The rule applies to a browser's request, an error answer included:
	// "*" exposes the answer's own headers.
	rule.ExposedHeaders = to.Ptr("*")
	if _, err := sc.SetProperties(ctx, &azqueue.SetPropertiesOptions{CORS: []*azqueue.CORSRule{rule}}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/nosuch?comp=metadata&"+sasQuery(t), nil)
	req.Header.Set("Origin", "http://app.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	expose := resp.Header.Get("Access-Control-Expose-Headers")
	if resp.StatusCode != 404 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(strings.ToLower(expose), "x-ms-error-code") {
		t.Fatalf("CORS on an error: %d, allow origin %q, expose %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), expose)
	}
}

func TestAccessPolicy(t *testing.T) {
	sc := client(t, server(t, nil))
	qc := sc.NewQueueClient("acl")
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err := qc.SetAccessPolicy(ctx, &azqueue.SetAccessPolicyOptions{QueueACL: []*azqueue.SignedIdentifier{{
		ID: to.Ptr("readers"), AccessPolicy: &azqueue.AccessPolicy{Start: &start, Expiry: to.Ptr(start.Add(time.Hour)), Permission: to.Ptr("rp")},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := qc.GetAccessPolicy(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.SignedIdentifiers) != 1 || *got.SignedIdentifiers[0].ID != "readers" || *got.SignedIdentifiers[0].AccessPolicy.Permission != "rp" || !got.SignedIdentifiers[0].AccessPolicy.Start.Equal(start) {
		t.Fatalf("access policy: %+v", got.SignedIdentifiers)
	}
}

// TestErrorAnswer reads an error as it travels: status, x-ms-error-code,
// the XML body with the message's RequestId and Time lines, and none for
// HEAD.
func TestErrorAnswer(t *testing.T) {
	url := server(t, nil)
	resp, err := http.Get(url + "/nosuch?comp=metadata&" + sasQuery(t))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("x-ms-error-code") != "QueueNotFound" || resp.Header.Get("Content-Type") != "application/xml" {
		t.Fatalf("GET missing queue: %d %v", resp.StatusCode, resp.Header)
	}
	var e struct {
		XMLName xml.Name `xml:"Error"`
		Code    string   `xml:"Code"`
		Message string   `xml:"Message"`
	}
	if err := xml.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if e.Code != "QueueNotFound" || !regexp.MustCompile(`^The specified queue does not exist.\nRequestId:[0-9a-f-]{36}\nTime:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$`).MatchString(e.Message) {
		t.Fatalf("error body %q", body)
	}
	resp, err = http.Head(url + "/nosuch?comp=metadata&" + sasQuery(t))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || len(body) != 0 || resp.Header.Get("x-ms-error-code") != "QueueNotFound" {
		t.Fatalf("HEAD missing queue: %d, body %q", resp.StatusCode, body)
	}
	if resp.Header.Get("Server") != "Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0" {
		t.Fatalf("Server header %q", resp.Header.Get("Server"))
	}
}

package azurite_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

// clientWith returns a client of table on inst with the given retry
// options (MaxRetries -1: every request is sent once).
func clientWith(t *testing.T, inst *azurite.Instance, table string, retry policy.RetryOptions) *aztables.Client {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(inst.ConnectionString,
		&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: retry}})
	if err != nil {
		t.Fatal(err)
	}
	return svc.NewClient(table)
}

var sendOnce = policy.RetryOptions{MaxRetries: -1}

func upsert(ctx context.Context, t *testing.T, c *aztables.Client, pk, rk string) error {
	_, err := c.UpsertEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": pk, "RowKey": rk, "V": 1}), nil)
	return err
}

func batchOf(t *testing.T, pk string, n int) []aztables.TransactionAction {
	keys := make([][2]string, n)
	for i := range keys {
		keys[i] = [2]string{pk, "b" + strconv.Itoa(i)}
	}
	acts := insertActions(t, keys...)
	for i := range acts {
		acts[i].ActionType = aztables.TransactionTypeInsertReplace
	}
	return acts
}

// serverBusy checks that err is Azure's answer to a request over a
// scalability target: 503, error code ServerBusy in the header and the
// OData body, msg first in the body's message followed by the request id,
// and the service's headers.
func serverBusy(t *testing.T, err error, msg string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want a service error, got %v", err)
	}
	if re.StatusCode != http.StatusServiceUnavailable || re.ErrorCode != "ServerBusy" {
		t.Fatalf("throttled answer: %d %q, want 503 ServerBusy", re.StatusCode, re.ErrorCode)
	}
	h := re.RawResponse.Header
	id := h.Get("x-ms-request-id")
	// The SDK sets x-ms-version under its lower-case key, which Get misses.
	sent := re.RawResponse.Request.Header.Values("x-ms-version")
	sent = append(sent, re.RawResponse.Request.Header["x-ms-version"]...)
	if id == "" || len(sent) == 0 || h.Get("x-ms-version") != sent[0] {
		t.Errorf("service headers: x-ms-request-id %q, x-ms-version %q (sent %q)", id, h.Get("x-ms-version"), sent)
	}
	if _, err := http.ParseTime(h.Get("Date")); err != nil {
		t.Errorf("Date header %q: %v", h.Get("Date"), err)
	}
	if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Errorf("Content-Type %q, want Azure's JSON", h.Get("Content-Type"))
	}
	body, perr := runtime.Payload(re.RawResponse)
	if perr != nil {
		t.Fatal(perr)
	}
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body is not an OData error: %v: %q", err, body)
	}
	if e.OData.Code != "ServerBusy" || e.OData.Message.Lang != "en-US" ||
		!strings.HasPrefix(e.OData.Message.Value, msg+"\nRequestId:"+id+"\nTime:") {
		t.Errorf("body %q, want code ServerBusy and message %q with the request id", body, msg)
	}
}

// TestLatencyIsAddedToEveryTableRequest: each kind of request takes at
// least Latency; Strict's rules stay off (a batch spanning partitions,
// which Azurite accepts, passes); a client that gives up during the wait
// stops it, and its request never reaches Azurite.
func TestLatencyIsAddedToEveryTableRequest(t *testing.T) {
	tier.Require(t, tier.Azurite)
	t.Parallel()
	const latency = 150 * time.Millisecond
	ctx := context.Background()
	inst := azurite.StartTB(t, &azurite.Options{Latency: latency, LatencyJitter: 50 * time.Millisecond})
	c, name := newNamedTable(t, inst)
	requests := []struct {
		name string
		do   func() error
	}{
		{"insert", func() error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "r"}), nil)
			return err
		}},
		{"point read", func() error { _, err := c.GetEntity(ctx, "p", "r", nil); return err }},
		{"query", func() error { _, err := c.NewListEntitiesPager(nil).NextPage(ctx); return err }},
		{"batch spanning partitions", func() error {
			_, err := c.SubmitTransaction(ctx, insertActions(t, [2]string{"p1", "a"}, [2]string{"p2", "b"}), nil)
			return err
		}},
		{"delete", func() error { _, err := c.DeleteEntity(ctx, "p", "r", nil); return err }},
	}
	for _, rq := range requests {
		start := time.Now()
		if err := rq.do(); err != nil {
			t.Fatalf("%s: %v", rq.name, err)
		}
		if el := time.Since(start); el < latency {
			t.Errorf("%s took %v, want at least the latency %v", rq.name, el, latency)
		}
	}

	// DirectTableURL reaches the same Azurite without the wait.
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(inst.DirectTableURL, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct := svc.NewClient(name)
	// Counted, not timed: under a loaded machine's -race run two plain
	// requests to Azurite took 208 ms, more than the latency.
	before := inst.Stats()
	if _, err := direct.GetEntity(ctx, "p1", "a", nil); err != nil {
		t.Fatalf("point read through DirectTableURL of an entity written through the proxy: %v", err)
	}
	if _, err := direct.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "direct"}), nil); err != nil {
		t.Fatalf("insert through DirectTableURL: %v", err)
	}
	if after := inst.Stats(); after.Forwarded != before.Forwarded {
		t.Errorf("two requests through DirectTableURL: the proxy forwarded %d, want none (no proxy, no wait)", after.Forwarded-before.Forwarded)
	}
	if _, err := c.GetEntity(ctx, "p", "direct", nil); err != nil {
		t.Errorf("the entity written through DirectTableURL, read through the proxy: %v", err)
	}

	for _, gone := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"insert", func(ctx context.Context) error {
			_, err := c.AddEntity(ctx, entityJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "gone"}), nil)
			return err
		}},
		{"point read", func(ctx context.Context) error { _, err := c.GetEntity(ctx, "p", "r", nil); return err }},
	} {
		before := inst.Stats()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		err := gone.do(cctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s cancelled during the latency: %v, want the context's error", gone.name, err)
		}
		for deadline := time.Now().Add(5 * time.Second); inst.Stats().Abandoned == before.Abandoned; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the proxy still holds a request its client gave up on", gone.name)
			}
		}
		if after := inst.Stats(); after.Forwarded != before.Forwarded || after.Abandoned != before.Abandoned+1 {
			t.Errorf("%s: forwarded %d -> %d, abandoned %d -> %d; want the abandoned request not forwarded",
				gone.name, before.Forwarded, after.Forwarded, before.Abandoned, after.Abandoned)
		}
	}
	if _, err := c.GetEntity(ctx, "p", "gone", nil); err == nil {
		t.Error("the insert cancelled during the latency was stored")
	}
}

// TestThrottlePartitionTarget runs against a partition target of 2
// entities/s with a 5 s burst (10 entities) and no account target: tiny
// numbers, so the bounds hold on a busy machine. Each subtest has its own
// table, so its own partitions.
func TestThrottlePartitionTarget(t *testing.T) {
	tier.Require(t, tier.Azurite)
	t.Parallel()
	const rate, burst = 2, 10
	ctx := context.Background()
	inst := azurite.StartTB(t, &azurite.Options{Throttle: &azurite.ThrottleOptions{
		PartitionEntitiesPerSecond: rate, AccountEntitiesPerSecond: -1, Burst: 5 * time.Second}})

	t.Run("answers as Azure above the target", func(t *testing.T) {
		_, table := newNamedTable(t, inst)
		c := clientWith(t, inst, table, sendOnce)
		before := inst.Stats()
		start := time.Now()
		var err error
		n := 0
		for ; n < 40; n++ {
			if err = upsert(ctx, t, c, "hot", strconv.Itoa(n)); err != nil {
				break
			}
		}
		if err == nil {
			t.Fatal("40 writes to one partition at once, none throttled")
		}
		serverBusy(t, err, "The server is busy.")
		if most := burst + int(rate*time.Since(start).Seconds()) + 1; n < burst || n > most {
			t.Errorf("%d writes admitted before the first 503, want between the burst %d and %d", n, burst, most)
		}
		if err := upsert(ctx, t, c, "cold", "1"); err != nil {
			t.Errorf("another partition is throttled too: %v", err)
		}
		time.Sleep(time.Second/rate + 100*time.Millisecond)
		if err := upsert(ctx, t, c, "hot", "again"); err != nil {
			t.Errorf("after waiting for one entity's worth, the partition still refuses: %v", err)
		}
		s := inst.Stats()
		if s.Throttled-before.Throttled != 1 || s.ThrottledByAccount != 0 || s.Entities-before.Entities != int64(n+2) {
			t.Errorf("stats %+v (before %+v), want 1 throttled by the partition and %d entities", s, before, n+2)
		}
	})

	t.Run("a batch counts its entities", func(t *testing.T) {
		_, table := newNamedTable(t, inst)
		c := clientWith(t, inst, table, sendOnce)
		before := inst.Stats()
		if _, err := c.SubmitTransaction(ctx, batchOf(t, "b", 6), nil); err != nil {
			t.Fatalf("6 entities into a 10-entity burst: %v", err)
		}
		if got := inst.Stats().Entities - before.Entities; got != 6 {
			t.Errorf("a 6-operation batch charged %d entities, want 6", got)
		}
		_, err := c.SubmitTransaction(ctx, batchOf(t, "b", 6), nil)
		if err == nil {
			t.Fatal("a second 6-entity batch at once (12 > 10 in the burst) was admitted")
		}
		serverBusy(t, err, "The server is busy.") // at the top level, not inside a 202
		if err := upsert(ctx, t, c, "b", "single"); err != nil {
			t.Errorf("one entity, within what is left of the burst: %v", err)
		}
	})

	t.Run("a query counts the entities it returns", func(t *testing.T) {
		_, table := newNamedTable(t, inst)
		c := clientWith(t, inst, table, sendOnce)
		if _, err := c.SubmitTransaction(ctx, batchOf(t, "q", 8), nil); err != nil {
			t.Fatal(err)
		}
		before := inst.Stats()
		filter := "PartitionKey eq 'q'"
		page, err := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter}).NextPage(ctx)
		if err != nil || len(page.Entities) != 8 {
			t.Fatalf("query with 2 entities left in the bucket: %v, %d entities", err, len(page.Entities))
		}
		if got := inst.Stats().Entities - before.Entities; got != 8 {
			t.Errorf("a page of 8 entities charged %d, want 8", got)
		}
		_, err = c.GetEntity(ctx, "q", "b0", nil)
		serverBusy(t, err, "The server is busy.")
		_, err = c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter}).NextPage(ctx)
		serverBusy(t, err, "The server is busy.")
	})

	t.Run("azcore retries until admitted", func(t *testing.T) {
		_, table := newNamedTable(t, inst)
		c := clientWith(t, inst, table, sendOnce)
		// 12 entities into a full 10-entity bucket: admitted, and the
		// partition is 2 in debt, refusing for the next 1.5 s.
		if _, err := c.SubmitTransaction(ctx, batchOf(t, "r", 12), nil); err != nil {
			t.Fatal(err)
		}
		before := inst.Stats()
		retrying := clientWith(t, inst, table, policy.RetryOptions{MaxRetries: 40, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: 250 * time.Millisecond})
		if err := upsert(ctx, t, retrying, "r", "after"); err != nil {
			t.Fatalf("a client retrying 503 with azcore's policy: %v", err)
		}
		if s := inst.Stats(); s.Throttled == before.Throttled {
			t.Errorf("the write into a partition in debt was never throttled: %+v", s)
		}
	})
}

// TestThrottleAccountTarget: with no partition target and an account
// target of 2 entities/s (a 10-entity burst), writes to ten different
// partitions exhaust the account.
func TestThrottleAccountTarget(t *testing.T) {
	tier.Require(t, tier.Azurite)
	t.Parallel()
	const rate, burst = 2, 10
	ctx := context.Background()
	inst := azurite.StartTB(t, &azurite.Options{Throttle: &azurite.ThrottleOptions{
		PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: rate, Burst: 5 * time.Second}})
	_, table := newNamedTable(t, inst) // creating the table costs the account 1
	c := clientWith(t, inst, table, sendOnce)
	start := time.Now()
	var err error
	n := 0
	for ; n < 40; n++ {
		if err = upsert(ctx, t, c, "p"+strconv.Itoa(n), "r"); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("40 writes to 40 partitions at once, none throttled by the account")
	}
	serverBusy(t, err, "Operations per second is over the account limit.")
	if most := burst + int(rate*time.Since(start).Seconds()) + 1; n < burst-1 || n > most {
		t.Errorf("%d writes admitted before the first 503, want between %d and %d", n, burst-1, most)
	}
	time.Sleep(time.Second/rate + 100*time.Millisecond)
	if err := upsert(ctx, t, c, "fresh", "r"); err != nil {
		t.Errorf("after waiting for one entity's worth, the account still refuses: %v", err)
	}
	if s := inst.Stats(); s.Throttled != 1 || s.ThrottledByAccount != 1 {
		t.Errorf("stats %+v, want one request throttled by the account", s)
	}
}

package consistency_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/consistency"
)

// A step waiting for its writer's write counts time, not deliveries:
// receives whose answers were lost (each one a delivery the worker never
// saw) must not make it give up on a write that is merely slow. Here three
// lost receives bring the message to the worker as its fourth delivery,
// six seconds after it was enqueued; the write lands after that, and the
// copy is written from it. Counting deliveries alone, the fourth applied
// the step to the source as it was (no source: no copy) and deleted the
// message, and the copy was never written.
func TestExpectWindowCountsTimeNotDeliveries(t *testing.T) {
	em, acct, q := drainEnv(t)
	ctx := context.Background()
	for _, name := range []string{"Src", "Dst"} {
		if _, err := acct.Tables().CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	copies, err := consistency.EncodeCopies(consistency.CopySpec{Table: "Dst", PartitionKey: "email", RowKey: "j@contoso.com"})
	if err != nil {
		t.Fatal(err)
	}
	tx := consistency.NewTransaction(consistency.NewStep(consistency.KindSyncCopies, consistency.SyncCopiesArgs{
		Source: consistency.EntityRef{Table: "Src", PartitionKey: "Sales", RowKey: "0001"}, Property: consistency.CopiesProperty,
		Expect: &consistency.Expectation{Property: consistency.IntentProperty, Value: "w1"},
	}))
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	// Three receives whose answers never reached a worker.
	qc := acct.Queues().NewQueueClient(q.Name())
	for range 3 {
		resp, err := qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(1)), VisibilityTimeout: to.Ptr(int32(1))})
		if err != nil || len(resp.Messages) != 1 {
			t.Fatalf("lost receive: %v, %d messages", err, len(resp.Messages))
		}
		em.Advance(2 * time.Second)
	}

	// The worker's retry comes an hour later (on the emulator's clock).
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: []string{q.Name()}, MaxDequeueCount: 20, PollInterval: 20 * time.Millisecond,
		Backoff: &consistency.Backoff{Delays: []time.Duration{time.Hour}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx, nil) }()
	defer func() { stop(); <-done }()
	waitFor(t, "the fourth delivery to wait", func() bool { return w.Metrics().Retried() == 1 })
	if n := w.Metrics().Processed(); n != 0 {
		t.Fatalf("the fourth delivery, 6 s after the enqueue, applied the step (%d processed); want it to wait for the write", n)
	}

	// The write lands late, with its intent and its copies.
	src := acct.Tables().NewClient("Src")
	body, _ := json.Marshal(map[string]any{"PartitionKey": "Sales", "RowKey": "0001", "Email": "j@contoso.com",
		consistency.IntentProperty: "w1", consistency.CopiesProperty: copies})
	if _, err := src.AddEntity(ctx, body, nil); err != nil {
		t.Fatal(err)
	}
	em.Advance(time.Hour)
	waitFor(t, "the fifth delivery to apply", func() bool { return w.Metrics().Processed() == 1 })
	got, err := acct.Tables().NewClient("Dst").GetEntity(ctx, "email", "j@contoso.com", &aztables.GetEntityOptions{})
	if err != nil {
		t.Fatalf("the copy of the late write: %v", err)
	}
	var copy map[string]any
	if err := json.Unmarshal(got.Value, &copy); err != nil || copy["Email"] != "j@contoso.com" {
		t.Fatalf("the copy = %s, %v", got.Value, err)
	}
}

// waitFor polls cond every millisecond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

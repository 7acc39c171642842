package emulator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/emulator"
)

// With Options.Location the Queue service keeps queues, their metadata
// and their messages across Stop and Start: a message received before
// the stop stays invisible until its timeout, with its dequeue count, and
// a deleted message stays deleted.
func TestLocationKeepsQueuesAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	em, err := emulator.Start(ctx, &emulator.Options{Location: dir})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := svc.NewQueueClient("work")
	if _, err := q.Create(ctx, &azqueue.CreateOptions{Metadata: map[string]*string{"owner": to.Ptr("ops")}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two", "three", "four"} {
		if _, err := q.EnqueueMessage(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(2)), VisibilityTimeout: to.Ptr(int32(3600))})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("Dequeue: %v, %v", got, err)
	}
	// "one" is deleted; "two" stays received, invisible for an hour.
	if _, err := q.DeleteMessage(ctx, *got.Messages[0].MessageID, *got.Messages[0].PopReceipt, nil); err != nil {
		t.Fatal(err)
	}
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}

	em = emulator.StartTB(t, &emulator.Options{Location: dir})
	svc, err = azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	q = svc.NewQueueClient("work")
	props, err := q.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	owner := ""
	for k, v := range props.Metadata { // Go's client writes header names canonically
		if strings.EqualFold(k, "owner") && v != nil {
			owner = *v
		}
	}
	if props.ApproximateMessagesCount == nil || *props.ApproximateMessagesCount != 3 || owner != "ops" {
		t.Errorf("after the restart: %d messages, metadata %v; want 3 and owner=ops", *props.ApproximateMessagesCount, props.Metadata)
	}
	peek, err := q.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range peek.Messages {
		texts = append(texts, *m.MessageText)
	}
	if len(texts) != 2 || texts[0] != "three" || texts[1] != "four" {
		t.Errorf("visible after the restart: %q, want [three four] (two received, invisible; one deleted)", texts)
	}
	again, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32))})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range again.Messages {
		if *m.MessageText == "two" {
			t.Error("a message received before the restart came back before its visibility timeout")
		}
	}
}

package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A sync-copies step that runs before its writer's write has landed waits
// (a retryable error) instead of syncing the copies to the old state, and
// gives up waiting after ExpectDeliveries deliveries.
func TestSyncCopiesWaitsForTheAnnouncedWrite(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
	src, dst := createTable(t, acct), createTable(t, acct)
	ref := EntityRef{src, "p", "s"}
	copies, err := EncodeCopies(CopySpec{Table: dst, PartitionKey: "email", RowKey: "new"})
	if err != nil {
		t.Fatal(err)
	}
	// The source as it was before the write: no intent, no copies yet.
	client := acct.Tables().NewClient(src)
	if _, err := client.AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "s", "Name": "old"}), nil); err != nil {
		t.Fatal(err)
	}
	step := NewStep(KindSyncCopies, SyncCopiesArgs{Source: ref, Property: "TkCopies", Expect: &Expectation{Property: "TkIntent", Value: "w1"}})
	tx := NewTransaction(step)
	tx.ID = "t1"
	call := func(n int64) error {
		return runSteps(ctx, acct, defaultRegistry, tx, delivery{count: n, max: 5, window: DefaultExpectWindow}, testLogger(t))
	}
	// Delivered before the write landed: wait, and say what the source
	// shows.
	err = call(1)
	if err == nil || IsPermanent(err) || !errors.Is(err, ErrRetry) {
		t.Fatalf("first delivery before the write = %v, want a retryable error", err)
	}
	if !strings.Contains(err.Error(), "it has no TkIntent") || !strings.Contains(err.Error(), "delivery 1, queued 0s; it applies to what is there after 30s queued and 3 deliveries, or at delivery 4") {
		t.Errorf("the wait says %q; want what the source shows and how long it waits", err)
	}
	// A source that is not there: deleted, moved, or not written yet.
	gone := NewTransaction(NewStep(KindSyncCopies, SyncCopiesArgs{Source: EntityRef{src, "p", "moved"}, Property: "TkCopies", Expect: &Expectation{Property: "TkIntent", Value: "w1"}}))
	gone.ID = "t0"
	if err := runSteps(ctx, acct, defaultRegistry, gone, delivery{count: 1, max: 5, window: DefaultExpectWindow}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "it does not exist (its write has not landed, or it was deleted or moved since)") {
		t.Errorf("a missing source's wait says %v", err)
	}
	if getProps(t, acct, EntityRef{dst, "email", "new"}) != nil {
		t.Fatal("the copy was written from the old source")
	}
	// The write lands; the next delivery syncs.
	if _, err := client.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": "s", "Name": "new", "TkIntent": "w1", "TkCopies": copies}), nil); err != nil {
		t.Fatal(err)
	}
	if err := call(2); err != nil {
		t.Fatalf("delivery after the write: %v", err)
	}
	if got := getProps(t, acct, EntityRef{dst, "email", "new"}); got == nil || got["Name"] != "new" {
		t.Fatalf("copy = %v, want the new state", got)
	}
	// A write that never lands (or was superseded): after
	// ExpectDeliveries deliveries the step syncs to what is there.
	tx2 := NewTransaction(NewStep(KindSyncCopies, SyncCopiesArgs{Source: ref, Property: "TkCopies", Expect: &Expectation{Property: "TkIntent", Value: "lost"}}))
	tx2.ID = "t2"
	// ExpectDeliveries deliveries and ExpectWindow queued, the step syncs
	// to what is there.
	window := 30 * time.Second
	at := func(n int64, age time.Duration) error {
		return runSteps(ctx, acct, defaultRegistry, tx2, delivery{count: n, max: 20, age: age, window: window}, testLogger(t))
	}
	if err := at(ExpectDeliveries-1, time.Hour); err == nil {
		t.Fatal("a delivery before ExpectDeliveries applied the step")
	}
	// Deliveries counted fast (a receive whose answer was lost counts
	// too) are no measure of time: inside the window it still waits.
	if err := at(ExpectDeliveries+5, window-time.Second); err == nil {
		t.Fatal("a delivery inside the window applied the step")
	} else if !strings.Contains(err.Error(), "delivery 8, queued 29s; it applies to what is there after 30s queued and 3 deliveries, or at delivery 19") {
		t.Errorf("the wait says %q; want how long it waits", err)
	}
	if err := at(ExpectDeliveries, window); err != nil {
		t.Fatalf("the first delivery past the window and ExpectDeliveries: %v", err)
	}
	// Never into the poison queue: the delivery before the limit applies.
	if err := runSteps(ctx, acct, defaultRegistry, tx2, delivery{count: 4, max: 5, window: window}, testLogger(t)); err != nil {
		t.Fatalf("delivery 4 of 5 inside the window: %v (must not wait for a delivery that would poison)", err)
	}
	// An ordered expectation whose source carries a later intent was
	// superseded: it applies at once, without waiting.
	tx3 := NewTransaction(NewStep(KindSyncCopies, SyncCopiesArgs{Source: ref, Property: "TkCopies", Expect: &Expectation{Property: "TkIntent", Value: "w0", Ordered: true}}))
	tx3.ID = "t3"
	if err := runSteps(ctx, acct, defaultRegistry, tx3, delivery{count: 1, max: 5, window: DefaultExpectWindow}, testLogger(t)); err != nil {
		t.Fatalf("a superseded intent waited: %v", err)
	}
	if a, b := NewIntentID(), NewIntentID(); !(a < b) || len(a) != 32 {
		t.Errorf("intent ids %q, %q do not sort in creation order", a, b)
	}
	// With a low delivery limit it never waits into the poison queue.
	if err := runSteps(ctx, acct, defaultRegistry, tx2, delivery{count: 1, max: 2, window: DefaultExpectWindow}, testLogger(t)); err != nil {
		t.Fatalf("MaxDequeueCount 2, first delivery: %v (must not wait for a delivery that would poison)", err)
	}
}

// An index list that would pass the String limit is a permanent failure
// that names the blob option, not a 400 from the service.
func TestIndexListRefusesAListPastTheStringLimit(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
	src, idx := createTable(t, acct), createTable(t, acct)
	// A stored list just under the limit (each member takes 18 units with
	// its quotes and comma).
	var members []string
	for i := 0; (len(members)+1)*18 < 32_700; i++ {
		members = append(members, "Sales/emp"+strconv.Itoa(100000+i))
	}
	list, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 32_768 {
		t.Fatalf("fixture list of %d units is already over the limit", len(list))
	}
	if _, err := acct.Tables().NewClient(idx).AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "lastname", "RowKey": "Jones", "EmployeeIDs": string(list)}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Tables().NewClient(src).AddEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "Sales", "RowKey": "new", "LastName": "Jones"}), nil); err != nil {
		t.Fatal(err)
	}
	tx := NewTransaction(IndexList(IndexListArgs{
		Index: EntityRef{idx, "lastname", "Jones"}, Property: "EmployeeIDs", Member: "Sales/" + strings.Repeat("z", 120),
		Source: EntityRef{src, "Sales", "new"}, Where: "LastName", Equals: json.RawMessage(`"Jones"`),
	}))
	err = runSteps(ctx, acct, defaultRegistry, tx, delivery{count: 1, max: 5}, testLogger(t))
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "BlobIndexedTable") {
		t.Fatalf("apply = %v, want a permanent error pointing to the blob option", err)
	}
}

func TestQueueDeleteRemovesBothQueues(t *testing.T) {
	ctx, acct, q := queueEnv(t)
	if err := q.Enqueue(ctx, NewTransaction(DeleteEntity(EntityRef{"Current", "p", "r"})), nil); err != nil {
		t.Fatal(err)
	}
	if err := q.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{q.Name(), PoisonQueueName(q.Name())} {
		if _, err := acct.Queues().NewQueueClient(name).GetProperties(ctx, nil); !tablekit.IsNotFound(tablekit.MapError(err, "", "")) {
			t.Errorf("queue %s still exists after Delete: %v", name, err)
		}
	}
	if err := q.Delete(ctx, nil); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
}

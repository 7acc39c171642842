package emulator_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/emulator"
)

// noRealWait fails the test when it took a good part of the time it
// advanced the clock by: Advance, not the real clock, made it pass.
func noRealWait(t *testing.T, start time.Time) {
	t.Helper()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the test waited real time", d)
	}
	t.Logf("took %v", time.Since(start))
}

// A one-minute blob lease expires, and a broken lease's break period
// ends, when the test advances the clock: no real minute passes.
func TestAdvanceExpiresLeases(t *testing.T) {
	em := emulator.StartTB(t, nil)
	start := time.Now()
	ctx := context.Background()
	c := must[*azblob.Client](t, "client")(azblob.NewClientFromConnectionString(em.ConnectionString, nil))
	cc := c.ServiceClient().NewContainerClient("box")
	must[any](t, "create container")(cc.Create(ctx, nil))
	bb := cc.NewBlockBlobClient("b.txt")
	must[any](t, "upload")(bb.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("x"))), nil))
	state := func() (lease.StateType, lease.StatusType) {
		t.Helper()
		p := must[blob.GetPropertiesResponse](t, "properties")(bb.GetProperties(ctx, nil))
		return *p.LeaseState, *p.LeaseStatus
	}

	bl := must[*lease.BlobClient](t, "lease client")(lease.NewBlobClient(bb, nil))
	must[any](t, "acquire")(bl.AcquireLease(ctx, 60, nil))
	em.Advance(59 * time.Second)
	if s, st := state(); s != lease.StateTypeLeased || st != lease.StatusTypeLocked {
		t.Fatalf("59 s into a 60 s lease: %s, %s; want leased, locked", s, st)
	}
	em.Advance(time.Second)
	if s, st := state(); s != lease.StateTypeExpired || st != lease.StatusTypeUnlocked {
		t.Fatalf("after 60 s: %s, %s; want expired, unlocked", s, st)
	}
	// Another client takes the blob over at once.
	other := must[*lease.BlobClient](t, "lease client")(lease.NewBlobClient(bb, nil))
	must[any](t, "acquire after expiry")(other.AcquireLease(ctx, 60, nil))

	// A break with a period of 30 s: breaking until the clock passes it.
	must[any](t, "break")(other.BreakLease(ctx, &lease.BlobBreakOptions{BreakPeriod: to.Ptr[int32](30)}))
	if s, _ := state(); s != lease.StateTypeBreaking {
		t.Fatalf("just broken with a 30 s period: %s; want breaking", s)
	}
	em.Advance(30 * time.Second)
	if s, _ := state(); s != lease.StateTypeBroken {
		t.Fatalf("30 s after the break: %s; want broken", s)
	}
	noRealWait(t, start)
}

// A message with a time-to-live of an hour is gone once the clock has
// advanced an hour; one enqueued with a visibility delay is received
// once the clock passes it.
func TestAdvanceExpiresAndRevealsMessages(t *testing.T) {
	em := emulator.StartTB(t, nil)
	start := time.Now()
	ctx := context.Background()
	svc := must[*azqueue.ServiceClient](t, "client")(azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil))
	q := svc.NewQueueClient("jobs")
	must[any](t, "create queue")(q.Create(ctx, nil))
	count := func() int32 {
		t.Helper()
		p := must[azqueue.GetQueuePropertiesResponse](t, "properties")(q.GetProperties(ctx, nil))
		return *p.ApproximateMessagesCount
	}

	must[any](t, "enqueue")(q.EnqueueMessage(ctx, "brief", &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr[int32](3600)}))
	em.Advance(59 * time.Minute)
	if n := count(); n != 1 {
		t.Fatalf("59 min into an hour's time-to-live: %d messages; want 1", n)
	}
	em.Advance(time.Minute)
	if n := count(); n != 0 {
		t.Fatalf("an hour on: %d messages; want 0", n)
	}

	must[any](t, "enqueue delayed")(q.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr[int32](30)}))
	receive := func() int {
		t.Helper()
		r := must[azqueue.DequeueMessagesResponse](t, "dequeue")(q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr[int32](32)}))
		return len(r.Messages)
	}
	if n := receive(); n != 0 {
		t.Fatalf("received %d messages enqueued with a 30 s delay at once; want 0", n)
	}
	if n := count(); n != 1 {
		t.Fatalf("an invisible message: count %d; want 1", n)
	}
	em.Advance(30 * time.Second)
	if n := receive(); n != 1 {
		t.Fatalf("30 s on: received %d messages; want 1", n)
	}
	noRealWait(t, start)
}

// A SAS that expires in an hour is refused once the clock has advanced
// past it, one that starts in an hour accepted; Shared Key requests,
// dated by the real clock, are still accepted.
func TestAdvanceChecksSASWindows(t *testing.T) {
	em := emulator.StartTB(t, nil)
	ctx := context.Background()
	c := must[*azblob.Client](t, "client")(azblob.NewClientFromConnectionString(em.ConnectionString, nil))
	cc := c.ServiceClient().NewContainerClient("box")
	must[any](t, "create container")(cc.Create(ctx, nil))
	bb := cc.NewBlockBlobClient("b.txt")
	must[any](t, "upload")(bb.Upload(ctx, streaming.NopCloser(bytes.NewReader([]byte("x"))), nil))
	now := time.Now().UTC()
	read := sas.BlobPermissions{Read: true}
	expiring := must[string](t, "SAS")(bb.GetSASURL(read, now.Add(time.Hour), nil))
	later := must[string](t, "SAS")(bb.GetSASURL(read, now.Add(3*time.Hour), &blob.GetSASURLOptions{StartTime: to.Ptr(now.Add(time.Hour))}))
	get := func(url string) error {
		b, err := blob.NewClientWithNoCredential(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.GetProperties(ctx, nil)
		return err
	}
	if err := get(expiring); err != nil {
		t.Fatalf("a SAS within its window: %v", err)
	}
	if err := get(later); err == nil {
		t.Fatal("a SAS before its start was accepted")
	}
	em.Advance(time.Hour + time.Minute)
	if err := get(expiring); err == nil {
		t.Fatal("a SAS past its expiry was accepted")
	}
	if err := get(later); err != nil {
		t.Fatalf("a SAS within its window: %v", err)
	}
	if _, err := bb.GetProperties(ctx, nil); err != nil {
		t.Fatalf("Shared Key after Advance: %v", err)
	}
	if d := em.Now().Sub(time.Now()); d < time.Hour || d > time.Hour+2*time.Minute {
		t.Errorf("Now is %v ahead of the real clock; want 1h1m", d)
	}
}

// With ClockRate 50 the emulator's time runs 50 times as fast: a message
// enqueued with a 5 s delay is received after 0.1 s of real time and not
// before, and the service's time (Now, a lease's expiry) moves with it.
// Advance still adds to it. An emulator at real time does not show the
// message that soon, and a rate below 1 is refused.
func TestClockRateRunsTheClockFaster(t *testing.T) {
	em := emulator.StartTB(t, &emulator.Options{ClockRate: 50})
	ctx := context.Background()
	q := must[*azqueue.ServiceClient](t, "client")(azqueue.NewServiceClientFromConnectionString(em.ConnectionString, nil)).NewQueueClient("jobs")
	must[any](t, "create queue")(q.Create(ctx, nil))
	start := time.Now()
	must[any](t, "enqueue delayed")(q.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr[int32](5)}))
	receive := func() int {
		t.Helper()
		r := must[azqueue.DequeueMessagesResponse](t, "dequeue")(q.DequeueMessages(ctx, nil))
		return len(r.Messages)
	}
	if n := receive(); n != 0 && time.Since(start) < 80*time.Millisecond {
		t.Fatalf("received a message enqueued with a 5 s delay after %v at 50 times real time; want none before 0.1 s", time.Since(start))
	}
	for receive() == 0 {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("a message enqueued with a 5 s delay at 50 times real time not received after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("received after %v; want 0.1 s (5 s at 50 times real time)", d)
	}
	t.Logf("a 5 s delay took %v", time.Since(start).Round(time.Millisecond))

	real0, em0 := time.Now(), em.Now()
	time.Sleep(100 * time.Millisecond)
	if got := em.Now().Sub(em0); got < 40*time.Since(real0) {
		t.Errorf("the emulator's time moved %v in %v of real time; want 50 times as much", got, time.Since(real0))
	}
	before := em.Now()
	em.Advance(time.Hour)
	if got := em.Now().Sub(before); got < time.Hour {
		t.Errorf("Advance(1h) at 50 times real time moved the clock %v; want an hour or more", got)
	}

	still := emulator.StartTB(t, nil)
	sq := must[*azqueue.ServiceClient](t, "client")(azqueue.NewServiceClientFromConnectionString(still.ConnectionString, nil)).NewQueueClient("jobs")
	must[any](t, "create queue")(sq.Create(ctx, nil))
	must[any](t, "enqueue delayed")(sq.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr[int32](5)}))
	time.Sleep(200 * time.Millisecond)
	if r := must[azqueue.DequeueMessagesResponse](t, "dequeue")(sq.DequeueMessages(ctx, nil)); len(r.Messages) != 0 {
		t.Errorf("at real time a message enqueued with a 5 s delay was received after 0.2 s")
	}

	for _, rate := range []float64{0.5, -1, emulator.MaxClockRate + 1, math.NaN()} {
		if _, err := emulator.Start(ctx, &emulator.Options{ClockRate: rate}); err == nil || !strings.Contains(err.Error(), "ClockRate") {
			t.Errorf("Start with ClockRate %v = %v; want an error naming ClockRate", rate, err)
		}
	}
}

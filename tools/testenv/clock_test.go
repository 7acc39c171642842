package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
)

// A message enqueued an hour from visible is received once the test's
// clock has moved an hour, with no real wait: on the emulator in process
// and on `tablekit emulator --test-clock` in a process of its own.
func TestClockRevealsADelayedMessage(t *testing.T) {
	bin := tablekitCommand(t)
	for _, c := range []struct{ name, bin string }{{"in-process", ""}, {"process", bin}} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvEmulatorBinary, c.bin)
			acct, clock := ClockAccount(t)
			if !clock.Moves() {
				t.Fatal("the emulator's clock does not move")
			}
			ctx := context.Background()
			qc := acct.Queues().NewQueueClient("delayed")
			if _, err := qc.Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := qc.EnqueueMessage(ctx, "later", &azqueue.EnqueueMessageOptions{VisibilityTimeout: to.Ptr(int32(3600))}); err != nil {
				t.Fatal(err)
			}
			received := func() int {
				resp, err := qc.DequeueMessages(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				return len(resp.Messages)
			}
			start := time.Now()
			if !clock.Advance(59 * time.Minute) {
				t.Fatal("Advance reports false on the emulator")
			}
			if n := received(); n != 0 {
				t.Fatalf("%d messages received 59 minutes on; want none before the hour", n)
			}
			clock.Advance(time.Minute)
			if n := received(); n != 1 {
				t.Fatalf("%d messages received an hour on; want 1", n)
			}
			if clock.Moved() != time.Hour {
				t.Errorf("Moved() = %v; want 1h", clock.Moved())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// Where the clock cannot be moved (Azurite, an account), Advance reports
// false and Pass waits for real time.
func TestClockThatCannotMoveWaits(t *testing.T) {
	c := &Clock{t: t}
	if c.Moves() || c.Advance(time.Hour) {
		t.Fatal("a clock without a service to move says it moves")
	}
	start := time.Now()
	c.Pass(50 * time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Pass(50ms) returned after %v", d)
	}
	if c.Moved() != 0 {
		t.Errorf("Moved() = %v", c.Moved())
	}
}

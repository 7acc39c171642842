package testenv

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
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

// failRecorder is the testing.TB a Clock reports to, recording how.
type failRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	fatal  bool
}

func (r *failRecorder) Helper() {}

func (r *failRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *failRecorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

// A clock that fails to move fails the test and reports false, from any
// goroutine: a policy of the test's account moves it from the goroutine
// of a request, where FailNow would end that goroutine only (leaving the
// request without an answer) and not the test.
func TestAdvanceFailureFromAnotherGoroutine(t *testing.T) {
	rec := &failRecorder{TB: t}
	c := &Clock{t: rec, advance: func(time.Duration) error { return errors.New("the emulator process has exited") }}
	got := make(chan bool, 1)
	go func() {
		defer close(got)
		got <- c.Advance(time.Second)
	}()
	moved, returned := <-got
	if !returned || moved {
		t.Fatalf("Advance returned %v (returned: %v), want false", moved, returned)
	}
	if rec.fatal || len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "has exited") {
		t.Errorf("Advance reported %q (fatal: %v), want one error naming the failure", rec.errors, rec.fatal)
	}
	if c.Moved() != 0 {
		t.Errorf("Moved: %v after a failed Advance, want 0", c.Moved())
	}
}

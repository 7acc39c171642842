package load

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

func one(pk string, n int) Cost {
	var c Cost
	c.Add("T", pk, n)
	return c
}

// TestThrottleBuckets: a bucket admits up to its burst at once, refills
// at the target, lets one cost larger than the burst through when full
// (and is in debt after it), and keeps partitions apart.
func TestThrottleBuckets(t *testing.T) {
	t0 := time.Now()
	th := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: 10, AccountEntitiesPerSecond: 1000, Burst: time.Second}, 1, time.Now)
	for i := 0; i < 10; i++ {
		if v := th.admit(one("a", 1), t0); v != admitted {
			t.Fatalf("write %d of a full 10-entity bucket: %v", i+1, v)
		}
	}
	if v := th.admit(one("a", 1), t0); v != overPartition {
		t.Fatalf("11th write at once: %v, want overPartition", v)
	}
	if v := th.admit(one("b", 1), t0); v != admitted {
		t.Fatalf("another partition: %v", v)
	}
	if v := th.admit(one("a", 1), t0.Add(100*time.Millisecond)); v != admitted {
		t.Fatalf("after 100 ms (one entity at 10/s): %v", v)
	}
	if v := th.admit(one("c", 25), t0); v != admitted {
		t.Fatalf("25 entities into a full 10-entity bucket: %v", v)
	}
	if v := th.admit(one("c", 1), t0.Add(1500*time.Millisecond)); v != overPartition {
		t.Fatalf("1.5 s after a 25-entity batch (15 in debt): %v", v)
	}
	if v := th.admit(one("c", 1), t0.Add(1600*time.Millisecond)); v != admitted {
		t.Fatalf("1.6 s after a 25-entity batch: %v", v)
	}
	if v := th.admit(one("t", 0), t0); v != admitted {
		t.Fatalf("a query of a fresh partition: %v", v)
	}
	th.settle(one("t", 30), t0)
	if v := th.admit(one("t", 0), t0.Add(time.Second)); v != overPartition {
		t.Fatalf("a query of a partition 20 in debt: %v", v)
	}
	var lower Cost
	lower.Add("t", "a", 1)
	if v := th.admit(lower, t0.Add(100*time.Millisecond)); v != overPartition || len(th.parts) != 4 {
		t.Fatalf("table names compare case-insensitively: %v, %d buckets", v, len(th.parts))
	}

	acct := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: 5, Burst: time.Second}, 1, time.Now)
	for i := 0; i < 5; i++ {
		if v := acct.admit(one(strings.Repeat("p", i+1), 1), t0); v != admitted {
			t.Fatalf("account write %d: %v", i+1, v)
		}
	}
	if v := acct.admit(one("q", 1), t0); v != overAccount {
		t.Fatalf("6th write to the account: %v, want overAccount", v)
	}
	if len(acct.parts) != 0 {
		t.Errorf("no partition target, yet %d partition buckets", len(acct.parts))
	}

	def := NewThrottle(ThrottleOptions{})
	if def.part.rate != AzurePartitionEntitiesPerSecond || def.acct.rate != AzureAccountEntitiesPerSecond || def.part.capacity != 200 {
		t.Errorf("zero options: %+v %+v, want Azure's targets and a 100 ms burst", def.part, def.acct)
	}
	tiny := NewThrottle(ThrottleOptions{PartitionEntitiesPerSecond: 1, Burst: time.Millisecond})
	if tiny.part.capacity != 1 {
		t.Errorf("a bucket holds at least one entity, got %v", tiny.part.capacity)
	}
	scaled := newThrottle(ThrottleOptions{}, 0.1, time.Now)
	if scaled.part.rate != 200 || scaled.acct.rate != 2000 {
		t.Errorf("Azure's targets scaled by 0.1: %+v %+v", scaled.part, scaled.acct)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestThrottleAnswersAndCounts: the exported Admit and Charge answer as
// Azure does, count what they decide, and follow tables.Load's
// convention that pk "" counts for the account only.
func TestThrottleAnswersAndCounts(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	th := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: 4, AccountEntitiesPerSecond: 10, Burst: time.Second}, 1, clk.now)
	check := func(what string, got *answer.Error, want string) {
		t.Helper()
		switch {
		case want == "" && got != nil:
			t.Fatalf("%s: %v, want admitted", what, got)
		case want != "" && (got == nil || got.Status != http.StatusServiceUnavailable || got.Code != answer.CodeServerBusy || got.Message != want):
			t.Fatalf("%s: %v, want 503 ServerBusy %q", what, got, want)
		}
	}
	check("a 4-entity batch", th.Admit("Orders", "p", 4), "")
	check("a 5th entity in the partition", th.Admit("orders", "p", 1), answer.MsgServerBusy)
	check("a query of the partition", th.Admit("orders", "p", 0), answer.MsgServerBusy)
	check("a table operation", th.Admit("", "", 1), "")
	check("a query naming no partition", th.Admit("orders", "", 0), "")
	th.Charge("orders", "", 0) // an empty page costs 1
	check("4 entities elsewhere", th.Admit("orders", "q", 4), "")
	check("the 11th entity of the account", th.Admit("orders", "r", 1), answer.MsgAccountOverLimit)
	clk.t = clk.t.Add(250 * time.Millisecond) // the partition gains 1, the account 2.5
	check("a point read after 250 ms", th.Admit("orders", "p", 1), "")
	th.Charge("orders", "q", 3)
	want := ThrottleStats{Throttled: 3, ThrottledByAccount: 1, Entities: 4 + 1 + 0 + 1 + 4 + 1 + 3}
	if got := th.Stats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	var span Cost
	span.Add("orders", "x", 1)
	span.Add("orders", "q", 1) // q is 3 in debt
	check("a batch spanning a partition in debt", th.AdmitCost(span), answer.MsgServerBusy)
}

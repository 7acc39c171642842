package blobs

import (
	"testing"
	"time"
)

// TestLeaseClock checks the transitions that depend on the clock, which
// a test through the SDK cannot wait for: a fixed lease expires and may
// then be renewed by its holder or acquired by another; a break without
// a period lasts until the lease would have expired, one with a period
// until the earlier of the two; a breaking lease is broken once its
// time passes.
func TestLeaseClock(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const a, b = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
	errs := blobLeaseErrors
	acquire := func(l lease, id string, secs int, at time.Time) (lease, error) {
		n, e := leaseRequest{action: "acquire", proposed: id, seconds: secs, breakPeriod: -1}.apply(l.at(at), at, errs)
		if e != nil {
			return n, e
		}
		return n, nil // not (n, e): a nil *answer.Error is not a nil error
	}
	l, err := acquire(lease{}, a, 15, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.at(t0.Add(14 * time.Second)).state; got != leaseLeased {
		t.Errorf("at 14 s: %v, want leased", got)
	}
	if got := l.at(t0.Add(15 * time.Second)).state; got != leaseExpired {
		t.Errorf("at 15 s: %v, want expired", got)
	}
	if got := l.at(t0.Add(15 * time.Second)); got.locked() || checkLease(got, "", true, errs) != nil {
		t.Error("an expired lease still locks the blob")
	}
	renewed, e := leaseRequest{action: "renew", id: a, breakPeriod: -1}.apply(l.at(t0.Add(20*time.Second)), t0.Add(20*time.Second), errs)
	if e != nil || renewed.at(t0.Add(34*time.Second)).state != leaseLeased {
		t.Errorf("renewing an expired lease: %v, %+v; want leased until 35 s", e, renewed)
	}
	if _, err := acquire(l, b, 15, t0.Add(16*time.Second)); err != nil {
		t.Errorf("another holder acquiring an expired lease: %v", err)
	}

	br := func(l lease, period int, at time.Time) lease {
		t.Helper()
		n, e := leaseRequest{action: "break", breakPeriod: period}.apply(l.at(at), at, errs)
		if e != nil {
			t.Fatalf("break: %v", e)
		}
		return n
	}
	at5 := t0.Add(5 * time.Second)
	if got := br(l, -1, at5); got.state != leaseBreaking || !got.breakAt.Equal(t0.Add(15*time.Second)) {
		t.Errorf("break without a period: %+v, want breaking until 15 s", got)
	}
	if got := br(l, 60, at5); !got.breakAt.Equal(t0.Add(15 * time.Second)) {
		t.Errorf("break for 60 s of a lease ending at 15 s: until %v", got.breakAt.Sub(t0))
	}
	breaking := br(l, 3, at5)
	if !breaking.breakAt.Equal(t0.Add(8 * time.Second)) {
		t.Errorf("break for 3 s at 5 s: until %v, want 8 s", breaking.breakAt.Sub(t0))
	}
	if got := breaking.at(t0.Add(8 * time.Second)); got.state != leaseBroken || got.locked() {
		t.Errorf("at 8 s: %v, want broken and unlocked", got.state)
	}
	if got := br(breaking, 1, t0.Add(6*time.Second)); !got.breakAt.Equal(t0.Add(7 * time.Second)) {
		t.Errorf("a shorter second break: until %v, want 7 s", got.breakAt.Sub(t0))
	}
	if got := br(breaking, 0, t0.Add(6*time.Second)); got.state != leaseBroken {
		t.Errorf("break with period 0: %v, want broken", got.state)
	}
	inf, _ := acquire(lease{}, a, -1, t0)
	if got := inf.at(t0.Add(1000 * time.Hour)).state; got != leaseLeased {
		t.Errorf("an infinite lease after 1000 h: %v", got)
	}
	if got := br(inf, -1, at5); got.state != leaseBroken {
		t.Errorf("breaking an infinite lease without a period: %v, want broken at once", got.state)
	}
}

// TestValidGUID: the lease IDs a client may send.
func TestValidGUID(t *testing.T) {
	for s, want := range map[string]bool{
		"3f2504e0-4f89-11d3-9a0c-0305e82c3301":   true,
		"3F2504E04F8911D39A0C0305E82C3301":       true,
		"{3f2504e0-4f89-11d3-9a0c-0305e82c3301}": true,
		"(3f2504e0-4f89-11d3-9a0c-0305e82c3301)": true,
		"3f2504e0-4f89-11d3-9a0c-0305e82c330":    false,
		"3f2504e0_4f89_11d3_9a0c_0305e82c3301":   false,
		"not-a-guid":                             false,
		"":                                       false,
	} {
		if validGUID(s) != want {
			t.Errorf("validGUID(%q) = %v, want %v", s, !want, want)
		}
	}
	if id := newLeaseID(); !validGUID(id) || id[14] != '4' {
		t.Errorf("newLeaseID() = %q, want a version 4 GUID", id)
	}
}

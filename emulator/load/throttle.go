package load

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Azure Table storage's published scalability targets, for 1 KiB
// entities (the performance and scalability checklist).
const (
	AzurePartitionEntitiesPerSecond = 2000
	AzureAccountEntitiesPerSecond   = 20000
)

// DefaultBurst is how much of a second's target a bucket holds when
// ThrottleOptions.Burst is zero.
const DefaultBurst = 100 * time.Millisecond

// ThrottleOptions sets the scalability targets a Throttle answers 503
// ServerBusy at. The zero value is Azure's: 2,000 entities per second per
// partition (a table and a PartitionKey) and 20,000 per account.
//
// Each target is a token bucket that fills at the target and holds Burst's
// worth of it. A request is admitted when every bucket it touches holds
// its cost (a full bucket is enough for a larger cost); its cost is then
// taken from each, which may leave a bucket in debt, so a big transaction
// passes and its partition refuses until the debt is paid. What a request
// costs:
//
//	point read, insert, update, merge, upsert, delete   1 in its partition
//	transaction ($batch)                                1 per operation, in its partition
//	query page                                          its entities (at least 1), charged after the page
//	anything else (tables, service properties)          1 for the account
//
// A query is admitted while the account, and the partition it names (if
// any), have at least one entity left; what its page read is charged
// afterwards (Throttle.Charge).
//
// Over a partition's target the answer is 503, error code ServerBusy,
// "The server is busy." (answer.ServerBusy); over the account's, 503
// ServerBusy, "Operations per second is over the account limit."
// (answer.AccountOverLimit). A throttled request costs nothing.
type ThrottleOptions struct {
	// PartitionEntitiesPerSecond is the target of one partition (a table
	// and a PartitionKey). Zero means AzurePartitionEntitiesPerSecond; a
	// negative value means no partition target.
	PartitionEntitiesPerSecond int
	// AccountEntitiesPerSecond is the target of the whole account. Zero
	// means AzureAccountEntitiesPerSecond; a negative value means no
	// account target.
	AccountEntitiesPerSecond int
	// Burst is how much of one second's target an idle bucket holds: what
	// a partition or the account admits at once before the rate applies.
	// A bucket holds at least one entity. Zero or negative means
	// DefaultBurst. Azure publishes no burst allowance (docs/EMULATOR.md,
	// "The burst allowance"): code meant to hold on Azure is tested with a
	// small one (100 ms or less: any overshoot refused at once) and a
	// large one (seconds: far over the target, then refusals).
	Burst time.Duration
}

// Partition names a partition: the table (lower case, as Azure Table
// storage compares table names) and the PartitionKey.
type Partition struct{ Table, PK string }

// Cost is what one request costs: entities per partition, and in all (the
// account's share, at least the partitions' sum). The zero Cost costs
// nothing and, at admission, needs one entity left in the account.
type Cost struct {
	parts map[Partition]int
	total int
}

// Add adds n entities of partition (table, pk), counted for the account
// too. n may be zero: the partition must then have one entity left to
// admit the request, and nothing is taken from it.
func (c *Cost) Add(table, pk string, n int) {
	if c.parts == nil {
		c.parts = map[Partition]int{}
	}
	c.parts[Partition{strings.ToLower(table), pk}] += n
	c.total += n
}

// AddAccount adds n entities counted for the account only.
func (c *Cost) AddAccount(n int) { c.total += n }

// Total is the cost to the account.
func (c Cost) Total() int { return c.total }

// Partitions returns the cost of each partition it touches; the map is
// c's own and must not be changed.
func (c Cost) Partitions() map[Partition]int { return c.parts }

// ThrottleStats counts what a Throttle decided.
type ThrottleStats struct {
	// Throttled is the number of requests answered 503 ServerBusy, of
	// which ThrottledByAccount were over the account's target and the
	// rest over a partition's.
	Throttled, ThrottledByAccount int64
	// Entities is the number of entities charged: the cost of admitted
	// requests and what Charge added.
	Entities int64
}

// Throttle holds the token buckets of one account. It is safe for
// concurrent use.
type Throttle struct {
	part, acct level
	now        func() time.Time // time.Now; tests set their own

	mu        sync.Mutex
	account   bucket
	parts     map[Partition]*bucket
	lastSweep time.Time

	throttled, throttledAccount, entities atomic.Int64
}

// NewThrottle returns a Throttle with every bucket full.
func NewThrottle(o ThrottleOptions) *Throttle {
	return newThrottle(o, 1, time.Now)
}

// NewThrottleClock is NewThrottle on the clock now instead of time.Now:
// a simulation on a virtual clock (a client's pacing run against the
// service's buckets, thousands of seconds in milliseconds) gets the
// answers the emulator would give at those times.
func NewThrottleClock(o ThrottleOptions, now func() time.Time) *Throttle {
	return newThrottle(o, 1, now)
}

// newThrottle is NewThrottle with the targets multiplied by scale and a
// clock.
func newThrottle(o ThrottleOptions, scale float64, now func() time.Time) *Throttle {
	burst := o.Burst
	if burst <= 0 {
		burst = DefaultBurst
	}
	t := &Throttle{
		part:  newLevel(o.PartitionEntitiesPerSecond, AzurePartitionEntitiesPerSecond, scale, burst),
		acct:  newLevel(o.AccountEntitiesPerSecond, AzureAccountEntitiesPerSecond, scale, burst),
		now:   now,
		parts: map[Partition]*bucket{},
	}
	t.account = bucket{tokens: t.acct.capacity, last: now()}
	return t
}

// Admit decides on a request to partition (table, pk) costing cost
// entities: pk "" means a request that counts for the account only (a
// query naming no single partition, a table operation); a partition whose
// PartitionKey is empty is AdmitCost's (Cost.Add), as Model.Admit does.
// cost 0 (a query, charged by Charge once its page is read) needs one
// entity left. It returns nil and takes the cost, or Azure's 503 answer.
func (t *Throttle) Admit(table, pk string, cost int) *answer.Error {
	var c Cost
	if pk == "" {
		c.AddAccount(cost)
	} else {
		c.Add(table, pk, cost)
	}
	return t.AdmitCost(c)
}

// AdmitCost decides on a request costing c: nil when every bucket c
// touches admits it (and its cost is then taken from each), or Azure's
// 503 answer, counted in Stats.
func (t *Throttle) AdmitCost(c Cost) *answer.Error {
	switch t.admit(c, t.now()) {
	case overPartition:
		t.throttled.Add(1)
		return answer.ServerBusy()
	case overAccount:
		t.throttled.Add(1)
		t.throttledAccount.Add(1)
		return answer.AccountOverLimit()
	}
	t.entities.Add(int64(c.total))
	return nil
}

// Charge takes what a query page read, n entities (at least 1), from
// partition (table, pk), or from the account alone when pk is "" (an
// empty PartitionKey's partition is ChargeCost's). It decides nothing:
// the page is already read.
func (t *Throttle) Charge(table, pk string, n int) {
	n = max(n, 1)
	var c Cost
	if pk == "" {
		c.AddAccount(n)
	} else {
		c.Add(table, pk, n)
	}
	t.ChargeCost(c)
}

// ChargeCost takes c from the buckets without a decision.
func (t *Throttle) ChargeCost(c Cost) {
	t.settle(c, t.now())
	t.entities.Add(int64(c.total))
}

// Stats returns what t has counted.
func (t *Throttle) Stats() ThrottleStats {
	return ThrottleStats{
		Throttled:          t.throttled.Load(),
		ThrottledByAccount: t.throttledAccount.Load(),
		Entities:           t.entities.Load(),
	}
}

// bucket is a token bucket; tokens may go below zero (debt).
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) fill(now time.Time, rate, capacity float64) {
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(capacity, b.tokens+el*rate)
	}
	b.last = now
}

// holds reports whether the bucket admits cost: it holds the cost, or a
// full bucket when the cost is larger; a cost of zero (a query, charged
// later) needs one entity.
func (b *bucket) holds(cost, capacity float64) bool {
	return b.tokens >= math.Min(math.Max(cost, 1), capacity)
}

// level is one kind of target: its rate and its buckets' capacity. A
// rate of zero means no target.
type level struct{ rate, capacity float64 }

func newLevel(target, def int, scale float64, burst time.Duration) level {
	switch {
	case target < 0:
		return level{}
	case target == 0:
		target = def
	}
	r := float64(target) * scale
	return level{rate: r, capacity: math.Max(1, r*burst.Seconds())}
}

// verdict is the throttle's answer to a request.
type verdict int

const (
	admitted verdict = iota
	overPartition
	overAccount
)

// sweepAbove is the number of partition buckets above which full (idle)
// ones are dropped, at most once a second.
const sweepAbove = 4096

// admit decides on c at now and, when every bucket admits it, takes its
// cost from each.
func (t *Throttle) admit(c Cost, now time.Time) verdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.part.rate > 0 {
		for p, n := range c.parts {
			if b := t.bucket(p, now); !b.holds(float64(n), t.part.capacity) {
				return overPartition
			}
		}
	}
	if t.acct.rate > 0 {
		t.account.fill(now, t.acct.rate, t.acct.capacity)
		if !t.account.holds(float64(c.total), t.acct.capacity) {
			return overAccount
		}
	}
	t.take(c)
	return admitted
}

// settle takes c without a decision.
func (t *Throttle) settle(c Cost, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.part.rate > 0 {
		for p := range c.parts {
			t.bucket(p, now)
		}
	}
	if t.acct.rate > 0 {
		t.account.fill(now, t.acct.rate, t.acct.capacity)
	}
	t.take(c)
}

// take subtracts c from the buckets, already filled to now.
func (t *Throttle) take(c Cost) {
	if t.part.rate > 0 {
		for p, n := range c.parts {
			t.parts[p].tokens -= float64(n)
		}
	}
	if t.acct.rate > 0 {
		t.account.tokens -= float64(c.total)
	}
}

// bucket returns p's bucket filled to now, creating a full one.
func (t *Throttle) bucket(p Partition, now time.Time) *bucket {
	b, ok := t.parts[p]
	if !ok {
		if len(t.parts) >= sweepAbove && now.Sub(t.lastSweep) > time.Second {
			t.lastSweep = now
			for k, old := range t.parts {
				if old.fill(now, t.part.rate, t.part.capacity); old.tokens >= t.part.capacity {
					delete(t.parts, k)
				}
			}
		}
		b = &bucket{tokens: t.part.capacity, last: now}
		t.parts[p] = b
	}
	b.fill(now, t.part.rate, t.part.capacity)
	return b
}

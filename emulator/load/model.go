package load

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// ModelOptions sets a Model. The zero value is Azure's published targets
// at full scale.
type ModelOptions struct {
	// Servers is the number of simulated partition servers. Zero means
	// DefaultServers.
	Servers int
	// Parallel is the number of pages one server works on at once. Zero
	// means 1.
	Parallel int
	// PageTime is the service time of every page (and every other piece
	// of work) on its server, before its entities. Zero or negative means
	// none.
	PageTime time.Duration
	// EntityTime is the service time of each entity a page scans (or a
	// write writes). Zero means DefaultEntityTime; negative means none.
	EntityTime time.Duration
	// Throttle sets the targets answered 503 ServerBusy; the zero value is
	// Azure's.
	Throttle ThrottleOptions
	// Scale multiplies every rate of the model, given or default, and
	// divides every service time: 0.1 makes a partition's target 200
	// entities a second and an entity's service time 5 ms, so a small
	// machine serves the model without becoming the bottleneck itself.
	// Zero means 1.
	Scale float64
}

// Defaults of ModelOptions, derived from Azure's targets rather than
// measured (Azure publishes targets, not service times): ten servers, so
// that the account's target is ten partitions at theirs, and a server
// that serves one partition's target when busy (1 s / 2,000 entities).
const (
	DefaultServers    = AzureAccountEntitiesPerSecond / AzurePartitionEntitiesPerSecond
	DefaultEntityTime = time.Second / AzurePartitionEntitiesPerSecond
)

// ModelStats counts what a Model has done.
type ModelStats struct {
	ThrottleStats
	// Pages and Scanned count the calls to Work and the entities they
	// scanned.
	Pages, Scanned int64
	// Queued is the time work waited for its server, summed.
	Queued time.Duration
}

// Model is the scale model of one account: Azure's partition servers and
// targets. It implements the emulator Table service's Load (Admit,
// Charge, Server, Work); see the package documentation for what it
// models and what it does not. It is safe for concurrent use.
type Model struct {
	throttle   *Throttle
	servers    []server
	pageTime   time.Duration
	entityTime time.Duration
	now        func() time.Time

	pages, scanned, queued atomic.Int64
}

// server is one simulated partition server: the time at which each of
// its slots (pages served at once) is next free.
type server struct {
	mu   sync.Mutex
	free []time.Time
}

// NewModel returns a Model with every server idle and every bucket full.
func NewModel(o ModelOptions) *Model { return newModel(o, time.Now) }

func newModel(o ModelOptions, now func() time.Time) *Model {
	scale := o.Scale
	if scale <= 0 {
		scale = 1
	}
	n := o.Servers
	if n <= 0 {
		n = DefaultServers
	}
	k := max(o.Parallel, 1)
	et := o.EntityTime
	switch {
	case et == 0:
		et = DefaultEntityTime
	case et < 0:
		et = 0
	}
	m := &Model{
		throttle:   newThrottle(o.Throttle, scale, now),
		servers:    make([]server, n),
		pageTime:   time.Duration(float64(max(o.PageTime, 0)) / scale),
		entityTime: time.Duration(float64(et) / scale),
		now:        now,
	}
	for i := range m.servers {
		m.servers[i].free = make([]time.Time, k)
	}
	return m
}

// Admit decides on a request before its work, as the emulator's Table
// service asks (its tables.Load): the partition (table, pk) when hasPK
// (an empty PartitionKey is a partition too), else the account alone,
// and its cost in entities (a query 0: admitted while one entity is
// left, and charged what it scanned by Charge). It returns nil or Azure's
// 503 ServerBusy.
func (m *Model) Admit(ctx context.Context, table, pk string, hasPK bool, cost int) *answer.Error {
	return m.throttle.AdmitCost(costOf(table, pk, hasPK, cost))
}

// Charge adds what a query page scanned, at least 1, to partition
// (table, pk) when hasPK, else to the account alone, after the page is
// read.
func (m *Model) Charge(table, pk string, hasPK bool, scanned int) {
	m.throttle.ChargeCost(costOf(table, pk, hasPK, max(scanned, 1)))
}

// costOf is n entities of partition (table, pk) when hasPK, else of the
// account alone.
func costOf(table, pk string, hasPK bool, n int) Cost {
	var c Cost
	if hasPK {
		c.Add(table, pk, n)
	} else {
		c.AddAccount(n)
	}
	return c
}

// Server returns the simulated partition server that serves partition
// (table, pk): a stable hash (FNV-1a) of the table's name in lower case
// and the PartitionKey, modulo the number of servers.
func (m *Model) Server(table, pk string) int {
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(table)))
	h.Write([]byte{0})
	h.Write([]byte(pk))
	return int(h.Sum64() % uint64(len(m.servers)))
}

// Servers returns the number of simulated partition servers.
func (m *Model) Servers() int { return len(m.servers) }

// Work blocks for the service time of a page that scanned entities on
// server (PageTime + scanned × EntityTime), queued behind the work the
// server already has: work is served in the order it arrives, Parallel
// pieces at once. It returns nil when the work is done, or ctx's error
// when ctx ends first; work that had not started then gives its time
// back when nothing queued behind it.
func (m *Model) Work(ctx context.Context, server, scanned int) error {
	if server < 0 || server >= len(m.servers) {
		return fmt.Errorf("load: Work on server %d, want 0 to %d", server, len(m.servers)-1)
	}
	now := m.now()
	slot, start, end := m.reserve(server, max(scanned, 0), now)
	d := end.Sub(now)
	err := sleep(ctx, d)
	if err != nil && d > 0 {
		// Cut short: the time not served is given back.
		m.release(server, slot, start, end)
	}
	return err
}

// reserve books the work on server's slot that frees first, from the
// later of now and that moment, and counts it.
func (m *Model) reserve(server, scanned int, now time.Time) (slot int, start, end time.Time) {
	s := &m.servers[server]
	s.mu.Lock()
	for i := range s.free {
		if s.free[i].Before(s.free[slot]) {
			slot = i
		}
	}
	start = s.free[slot]
	if start.Before(now) {
		start = now
	}
	end = start.Add(m.pageTime + time.Duration(scanned)*m.entityTime)
	s.free[slot] = end
	s.mu.Unlock()
	m.pages.Add(1)
	m.scanned.Add(int64(scanned))
	m.queued.Add(int64(start.Sub(now)))
	return slot, start, end
}

// release gives back what is left of work abandoned before its end, when
// it is still the last booked on its slot.
func (m *Model) release(server, slot int, start, end time.Time) {
	s := &m.servers[server]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free[slot].Equal(end) {
		if now := m.now(); now.After(start) {
			start = now
		}
		s.free[slot] = start
	}
}

// Stats returns what m has counted.
func (m *Model) Stats() ModelStats {
	return ModelStats{
		ThrottleStats: m.throttle.Stats(),
		Pages:         m.pages.Load(),
		Scanned:       m.scanned.Load(),
		Queued:        time.Duration(m.queued.Load()),
	}
}

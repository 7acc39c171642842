package azurite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/azrules"
)

// Azure-like load: the proxy in front of the table endpoint adds latency
// to every request and throttles at Azure Table storage's scalability
// targets, so tests and benchmarks see what a busy account sees. The
// model is in ThrottleOptions' doc comment.

// Azure Table storage's published scalability targets, for 1 KiB entities.
const (
	AzurePartitionEntitiesPerSecond = 2000
	AzureAccountEntitiesPerSecond   = 20000
)

// DefaultThrottleBurst is how much of a second's target a bucket holds
// when ThrottleOptions.Burst is zero.
const DefaultThrottleBurst = 100 * time.Millisecond

// ThrottleOptions sets the scalability targets the proxy throttles at.
// The zero value, &ThrottleOptions{}, is Azure's: 2,000 entities per
// second per partition (a table and a PartitionKey) and 20,000 per
// account.
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
//	query page                                          the entities it returns (at least 1)
//	anything else (tables, service properties)          1 for the account
//
// Azure counts the entities a query scans; the proxy cannot see what
// Azurite scanned, so a page costs the entities it returns, charged when
// it arrives. For point, range and partition queries that is what Azure
// counts; a filter that discards most of what it scans costs more on
// Azure. A query is admitted while the account, and the partition its
// filter names (PartitionKey eq '...' in a top-level conjunction), have
// at least one entity left.
//
// Over a partition's target the answer is 503, error code ServerBusy,
// "The server is busy."; over the account's, 503 ServerBusy, "Operations
// per second is over the account limit." (the message the REST API's
// common error codes give for an account over its request rate). Both
// carry Azure's JSON error body and headers and no Retry-After, like
// Azure; azcore's retry policy retries 503 with its own backoff. A
// throttled request, and one Strict refuses, costs nothing.
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
	// DefaultThrottleBurst.
	Burst time.Duration
}

// ProxyStats counts what the proxy in front of the table endpoint has
// done since Start. Every count is zero when no proxy runs.
type ProxyStats struct {
	// Forwarded is the number of requests passed on to Azurite.
	Forwarded int64
	// Refused is the number of requests Strict refused.
	Refused int64
	// Throttled is the number of requests answered 503 ServerBusy, of
	// which ThrottledByAccount were over the account's target and the
	// rest over a partition's.
	Throttled, ThrottledByAccount int64
	// Entities is the number of entities charged to the throttle: those
	// of admitted writes and transactions, those the query pages
	// returned, and one for each other request (see Options.Throttle).
	// It stays zero without Throttle.
	Entities int64
	// Abandoned is the number of requests whose client gave up (its
	// context ended) while the proxy held them for Options.Latency; they
	// were neither answered nor forwarded.
	Abandoned int64
}

// Stats returns what the table proxy has counted. A benchmark reads it
// before and after its loop and reports the difference.
func (i *Instance) Stats() ProxyStats {
	if i.proxy == nil {
		return ProxyStats{}
	}
	c := &i.proxy.stats
	return ProxyStats{
		Forwarded:          c.forwarded.Load(),
		Refused:            c.refused.Load(),
		Throttled:          c.throttled.Load(),
		ThrottledByAccount: c.throttledAccount.Load(),
		Entities:           c.entities.Load(),
		Abandoned:          c.abandoned.Load(),
	}
}

type proxyCounters struct {
	forwarded, refused, throttled, throttledAccount, entities, abandoned atomic.Int64
}

// delay holds r for the latency: Latency plus a uniform random part of
// LatencyJitter. It returns false when r's context ends first.
func (p *tableProxy) delay(r *http.Request) bool {
	d := p.latency
	if p.jitter > 0 {
		d += time.Duration(rand.Int64N(int64(p.jitter)))
	}
	if d <= 0 {
		return r.Context().Err() == nil
	}
	// net/http notices a client that hangs up only once the handler has
	// read the request's body: read it now (readBody puts it back).
	readBody(r)
	ctx := r.Context()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// partition names a partition: the table (lower case, as Azure compares
// table names) and the PartitionKey.
type partition struct{ table, pk string }

// charge is what a request costs: entities per partition, and in all
// (the account's share, at least the partitions' sum).
type charge struct {
	parts map[partition]int
	total int
}

func (c *charge) add(table, pk string, n int) {
	if c.parts == nil {
		c.parts = map[partition]int{}
	}
	c.parts[partition{strings.ToLower(table), pk}] += n
	c.total += n
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

func newLevel(target int, def int, burst time.Duration) level {
	switch {
	case target < 0:
		return level{}
	case target == 0:
		target = def
	}
	r := float64(target)
	return level{rate: r, capacity: math.Max(1, r*burst.Seconds())}
}

// throttle holds the buckets of one proxy.
type throttle struct {
	part, acct level

	mu        sync.Mutex
	account   bucket
	parts     map[partition]*bucket
	lastSweep time.Time
}

// sweepAbove is the number of partition buckets above which full (idle)
// ones are dropped, at most once a second.
const sweepAbove = 4096

func newThrottle(o ThrottleOptions) *throttle {
	burst := o.Burst
	if burst <= 0 {
		burst = DefaultThrottleBurst
	}
	t := &throttle{
		part:  newLevel(o.PartitionEntitiesPerSecond, AzurePartitionEntitiesPerSecond, burst),
		acct:  newLevel(o.AccountEntitiesPerSecond, AzureAccountEntitiesPerSecond, burst),
		parts: map[partition]*bucket{},
	}
	t.account = bucket{tokens: t.acct.capacity, last: time.Now()}
	return t
}

// verdict is the throttle's answer to a request.
type verdict int

const (
	admitted verdict = iota
	overPartition
	overAccount
)

// admit decides on c at now and, when every bucket admits it, takes its
// cost from each.
func (t *throttle) admit(c charge, now time.Time) verdict {
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

// settle takes c without a decision: a query page's entities, known only
// once Azurite has answered.
func (t *throttle) settle(c charge, now time.Time) {
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
func (t *throttle) take(c charge) {
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
func (t *throttle) bucket(p partition, now time.Time) *bucket {
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

// queryKey marks, in a forwarded query's context, what settleQuery
// charges once the page arrives.
type queryKey struct{}

// pendingQuery is a forwarded query: its table, and the partition its
// filter names ("" with named false when none).
type pendingQuery struct {
	table, pk string
	named     bool
}

// admit applies the throttle to r. It returns the request to forward (a
// query carries its pendingQuery in its context), or Azure's answer.
func (p *tableProxy) admit(r *http.Request) (*http.Request, *azrules.Error) {
	c, q := costOf(r)
	switch p.throttle.admit(c, time.Now()) {
	case overPartition:
		p.stats.throttled.Add(1)
		return r, azrules.ServerBusy()
	case overAccount:
		p.stats.throttled.Add(1)
		p.stats.throttledAccount.Add(1)
		return r, azrules.AccountOverLimit()
	}
	p.stats.entities.Add(int64(c.total))
	if q != nil {
		r = r.WithContext(context.WithValue(r.Context(), queryKey{}, q))
	}
	return r, nil
}

// costOf is what r costs at admission, and for a query of entities what
// to charge when its page arrives (the cost at admission is then zero).
func costOf(r *http.Request) (charge, *pendingQuery) {
	var c charge
	res, ok := parseResource(r.URL)
	if !ok || res.name == "" || res.name == "Tables" {
		c.total = 1
		return c, nil
	}
	switch {
	case r.Method == http.MethodPost && res.name == "$batch":
		body, ok := readBody(r)
		if !ok {
			c.total = 1
			return c, nil
		}
		ops, ok := parseBatch(r.Header.Get("Content-Type"), body)
		if !ok || len(ops) == 0 {
			c.total = 1
			return c, nil
		}
		for _, op := range ops {
			c.add(op.Table, op.PartitionKey, 1)
		}
	case res.hasKeys:
		c.add(res.name, res.pk, 1)
	case r.Method == http.MethodGet && !strings.HasPrefix(res.name, "$"):
		q := &pendingQuery{table: res.name}
		q.pk, q.named = filterPartition(r.URL.Query().Get("$filter"))
		if q.named {
			c.add(res.name, q.pk, 0)
		}
		return c, q
	case isEntityWrite(r.Method, res):
		body, ok := readBody(r)
		var ent entity.Entity
		if !ok || ent.UnmarshalJSON(body) != nil {
			c.total = 1 // a body Azurite will refuse, or too large to read
			return c, nil
		}
		c.add(res.name, ent.PartitionKey, 1)
	default:
		c.total = 1
	}
	return c, nil
}

// maxCountedPage bounds the query page the proxy reads to count its
// entities; a larger one is forwarded uncounted and costs 1.
const maxCountedPage = 32 << 20

// settleQuery is the reverse proxy's ModifyResponse: a forwarded query's
// page is read (and put back byte for byte), and its entities charged.
func (p *tableProxy) settleQuery(resp *http.Response) error {
	q, ok := resp.Request.Context().Value(queryKey{}).(*pendingQuery)
	if !ok {
		return nil
	}
	var c charge
	if resp.StatusCode == http.StatusOK {
		if buf, err := io.ReadAll(io.LimitReader(resp.Body, maxCountedPage+1)); err != nil || len(buf) > maxCountedPage {
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
		} else {
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(buf))
			var page struct {
				Value []struct {
					PartitionKey *string
				} `json:"value"`
			}
			if json.Unmarshal(buf, &page) == nil {
				for _, e := range page.Value {
					switch {
					case e.PartitionKey != nil:
						c.add(q.table, *e.PartitionKey, 1)
					case q.named:
						c.add(q.table, q.pk, 1)
					default:
						c.total++
					}
				}
			}
		}
	}
	if c.total == 0 {
		if q.named {
			c.add(q.table, q.pk, 1)
		} else {
			c.total = 1
		}
	}
	p.throttle.settle(c, time.Now())
	p.stats.entities.Add(int64(c.total))
	return nil
}

// filterPartition returns the PartitionKey an OData filter names in a
// conjunction at its top level (PartitionKey eq 'x' and ...), looking
// inside parentheses; a filter with an `or` at its top level names none.
func filterPartition(f string) (string, bool) {
	f = strings.TrimSpace(f)
	for len(f) > 1 && f[0] == '(' && closingParen(f, 0) == len(f)-1 {
		f = strings.TrimSpace(f[1 : len(f)-1])
	}
	if f == "" || len(splitTop(f, " or ")) > 1 {
		return "", false
	}
	parts := splitTop(f, " and ")
	if len(parts) == 1 {
		const prefix = "PartitionKey eq "
		if !strings.HasPrefix(f, prefix) {
			return "", false
		}
		pk, rest, ok := keyLiteral(strings.TrimSpace(f[len(prefix):]), "")
		return pk, ok && strings.TrimSpace(rest) == ""
	}
	for _, part := range parts {
		if pk, ok := filterPartition(part); ok {
			return pk, true
		}
	}
	return "", false
}

// splitTop splits f at sep outside string literals and parentheses.
func splitTop(f, sep string) []string {
	var parts []string
	depth, in, start := 0, false, 0
	for i := 0; i < len(f); i++ {
		switch c := f[i]; {
		case c == '\'':
			in = !in // '' inside a literal toggles twice
		case in:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(f[i:], sep):
			parts = append(parts, f[start:i])
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(parts, f[start:])
}

// closingParen returns the index of the parenthesis that closes the one
// at open, outside string literals, or -1.
func closingParen(f string, open int) int {
	depth, in := 0, false
	for i := open; i < len(f); i++ {
		switch c := f[i]; {
		case c == '\'':
			in = !in
		case in:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

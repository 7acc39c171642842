package azurite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/load"
	"github.com/tablekit/tablekit/entity"
)

// Azure-like load: the proxy in front of the table endpoint adds latency
// to every request and throttles at Azure Table storage's scalability
// targets, so tests and benchmarks see what a busy account sees. The
// model is in ThrottleOptions' doc comment. The mechanism (the latency,
// the token buckets, their answers and counts) is emulator/load's,
// shared with tablekit's emulator; this file says what a proxied request
// costs.

// Azure Table storage's published scalability targets, for 1 KiB entities.
const (
	AzurePartitionEntitiesPerSecond = load.AzurePartitionEntitiesPerSecond
	AzureAccountEntitiesPerSecond   = load.AzureAccountEntitiesPerSecond
)

// DefaultThrottleBurst is how much of a second's target a bucket holds
// when ThrottleOptions.Burst is zero.
const DefaultThrottleBurst = load.DefaultBurst

// ThrottleOptions sets the scalability targets the proxy throttles at.
// The zero value, &ThrottleOptions{}, is Azure's: 2,000 entities per
// second per partition (a table and a PartitionKey) and 20,000 per
// account. It is the throttle tablekit's emulator uses too; its doc
// comment (in emulator/load) gives the model:
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
type ThrottleOptions = load.ThrottleOptions

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
	s := ProxyStats{
		Forwarded: c.forwarded.Load(),
		Refused:   c.refused.Load(),
		Abandoned: c.abandoned.Load(),
	}
	if i.proxy.throttle != nil {
		t := i.proxy.throttle.Stats()
		s.Throttled, s.ThrottledByAccount, s.Entities = t.Throttled, t.ThrottledByAccount, t.Entities
	}
	return s
}

type proxyCounters struct {
	forwarded, refused, abandoned atomic.Int64
}

// delay holds r for the latency (Options.Latency and LatencyJitter). It
// returns false when r's context ends first.
func (p *tableProxy) delay(r *http.Request) bool {
	if p.latency.Zero() {
		return r.Context().Err() == nil
	}
	// net/http notices a client that hangs up only once the handler has
	// read the request's body: read it now (readBody puts it back).
	readBody(r)
	return p.latency.Wait(r.Context()) == nil
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
func (p *tableProxy) admit(r *http.Request) (*http.Request, *answer.Error) {
	c, q := costOf(r)
	if e := p.throttle.AdmitCost(c); e != nil {
		return r, e
	}
	if q != nil {
		r = r.WithContext(context.WithValue(r.Context(), queryKey{}, q))
	}
	return r, nil
}

// costOf is what r costs at admission, and for a query of entities what
// to charge when its page arrives (the cost at admission is then zero).
func costOf(r *http.Request) (load.Cost, *pendingQuery) {
	var c load.Cost
	res, ok := answer.ParseTablePath(r.URL.EscapedPath())
	if !ok || res.Name == "" || res.Name == "Tables" {
		c.AddAccount(1)
		return c, nil
	}
	switch {
	case r.Method == http.MethodPost && res.Name == "$batch":
		body, ok := readBody(r)
		if !ok {
			c.AddAccount(1)
			return c, nil
		}
		ops, ok := parseBatch(r.Header.Get("Content-Type"), body)
		if !ok || len(ops) == 0 {
			c.AddAccount(1)
			return c, nil
		}
		for _, op := range ops {
			c.Add(op.Table, op.PartitionKey, 1)
		}
	case res.HasKeys:
		c.Add(res.Name, res.PartitionKey, 1)
	case r.Method == http.MethodGet && !strings.HasPrefix(res.Name, "$"):
		q := &pendingQuery{table: res.Name}
		q.pk, q.named = filterPartition(r.URL.Query().Get("$filter"))
		if q.named {
			c.Add(res.Name, q.pk, 0)
		}
		return c, q
	case isEntityWrite(r.Method, res):
		body, ok := readBody(r)
		var ent entity.Entity
		if !ok || ent.UnmarshalJSON(body) != nil {
			c.AddAccount(1) // a body Azurite will refuse, or too large to read
			return c, nil
		}
		c.Add(res.Name, ent.PartitionKey, 1)
	default:
		c.AddAccount(1)
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
	var c load.Cost
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
						c.Add(q.table, *e.PartitionKey, 1)
					case q.named:
						c.Add(q.table, q.pk, 1)
					default:
						c.AddAccount(1)
					}
				}
			}
		}
	}
	if c.Total() == 0 {
		if q.named {
			c.Add(q.table, q.pk, 1)
		} else {
			c.AddAccount(1)
		}
	}
	p.throttle.ChargeCost(c)
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
		pk, rest, ok := answer.Unquote(strings.TrimSpace(f[len(prefix):]))
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

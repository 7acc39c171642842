package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// isBatch matches entity group transactions (a POST to /$batch).
var isBatch = faults.Request(http.MethodPost, "/$batch")

// throttledTable returns a table on an account whose transactions get the
// faults of rules, with azcore retrying as retry says, and a counter of
// every HTTP attempt (those the faults answer included). The policies of
// seen see every attempt too; those of sent only those that reach the
// service.
func throttledTable[T any](t *testing.T, retry policy.RetryOptions, seed uint64, rules []faults.Rule, seen, sent []policy.Policy) (*patterns.Table[T], *faults.Policy, *tablekit.RequestCounter) {
	t.Helper()
	fp, err := faults.New(seed, rules...)
	must(t, err)
	c := &tablekit.RequestCounter{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry:            retry,
		PerRetryPolicies: slices.Concat([]policy.Policy{c}, seen, []policy.Policy{fp}, sent),
	}})
	tbl, err := patterns.NewTable[T](acct, testenv.TableName(t), tableOpts(t, nil))
	must(t, err)
	fp.SetEnabled(false)
	must(t, tbl.CreateIfNotExists(context.Background(), nil))
	fp.SetEnabled(true)
	c.Reset()
	return tbl, fp, c
}

// throttleRules answers rate of the transactions with Azure's and Cosmos
// DB's throttling: 503 ServerBusy, 429 and 500 OperationTimedOut, each
// half before the service sees the request and half after it applied it
// (the answer lost).
func throttleRules(rate float64) []faults.Rule {
	var rules []faults.Rule
	for _, k := range []faults.Kind{faults.Status503, faults.Status429, faults.Status500} {
		code := ""
		if k == faults.Status500 {
			code = "OperationTimedOut"
		}
		for _, after := range []bool{false, true} {
			rules = append(rules, faults.Rule{Kind: k, Rate: rate / 6, After: after, Match: isBatch, Code: code})
		}
	}
	return rules
}

// eventsOf counts the injected faults that were a 500 after the service
// applied the request: the only ones a transaction is not resent after
// (reading back finds it applied).
func appliedTimeouts(fp *faults.Policy) int {
	n := 0
	for _, e := range fp.Events() {
		if e.Kind == faults.Status500 && e.After {
			n++
		}
	}
	return n
}

// Under heavy throttling (half of the transactions answered 503, 429 or
// 500 OperationTimedOut, half of those after the service applied them),
// with azcore's default retry options and fast ones, a bulk insert and a
// bulk upsert write every entity exactly once: no failure (an insert
// never meets its own earlier attempt as ErrAlreadyExists), every entity
// stored with its content, BulkResult.Throttled counting every throttling
// answer, and the transactions sent exactly the transactions needed plus
// one per throttling answer not settled as applied by reading back.
func TestBulkWriteThrottledLandsEveryEntityOnce(t *testing.T) {
	t.Parallel()
	type size struct{ parts, per int }
	inRetryModes(t, func(t *testing.T, mode faults.RetryMode, sz size) {
		for _, how := range []struct {
			insert, writer bool
		}{{true, false}, {false, false}, {true, true}} {
			insert := how.insert
			name := "upsert"
			if insert {
				name = "insert"
			}
			if how.writer {
				name += "/BulkWriter"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // each on its own table, with faults of its own
				ctx := context.Background()
				tbl, fp, c := throttledTable[Employee](t, mode.Retry, faultSeed(t, 26), throttleRules(0.5), nil, nil)
				var items []Employee
				for i := range sz.per {
					for p := range sz.parts {
						items = append(items, Employee{PartitionKey: fmt.Sprintf("p%d", p), RowKey: fmt.Sprintf("%05d", i), Age: p*sz.per + i})
					}
				}
				var res patterns.BulkResult
				var err error
				if how.writer {
					res, err = writeInPages(ctx, tbl, items, sz.parts*100, &patterns.BulkOptions{Insert: insert})
				} else {
					res, err = tbl.BulkWrite(ctx, items, &patterns.BulkOptions{Insert: insert})
				}
				if err != nil || res.Written != len(items) || len(res.Failed) != 0 {
					t.Fatalf("BulkWrite under throttling = %+v, %v; want all %d written", res.Written, err, len(items))
				}
				injected := int(fp.Injected())
				if injected < 4 {
					t.Fatalf("only %d throttling answers injected: the test proves nothing", injected)
				}
				if res.Throttled != injected {
					t.Errorf("BulkResult.Throttled = %d, want %d (every injected throttling answer)", res.Throttled, injected)
				}
				t.Logf("%d entities: %d throttling answers (%d settled as applied), %d requests", len(items), injected, appliedTimeouts(fp), res.Requests)
				txs := len(items) / 100
				timeouts := appliedTimeouts(fp)
				if want := txs + injected - timeouts; res.Requests != want {
					t.Errorf("Requests = %d, want %d (%d transactions + %d throttled - %d settled as applied)", res.Requests, want, txs, injected, timeouts)
				}
				// Every attempt is a send, or a read-back of a 500 (one
				// page); an insert reads back too when its resend meets
				// an attempt that had landed.
				got := int(c.Count())
				if min := res.Requests + timeouts; got < min || !insert && got != min {
					t.Errorf("%d HTTP requests, want %d (sends + one read-back per applied 500)%s", got, min, map[bool]string{true: " or more", false: ""}[insert])
				}
				fp.SetEnabled(false)
				for p := range sz.parts {
					rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq(fmt.Sprintf("p%d", p)), nil))
					must(t, err)
					if len(rows) != sz.per {
						t.Fatalf("partition p%d holds %d entities, want %d", p, len(rows), sz.per)
					}
					for i, r := range rows {
						if r.Age != p*sz.per+i {
							t.Fatalf("p%d/%s: Age %d, want %d", p, r.RowKey, r.Age, p*sz.per+i)
						}
					}
				}
			})
		}
	}, size{parts: 8, per: 500}, size{parts: 8, per: 200})
}

// A throttling answer that may have been applied (500 OperationTimedOut
// after the service wrote the transaction) is settled by reading back,
// not resent: an insert does not meet its own write. One that was not
// (before the service saw it, or 503 and 429) is resent; a 503 whose
// request had landed after all is met by the resend and settled as
// azcore's own retry would be. Request counts are exact.
func TestBulkWriteThrottleSettlesLostAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		rule          faults.Rule
		sends, checks int // transactions sent; HTTP requests in all
	}{
		{"500-timeout-applied", faults.Rule{Kind: faults.Status500, Code: "OperationTimedOut", After: true}, 1, 2},
		{"500-timeout-not-sent", faults.Rule{Kind: faults.Status500, Code: "OperationTimedOut"}, 2, 2},
		{"503-refused", faults.Rule{Kind: faults.Status503}, 2, 2},
		{"429-refused", faults.Rule{Kind: faults.Status429}, 2, 2},
		// The resend meets the landed insert (409) and reads back.
		{"503-applied-anyway", faults.Rule{Kind: faults.Status503, After: true}, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rule := tc.rule
			rule.Rate, rule.Match = 1, faults.Once(isBatch)
			tbl, _, c := throttledTable[Employee](t, fastFaultRetry, 1, []faults.Rule{rule}, nil, nil)
			items := make([]Employee, 100)
			for i := range items {
				items[i] = Employee{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i), Age: i}
			}
			res, err := tbl.BulkWrite(ctx, items, &patterns.BulkOptions{Insert: true})
			if errors.Is(err, tablekit.ErrAlreadyExists) {
				t.Fatalf("the insert met its own write: %v", err)
			}
			if err != nil || res.Written != 100 || res.Throttled != 1 || res.Requests != tc.sends {
				t.Fatalf("BulkWrite = {Written %d, Requests %d, Throttled %d}, %v; want 100, %d, 1", res.Written, res.Requests, res.Throttled, err, tc.sends)
			}
			requests(t, c, int64(tc.checks), "the bulk insert")
			rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("p"), nil))
			if err != nil || len(rows) != 100 {
				t.Fatalf("%d entities stored, %v; want 100", len(rows), err)
			}
		})
	}
}

// batchTimes records when each transaction attempt passes it, and how
// many were in flight then (itself included).
type batchTimes struct {
	mu       sync.Mutex
	at       []time.Time
	inflight []int
	now      atomic.Int32
}

func (b *batchTimes) Do(req *policy.Request) (*http.Response, error) {
	if !isBatch(req.Raw()) {
		return req.Next()
	}
	n := b.now.Add(1)
	b.mu.Lock()
	b.at = append(b.at, time.Now())
	b.inflight = append(b.inflight, int(n))
	b.mu.Unlock()
	defer b.now.Add(-1)
	return req.Next()
}

// The pause after a throttling answer is the one its headers ask for:
// Cosmos DB's x-ms-retry-after-ms and Retry-After in seconds; without
// either it is the backoff from the account's retry delay (1 ms here).
// It runs alone, not in parallel with the package's other tests: it
// bounds the time between two attempts. Its three cases, which wait and
// use next to no CPU, run side by side.
func TestBulkWriteThrottleHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     faults.Kind
		header   http.Header
		min, max time.Duration
	}{
		{"x-ms-retry-after-ms", faults.Status429, http.Header{"x-ms-retry-after-ms": {"400"}}, 400 * time.Millisecond, 1500 * time.Millisecond},
		{"Retry-After", faults.Status503, http.Header{"Retry-After": {"1"}}, time.Second, 2 * time.Second},
		{"none", faults.Status503, nil, 0, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			times := &batchTimes{}
			rule := faults.Rule{Kind: tc.kind, Rate: 1, Match: faults.Once(isBatch), Header: tc.header}
			tbl, _, _ := throttledTable[Employee](t, fastFaultRetry, 1, []faults.Rule{rule}, []policy.Policy{times}, nil)
			items := []Employee{{PartitionKey: "p", RowKey: "1"}, {PartitionKey: "p", RowKey: "2"}}
			res, err := tbl.BulkWrite(context.Background(), items, nil)
			if err != nil || res.Written != 2 || res.Throttled != 1 || res.Requests != 2 {
				t.Fatalf("BulkWrite = %+v, %v; want 2 written in 2 requests, 1 throttled", res, err)
			}
			if len(times.at) != 2 {
				t.Fatalf("%d transaction attempts, want 2", len(times.at))
			}
			if gap := times.at[1].Sub(times.at[0]); gap < tc.min || gap > tc.max {
				t.Errorf("resent after %v, want between %v and %v", gap, tc.min, tc.max)
			}
		})
	}
}

// When the service says the account is over its limit, BulkWrite halves
// the transactions it keeps in flight (to 4 of 8 or fewer), paces them,
// and raises the pace again while the service keeps up, until 5 or more
// are in flight again. The service answers 20 ms late, as across a
// network: on this machine's loopback a pace of thousands of transactions
// a second keeps fewer than 2 in flight.
// It runs alone, not in parallel: the pace it watches follows the
// service's answer times.
func TestBulkWriteThrottleLowersAndRestoresConcurrency(t *testing.T) {
	times := &batchTimes{}
	var seen atomic.Int32
	rule := faults.Rule{
		Kind: faults.Status503, Rate: 1, Message: "Operations per second is over the account limit.",
		Header: http.Header{"x-ms-retry-after-ms": {"50"}},
		// The first 8 transactions are refused.
		Match: func(r *http.Request) bool { return isBatch(r) && seen.Add(1) <= 8 },
	}
	// The attempt counter (times) sits after the faults: it sees only what
	// reaches the service.
	tbl, _, _ := throttledTable[Employee](t, fastFaultRetry, 1, []faults.Rule{rule}, nil, []policy.Policy{times, batchLatency(20 * time.Millisecond)})
	const parts = 160
	var items []Employee
	for p := range parts {
		for i := range 100 {
			items = append(items, Employee{PartitionKey: fmt.Sprintf("p%03d", p), RowKey: fmt.Sprintf("%03d", i)})
		}
	}
	res, err := tbl.BulkWrite(context.Background(), items, nil)
	if err != nil || res.Written != len(items) || res.Throttled != 8 || res.Requests != parts+8 {
		t.Fatalf("BulkWrite = {Written %d, Requests %d, Throttled %d}, %v; want %d, %d, 8", res.Written, res.Requests, res.Throttled, err, len(items), parts+8)
	}
	if len(times.inflight) != parts {
		t.Fatalf("%d transactions reached the service, want %d", len(times.inflight), parts)
	}
	first := times.inflight[:8]
	for _, n := range first {
		if n > 4 {
			t.Fatalf("in flight when the first transactions after the throttling left: %v; want at most 4 (the window halved)", first)
		}
	}
	peak := 0
	for _, n := range times.inflight[3*parts/4:] {
		peak = max(peak, n)
	}
	if peak < 5 {
		t.Errorf("at most %d transactions in flight in the job's last quarter, want 5 or more (the pace raised again); all: %v", peak, times.inflight)
	}
}

// batchLatency delays every transaction by d before it reaches the
// service.
type batchLatency time.Duration

func (d batchLatency) Do(req *policy.Request) (*http.Response, error) {
	if isBatch(req.Raw()) {
		select {
		case <-time.After(time.Duration(d)):
		case <-req.Raw().Context().Done():
			return nil, req.Raw().Context().Err()
		}
	}
	return req.Next()
}

// DeleteWhere shares BulkWrite's sender: under throttling it deletes every
// matching entity, counts the throttling answers, and reports no failure.
func TestDeleteWhereThrottled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, fp, _ := throttledTable[Employee](t, fastFaultRetry, faultSeed(t, 7), throttleRules(0.5), nil, nil)
	fp.SetEnabled(false)
	var items []Employee
	for i := range 300 {
		items = append(items, Employee{PartitionKey: fmt.Sprintf("p%d", i%3), RowKey: fmt.Sprintf("%03d", i)})
	}
	if _, err := tbl.BulkWrite(ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	fp.SetEnabled(true)
	before := fp.Injected()
	res, err := tbl.DeleteWhere(ctx, keys.PK().Ge("p"), &patterns.WhereOptions{AllowTableScan: true})
	if err != nil || res.Deleted != 300 || res.Gone != 0 {
		t.Fatalf("DeleteWhere under throttling = %+v, %v; want 300 deleted", res, err)
	}
	if injected := int(fp.Injected() - before); res.Throttled != injected || injected == 0 {
		t.Errorf("WhereResult.Throttled = %d, want %d (every injected answer, at least one)", res.Throttled, injected)
	}
	fp.SetEnabled(false)
	n, err := tbl.Count(ctx, keys.PK().Ge("p"), &patterns.WhereOptions{AllowTableScan: true})
	if err != nil || n != 0 {
		t.Errorf("Count after DeleteWhere = %d, %v; want 0", n, err)
	}
}

// writeInPages writes items through one BulkWriter, as concurrent Writes
// of page entities each (a copy's pages), and returns the writer's
// totals.
func writeInPages[T any](ctx context.Context, tbl *patterns.Table[T], items []T, page int, opts *patterns.BulkOptions) (patterns.BulkResult, error) {
	w, err := tbl.NewBulkWriter(ctx, opts)
	if err != nil {
		return patterns.BulkResult{}, err
	}
	errs := make(chan error, len(items)/page+1)
	var wg sync.WaitGroup
	for lo := 0; lo < len(items); lo += page {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.Write(items[lo:min(lo+page, len(items))])
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	res := w.Close()
	for err := range errs {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

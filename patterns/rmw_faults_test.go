package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The read-modify-writes of the index repositories run on wire's one
// modify loop. These tests run concurrent increments through a fault
// policy that loses responses (the service applies the write, the client
// sees a failure) with azcore's default retry options, whose first retry
// comes after about 0.8 s: long enough for other writers to move the
// entity on before the retry meets the write's own first attempt. Each
// increment must be applied exactly once, or be reported with
// tablekit.ErrOutcomeUnknown; never applied twice, never lost while
// reported as a success.

// defaultRetryFaultyAccount is faultyAccount with azcore's default retry
// options, its faults off until the test turns them on.
func defaultRetryFaultyAccount(t *testing.T, rate float64, seed uint64) (*tablekit.Account, *faults.Policy) {
	t.Helper()
	acct, fp := faultyAccount(t, faults.RetryMode{Name: "default-retry"}, rate, seed)
	fp.SetEnabled(false)
	return acct, fp
}

// tally counts, per counter, the increments reported done, those
// reported with tablekit.ErrOutcomeUnknown, and those that failed with a
// transient error (a read that failed through all of azcore's retries;
// a write's transient failure is settled or reported as unknown).
type tally struct {
	mu      sync.Mutex
	done    map[string]int
	unknown map[string]int
	failed  map[string]int
}

// hammer runs workers goroutines, each calling inc each times on the
// counters in turn, and tallies the outcomes; any other error fails the
// test.
func hammer(t *testing.T, workers, each int, counters []string, inc func(ctx context.Context, counter string) error) *tally {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := &tally{done: map[string]int{}, unknown: map[string]int{}, failed: map[string]int{}}
	concurrently(t, workers, func(w int) error {
		for i := range each {
			c := counters[(w+i)%len(counters)]
			if err := r.record(t, c, inc(ctx, c)); err != nil {
				return err
			}
		}
		return nil
	})
	return r
}

// record tallies the outcome of one increment of counter; an error that
// is neither ErrOutcomeUnknown nor transient is returned.
func (r *tally) record(t *testing.T, counter string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.done[counter]++
	case errors.Is(err, tablekit.ErrOutcomeUnknown):
		r.unknown[counter]++
		t.Logf("increment of %s: %v", counter, err)
	case tablekit.IsTransient(err):
		// A read that failed through all of azcore's retries: the
		// increment was not applied.
		r.failed[counter]++
		t.Logf("increment of %s failed: %v", counter, err)
	default:
		return fmt.Errorf("increment of %s: %w", counter, err)
	}
	return nil
}

// check compares a counter's stored value with the tally.
func (r *tally) check(t *testing.T, counter string, stored int) {
	t.Helper()
	done, unknown := r.done[counter], r.unknown[counter]
	t.Logf("%s: stored %d, %d increments done, %d with unknown outcome, %d failed", counter, stored, done, unknown, r.failed[counter])
	switch {
	case stored < done:
		t.Errorf("%s: stored %d < %d increments reported done: an increment reported done was lost", counter, stored, done)
	case stored > done+unknown:
		t.Errorf("%s: stored %d > %d done + %d unknown: an increment was applied twice", counter, stored, done, unknown)
	case unknown == 0 && stored != done:
		t.Errorf("%s: stored %d, want %d (no outcome was unknown)", counter, stored, done)
	}
}

// requireLostResponses fails the test when the policy lost no response:
// it would prove nothing.
func requireLostResponses(t *testing.T, fp *faults.Policy) {
	t.Helper()
	lost := 0
	for _, e := range fp.Events() {
		if e.After && e.Method != "GET" {
			lost++
		}
	}
	t.Logf("%d faults injected, %d of them lost responses of writes", fp.Injected(), lost)
	if lost == 0 {
		t.Fatal("no write's response was lost; the test proves nothing")
	}
}

func TestIndexedTableUpdateUnderLostResponsesDefaultRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, fp := defaultRetryFaultyAccount(t, 0.2, faultSeed(t, 11))
	// The age index's value changes with every increment: each update
	// deletes one copy and inserts another next to the primary's replace.
	x, err := patterns.NewIndexedTable(acct, testenv.TableName(t), []patterns.Index[Employee]{
		{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }},
		{Name: "age", Key: func(e *Employee) string { return keys.PadUint(uint64(e.Age), 4) }},
	}, &patterns.IndexedTableOptions{Primary: "empid", Table: tableOpts(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	counters := []string{"empid_1", "empid_2"}
	for i, rk := range counters {
		if err := x.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: rk, Email: strconv.Itoa(i) + "@contoso.com"}, nil); err != nil {
			t.Fatal(err)
		}
	}

	fp.SetEnabled(true)
	r := hammer(t, 5, 6, counters, func(ctx context.Context, rk string) error {
		_, err := x.Update(ctx, "Sales", rk, func(e *Employee) error { e.Age++; return nil }, nil)
		return err
	})
	fp.SetEnabled(false)
	requireLostResponses(t, fp)

	for i, rk := range counters {
		e, err := x.Get(ctx, "Sales", rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.check(t, rk, e.Age)
		// The copies moved with every write that landed: one per index.
		if got, err := x.Lookup(ctx, "email", "Sales", strconv.Itoa(i)+"@contoso.com", nil); err != nil || got.RowKey != rk {
			t.Errorf("%s by email = %+v, %v", rk, got, err)
		}
		found, err := patterns.Collect(x.Find(ctx, "age", "Sales", keys.PadUint(uint64(e.Age), 4), nil))
		n := 0
		for _, f := range found {
			if f.RowKey == rk {
				n++
			}
		}
		if err != nil || n != 1 {
			t.Errorf("%s by age %d = %+v, %v; want it once", rk, e.Age, found, err)
		}
	}
	rows, err := patterns.Collect(x.Table().Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{SelectAll: true}))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * len(counters); len(rows) != want {
		t.Errorf("%d rows in the partition, want %d (each primary and its two copies)", len(rows), want)
	}
}

func TestListIndexedTableUpdateUnderLostResponsesDefaultRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, fp := defaultRetryFaultyAccount(t, 0.15, faultSeed(t, 12))
	x, err := patterns.NewListIndexedTable(acct, testenv.TableName(t), patterns.ListIndex[Employee]{
		Name: "lastname", Prefix: "ln_", Key: func(e *Employee) string { return e.LastName },
	}, &patterns.ListIndexedTableOptions{Table: tableOpts(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	names := []string{"Jones", "Smith", "Hall"}
	counters := []string{"c1", "c2"}
	for _, rk := range counters {
		if err := x.Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: rk, LastName: names[0]}, nil); err != nil {
			t.Fatal(err)
		}
	}

	// Every increment moves the entity to another index entity: a
	// transaction over the entity and the two lists.
	fp.SetEnabled(true)
	r := hammer(t, 5, 6, counters, func(ctx context.Context, rk string) error {
		_, err := x.Update(ctx, "Sales", rk, func(e *Employee) error {
			e.Age++
			e.LastName = names[e.Age%len(names)]
			return nil
		}, nil)
		return err
	})
	fp.SetEnabled(false)
	requireLostResponses(t, fp)

	listed := map[string]string{}
	for _, name := range names {
		m, err := x.Members(ctx, "Sales", name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, mb := range m {
			rk := mb.RowKey
			if prev, dup := listed[rk]; dup {
				t.Errorf("%s is listed under %s and %s", rk, prev, name)
			}
			listed[rk] = name
		}
	}
	for _, rk := range counters {
		e, err := x.Get(ctx, "Sales", rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.check(t, rk, e.Age)
		if e.LastName != names[e.Age%len(names)] || listed[rk] != e.LastName {
			t.Errorf("%s: Age %d, LastName %q, listed under %q", rk, e.Age, e.LastName, listed[rk])
		}
	}
}

func TestDataSeriesAddUnderLostResponsesDefaultRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, fp := defaultRetryFaultyAccount(t, 0.2, faultSeed(t, 13))
	ds, err := patterns.NewDataSeries[int64](acct, testenv.TableName(t), 4, &patterns.DataSeriesOptions{Table: &patterns.TableOptions{MaxAttempts: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Table().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The series does not exist yet: the first adds race to create it.
	fp.SetEnabled(true)
	r := hammer(t, 5, 6, []string{"s1"}, func(ctx context.Context, rk string) error {
		_, err := ds.Add(ctx, "p", rk, 1, 1, nil)
		return err
	})
	fp.SetEnabled(false)
	requireLostResponses(t, fp)
	s, err := ds.Get(ctx, "p", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.check(t, "s1", int(s.Values[1]))
}

package patterns_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Azure may end a query page early (at a partition server's boundary,
// after five seconds) and may answer a page with no rows and a
// continuation. These tests run the whole-table operations on an emulator
// that does both (seeded: a failure repeats), over every skewed layout,
// and check them against the layout itself: every key exactly once,
// counts and sums equal. Each checks that pages did end early, some of
// them empty. The layouts run side by side, each on an emulator of its
// own: a layout's run waits mostly on its requests' round trips.

// earlyEnding starts an emulator whose query pages end early with
// probability 0.5, at partition servers' boundaries too (the scale model,
// its work taking no time and its targets off), and returns it with an
// account on it.
func earlyEnding(t *testing.T, seed int64) (*emulator.Instance, *tablekit.Account) {
	t.Helper()
	em := emulator.StartTB(t, &emulator.Options{
		EarlyEnd: &emulator.EarlyEnd{Seed: seed, Probability: 0.5},
		Scale:    &emulator.ScaleOptions{EntityTime: -1, Throttle: emulator.ThrottleOptions{PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: -1}},
	})
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	return em, acct
}

// endedEarly fails the test unless em ended pages early, some of them
// empty: a test of exactness under early ends that saw none proves
// nothing.
func endedEarly(t *testing.T, em *emulator.Instance) {
	t.Helper()
	e := em.EarlyEnds()
	if e.Pages == 0 || e.Empty == 0 {
		t.Errorf("the emulator ended %d pages early (%d empty): want both above 0", e.Pages, e.Empty)
	}
	t.Logf("%d pages ended early, %d of them empty", e.Pages, e.Empty)
}

// layoutRows are the rows of a layout: Age is the row's index, so a filter
// on Age selects a known set and the sum of Ages is known.
func layoutRows(l testenv.Layout) []Employee {
	var rows []Employee
	for i, k := range l.Keys() {
		rows = append(rows, Employee{PartitionKey: k[0], RowKey: k[1], FirstName: "F", Age: i})
	}
	return rows
}

// keyList returns the sorted keys of rows that keep selects.
func keyList(rows []Employee, keep func(Employee) bool) []string {
	var out []string
	for _, e := range rows {
		if keep == nil || keep(e) {
			out = append(out, e.PartitionKey+"\x00"+e.RowKey)
		}
	}
	slices.Sort(out)
	return out
}

// Every layout through the REST path; the skewed one through the
// aztables client (TableOptions.SDKPath) too.
func TestScanCountDeleteWhereExactWhenPagesEndEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type run struct {
		l   testenv.Layout
		sdk bool
	}
	var runs []run
	for _, l := range testenv.Layouts {
		runs = append(runs, run{l: l})
	}
	runs = append(runs, run{l: testenv.Layouts[len(testenv.Layouts)-1], sdk: true})
	for i, r := range runs {
		l := r.l
		name := l.Name
		if r.sdk {
			name += "/SDKPath"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			em, acct := earlyEnding(t, int64(i+1))
			tbl, err := patterns.NewTable[Employee](acct, "earlyend", &patterns.TableOptions{SDKPath: r.sdk})
			must(t, err)
			must(t, tbl.CreateIfNotExists(ctx, nil))
			rows := layoutRows(l)
			if _, err := tbl.BulkWrite(ctx, rows, nil); err != nil {
				t.Fatal(err)
			}
			want := keyList(rows, nil)
			wantSum := 0
			for _, e := range rows {
				wantSum += e.Age
			}

			// A sequential query.
			if got := keysOf(t, tbl); !slices.Equal(got, want) {
				t.Fatalf("Query read %d rows, want the %d written", len(got), len(want))
			}

			// The parallel scan, with work on each page so that it
			// splits while it runs (the first page held until a split
			// range's page arrives, 10 s at most): each key once, the
			// Ages' sum.
			var mu sync.Mutex
			sum := 0
			res, err := scanKeys(ctx, tbl, want, func(first bool) time.Duration {
				if first {
					return 10 * time.Second
				}
				return 2 * time.Millisecond
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Ranges < 2 {
				t.Errorf("the scan ran %d ranges; want it split while it ran", res.Ranges)
			}
			_, err = tbl.Scan(ctx, keys.Filter{}, func(_ context.Context, items []Employee) error {
				mu.Lock()
				defer mu.Unlock()
				for _, e := range items {
					sum += e.Age
				}
				return nil
			}, &patterns.ScanOptions{Parallel: 8, QueryOptions: patterns.QueryOptions{Top: 100}})
			if err != nil || sum != wantSum {
				t.Fatalf("Scan summed Ages to %d, %v; want %d", sum, err, wantSum)
			}

			// A scan stopped part way resumes from its last token.
			scanResumed(t, tbl, keys.Filter{}, want)

			// SplitScan's tokens, scanned each on its own.
			opts := patterns.ScanOptions{QueryOptions: patterns.QueryOptions{Top: 200}, Parallel: 2}
			tokens, err := tbl.SplitScan(ctx, keys.Filter{}, 8, &opts)
			must(t, err)
			got := scanTokens(t, tbl, tokens, opts)
			if !slices.Equal(got, want) {
				t.Fatalf("SplitScan's %d tokens read %d rows (%d distinct), want the %d written", len(tokens), len(got), len(slices.Compact(slices.Clone(got))), len(want))
			}

			// Count and DeleteWhere, sequential and parallel, with and
			// without a filter that leaves most rows out of most pages.
			half := len(rows) / 2
			low := keys.Prop("Age").Lt(half)
			for _, par := range []int{1, 8} {
				wo := &patterns.WhereOptions{AllowTableScan: true, Parallel: par}
				if n, err := tbl.Count(ctx, keys.Filter{}, wo); err != nil || n != len(rows) {
					t.Fatalf("Count (Parallel %d) = %d, %v; want %d", par, n, err, len(rows))
				}
				if n, err := tbl.Count(ctx, low, wo); err != nil || n != half {
					t.Fatalf("Count of Age < %d (Parallel %d) = %d, %v; want %d", half, par, n, err, half)
				}
			}
			wo := &patterns.WhereOptions{AllowTableScan: true, Parallel: 8}
			dr, err := tbl.DeleteWhere(ctx, low, wo)
			if err != nil || dr.Deleted != half || dr.Matched != half {
				t.Fatalf("DeleteWhere of Age < %d = %+v, %v; want %d deleted", half, dr, err, half)
			}
			if left := keysOf(t, tbl); !slices.Equal(left, keyList(rows, func(e Employee) bool { return e.Age >= half })) {
				t.Fatalf("%d rows left after DeleteWhere, want the %d of Age >= %d", len(left), len(rows)-half, half)
			}
			dr, err = tbl.DeleteWhere(ctx, keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true, Parallel: 1})
			if err != nil || dr.Deleted != len(rows)-half {
				t.Fatalf("sequential DeleteWhere of the rest = %+v, %v; want %d deleted", dr, err, len(rows)-half)
			}
			if left := keysOf(t, tbl); len(left) != 0 {
				t.Fatalf("%d rows left after DeleteWhere", len(left))
			}
			endedEarly(t, em)
		})
	}
}

// TestIndexMaintenanceExactWhenPagesEndEarly: on every layout, Verify of
// primaries written without their index finds every one of them, Rebuild
// makes the index whole, and after primaries are deleted behind the
// index's back Verify finds exactly their entries and Repair removes
// them, for the intra-partition index, the list index entities and the
// blob lists.
//
// Each repository runs on two of the layouts, the three taking turns, so
// every layout is under maintenance once: where keys lie matters only to
// the scan of the table every repository's maintenance reads through
// (scanRows, the engine TestScanCountDeleteWhereExactWhenPagesEndEarly
// proves on every layout), while what a repository does with the rows
// (audit, repair) does not depend on their order or their pages.
func TestIndexMaintenanceExactWhenPagesEndEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repos := []struct {
		name string
		// rk is the primary's RowKey for a layout's RowKey.
		rk func(string) string
		// entries is how many index entries (or list memberships) one
		// primary has.
		entries int
		open    func(acct *tablekit.Account, table string, t *testing.T) (maintainable, error)
	}{
		{"intra-partition index", func(rk string) string { return "empid_" + rk }, 2, func(acct *tablekit.Account, table string, _ *testing.T) (maintainable, error) {
			return patterns.NewIndexedTable(acct, table, []patterns.Index[ixEmployee]{ixEmailIndex(), ixLastNameIndex()}, &patterns.IndexedTableOptions{Primary: "empid"})
		}},
		{"list index entities", func(rk string) string { return "e" + rk }, 1, func(acct *tablekit.Account, table string, _ *testing.T) (maintainable, error) {
			return patterns.NewListIndexedTable(acct, table, lastNameList(), nil)
		}},
		{"blob lists", func(rk string) string { return "e" + rk }, 1, func(acct *tablekit.Account, table string, t *testing.T) (maintainable, error) {
			return patterns.NewBlobIndexedTable(acct, table, "lists", lastNameList(), nil)
		}},
	}
	for i, l := range testenv.Layouts {
		j := i % len(repos)
		r := repos[j]
		t.Run(l.Name+"/"+r.name, func(t *testing.T) {
			t.Parallel()
			em, acct := earlyEnding(t, int64(100*i+j+1))
			x, err := r.open(acct, "primaries", t)
			must(t, err)
			if c, ok := x.(interface {
				CreateIfNotExists(context.Context, *patterns.CreateOptions) error
			}); ok {
				must(t, c.CreateIfNotExists(ctx, nil))
			}
			var rows []ixEmployee
			for n, k := range l.Keys() {
				rows = append(rows, ixEmployee{PartitionKey: k[0], RowKey: r.rk(k[1]), EmployeeID: fmt.Sprint(n),
					FirstName: "F", LastName: fmt.Sprintf("Name%d", n%7), Email: fmt.Sprintf("e%d@contoso.com", n), Age: n})
			}
			// Written behind the index's back: every entry missing.
			if _, err := x.Table().BulkWrite(ctx, rows, nil); err != nil {
				t.Fatal(err)
			}
			rep, err := x.Verify(ctx, nil)
			must(t, err)
			if rep.Primaries != len(rows) || len(rep.Missing) != r.entries*len(rows) || len(rep.Stale)+len(rep.Orphans) != 0 {
				t.Fatalf("Verify of unindexed primaries: %d primaries, %d missing, %d stale, %d orphans; want %d, %d, 0, 0",
					rep.Primaries, len(rep.Missing), len(rep.Stale), len(rep.Orphans), len(rows), r.entries*len(rows))
			}
			must(t, x.Rebuild(ctx, nil))
			rep, err = x.Verify(ctx, nil)
			must(t, err)
			if rep.Primaries != len(rows) || !rep.OK() {
				t.Fatalf("Verify after Rebuild: %d primaries, %d missing, %d stale, %d orphans; want %d and none", rep.Primaries, len(rep.Missing), len(rep.Stale), len(rep.Orphans), len(rows))
			}

			// Every tenth primary deleted behind the index's back.
			gone := 0
			for n := 0; n < len(rows); n += 10 {
				if ok, err := x.Table().DeleteIfExists(ctx, rows[n].PartitionKey, rows[n].RowKey, nil); err != nil || !ok {
					t.Fatalf("delete primary %d: existed %v, %v", n, ok, err)
				}
				gone++
			}
			left := len(rows) - gone
			rep, err = x.Verify(ctx, nil)
			must(t, err)
			if rep.Primaries != left || len(rep.Orphans) != r.entries*gone || len(rep.Missing)+len(rep.Stale) != 0 {
				t.Fatalf("Verify after deletes: %d primaries, %d orphans, %d missing, %d stale; want %d, %d, 0, 0",
					rep.Primaries, len(rep.Orphans), len(rep.Missing), len(rep.Stale), left, r.entries*gone)
			}
			rep, err = x.Repair(ctx, nil)
			must(t, err)
			if len(rep.Skipped) != 0 {
				t.Errorf("Repair skipped %d entries", len(rep.Skipped))
			}
			rep, err = x.Verify(ctx, nil)
			must(t, err)
			if rep.Primaries != left || !rep.OK() {
				t.Fatalf("Verify after Repair: %d primaries, %d missing, %d stale, %d orphans; want %d and none", rep.Primaries, len(rep.Missing), len(rep.Stale), len(rep.Orphans), left)
			}
			endedEarly(t, em)
		})
	}
}

package patterns_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
)

// The helpers the index repositories' Rebuild, Verify and Repair tests
// share.

// maintainable is the maintenance surface every index repository has.
type maintainable interface {
	Rebuild(ctx context.Context, opts *patterns.MaintenanceOptions) error
	Verify(ctx context.Context, opts *patterns.MaintenanceOptions) (*patterns.IndexReport, error)
	Repair(ctx context.Context, opts *patterns.MaintenanceOptions) (*patterns.IndexReport, error)
	Table() *patterns.Table[ixEmployee]
}

// mtEntries renders a report's entries, one "problem index value
// primary-RowKey" a line, sorted, so a test states exactly what it wants
// found.
func mtEntries(entries []patterns.IndexEntry) string {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = fmt.Sprintf("%s %s %s %s/%s", e.Problem, e.Index, e.Value, e.Primary.PartitionKey, e.Primary.RowKey)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// mtVerify runs Verify, checks it took reqs requests (-1: any) and
// counted primaries, and returns the rendered entries.
func mtVerify(t *testing.T, x maintainable, c *tablekit.RequestCounter, reqs int64, primaries int) string {
	t.Helper()
	rep, err := x.Verify(context.Background(), mtOptions(reqs))
	must(t, err)
	if reqs >= 0 {
		requests(t, c, reqs, "Verify")
	}
	c.Reset()
	if rep.Primaries != primaries {
		t.Errorf("Verify counted %d primaries, want %d", rep.Primaries, primaries)
	}
	if got := len(rep.Missing) + len(rep.Stale) + len(rep.Orphans); (got == 0) != rep.OK() {
		t.Errorf("Verify: OK() = %v with %d problems", rep.OK(), got)
	}
	return mtEntries(rep.Entries)
}

// mtOptions are the options of a call whose requests are counted (reqs
// >= 0): one sequential scan range, the budget each method states. The
// others read the table in parallel ranges, the default.
func mtOptions(reqs int64) *patterns.MaintenanceOptions {
	if reqs < 0 {
		return nil
	}
	return &patterns.MaintenanceOptions{ScanParallel: 1}
}

// mtWant fails the test when the rendered entries are not want (lines in
// any order). It sorts a copy: a caller's want... may be a package's
// slice, which tests running at once pass (sorting it in place was a data
// race between TestListIndexOption1VerifyRepair and Option2's).
func mtWant(t *testing.T, what, got string, want ...string) {
	t.Helper()
	if w := strings.Join(slices.Sorted(slices.Values(want)), "\n"); got != w {
		t.Errorf("%s found:\n%s\nwant:\n%s", what, got, w)
	}
}

// mtRepair runs Repair, checks it took reqs requests (-1: any) and
// skipped nothing, and checks that Verify then finds nothing.
func mtRepair(t *testing.T, x maintainable, c *tablekit.RequestCounter, reqs int64, primaries int) {
	t.Helper()
	c.Reset()
	rep, err := x.Repair(context.Background(), mtOptions(reqs))
	must(t, err)
	if reqs >= 0 {
		requests(t, c, reqs, "Repair")
	}
	if len(rep.Skipped) > 0 {
		t.Errorf("Repair skipped %s", mtEntries(rep.Skipped))
	}
	if got := mtVerify(t, x, c, -1, primaries); got != "" {
		t.Errorf("Verify after Repair found:\n%s", got)
	}
}

// mtRepairRacing runs Repair with write landing between its scan and its
// repairs (from the first Progress call), and returns its report.
func mtRepairRacing(t *testing.T, x maintainable, write func()) *patterns.IndexReport {
	t.Helper()
	var once sync.Once
	rep, err := x.Repair(context.Background(), &patterns.MaintenanceOptions{Progress: func(int) { once.Do(write) }})
	must(t, err)
	return rep
}

package patterns_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// A parallel scan of a partition over its target does not fail: its
// ranges are refused (503 ServerBusy), pause and ask again, and every row
// comes once. Before, azcore's three retries (0.8 s doubling) ran out
// and the scan failed with ServerBusy (issue 35, on the scale model).
// It runs alone, not in parallel: it needs its scan to outrun the
// emulator's target (at least one refusal), which the package's other
// tests, sharing the CPU, could keep it from.
func TestScanThrottledPartitionCompletes(t *testing.T) {
	ctx := context.Background()
	em := emulator.StartTB(t, &emulator.Options{Throttle: &emulator.ThrottleOptions{PartitionEntitiesPerSecond: 6000, AccountEntitiesPerSecond: -1}})
	direct, err := tablekit.NewAccountWithSharedKey(em.AccountName, em.AccountKey, tablekit.Endpoints{Table: em.DirectTableURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	load, err := patterns.NewTable[Employee](direct, "throttledscan", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := load.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const n = 12000
	rows := make([]Employee, n)
	for i := range rows {
		rows[i] = Employee{PartitionKey: "hot", RowKey: fmt.Sprintf("%06d", i)}
	}
	if _, err := load.BulkWrite(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := patterns.NewTable[Employee](acct, "throttledscan", nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	res, err := tbl.Scan(ctx, keys.Filter{}, func(_ context.Context, page []Employee) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range page {
			seen[e.RowKey]++
		}
		return nil
	}, &patterns.ScanOptions{Parallel: 8})
	if err != nil {
		t.Fatalf("Scan: %v (%+v)", err, res)
	}
	if res.Rows != n || len(seen) != n {
		t.Fatalf("Scan read %d rows, %d distinct, want %d", res.Rows, len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("row %s read %d times", k, c)
		}
	}
	if st := em.Stats(); res.Throttled == 0 || int64(res.Throttled) != st.Throttled {
		t.Errorf("Scan counted %d throttled requests, the emulator %d; want the same, above 0", res.Throttled, st.Throttled)
	}
}

package patterns_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// BenchmarkListIndexRebuild rebuilds a list index (the index entities
// pattern's option 2, ListIndexedTable) over 990 employees of one
// department under 10 last names, none of them listed yet, with 10 ms
// added to every request: Rebuild scans the partition, then per index
// entity transaction (99 members) reads the index entity and each member
// it lists, and writes. Each iteration uses a table of its own, loaded
// through Azurite's own endpoint (no latency) while the timer is stopped.
func BenchmarkListIndexRebuild(b *testing.B) {
	ctx := context.Background()
	testenv.Tier(b, testenv.TierAzurite)
	inst := azurite.StartTB(b, &azurite.Options{Latency: 10 * time.Millisecond})
	acct, err := tablekit.Connect(inst.ConnectionString, nil)
	if err != nil {
		b.Fatal(err)
	}
	direct := directAccount(b, inst)
	var staff []ixEmployee
	for i := range 990 {
		id := fmt.Sprintf("%06d", i)
		staff = append(staff, ixEmp("Sales", id, "First", "Last"+strconv.Itoa(i%10), "e"+id+"@contoso.com", 30))
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := "rebuild" + strconv.FormatInt(benchSeq.Add(1), 10)
		load, err := patterns.NewTable[ixEmployee](direct, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := load.CreateIfNotExists(ctx, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := load.BulkWrite(ctx, staff, nil); err != nil {
			b.Fatal(err)
		}
		x, err := patterns.NewListIndexedTable(acct, name, lastNameList(), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := x.Rebuild(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(staff))*float64(b.N)/b.Elapsed().Seconds(), "entities/s")
}

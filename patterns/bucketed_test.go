package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// AccessEvent is the guide's prepend/append example: employees' network
// and resource access events, keyed by time and event id.
type AccessEvent struct {
	PartitionKey string
	RowKey       string // TimeKey_eventid
	Resource     string
}

// Seven buckets, not eight: keys.Bucket is FNV-1a modulo n, and with a
// power of two only the hash's low bits count, which keys that share their
// bytes' low bits (time keys with sequence numbers) barely vary.
func TestBucketedSpreadsInsertsAndMergesInKeyOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	b, err := patterns.NewBucketed[AccessEvent](acct, testenv.TableName(t), 7, nil)
	must(t, err)
	must(t, b.Table().CreateIfNotExists(ctx, nil))
	c.Reset()
	base := time.Date(2014, 8, 22, 18, 0, 0, 0, time.UTC)
	const n = 120
	used := map[string]int{}
	for i := 0; i < n; i++ {
		e := AccessEvent{RowKey: keys.Join(keys.TimeKey(base.Add(time.Duration(i)*time.Second)), keys.PadUint(uint64(i), 4)), Resource: fmt.Sprint("r", i)}
		if err := b.Insert(ctx, "Sales", &e, nil); err != nil {
			t.Fatal(err)
		}
		requests(t, c, 1, "bucketed Insert")
		used[e.PartitionKey]++
	}
	if len(used) != 7 {
		t.Errorf("inserts used %d partitions, want all 7: %v", len(used), used)
	}
	for pk, k := range used {
		if k > n/2 {
			t.Errorf("partition %s took %d of %d inserts: not spread", pk, k, n)
		}
	}
	all, err := patterns.Collect(b.Query(ctx, "Sales", keys.Filter{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 7, "fan-out over 7 buckets")
	if len(all) != n {
		t.Fatalf("fan-out returned %d, want %d", len(all), n)
	}
	for i, e := range all {
		if e.Resource != fmt.Sprint("r", i) {
			t.Fatalf("merged row %d is %s: not in key (time) order", i, e.Resource)
		}
	}
	// A time window, limited: rows 30.. in order.
	win := keys.RK().Ge(keys.TimeKey(base.Add(30 * time.Second)))
	some, err := patterns.Collect(b.Query(ctx, "Sales", win, &patterns.QueryOptions{Limit: 5}))
	if err != nil || len(some) != 5 || some[0].Resource != "r30" || some[4].Resource != "r34" {
		t.Errorf("window = %v, %v", some, err)
	}
	c.Reset()
	got, err := b.Get(ctx, "Sales", all[77].RowKey, nil)
	if err != nil || got.Resource != "r77" {
		t.Errorf("Get = %+v, %v", got, err)
	}
	requests(t, c, 1, "bucketed Get")
	if _, err := patterns.Collect(b.Query(ctx, "Sales", keys.PK().Eq("x"), nil)); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("a row filter with a PartitionKey = %v, want ErrInvalidArgument", err)
	}
}

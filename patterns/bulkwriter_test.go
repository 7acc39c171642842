package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Writes from many goroutines at once land every entity once, each Write
// grouped as a BulkWrite of its own would be (a request per partition of
// the Write, none spanning two Writes), and each Write's failures index
// its own items.
func TestBulkWriterConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	tbl, err := patterns.NewTable[Employee](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// One entity a Write will meet: an insert refuses it.
	if err := tbl.Insert(ctx, &Employee{PartitionKey: "p2", RowKey: "w3-007", FirstName: "before"}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewBulkWriter(ctx, &patterns.BulkOptions{Insert: true, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	// 8 Writes of 250: 50 in each of 5 partitions, every partition shared
	// by every Write.
	const writes, per = 8, 250
	before := counter.Count()
	results := make([]patterns.BulkResult, writes)
	errs := make([]error, writes)
	var wg sync.WaitGroup
	for i := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := make([]Employee, per)
			for j := range items {
				items[j] = Employee{PartitionKey: fmt.Sprintf("p%d", j%5), RowKey: fmt.Sprintf("w%d-%03d", i, j), FirstName: "written"}
			}
			results[i], errs[i] = w.Write(items)
		}()
	}
	wg.Wait()
	st := w.Close()
	for i := range writes {
		if i == 3 {
			var be *patterns.BulkError
			if !errors.As(errs[i], &be) || len(be.Failed) != 1 || be.Failed[0].Index != 7 || !errors.Is(errs[i], tablekit.ErrAlreadyExists) {
				t.Fatalf("Write 3: %v; want one failure, item 7, already exists", errs[i])
			}
			if results[i].Written != per-1 {
				t.Errorf("Write 3 wrote %d, want %d", results[i].Written, per-1)
			}
			continue
		}
		if errs[i] != nil || results[i].Written != per || len(results[i].Failed) != 0 {
			t.Fatalf("Write %d: %+v, %v; want %d written", i, results[i], errs[i], per)
		}
	}
	// Each Write: 5 partitions of 50, 5 transactions; Write 3's refused
	// one is sent again without the existing entity.
	if want := writes*5 + 1; st.Written != writes*per-1 || st.Requests != want || st.Throttled != 0 {
		t.Errorf("Close: %+v; want %d written in %d requests", st, writes*per-1, want)
	}
	if got := counter.Count() - before; got != int64(writes*5+1) {
		t.Errorf("the service saw %d requests, want %d", got, writes*5+1)
	}
	n, err := tbl.Count(ctx, keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true})
	if err != nil || n != writes*per {
		t.Fatalf("Count: %d, %v; want %d", n, err, writes*per)
	}
	got, err := tbl.Get(ctx, "p2", "w3-007", nil)
	if err != nil || got.FirstName != "before" {
		t.Errorf("the entity the insert met: %+v, %v; want it as it was", got, err)
	}
	if _, err := w.Write([]Employee{{PartitionKey: "p", RowKey: "late"}}); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("Write after Close: %v; want ErrInvalidArgument", err)
	}
	if again := w.Close(); again.Written != st.Written || again.Requests != st.Requests {
		t.Errorf("Close again: %+v; want %+v", again, st)
	}
}

// The property BulkWriter is for: pages of one hot partition written by
// concurrent Writes share what the service's refusals taught, where a
// BulkWrite per page starts each at full concurrency. On a partition
// target of 2,000 entities/s, 16 pages of 500 entities (5 transactions
// each) from 4 writers. On the scale model, copy and restore had about 30%
// of their transactions refused with a BulkWrite per page and about 3%
// with one BulkWriter (tablecopy). The test asks for at most half the
// refusals for the same 80 transactions: on an idle 2-core machine one
// BulkWriter had 8 to 19 refused, a BulkWrite per page 63 to 163 (five
// runs under -race); at a load of 4 a run had 26 and 73. The share of
// requests refused (26 of 106 against 73 of 153 there) is a weaker
// measure: the refusals themselves make the second share's denominator.
func TestBulkWriterSharesThePace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(t *testing.T, shared bool, target int) (throttled, requests int, elapsed time.Duration) {
		em := emulator.StartTB(t, &emulator.Options{Throttle: &emulator.ThrottleOptions{PartitionEntitiesPerSecond: target, AccountEntitiesPerSecond: -1}})
		acct, err := tablekit.Connect(em.ConnectionString, nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := patterns.NewTable[Employee](acct, "sharedpace", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
			t.Fatal(err)
		}
		w, err := tbl.NewBulkWriter(ctx, &patterns.BulkOptions{Concurrency: 8})
		if err != nil {
			t.Fatal(err)
		}
		const writers, pages, per = 4, 4, 500
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range pages {
					items := make([]Employee, per)
					for j := range items {
						items[j] = Employee{PartitionKey: "hot", RowKey: fmt.Sprintf("%d-%02d-%04d", i, p, j)}
					}
					var res patterns.BulkResult
					var err error
					if shared {
						res, err = w.Write(items)
					} else {
						res, err = tbl.BulkWrite(ctx, items, &patterns.BulkOptions{Concurrency: 8})
					}
					if err != nil || res.Written != per {
						t.Errorf("page %d-%d: %+v, %v", i, p, res, err)
						return
					}
					mu.Lock()
					throttled, requests = throttled+res.Throttled, requests+res.Requests
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if st := w.Close(); shared {
			throttled, requests = st.Throttled, st.Requests
		}
		elapsed = time.Since(start)
		if st := em.Stats(); int64(throttled) != st.Throttled {
			t.Errorf("counted %d throttled, the emulator %d", throttled, st.Throttled)
		}
		n, err := tbl.Count(ctx, keys.Filter{}, &patterns.WhereOptions{AllowTableScan: true})
		if err != nil || n != writers*pages*per {
			t.Fatalf("Count: %d, %v; want %d", n, err, writers*pages*per)
		}
		return throttled, requests, elapsed
	}
	// A BulkWrite per page must outrun the target far enough to be refused
	// for the comparison to show anything: at a fixed 2,000 entities/s,
	// make test's race run (niced, beside three other runs) wrote slower
	// than the target allowed, three times in a row (0 of 80, 5 of 85 and
	// 17 of 97 requests refused). So the target is a third of what a
	// BulkWrite per page reaches unthrottled here and now, and 2,000
	// entities/s at most, the figure the test was first measured at.
	_, _, free := run(t, false, 1_000_000)
	target := max(200, min(2000, int(float64(4*4*500)/free.Seconds()/3)))
	t.Logf("unthrottled: %v; target %d entities/s", free.Round(time.Millisecond), target)
	pt, pr, _ := run(t, false, target)
	st, sr, _ := run(t, true, target)
	t.Logf("refused: a BulkWrite per page %d of %d requests, one BulkWriter %d of %d", pt, pr, st, sr)
	if pt == 0 || 2*st > pt {
		t.Errorf("one BulkWriter had %d of %d requests refused, a BulkWrite per page %d of %d; want at most half the refusals", st, sr, pt, pr)
	}
}

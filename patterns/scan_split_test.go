package patterns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestSplitReadsFirstPages: a Scan's split search reads the first page of
// each range it makes, and the worker that takes the range starts from
// that page instead of asking for it again. Every row is handed out once.
func TestSplitReadsFirstPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	tbl, err := NewTable[dispatchRow](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var rows []dispatchRow
	for i := range 600 {
		// 20 partitions of 30 rows, spread over two hex digits.
		rows = append(rows, dispatchRow{PartitionKey: fmt.Sprintf("%02x", i/30*13), RowKey: fmt.Sprintf("%04d", i)})
	}
	if _, err := tbl.BulkWrite(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}

	opts := &ScanOptions{QueryOptions: QueryOptions{Top: 100}}
	_, q, err := tbl.ops().prepareScan(keys.Filter{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[position]int{}
	stop := errors.New("stop after the first page")
	calls := 0
	s := &scan{w: tbl.w, q: q, ordered: true, opts: opts, parallel: 8}
	s.cond = sync.NewCond(&s.mu)
	s.fn = func(_ context.Context, p scanPage) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 1 {
			return stop // the first page is not handled: it is read again
		}
		for _, raw := range p.rows {
			pos, err := rowPosition(raw)
			if err != nil {
				return err
			}
			seen[pos]++
		}
		return nil
	}
	whole := &scanRange{Hi: position{End: true}, Stop: position{End: true}}
	s.ranges = []*scanRange{whole}

	// The whole table's range reads its first page, which says where it
	// is: the search splits after it.
	if err := s.read(ctx, whole); !errors.Is(err, stop) {
		t.Fatalf("first page: %v", err)
	}
	whole.running = true
	counter.Reset()
	if err := s.split(ctx, whole); err != nil {
		t.Fatal(err)
	}
	searched := counter.Count()
	if len(s.queue) < 2 {
		t.Fatalf("the split made %d ranges, want several (%d requests)", len(s.queue), searched)
	}
	opened := 0
	for _, r := range s.queue {
		if r.pending != nil {
			opened++
		}
	}
	if opened == 0 {
		t.Fatalf("none of the %d new ranges came with its first page", len(s.queue))
	}

	// Each new range: its first page is the one the search read.
	for _, r := range s.queue {
		pending := r.pending != nil
		counter.Reset()
		before := s.res.Pages
		if err := s.read(ctx, r); err != nil {
			t.Fatal(err)
		}
		pages := s.res.Pages - before
		want := int64(pages)
		if pending {
			want--
		}
		if got := counter.Count(); got != want {
			t.Errorf("range from %v read %d pages with %d requests, want %d (its first page read by the search: %v)", r.Lo, pages, got, want, pending)
		}
	}
	whole.Cont = nil // its first page was not handled
	if err := s.read(ctx, whole); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if n := seen[keyAt(r.PartitionKey, r.RowKey)]; n != 1 {
			t.Errorf("row %s/%s handed out %d times", r.PartitionKey, r.RowKey, n)
		}
	}
	if len(seen) != len(rows) {
		t.Errorf("%d rows handed out, want %d", len(seen), len(rows))
	}
	t.Logf("the search: %d requests, %d ranges, %d with their first page", searched, len(s.queue), opened)
}

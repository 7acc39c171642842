package wire_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/tools/testenv"
)

type scanRow struct {
	PartitionKey, RowKey string
	N                    int64
}

// Entities decodes every row of a multi-page query in one pass, on both
// transports, yielding what Rows and Unmarshal give; Limit stops it.
func TestEntitiesMatchesRows(t *testing.T) {
	ctx := context.Background()
	codec, err := entity.CodecOf(reflect.TypeOf(scanRow{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	tables := openBoth(t)
	const n = 250
	for i := 0; i < n; i += 100 {
		var ops []wire.Op
		for j := i; j < min(n, i+100); j++ {
			rk := strconv.Itoa(100000 + j)
			ops = append(ops, wire.Op{Type: wire.OpInsert, PartitionKey: "scan", RowKey: rk,
				Entity: []byte(`{"PartitionKey":"scan","RowKey":"` + rk + `","N@odata.type":"Edm.Int64","N":"` + strconv.Itoa(j) + `"}`)})
		}
		if _, err := tables["rest"].Batch(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	q := wire.Query{Filter: "PartitionKey eq 'scan'", Top: 100}
	for label, tbl := range tables {
		var want []scanRow
		for raw, err := range tbl.Rows(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			var v scanRow
			if err := codec.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		var got []scanRow
		for r, err := range tbl.Entities(ctx, q) {
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			var v scanRow
			if err := r.Decode(codec, &v); err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			got = append(got, v)
		}
		if len(got) != n || !reflect.DeepEqual(got, want) || got[n-1].N != n-1 {
			t.Errorf("%s: Entities gave %d rows (last %+v), Rows %d", label, len(got), got[len(got)-1], len(want))
		}
		lq := q
		lq.Limit = 150
		count := 0
		for r, err := range tbl.Entities(ctx, lq) {
			if err != nil {
				t.Fatal(err)
			}
			if count%2 == 0 { // odd rows are left unread: skipped
				raw, err := r.Raw()
				if err != nil {
					t.Fatal(err)
				}
				var v scanRow
				if err := codec.Unmarshal(raw, &v); err != nil || v.N != int64(count) {
					t.Fatalf("%s: row %d: %+v, %v", label, count, v, err)
				}
			}
			count++
		}
		if count != 150 {
			t.Errorf("%s: Limit 150 yielded %d rows", label, count)
		}
		// A loop that stops while the next page is being fetched ahead
		// ends cleanly, and its context is not left cancelled.
		count = 0
		for r, err := range tbl.Entities(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Raw(); err != nil {
				t.Fatal(err)
			}
			if count++; count == 2 {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
}

// Entities requests the next page ahead only once the loop asks for a
// page's second row: a full scan costs one request per page, a loop that
// stops at a page's first row no more than the pages it reached.
func TestEntitiesRequestsAhead(t *testing.T) {
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	name := testenv.TableName(t)
	for _, label := range []string{"rest", "sdk"} {
		tbl, err := wire.Open(acct, name, &wire.Options{SDKPath: label == "sdk"})
		if err != nil {
			t.Fatal(err)
		}
		if label == "rest" {
			if err := tbl.Create(ctx); err != nil {
				t.Fatal(err)
			}
			var ops []wire.Op
			for j := range 30 {
				rk := strconv.Itoa(100 + j)
				ops = append(ops, wire.Op{Type: wire.OpInsert, PartitionKey: "ahead", RowKey: rk, Entity: row("ahead", rk)})
			}
			if _, err := tbl.Batch(ctx, ops); err != nil {
				t.Fatal(err)
			}
		}
		q := wire.Query{Filter: "PartitionKey eq 'ahead'", Top: 10}
		// stopAt runs the query until the loop has taken n rows (0: all)
		// and returns the rows taken and the requests sent.
		stopAt := func(n int) (int, int64) {
			counter.Reset()
			taken := 0
			for _, err := range tbl.Entities(ctx, q) {
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if taken++; taken == n {
					break
				}
			}
			return taken, counter.Take()
		}
		for _, c := range []struct {
			stop, rows int
			requests   int64
		}{
			{0, 30, 3},  // every page once, none after the last
			{1, 1, 1},   // the first page's first row: nothing ahead
			{11, 11, 2}, // the second page's first row: nothing ahead
		} {
			if rows, requests := stopAt(c.stop); rows != c.rows || requests != c.requests {
				t.Errorf("%s: stopping at row %d took %d rows in %d requests; want %d in %d", label, c.stop, rows, requests, c.rows, c.requests)
			}
		}
	}
}

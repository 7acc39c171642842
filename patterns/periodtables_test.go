package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// SignIn is the guide's high volume delete example: sign-in attempts,
// one table per day.
type SignIn struct {
	PartitionKey string // user
	RowKey       string // time key
	Success      bool
}

func TestPeriodTablesDropBeforeDeletesWholeTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	prefix := testenv.TableName(t)[:20]
	p, err := patterns.NewPeriodTables[SignIn](acct, prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.DropBefore(context.Background(), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), nil) })
	day := func(d int) time.Time { return time.Date(2014, 7, 29+d, 0, 0, 0, 0, time.UTC) }
	const perDay = 1200
	for d := 0; d < 3; d++ {
		rows := make([]SignIn, perDay)
		for i := range rows {
			at := day(d).Add(time.Duration(i) * time.Minute)
			rows[i] = SignIn{PartitionKey: fmt.Sprint("user", i%4), RowKey: keys.TimeKey(at), Success: i%3 != 0}
		}
		if res, err := p.BulkWrite(ctx, day(d), rows, nil); err != nil || res.Written != perDay {
			t.Fatalf("day %d: %+v, %v", d, res, err)
		}
	}
	c.Reset()
	// One more sign-in through Insert: 1 request into an existing table.
	if err := p.Insert(ctx, day(2).Add(23*time.Hour+59*time.Minute), &SignIn{PartitionKey: "user9", RowKey: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Insert into an existing period table")
	names, err := p.List(ctx, nil)
	if err != nil || len(names) != 3 || names[0] != prefix+"20140729" || names[2] != prefix+"20140731" {
		t.Fatalf("List = %v, %v", names, err)
	}
	c.Reset()
	// A read over a span crossing two days fans out over their tables.
	got, err := patterns.Collect(p.Query(ctx, day(1).Add(12*time.Hour), day(2).Add(time.Hour), keys.PK().Eq("user9"), nil))
	if err != nil || len(got) != 1 {
		t.Fatalf("Query = %v, %v", got, err)
	}
	requests(t, c, 2, "a query over two period tables")

	// Retention: everything before day 2 goes, one request per table.
	dropped, err := p.DropBefore(ctx, day(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "DropBefore of two tables (list + 2 deletes)")
	if fmt.Sprint(dropped) != fmt.Sprintf("[%s20140729 %s20140730]", prefix, prefix) {
		t.Errorf("dropped %v", dropped)
	}
	rows, err := patterns.Collect(p.Query(ctx, day(0), day(3), keys.PK().Eq("user1"), nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != perDay/4 {
		t.Errorf("after the drop, user1 has %d rows, want %d (day 2 only)", len(rows), perDay/4)
	}
	c.Reset()
	// A dropped period's name is never reused.
	if err := p.Insert(ctx, day(1), &SignIn{PartitionKey: "late", RowKey: "1"}, nil); !errors.Is(err, patterns.ErrPeriodDropped) {
		t.Errorf("Insert into a dropped day = %v, want ErrPeriodDropped", err)
	}
	requests(t, c, 0, "a refused Insert")
	// Dropping one period: one request.
	if err := p.Drop(ctx, day(2), nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Drop of one period")
	if names, err := p.List(ctx, nil); err != nil || len(names) != 0 {
		t.Errorf("List after dropping all = %v, %v", names, err)
	}
	// The first write into a new period creates its table.
	if err := p.Insert(ctx, day(5), &SignIn{PartitionKey: "u", RowKey: "1"}, nil); err != nil {
		t.Fatal(err)
	}
}

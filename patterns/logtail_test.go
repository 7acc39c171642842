package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// ExpenseClaim is the guide's log tail example: an employee's expense
// claims, newest first.
type ExpenseClaim struct {
	PartitionKey string // "empid"
	RowKey       string // inverted ticks
	Amount       float64
	Note         string
}

// dotNetInvertedTicks is the guide's C# formula, written out here apart
// from the keys package:
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks).
func dotNetInvertedTicks(t time.Time) string {
	const maxValueTicks = 3155378975999999999 // DateTime.MaxValue.Ticks
	const epochTicks = 621355968000000000     // new DateTime(1970, 1, 1).Ticks
	ticks := t.UnixNano()/100 + epochTicks
	return fmt.Sprintf("%019d", maxValueTicks-ticks)
}

func TestLogTailGuideExpenseClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	lt, err := patterns.NewLogTail[ExpenseClaim](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lt.Table().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	base := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	// 30 claims a minute apart: even ones appended here, odd ones written
	// by a .NET service with the guide's formula (no suffix), so the two
	// kinds of key must interleave by time.
	for i := 0; i < 30; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		claim := ExpenseClaim{PartitionKey: "empid", Amount: float64(i), Note: fmt.Sprint("claim ", i)}
		if i%2 == 0 {
			rk, err := lt.Append(ctx, &claim, at, nil)
			if err != nil {
				t.Fatal(err)
			}
			requests(t, c, 1, "Append")
			if claim.RowKey != rk || rk[:19] != dotNetInvertedTicks(at) {
				t.Fatalf("Append RowKey %q (stored %q) does not start with the C# value %s", rk, claim.RowKey, dotNetInvertedTicks(at))
			}
			continue
		}
		claim.RowKey = dotNetInvertedTicks(at)
		if err := lt.Table().Insert(ctx, &claim, nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
	}
	// Two appends in the same tick do not collide.
	same := base.Add(45 * time.Minute)
	for i := 0; i < 2; i++ {
		claim := ExpenseClaim{PartitionKey: "other", Amount: 1}
		if _, err := lt.Append(ctx, &claim, same, nil); err != nil {
			t.Fatalf("append %d in the same tick: %v", i, err)
		}
	}
	c.Reset()

	// The guide's "ten most recent expense claims": one request.
	latest, err := lt.Latest(ctx, "empid", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Latest(10)")
	if len(latest) != 10 {
		t.Fatalf("Latest(10) returned %d", len(latest))
	}
	for i, claim := range latest {
		if want := float64(29 - i); claim.Amount != want {
			t.Errorf("latest[%d] = claim %v, want %v (newest first)", i, claim.Amount, want)
		}
		at, err := patterns.LogTailTime(claim.RowKey)
		if want := base.Add(time.Duration(29-i) * time.Minute); err != nil || !at.Equal(want) {
			t.Errorf("LogTailTime(%q) = %v, %v; want %v", claim.RowKey, at, err, want)
		}
	}
	all, err := lt.Latest(ctx, "empid", 1000, nil)
	if err != nil || len(all) != 30 {
		t.Fatalf("Latest(1000) = %d rows, %v", len(all), err)
	}
	requests(t, c, 1, "Latest(1000)")

	// Time range [18:10, 18:15): claims 10 to 14, newest first.
	got, err := patterns.Collect(lt.Range(ctx, "empid", base.Add(10*time.Minute), base.Add(15*time.Minute), nil))
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Range")
	var amounts []float64
	for _, claim := range got {
		amounts = append(amounts, claim.Amount)
	}
	if fmt.Sprint(amounts) != "[14 13 12 11 10]" {
		t.Errorf("Range [18:10, 18:15) = %v, want [14 13 12 11 10]", amounts)
	}

	for _, n := range []int{0, 1001} {
		if _, err := lt.Latest(ctx, "empid", n, nil); !errors.Is(err, tablekit.ErrInvalidArgument) {
			t.Errorf("Latest(%d) = %v, want ErrInvalidArgument", n, err)
		}
	}
	requests(t, c, 0, "refused Latest calls")
}

// TestLogTailRangeCutsBoundsToTicks: row times are stored in 100 ns ticks,
// so Range cuts its bounds the same way and the span stays [from, to) for
// times with digits below 100 ns, as time.Now() has on Linux.
func TestLogTailRangeCutsBoundsToTicks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	lt, err := patterns.NewLogTail[ExpenseClaim](acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lt.Table().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	from, to := base.Add(30), base.Add(time.Microsecond+50)
	for _, a := range []struct {
		note string
		at   time.Time
	}{
		{"the tick before from", base.Add(-70)},
		{"from", from},
		{"in the span", base.Add(time.Microsecond - 50)},
		{"to", to},
	} {
		if _, err := lt.Append(ctx, &ExpenseClaim{PartitionKey: "empid", Note: a.note}, a.at, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.Reset()
	got, err := patterns.Collect(lt.Range(ctx, "empid", from, to, nil))
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Range")
	var notes []string
	for _, claim := range got {
		notes = append(notes, claim.Note)
	}
	if fmt.Sprint(notes) != "[in the span from]" {
		t.Errorf("Range(%v, %v) = %q, want [in the span from]", from, to, notes)
	}

	// Bounds within one tick: an empty span, no request.
	got, err = patterns.Collect(lt.Range(ctx, "empid", base.Add(10), base.Add(90), nil))
	if err != nil || len(got) != 0 {
		t.Errorf("Range within one tick = %d rows, %v; want none", len(got), err)
	}
	requests(t, c, 0, "Range within one tick")
}

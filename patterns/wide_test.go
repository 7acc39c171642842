package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// wideDays is the guide's wide entity: a count of IM messages for each of
// n days, one property per day.
func wideDays(pk, rk string, n, factor int) *patterns.WideEntity {
	e := &patterns.WideEntity{PartitionKey: pk, RowKey: rk, Properties: map[string]entity.Value{}}
	for d := 1; d <= n; d++ {
		e.Properties[fmt.Sprintf("D%04d", d)] = entity.Int32(int32(d * factor))
	}
	return e
}

func widePhysicalRows(t *testing.T, w *patterns.WideEntities, pk string) []entity.Entity {
	t.Helper()
	rows, err := patterns.Collect(w.Table().Query(context.Background(), keys.PK().Eq(pk), &patterns.QueryOptions{SelectAll: true}))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// newWideEntities returns wide entities in a table of their own, created,
// on an account whose requests c counts.
func newWideEntities(t *testing.T) (w *patterns.WideEntities, c *tablekit.RequestCounter) {
	t.Helper()
	acct, c := testenv.CountingAccount(t)
	w, err := patterns.NewWideEntities(acct, testenv.TableName(t), nil)
	must(t, err)
	must(t, w.Table().CreateIfNotExists(context.Background(), nil))
	return w, c
}

func TestWideEntityGuide365DailyCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := newWideEntities(t)
	c.Reset()
	e := wideDays("Sales", "000123", 365, 1)
	must(t, widePut(w, ctx, e))
	requests(t, c, 1, "Put of 365 properties")
	got, err := w.Get(ctx, "Sales", "000123", nil)
	must(t, err)
	requests(t, c, 1, "Get of a wide entity")
	if len(got.Properties) != 365 || got.Properties["D0200"] != entity.Int32(200) || got.ETag != e.ETag {
		t.Errorf("Get: %d properties, D0200 %v, ETag %q (Put gave %q)", len(got.Properties), got.Properties["D0200"], got.ETag, e.ETag)
	}
	// Two physical entities, as the guide draws it, none over 252 properties.
	rows := widePhysicalRows(t, w, "Sales")
	if len(rows) != 2 || rows[0].RowKey != "000123_00" || rows[1].RowKey != "000123_01" {
		t.Fatalf("physical rows: %d, want 000123_00 and 000123_01", len(rows))
	}
	for _, r := range rows {
		if len(r.Properties) > entity.MaxProperties {
			t.Errorf("%s has %d properties", r.RowKey, len(r.Properties))
		}
	}
	// A stale copy loses against the current version.
	stale := wideDays("Sales", "000123", 365, 2)
	stale.ETag = "W/\"datetime'2000-01-01T00%3A00%3A00Z'\""
	c.Reset()
	if err := widePut(w, ctx, stale); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Put with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	requests(t, c, 1, "a refused Put")
	if err := w.Delete(ctx, got, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Delete of a read wide entity")
	if _, err := w.Get(ctx, "Sales", "000123", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if rows := widePhysicalRows(t, w, "Sales"); len(rows) != 0 {
		t.Errorf("%d physical rows left after Delete", len(rows))
	}
}

func TestWideEntityThousandPropertiesShrinkCleanly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := newWideEntities(t)
	// A neighbour whose RowKey shares the prefix must not be touched.
	if err := widePut(w, ctx, wideDays("p", "e1", 3, 1)); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	big := wideDays("p", "e", 1000, 3)
	big.Properties["Note"] = entity.String("a string too")
	must(t, widePut(w, ctx, big))
	requests(t, c, 1, "Put of 1,001 properties")
	got, err := w.Get(ctx, "p", "e", nil)
	must(t, err)
	requests(t, c, 1, "Get of 1,001 properties")
	if len(got.Properties) != 1001 {
		t.Fatalf("round trip: %d properties, want 1001", len(got.Properties))
	}
	for name, v := range big.Properties {
		if got.Properties[name] != v {
			t.Fatalf("property %s = %v, want %v", name, got.Properties[name], v)
		}
	}
	if n := len(got.Chunks()); n != 4 {
		t.Errorf("1,001 properties over %d physical entities, want 4", n)
	}

	// Shrink the value read to 300 properties: one transaction writes two
	// chunks and deletes the other two.
	small := wideDays("p", "e", 300, 5)
	got.Properties = small.Properties
	if err := widePut(w, ctx, got); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Put that shrinks 4 chunks to 2")
	rows := widePhysicalRows(t, w, "p")
	var names []string
	for _, r := range rows {
		names = append(names, r.RowKey)
	}
	if fmt.Sprint(names) != "[e1_00 e_00 e_01]" {
		t.Errorf("physical rows after the shrink: %v, want [e1_00 e_00 e_01]", names)
	}
	again, err := w.Get(ctx, "p", "e", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Properties) != 300 || again.Properties["D0300"] != entity.Int32(1500) {
		t.Errorf("after the shrink: %d properties, D0300 = %v", len(again.Properties), again.Properties["D0300"])
	}

	// A blind write (not read first) leaves leftovers, which readers
	// ignore; the next write of a read value deletes them.
	if err := widePut(w, ctx, wideDays("p", "e", 1000, 1)); err != nil {
		t.Fatal(err)
	}
	if err := widePut(w, ctx, wideDays("p", "e", 10, 1)); err != nil {
		t.Fatal(err)
	}
	blind, err := w.Get(ctx, "p", "e", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(blind.Properties) != 10 || len(blind.Chunks()) != 4 {
		t.Errorf("after a blind shrink: %d properties over %d rows seen, want 10 over 4", len(blind.Properties), len(blind.Chunks()))
	}
	if err := widePut(w, ctx, blind); err != nil {
		t.Fatal(err)
	}
	if rows := widePhysicalRows(t, w, "p"); len(rows) != 2 {
		t.Errorf("%d physical rows after cleaning up, want 2 (e1_00, e_00)", len(rows))
	}

	bad := wideDays("p", "x", 2, 1)
	bad.Properties[patterns.WideChunksProperty] = entity.Int32(1)
	c.Reset()
	if err := widePut(w, ctx, bad); !errors.Is(err, tablekit.ErrInvalidEntity) {
		t.Errorf("Put with the reserved property = %v, want ErrInvalidEntity", err)
	}
	requests(t, c, 0, "a refused Put")
}

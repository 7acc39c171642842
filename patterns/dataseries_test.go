package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The guide's data series: how many IM messages each employee sent in
// each of the last 24 hours, one property per hour of one entity.
func TestDataSeriesGuideHourlyMessageCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	ds, err := patterns.NewDataSeries[int32](acct, testenv.TableName(t), 24, &patterns.DataSeriesOptions{Prefix: "H"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Table().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if got := ds.Property(7); got != "H07" {
		t.Errorf("Property(7) = %q, want H07", got)
	}
	for h := 0; h < 24; h++ {
		if err := ds.Upsert(ctx, "Sales", "000123", map[int]int32{h: int32(10 * h)}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
			t.Fatal(err)
		}
		requests(t, c, 1, fmt.Sprintf("Set hour %d", h))
	}
	if err := ds.Upsert(ctx, "Sales", "000123", map[int]int32{5: 7}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Set (update one slot)")
	s, err := ds.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Get of the whole series")
	for h, v := range s.Values {
		want := int32(10 * h)
		if h == 5 {
			want = 7
		}
		if v != want {
			t.Errorf("hour %d = %d, want %d", h, v, want)
		}
	}
	// The slots really are properties of one entity, as the guide draws it.
	raw, err := patterns.NewTable[entity.Entity](acct, ds.Table().Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := patterns.Collect(raw.Query(ctx, keys.PK().Eq("Sales"), &patterns.QueryOptions{SelectAll: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].Properties) != 24 || rows[0].Properties["H23"] != entity.Int32(230) {
		t.Errorf("stored rows = %+v; want one entity with H00..H23", rows)
	}
	c.Reset()

	if err := ds.Upsert(ctx, "Sales", "000123", map[int]int32{24: 1}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("Set of slot 24 = %v, want ErrInvalidArgument", err)
	}
	requests(t, c, 0, "a refused Set")
	if _, err := ds.Get(ctx, "Sales", "nobody", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get of a missing series = %v, want ErrNotFound", err)
	}
	if _, err := patterns.NewDataSeries[int64](acct, "toolong", 365, nil); !errors.Is(err, tablekit.ErrInvalidEntity) {
		t.Errorf("365 slots = %v, want ErrInvalidEntity", err)
	} else if want := "NewWideEntities"; !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not point to %s", err, want)
	}
}

func TestDataSeriesConcurrentAddsLoseNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	ds, err := patterns.NewDataSeries[int64](acct, testenv.TableName(t), 24, &patterns.DataSeriesOptions{Table: &patterns.TableOptions{MaxAttempts: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Table().CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The series does not exist yet: the first adds race to create it.
	const workers, each = 8, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := ds.Add(ctx, "Sales", "000123", 13, 1, nil); err != nil {
					errs <- err
					return
				}
				// Writers of other slots do not disturb the count either.
				if err := ds.Upsert(ctx, "Sales", "000123", map[int]int64{2: int64(i)}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := ds.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Values[13] != workers*each {
		t.Fatalf("slot 13 = %d after %d concurrent increments", s.Values[13], workers*each)
	}
	if got, err := ds.Add(ctx, "Sales", "000123", 13, -4, nil); err != nil || got != workers*each-4 {
		t.Errorf("Add(-4) = %d, %v; want %d", got, err, workers*each-4)
	}
}

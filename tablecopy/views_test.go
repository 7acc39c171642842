package tablecopy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

type vOrder struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Number       string
	Status       string
}

func vViews(statusTable string) patterns.Views[vOrder] {
	return patterns.Views[vOrder]{
		Indexes: []patterns.Index[vOrder]{{Name: "number", Unique: true, Key: func(o *vOrder) string { return o.Number }}},
		EventualIndexes: []patterns.Index[vOrder]{{Name: "status", Table: statusTable, Key: func(o *vOrder) string { return o.Status },
			Partition: func(o *vOrder) string { return o.Status }}},
	}
}

// TestCopyRetargetsAModelsViews copies a Model's table under another
// name: the views of the table travel with it and the copied entities'
// lists name the copy's table, the views in other tables are left out of
// the lists (and counted), Compare sees the copy as exact, and archiving a
// copied entity through the worker leaves the source's views alone.
func TestCopyRetargetsAModelsViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The Model enqueues its intents a second from visible (its Delay):
	// the test moves its emulator's clock past it before each run of the
	// worker, which otherwise waits for them (UntilEmpty).
	acct, clock := testenv.ClockAccount(t)
	q, err := consistency.NewQueue(acct, testenv.QueueName(t), nil)
	must(t, err)
	statusA, statusB := testenv.TableName(t), testenv.TableName(t)
	src, err := patterns.NewModel(acct, testenv.TableName(t), vViews(statusA), &patterns.ModelOptions{Queue: q})
	must(t, err)
	must(t, src.CreateIfNotExists(ctx, nil))
	for _, o := range []vOrder{{"c1", "o1", "", "N1", "open"}, {"c1", "o2", "", "N2", "open"}, {"c2", "o3", "", "N3", "shipped"}} {
		must(t, src.Insert(ctx, &o, nil))
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}, UntilEmpty: true, PollInterval: 50 * time.Millisecond})
	must(t, err)
	clock.Advance(time.Second)
	must(t, w.Run(ctx, nil))

	from, err := patterns.NewTable[entity.Entity](acct, src.Table().Name(), nil)
	must(t, err)
	to, err := patterns.NewTable[entity.Entity](acct, testenv.TableName(t), nil)
	must(t, err)
	t.Cleanup(func() {
		for _, n := range []string{from.Name(), to.Name(), statusA, statusB} {
			_, _ = acct.Tables().DeleteTable(context.Background(), n, nil)
		}
	})
	res, err := tablecopy.Copy(ctx, from, to, &tablecopy.CopyOptions{NoCheckpoint: true})
	must(t, err)
	if res.Written != 6 || res.ViewsElsewhere != 3 {
		t.Errorf("copy: %d written, %d with views elsewhere; want 6 (3 orders, 3 number rows) and 3", res.Written, res.ViewsElsewhere)
	}
	for e, err := range to.Query(ctx, keys.PK().Eq("c1"), &patterns.QueryOptions{SelectAll: true}) {
		must(t, err)
		if c, ok := e.Properties[consistency.CopiesProperty]; ok {
			text, _ := c.Text()
			if strings.Contains(text, from.Name()) || strings.Contains(text, statusA) || !strings.Contains(text, to.Name()) {
				t.Errorf("copied %s lists views %s; want the copy's table alone", e.RowKey, text)
			}
		}
	}
	chk, err := tablecopy.Compare(ctx, from, to, nil)
	must(t, err)
	if len(chk.Mismatches) != 0 {
		t.Errorf("Compare of a Model's copy: %+v", chk.Mismatches)
	}

	// The copy's Model (its status index in a table of its own) finds
	// its status views missing, and Repair writes them.
	dst, err := patterns.NewModel(acct, to.Name(), vViews(statusB), &patterns.ModelOptions{Queue: q})
	must(t, err)
	must(t, dst.CreateIfNotExists(ctx, nil))
	rep, err := dst.Verify(ctx, nil)
	must(t, err)
	if len(rep.Missing) != 3 || len(rep.Orphans) != 0 || len(rep.Stale) != 0 {
		t.Errorf("Verify of the copy: %+v", rep)
	}
	_, err = dst.Repair(ctx, nil)
	must(t, err)
	rep, err = dst.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify of the copy after Repair: %+v", rep)
	}
	// Archiving a copied order leaves the source's views as they were.
	archive, err := patterns.NewTable[vOrder](acct, testenv.TableName(t), nil)
	must(t, err)
	must(t, archive.CreateIfNotExists(ctx, nil))
	t.Cleanup(func() { _ = archive.Drop(context.Background(), nil) })
	must(t, dst.Archive(ctx, "c1", "o1", archive.Name(), nil))
	clock.Advance(time.Second)
	must(t, w.Run(ctx, nil))
	rep, err = src.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 3 {
		t.Errorf("Verify of the source after archiving a copied order: %+v", rep)
	}
	if _, err := src.Lookup(ctx, "number", "c1", "N1", nil); err != nil {
		t.Errorf("the source's number row of o1: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestViewsFindsAndMendsAModelsViews: tablekit views checks a Model's
// views from what its entities list, without the Go type, and --repair
// mends them.
func TestViewsFindsAndMendsAModelsViews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type order struct {
		PartitionKey, RowKey, Number, Status string
	}
	// The Model enqueues its intents a second from visible (its Delay):
	// the test moves its emulator's clock past it before the worker runs,
	// which otherwise waits for them (UntilEmpty).
	conn, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, conn, nil)
	q, err := consistency.NewQueue(acct, testenv.QueueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	statusTable := testenv.TableName(t)
	m, err := patterns.NewModel(acct, testenv.TableName(t), patterns.Views[order]{
		Indexes: []patterns.Index[order]{{Name: "number", Unique: true, Key: func(o *order) string { return o.Number }}},
		EventualIndexes: []patterns.Index[order]{{Name: "status", Table: statusTable, Key: func(o *order) string { return o.Status },
			Partition: func(o *order) string { return o.Status }}},
	}, &patterns.ModelOptions{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range []string{m.Table().Name(), statusTable, q.Name(), consistency.PoisonQueueName(q.Name())} {
			_, _ = acct.Tables().DeleteTable(context.Background(), n, nil)
			_, _ = acct.Queues().DeleteQueue(context.Background(), n, nil)
		}
	})
	for _, o := range []order{{"c1", "o1", "N1", "open"}, {"c1", "o2", "N2", "open"}} {
		if err := m.Insert(ctx, &o, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}, UntilEmpty: true, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := w.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if r := runOn(t, conn, "", "views", m.Table().Name()); r.code != 0 || !strings.Contains(r.stdout, "2 entities with views; 0 views missing, 0 views stale, 0 views orphaned") {
		t.Fatalf("views of kept views: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	raw, err := patterns.NewTable[entity.Entity](acct, m.Table().Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: "number_N1"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	r := runOn(t, conn, "", "views", m.Table().Name())
	if r.code != 1 || !strings.Contains(r.stdout, "1 view missing") || !strings.Contains(r.stdout, "missing number:") {
		t.Errorf("views with a lost row: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runOn(t, conn, "", "views", m.Table().Name(), "--repair", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"ok":true`) || !strings.Contains(r.stdout, `"repaired":true`) {
		t.Errorf("views --repair: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if got, err := m.Lookup(ctx, "number", "c1", "N1", nil); err != nil || got.RowKey != "o1" {
		t.Errorf("Lookup after views --repair: %+v, %v", got, err)
	}
}

package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/patterns"
)

// Worker.Drain with a repository that enqueues (consistency's own Drain
// tests enqueue by hand: a test of package consistency that imports
// patterns makes go test compile patterns a second time, against
// consistency's internal tests).

type drainEmployee struct {
	PartitionKey, RowKey string
	Email                string
}

// A test writes to an EventualIndexedTable, advances the emulator's
// clock by the intent's delay (1 s by default) and drains the worker:
// the copy is there, with no real wait.
func TestDrainAppliesWhatAdvanceMadeVisible(t *testing.T) {
	em := emulator.StartTB(t, nil) // its clock is the test's
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := consistency.NewQueue(acct, "intents", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	x, err := patterns.NewEventualIndexedTable(acct, "Employees", q, []patterns.Index[drainEmployee]{
		{Name: "email", Unique: true, Key: func(v *drainEmployee) string { return v.Email }},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{q.Name()}})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := x.Insert(ctx, &drainEmployee{PartitionKey: "Sales", RowKey: "0001", Email: "jonesj@contoso.com"}, nil); err != nil {
		t.Fatal(err)
	}
	// The intent is not visible yet: Drain returns at once, the copy
	// not written.
	if err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil); !tablekit.IsNotFound(err) {
		t.Fatalf("Lookup before the delay: %v; want not found", err)
	}
	em.Advance(time.Second)
	if err := w.Drain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		t.Fatalf("Lookup after Advance and Drain: %v", err)
	}
	if got.RowKey != "0001" {
		t.Errorf("Lookup found %+v; want RowKey 0001", got)
	}
	took := time.Since(start)
	t.Logf("insert, drain, advance, drain, lookups: %v", took)
	if took > 500*time.Millisecond {
		t.Errorf("took %v: Drain waited", took)
	}
	if n := w.Metrics().Processed(); n != 1 {
		t.Errorf("Metrics().Processed() = %d; want 1", n)
	}
}

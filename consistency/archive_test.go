package consistency

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/tablekit/tablekit/tools/testenv"
)

// employee is an entity with every EDM type, as the Table service's JSON.
func employee(pk, rk string) map[string]any {
	return map[string]any{
		"PartitionKey": pk, "RowKey": rk,
		"Name":              "Ana O'Neil",
		"Age":               41,
		"Salary":            3.0,
		"Salary@odata.type": "Edm.Double",
		"Badge":             "9007199254740993",
		"Badge@odata.type":  "Edm.Int64",
		"Hired":             "2012-03-04T05:06:07.1234567Z",
		"Hired@odata.type":  "Edm.DateTime",
		"ID":                "c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f",
		"ID@odata.type":     "Edm.Guid",
		"Photo":             "AAECAwQ=",
		"Photo@odata.type":  "Edm.Binary",
		"Active":            true,
	}
}

// TestArchiveEmployee is the guide's example: the worker moves a former
// employee from the Current table to the Archive table, and the archived
// entity keeps every property and type.
func TestArchiveEmployee(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	current, archive := createTable(t, acct), createTable(t, acct)
	q := newQueue(t, acct)
	emp := employee("Sales", "000456")
	if _, err := acct.Tables().NewClient(current).AddEntity(ctx, mustJSON(t, emp), nil); err != nil {
		t.Fatal(err)
	}
	before := getProps(t, acct, EntityRef{current, "Sales", "000456"})

	tx := NewTransaction(MoveEntity(EntityRef{current, "Sales", "000456"}, EntityRef{Table: archive}))
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, acct, q, WorkerOptions{})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "the archive transaction", func() bool { return w.Metrics().Processed() == 1 })
	stop()

	if got := getProps(t, acct, EntityRef{current, "Sales", "000456"}); got != nil {
		t.Fatalf("employee still in Current: %v", got)
	}
	after := getProps(t, acct, EntityRef{archive, "Sales", "000456"})
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("archived entity differs\nbefore: %v\nafter:  %v", before, after)
	}
	for _, p := range []string{"Salary@odata.type", "Badge@odata.type", "Hired@odata.type", "ID@odata.type", "Photo@odata.type"} {
		if after[p] != emp[p] {
			t.Errorf("%s = %v, want %v", p, after[p], emp[p])
		}
	}
	if after["Badge"] != "9007199254740993" {
		t.Errorf("Int64 lost precision: %v", after["Badge"])
	}
	if n := messageCount(t, q.qc); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
	if w.Metrics().Poisoned() != 0 || w.Metrics().Retried() != 0 {
		t.Fatalf("poisoned %d retried %d", w.Metrics().Poisoned(), w.Metrics().Retried())
	}
}

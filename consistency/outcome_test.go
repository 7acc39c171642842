package consistency

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A write whose lost response the core could not settle is retried by the
// worker (the message comes back and the idempotent step re-reads), even
// when its last failure was a 4xx that is otherwise permanent.
func TestOutcomeUnknownIsRetried(t *testing.T) {
	for _, status := range []int{409, 412, 404, 503} {
		last := &azcore.ResponseError{StatusCode: status, ErrorCode: "x"}
		err := error(&StepError{TxID: "t", Kind: KindCopyProps, Err: tablekit.NewOutcomeUnknown("update", "t (p, r)", last)})
		if IsPermanent(err) {
			t.Errorf("outcome unknown after %d: permanent, want retried", status)
		}
		if !errors.Is(err, tablekit.ErrOutcomeUnknown) {
			t.Errorf("outcome unknown after %d: lost the sentinel", status)
		}
		if got := modifyErr(err, lostRace); IsPermanent(got) || !errors.Is(got, tablekit.ErrOutcomeUnknown) {
			t.Errorf("modifyErr(outcome unknown after %d) = %v", status, got)
		}
		if entityMissing(err) {
			t.Errorf("outcome unknown after %d read as a missing entity", status)
		}
	}
	// An explicit Permanent mark still wins.
	if !IsPermanent(Permanent(tablekit.ErrOutcomeUnknown)) {
		t.Error("Permanent(ErrOutcomeUnknown) not permanent")
	}
}

// One *wire.Table per table name, shared by the steps of a worker.
func TestTableSetOpensEachTableOnce(t *testing.T) {
	acct := testenv.Account(t)
	w, err := NewWorker(acct, &WorkerOptions{Queues: []string{"steps"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.tables.table("alpha")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := w.tables.table("alpha")
	c, _ := w.tables.table("beta")
	if a != b || a == c || a.Name() != "alpha" || c.Name() != "beta" {
		t.Fatalf("tables: %p %p %p", a, b, c)
	}
	call := &Call{Account: acct, tables: w.tables}
	if call.tableSet() != w.tables {
		t.Fatal("a call of the worker opened its own tables")
	}
	if (&Call{Account: acct}).tableSet() == nil {
		t.Fatal("a call without tables got none")
	}
}

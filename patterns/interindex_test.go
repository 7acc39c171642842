package patterns_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// interFixture is an EventualIndexedTable over the guide's employees with
// an email index in the primary's table ("email_Sales") and an employee id
// index in another table ("empid_Sales"), its queue, and a worker account
// whose requests the counter does not see.
type interFixture struct {
	x       *patterns.EventualIndexedTable[ixEmployee]
	q       *consistency.Queue
	counter *tablekit.RequestCounter
	worker  *tablekit.Account
	idTable string
	// container is the queue's blob container.
	container string
	// clock is the service's (testenv.ClockConnectionString).
	clock *testenv.Clock
}

func newInterFixture(t *testing.T) *interFixture {
	t.Helper()
	cs, clock := testenv.ClockConnectionString(t)
	acct, counter := testenv.CountingAccountOn(t, cs)
	f := &interFixture{counter: counter, worker: testenv.AccountOn(t, cs, nil), idTable: testenv.TableName(t), clock: clock}
	f.q, f.container = testQueue(t, acct)
	var err error
	f.x, err = patterns.NewEventualIndexedTable(acct, testenv.TableName(t), f.q, []patterns.Index[ixEmployee]{
		{Name: "email", Unique: true, Key: func(e *ixEmployee) string { return e.Email }, Props: []string{"EmployeeID", "FirstName", "LastName", "Email"}},
		{Name: "empid", Unique: true, Key: func(e *ixEmployee) string { return e.EmployeeID }, Table: f.idTable},
	}, nil)
	must(t, err)
	must(t, f.x.CreateIfNotExists(context.Background(), nil))
	counter.Reset()
	return f
}

// startWorker runs a consistency worker on the fixture's queue, in this
// process, until the returned function is called or the test ends.
func (f *interFixture) startWorker(t *testing.T) (stop func()) {
	t.Helper()
	w, err := consistency.NewWorker(f.worker, &consistency.WorkerOptions{
		Queues:        []string{f.q.Name()},
		PollInterval:  100 * time.Millisecond,
		Backoff:       &consistency.Backoff{Delays: []time.Duration{0, time.Second}},
		BlobContainer: f.container,
		Logger:        slog.New(slog.DiscardHandler),
	})
	must(t, err)
	return runWorker(t, w)
}

// copies returns the index copies of ix in partition part, as
// "RowKey->primary RowKey" strings.
func (f *interFixture) copies(t *testing.T, index, part string) string {
	t.Helper()
	var out []string
	for e, err := range f.x.Prefix(context.Background(), index, part, "", nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Email+"|"+e.EmployeeID)
	}
	return fmt.Sprint(out)
}

func interWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wait is interWait once the intents' Delay (1 s) and a worker's backoff
// or visibility timeout of at most 1 s have passed on the fixture's
// clock, where it moves; where it does not, interWait waits for them.
func (f *interFixture) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	f.clock.Advance(time.Second)
	interWait(t, what, cond)
}

func (f *interFixture) queueEmpty(t *testing.T) bool {
	t.Helper()
	resp, err := f.worker.Queues().NewQueueClient(f.q.Name()).GetProperties(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ApproximateMessagesCount != nil && *resp.ApproximateMessagesCount == 0
}

func TestEventualIndexGuideQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newInterFixture(t)
	c := f.counter
	f.startWorker(t)

	jones := ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34)
	must(t, f.x.Insert(ctx, &jones, nil))
	requests(t, c, 2, "Insert (enqueue + write)")
	for _, e := range []ixEmployee{
		ixEmp("Sales", "000100", "Ann", "Abbot", "abbota@contoso.com", 41),
		ixEmp("Sales", "000199", "Bea", "Brown", "brownb@contoso.com", 50),
		ixEmp("Sales", "000200", "Aaron", "Adams", "adamsa@contoso.com", 23),
		ixEmp("HR", "000150", "Al", "Akers", "akersa@contoso.com", 29),
	} {
		must(t, f.x.Insert(ctx, &e, nil))
	}
	f.wait(t, "the worker to write the copies", func() bool {
		n := 0
		for _, err := range f.x.Prefix(ctx, "empid", "Sales", "", nil) {
			if err == nil {
				n++
			}
		}
		return n == 4
	})
	c.Reset()

	// $filter=(PartitionKey eq 'email_Sales') and (RowKey eq 'jonesj@contoso.com')
	e, err := f.x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Lookup by email")
	if e.PartitionKey != "Sales" || e.RowKey != "empid_000223" || e.FirstName != "John" || e.Age != 0 {
		t.Errorf("Lookup by email = %+v, want the primary's keys and the projected properties only", e)
	}
	// $filter=(PartitionKey eq 'empid_Sales') and (RowKey eq '000223'), in the other table.
	if e, err := f.x.Lookup(ctx, "empid", "Sales", "000223", nil); err != nil || e.Age != 34 || e.Email != "jonesj@contoso.com" {
		t.Errorf("Lookup by id = %+v, %v", e, err)
	}
	requests(t, c, 1, "Lookup by employee id")
	// RowKey ge '000100' and RowKey le '000199' in empid_Sales.
	if got := ixIDs(t, f.x.Between(ctx, "empid", "Sales", "000100", "000199", nil)); fmt.Sprint(got) != "[000100 000199]" {
		t.Errorf("ids 000100..000199 = %v", got)
	}
	requests(t, c, 1, "employee id range")
	// RowKey ge 'a' and RowKey lt 'b' in email_Sales.
	if got := ixIDs(t, f.x.Prefix(ctx, "email", "Sales", "a", nil)); fmt.Sprint(got) != "[000100 000200]" {
		t.Errorf("emails starting with a = %v", got)
	}
	requests(t, c, 1, "email prefix range")

	// Changing the email moves the copy once the worker has run.
	if _, err := f.x.Update(ctx, "Sales", "empid_000223", func(e *ixEmployee) error { e.Email = "john.jones@contoso.com"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "Update (read, enqueue, write)")
	f.wait(t, "the email copy to move", func() bool {
		_, errOld := f.x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
		_, errNew := f.x.Lookup(ctx, "email", "Sales", "john.jones@contoso.com", nil)
		return tablekit.IsNotFound(errOld) && errNew == nil
	})
	c.Reset()
	if err := f.x.Delete(ctx, &ixEmployee{PartitionKey: "Sales", RowKey: "empid_000223"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "Delete (read, enqueue, delete)")
	f.wait(t, "the copies to go", func() bool {
		_, e1 := f.x.Lookup(ctx, "email", "Sales", "john.jones@contoso.com", nil)
		_, e2 := f.x.Lookup(ctx, "empid", "Sales", "000223", nil)
		return tablekit.IsNotFound(e1) && tablekit.IsNotFound(e2)
	})
}

func TestEventualIndexConvergesUnderDuplicatedAndReorderedDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newInterFixture(t)
	e := ixEmp("Sales", "000223", "John", "Jones", "a@contoso.com", 34)
	must(t, f.x.Insert(ctx, &e, nil))
	// Four writes, no worker yet: four intents wait in the queue.
	for _, email := range []string{"b@contoso.com", "c@contoso.com", "d@contoso.com"} {
		if _, err := f.x.Update(ctx, "Sales", "empid_000223", func(e *ixEmployee) error { e.Email = email; return nil }, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Deliver the same intents by hand, newest first, each twice, as a
	// reordering and duplicating queue would.
	src := consistency.EntityRef{Table: f.x.Table().Name(), PartitionKey: "Sales", RowKey: "empid_000223"}
	for _, prev := range []string{"c", "b", "a", "", "c", "a"} {
		var previous []consistency.EntityRef
		if prev != "" {
			previous = append(previous, consistency.EntityRef{Table: f.x.Table().Name(), PartitionKey: "email_Sales", RowKey: prev + "@contoso.com"})
		}
		if err := consistency.Apply(ctx, f.worker, consistency.NewTransaction(consistency.SyncCopies(src, patterns.PropCopies, previous...)), nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.copies(t, "email", "Sales"); got != "[d@contoso.com|000223]" {
			t.Fatalf("after a delivery with previous %q the email copies are %s", prev, got)
		}
	}
	// Then the queue's own (now late) deliveries.
	f.startWorker(t)
	f.wait(t, "the queue to drain", func() bool { return f.queueEmpty(t) })
	if got := f.copies(t, "email", "Sales"); got != "[d@contoso.com|000223]" {
		t.Errorf("after the late deliveries the email copies are %s", got)
	}
	if rep, err := f.x.Verify(ctx, nil); err != nil || !rep.OK() {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
}

func TestEventualIndexConvergesAfterAWorkerCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newInterFixture(t)
	e := ixEmp("Sales", "000223", "John", "Jones", "jonesj@contoso.com", 34)
	must(t, f.x.Insert(ctx, &e, nil))
	// A worker receives the intent and dies before deleting it: the
	// message stays hidden for its visibility timeout, then comes back.
	qc := f.worker.Queues().NewQueueClient(f.q.Name())
	var got azqueue.DequeueMessagesResponse
	f.wait(t, "the intent to become visible", func() bool {
		var err error
		got, err = qc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(1))})
		if err != nil {
			t.Fatal(err)
		}
		return len(got.Messages) == 1
	})
	f.startWorker(t)
	f.wait(t, "the redelivered intent to be applied", func() bool {
		_, err := f.x.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
		return err == nil && f.queueEmpty(t)
	})
}

func TestEventualIndexRebuildVerifyRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newInterFixture(t)
	// 2,000 entities, 200 in each of 10 partitions: the primaries' scan
	// crosses a page of 1,000 and Progress is called once per transaction
	// of 100, what the size has to show (5,000 took 10 s of CPU under
	// -race and proved nothing more).
	const n = 2000
	items := make([]ixEmployee, n)
	for i := range items {
		id := fmt.Sprintf("%06d", i)
		items[i] = ixEmp(fmt.Sprintf("D%02d", i%10), id, "F", "L", "e"+id+"@contoso.com", 30)
	}
	// Existing data, written before the indexes existed.
	t0 := time.Now()
	if _, err := f.x.Table().BulkWrite(ctx, items, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("BulkWrite: %v", time.Since(t0))
	var mu sync.Mutex
	var calls, last int
	start := time.Now()
	err := f.x.Rebuild(ctx, &patterns.MaintenanceOptions{Parallelism: 16, Progress: func(done int) {
		mu.Lock()
		defer mu.Unlock()
		if done <= last {
			t.Errorf("progress went from %d to %d", last, done)
		}
		calls, last = calls+1, done
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Rebuild of %d entities with 2 indexes: %v", n, time.Since(start))
	if calls != n/100 || last != n {
		t.Errorf("progress called %d times, last %d; want %d", calls, last, n)
	}
	if e, err := f.x.Lookup(ctx, "email", "D07", "e001457@contoso.com", nil); err != nil || e.RowKey != "empid_001457" {
		t.Errorf("lookup after Rebuild = %+v, %v", e, err)
	}
	t0 = time.Now()
	rep, err := f.x.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Verify: %v", time.Since(t0))
	if !rep.OK() || rep.Primaries != n {
		t.Fatalf("Verify after Rebuild: %d primaries, %d missing, %d orphans", rep.Primaries, len(rep.Missing), len(rep.Orphans))
	}

	// Plant damage: a copy whose primary is gone, a stale copy of a live
	// primary, and a missing copy.
	tbl := f.x.Table().Client()
	ghost := `{"PartitionKey":"email_D01","RowKey":"ghost@contoso.com","TkPrimaryPK":"D01","TkPrimaryRK":"empid_999999"}`
	stale := `{"PartitionKey":"email_D02","RowKey":"old@contoso.com","TkPrimaryPK":"D02","TkPrimaryRK":"empid_000002"}`
	for _, b := range []string{ghost, stale} {
		if _, err := tbl.AddEntity(ctx, []byte(b), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.DeleteEntity(ctx, "email_D03", "e000003@contoso.com", nil); err != nil {
		t.Fatal(err)
	}
	rep, err = f.x.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stale copy names a live primary that no longer wants it; the
	// ghost names none that exists.
	if got := fmt.Sprint(rep.Missing, rep.Stale, rep.Orphans); got != fmt.Sprintf("[%[1]s(email_D03, e000003@contoso.com)] [%[1]s(email_D02, old@contoso.com)] [%[1]s(email_D01, ghost@contoso.com)]", f.x.Table().Name()) {
		t.Errorf("Verify found %s", got)
	}
	t0 = time.Now()
	if _, err := f.x.Repair(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("Repair: %v", time.Since(t0))
	if rep, err := f.x.Verify(ctx, nil); err != nil || !rep.OK() {
		t.Errorf("Verify after Repair = %+v, %v", rep, err)
	}
	if _, err := f.x.Lookup(ctx, "email", "D03", "e000003@contoso.com", nil); err != nil {
		t.Errorf("the missing copy was not restored: %v", err)
	}
}

// Verify names each missing copy by its own index and value, also when an
// index before it has no value for the entity (and so no copy): the
// report's entries follow the copies the entity wants, not the order of
// the indexes. On an EventualIndexedTable, and on a Model's eventual
// views, whose report left the value out.
func TestEventualIndexVerifyNamesTheIndexOfEachCopy(t *testing.T) {
	t.Parallel()
	indexes := []patterns.Index[ixEmployee]{
		{Name: "nick", Key: func(e *ixEmployee) string { return "" }}, // no entity has one
		{Name: "email", Unique: true, Key: func(e *ixEmployee) string { return e.Email }},
	}
	type repo interface {
		Table() *patterns.Table[ixEmployee]
		CreateIfNotExists(context.Context, *patterns.CreateOptions) error
		Verify(context.Context, *patterns.MaintenanceOptions) (*patterns.IndexReport, error)
	}
	for _, c := range []struct {
		name string
		open func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) (repo, error)
	}{
		{"EventualIndexedTable", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) (repo, error) {
			return patterns.NewEventualIndexedTable(acct, testenv.TableName(t), q, indexes, nil)
		}},
		{"Model", func(t *testing.T, acct *tablekit.Account, q *consistency.Queue) (repo, error) {
			return patterns.NewModel(acct, testenv.TableName(t), patterns.Views[ixEmployee]{EventualIndexes: indexes}, &patterns.ModelOptions{Queue: q})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			acct := testenv.Account(t)
			q, _ := testQueue(t, acct)
			x, err := c.open(t, acct, q)
			must(t, err)
			must(t, x.CreateIfNotExists(ctx, nil))
			// Written without the repository: its email copy is missing.
			e := ixEmp("Sales", "000223", "Jane", "Jones", "jonesj@contoso.com", 30)
			must(t, x.Table().Insert(ctx, &e, nil))
			rep, err := x.Verify(ctx, nil)
			must(t, err)
			if len(rep.Entries) != 1 || rep.Entries[0].Problem != patterns.IndexMissing || rep.Entries[0].Index != "email" || rep.Entries[0].Value != "jonesj@contoso.com" {
				t.Fatalf("Verify's entries: %+v; want the email copy missing, value jonesj@contoso.com", rep.Entries)
			}
		})
	}
}

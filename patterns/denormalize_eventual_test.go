package patterns_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The guide's denormalization example with the manager and the department
// in different tables: the department shows its manager's name and phone,
// kept by the worker.
type edManager struct {
	PartitionKey, RowKey string
	FirstName, LastName  string
	Phone                string
}

type edDepartment struct {
	PartitionKey, RowKey string
	DepartmentName       string
	ManagerID            string // keys.Join of the manager's keys: the link
	ManagerFirstName     string
	ManagerPhone         string
}

func TestEventualDenormalizationAcrossTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A service whose clock the test moves: the intents' 1 s Delay passes
	// on it (real time on Azurite or an account).
	cs, clock := testenv.ClockConnectionString(t)
	acct, c := testenv.CountingAccountOn(t, cs)
	wacct := testenv.AccountOn(t, cs, nil)
	qname := testenv.QueueName(t)
	container := testenv.ContainerName(t)
	q, err := consistency.NewQueue(acct, qname, &consistency.QueueOptions{BlobContainer: container})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(qname), nil)
	})
	deptTable := testenv.TableName(t)
	depts, err := patterns.NewTable[edDepartment](acct, deptTable, nil)
	if err != nil {
		t.Fatal(err)
	}
	dn, err := patterns.NewEventualDenormalization(acct, testenv.TableName(t), q,
		func(m *edManager) []consistency.EntityRef {
			return []consistency.EntityRef{{Table: deptTable, PartitionKey: "Sales", RowKey: "Department"}, {Table: deptTable, PartitionKey: "Marketing", RowKey: "Department"}}
		},
		map[string]string{"FirstName": "ManagerFirstName", "Phone": "ManagerPhone"},
		&patterns.EventualDenormalizationOptions{Link: "ManagerID"})
	if err != nil {
		t.Fatal(err)
	}
	for _, create := range []func(context.Context, *patterns.CreateOptions) error{depts.CreateIfNotExists, dn.Sources().CreateIfNotExists} {
		if err := create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	mary := edManager{PartitionKey: "Managers", RowKey: "000100", FirstName: "Mary", LastName: "Smith", Phone: "555-0100"}
	if err := dn.Sources().Insert(ctx, &mary, nil); err != nil {
		t.Fatal(err)
	}
	link := keys.Join("Managers", "000100")
	sales := edDepartment{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", ManagerID: link, ManagerFirstName: "Mary", ManagerPhone: "555-0100"}
	// Marketing has moved on to another manager: the old manager's changes
	// must not reach it.
	marketing := edDepartment{PartitionKey: "Marketing", RowKey: "Department", DepartmentName: "Marketing", ManagerID: keys.Join("Managers", "000200"), ManagerFirstName: "Ken", ManagerPhone: "555-0200"}
	for _, d := range []*edDepartment{&sales, &marketing} {
		if err := depts.Insert(ctx, d, nil); err != nil {
			t.Fatal(err)
		}
	}

	c.Reset()
	if _, err := dn.UpdateSource(ctx, "Managers", "000100", func(m *edManager) error { m.Phone = "555-0111"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 3, "UpdateSource (read, enqueue, write)")
	if _, err := dn.UpdateSource(ctx, "Managers", "000100", func(m *edManager) error { m.FirstName = "Maria"; return nil }, nil); err != nil {
		t.Fatal(err)
	}

	w, err := consistency.NewWorker(wacct, &consistency.WorkerOptions{
		Queues: []string{qname}, PollInterval: 50 * time.Millisecond, BlobContainer: container,
		Backoff: &consistency.Backoff{Delays: []time.Duration{0, 200 * time.Millisecond}}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(wctx, nil) }()
	defer func() { stop(); wg.Wait() }()

	clock.Advance(time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := depts.Get(ctx, "Sales", "Department", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.ManagerFirstName == "Maria" && got.ManagerPhone == "555-0111" && got.DepartmentName == "Sales" && got.ManagerID == link {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sales department = %+v, want Maria at 555-0111", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The worker applied both messages by now (they were taken in order of
	// visibility); Marketing keeps its own manager's details.
	deadline = time.Now().Add(10 * time.Second)
	for w.Metrics().Processed() < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	got, err := depts.Get(ctx, "Marketing", "Department", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagerFirstName != "Ken" || got.ManagerPhone != "555-0200" {
		t.Errorf("Marketing took the old manager's details: %+v", got)
	}

	// A late duplicate of the first message changes nothing: the step
	// copies the source as it is now.
	tx := consistency.NewTransaction(consistency.NewStep(consistency.KindCopyProps, consistency.CopyPropsArgs{
		Source: consistency.EntityRef{Table: dn.Sources().Name(), PartitionKey: "Managers", RowKey: "000100"},
		Target: consistency.EntityRef{Table: deptTable, PartitionKey: "Sales", RowKey: "Department"},
		Props:  map[string]string{"FirstName": "ManagerFirstName", "Phone": "ManagerPhone"},
		Link:   "ManagerID", LinkValue: link,
	}))
	if err := consistency.Apply(ctx, wacct, tx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := depts.Get(ctx, "Sales", "Department", nil); got.ManagerFirstName != "Maria" || got.ManagerPhone != "555-0111" {
		t.Errorf("after a late duplicate: %+v", got)
	}
}

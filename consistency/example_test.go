package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tools/testenv"
)

// connStr is the test account's connection string (Azurite, started by
// the package's TestMain on first use). A program of yours passes its own,
// for instance tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString).
func connStr() string { return testenv.MainConnectionString() }

// Employee is the guide's employee entity.
type Employee struct {
	PartitionKey string // department
	RowKey       string // employee id
	FirstName    string
	LastName     string
}

// createEmployeeTables creates the guide's Current and Archive tables and
// writes employee 000456 into Current, through the SDK's client.
func createEmployeeTables(ctx context.Context, acct *tablekit.Account, current, archive string) {
	for _, name := range []string{current, archive} {
		if _, err := acct.Tables().CreateTable(ctx, name, nil); err != nil {
			log.Fatal(err)
		}
	}
	lee, err := entity.Marshal(Employee{PartitionKey: "Sales", RowKey: "000456", FirstName: "Lee", LastName: "Park"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := acct.Tables().NewClient(current).AddEntity(ctx, lee, nil); err != nil {
		log.Fatal(err)
	}
}

// The writer's side of the guide's archive: the intent to move employee
// 000456 from the Current table to the Archive table goes on a queue, in
// one request; a worker applies it later.
func ExampleQueue() {
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr(), nil)
	if err != nil {
		log.Fatal(err)
	}
	current, archive := "exqueueCurrent", "exqueueArchive"
	createEmployeeTables(ctx, acct, current, archive)

	queue, err := consistency.NewQueue(acct, "exqueue", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := queue.Create(ctx, nil); err != nil { // the queue, its poison queue and its blob container
		log.Fatal(err)
	}
	tx := consistency.NewTransaction(consistency.MoveEntity(
		consistency.EntityRef{Table: current, PartitionKey: "Sales", RowKey: "000456"},
		consistency.EntityRef{Table: archive}))
	if err := queue.Enqueue(ctx, tx, nil); err != nil {
		log.Fatal(err)
	}
	depth, err := queue.Depth(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(depth.Queue, "holds", depth.Messages, "transaction;", depth.Poison, "poisoned")

	// A step is checked before it is sent: a malformed one fails here,
	// not in the poison queue.
	bad := consistency.NewTransaction(consistency.MoveEntity(consistency.EntityRef{Table: current}, consistency.EntityRef{}))
	err = queue.Enqueue(ctx, bad, nil)
	fmt.Println("malformed step refused:", errors.Is(err, tablekit.ErrInvalidArgument))
	// Output:
	// exqueue holds 1 transaction; 0 poisoned
	// malformed step refused: true
}

// The worker's side of the guide's archive: it receives the transaction,
// copies employee 000456 into Archive with an insert-or-replace, deletes
// it from Current if it still exists, and deletes the message only then.
// In production the tablekit-worker binary runs it; here it runs
// in-process until the queue is empty.
func ExampleWorker() {
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr(), nil)
	if err != nil {
		log.Fatal(err)
	}
	current, archive := "exworkerCurrent", "exworkerArchive"
	createEmployeeTables(ctx, acct, current, archive)
	queue, err := consistency.NewQueue(acct, "exworker", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := queue.Create(ctx, nil); err != nil {
		log.Fatal(err)
	}
	tx := consistency.NewTransaction(consistency.MoveEntity(
		consistency.EntityRef{Table: current, PartitionKey: "Sales", RowKey: "000456"},
		consistency.EntityRef{Table: archive}))
	if err := queue.Enqueue(ctx, tx, nil); err != nil {
		log.Fatal(err)
	}

	worker, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues:       []string{queue.Name()},
		UntilEmpty:   true, // return once the queue is empty; without it, Run until ctx is cancelled
		PollInterval: 100 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("processed:", worker.Metrics().Processed(), "poisoned:", worker.Metrics().Poisoned())

	_, err = acct.Tables().NewClient(current).GetEntity(ctx, "Sales", "000456", nil)
	fmt.Println("in Current:", !errors.Is(tablekit.MapError(err, "get", current), tablekit.ErrNotFound))
	got, err := acct.Tables().NewClient(archive).GetEntity(ctx, "Sales", "000456", nil)
	if err != nil {
		log.Fatal(err)
	}
	var lee Employee
	if err := entity.Unmarshal(got.Value, &lee); err != nil {
		log.Fatal(err)
	}
	fmt.Println("in Archive:", lee.RowKey, lee.FirstName, lee.LastName)
	// Output:
	// processed: 1 poisoned: 0
	// in Current: false
	// in Archive: 000456 Lee Park
}

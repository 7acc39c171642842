// Command archive is the design guide's "Eventually consistent transactions
// pattern": archiving former employees from the Current table to the
// Archive table. The two writes (insert into Archive, delete from Current)
// cannot share an entity group transaction, so the client puts the intent
// on a queue (consistency.Queue.Enqueue of a consistency.MoveEntity step,
// one request) and a worker applies it: it copies the entity with an
// insert-or-replace, deletes the original if it still exists, and deletes
// the message only when both have succeeded. Both steps are idempotent, so
// a message delivered twice converges to the same state.
//
// The worker is the stock tablekit-worker binary in production. With
// -external-worker (`make demo` sets it, and runs tablekit-worker with
// --queue archive) the program relies on that process; otherwise it
// runs a consistency.Worker in-process on a separate Account, so its
// requests are not counted with the program's own.
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to
// Azurite's development storage when the variable is unset, so it runs on
// Azure unchanged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Employee is the guide's employee entity.
type Employee struct {
	PartitionKey string // department
	RowKey       string // employee id
	FirstName    string
	LastName     string
	Age          int
}

func main() {
	connStr := tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString)
	external := flag.Bool("external-worker", false, "a tablekit-worker process applies the transactions: run no worker in this one")
	flag.Parse()
	inProcess := !*external
	if err := run(context.Background(), connStr, "archive", inProcess); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// run archives employee 000456. name names the queue and prefixes the two
// tables; inProcess runs a worker inside the program.
func run(ctx context.Context, connStr, name string, inProcess bool) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	current, err := patterns.NewTable[Employee](acct, name+"Current", nil)
	if err != nil {
		return err
	}
	archive, err := patterns.NewTable[Employee](acct, name+"Archive", nil)
	if err != nil {
		return err
	}
	queue, err := consistency.NewQueue(acct, name, nil)
	if err != nil {
		return err
	}
	if err := current.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, current.Drop(ctx, nil)) }()
	if err := archive.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, archive.Drop(ctx, nil)) }()
	if err := queue.Create(ctx, nil); err != nil {
		return err
	}

	if inProcess {
		stop, err := startWorker(connStr, name)
		if err != nil {
			return err
		}
		// Deferred calls run last-in first-out: the worker stops before
		// its queues are deleted.
		defer func() {
			for _, q := range []string{name, consistency.PoisonQueueName(name)} {
				if _, derr := acct.Queues().DeleteQueue(ctx, q, nil); derr != nil {
					err = errors.Join(err, tablekit.MapError(derr, "delete queue", q))
				}
			}
		}()
		defer func() { err = errors.Join(err, stop()) }()
	}

	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31},
		{PartitionKey: "Sales", RowKey: "000456", FirstName: "Lee", LastName: "Park", Age: 58},
		{PartitionKey: "Sales", RowKey: "000789", FirstName: "Ana", LastName: "Ruiz", Age: 44},
	} {
		if err := current.Insert(ctx, &e, nil); err != nil {
			return err
		}
	}
	requests.Take()
	fmt.Println("current employees: 000123, 000456, 000789")

	// Step 1 of the guide's diagram: the client places the intent on the
	// queue. The worker does steps 2 to 6.
	tx := consistency.NewTransaction(consistency.MoveEntity(
		consistency.EntityRef{Table: current.Name(), PartitionKey: "Sales", RowKey: "000456"},
		consistency.EntityRef{Table: archive.Name()}))
	if err := queue.Enqueue(ctx, tx, nil); err != nil {
		return err
	}
	fmt.Printf("enqueued: archive employee 000456: %s\n", plural(requests.Take()))

	// The client does not wait in real life; the program does, to show
	// the outcome. Readers may meanwhile see the employee in both tables,
	// never in neither (the guide: no isolation, eventual consistency).
	if err := waitArchived(ctx, current, archive, "Sales", "000456"); err != nil {
		return err
	}
	requests.Take() // the polling above is not part of the story
	fmt.Println("the worker moved it")

	var ids []string
	for e, err := range current.Query(ctx, keys.PK().Eq("Sales"), nil) {
		if err != nil {
			return err
		}
		ids = append(ids, e.RowKey)
	}
	fmt.Printf("Current, Sales partition: %v: %s\n", ids, plural(requests.Take()))
	got, err := archive.Get(ctx, "Sales", "000456", nil)
	if err != nil {
		return err
	}
	fmt.Printf("Archive, Sales/000456: %s %s, age %d: %s\n", got.FirstName, got.LastName, got.Age, plural(requests.Take()))

	// A message the worker could not delete reappears and is applied
	// again: insert-or-replace and delete-if-exists make that harmless.
	if err := consistency.Apply(ctx, acct, tx, nil, nil); err != nil {
		return err
	}
	n := requests.Take()
	_, err = current.Get(ctx, "Sales", "000456", nil)
	if !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("000456 is back in Current: %v", err)
	}
	if _, err := archive.Get(ctx, "Sales", "000456", nil); err != nil {
		return err
	}
	requests.Take()
	fmt.Printf("applied the same transaction again (a redelivery): no change, %s\n", plural(n))
	return nil
}

// waitArchived polls until the entity is in archive and no longer in
// current, or gives up after a minute.
func waitArchived(ctx context.Context, current, archive *patterns.Table[Employee], pk, rk string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, errCur := current.Get(ctx, pk, rk, nil)
		_, errArc := archive.Get(ctx, pk, rk, nil)
		if errors.Is(errCur, tablekit.ErrNotFound) && errArc == nil {
			return nil
		}
		for _, err := range []error{errCur, errArc} {
			if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("employee %s/%s not archived: is a worker reading the queue? %w", pk, rk, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startWorker runs a consistency worker on queue in the background, on an
// account of its own, and returns the function that stops it.
func startWorker(connStr, queue string) (stop func() error, err error) {
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		return nil, err
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues:       []string{queue},
		PollInterval: 200 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

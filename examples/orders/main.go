// Command orders is an order store on one patterns.Model: the patterns of
// the design guide that one entity needs at once, kept by every write.
//
//   - orders by number in the customer's partition: an index in the
//     order's partition, written in the order's entity group transaction;
//   - orders by status across customers: an index in another table, kept by
//     the consistency worker from the intent each write enqueues first;
//   - a customer's recent orders, newest first: a log tail in the
//     customer's partition, in the same transaction;
//   - the items, which can outgrow a property, in a blob (table:"Items,blob");
//   - shipped orders archived through the worker, which moves each order
//     with every view: nothing stays behind in the indexes or the tail.
//
// The worker is the stock tablekit-worker binary in production. With
// -external-worker (`make demo` sets it, and runs tablekit-worker with
// --queue orders) the program relies on that process; otherwise it runs a
// consistency.Worker in-process on an account of its own, so that its
// requests are not counted with the program's.
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to the
// development storage ports when the variable is unset.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
)

// Order is one order of a customer. Nothing in it is tablekit's: the
// views are declared beside it (views below).
type Order struct {
	PartitionKey string // customer id
	RowKey       string // order id
	ETag         string
	Number       string
	Status       string
	Placed       time.Time
	Total        float64
	Items        []byte `table:"Items,blob"`
}

func views(statusTable string) patterns.Views[Order] {
	return patterns.Views[Order]{
		Indexes: []patterns.Index[Order]{{Name: "number", Unique: true,
			Key: func(o *Order) string { return o.Number }, Props: []string{"Number", "Status", "Total"}}},
		EventualIndexes: []patterns.Index[Order]{{Name: "status", Table: statusTable,
			Key:       func(o *Order) string { return o.Status },
			Partition: func(o *Order) string { return o.Status }, // one partition per status, across customers
			Props:     []string{"Number", "Status", "Total"}}},
		Tails: []patterns.Tail[Order]{{Name: "recent",
			Time: func(o *Order) time.Time { return o.Placed }, Props: []string{"Number", "Placed", "Total"}}},
	}
}

func main() {
	connStr := tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString)
	external := flag.Bool("external-worker", false, "a tablekit-worker process applies the transactions: run no worker in this one")
	flag.Parse()
	if err := run(context.Background(), connStr, "orders", !*external); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// run plays the order store. name names the queue and prefixes the tables
// and the container; inProcess runs a worker inside the program.
func run(ctx context.Context, connStr, name string, inProcess bool) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	queue, err := consistency.NewQueue(acct, name, nil)
	if err != nil {
		return err
	}
	container := strings.ToLower(name) + "-items"
	opts := &patterns.ModelOptions{Queue: queue, Container: container}
	orders, err := patterns.NewModel(acct, name+"Orders", views(name+"ByStatus"), opts)
	if err != nil {
		return err
	}
	// The archive is a Model with no view: it reads the archived orders'
	// items from their blobs.
	archive, err := patterns.NewModel(acct, name+"Archive", patterns.Views[Order]{}, &patterns.ModelOptions{Container: container})
	if err != nil {
		return err
	}
	for _, m := range []*patterns.Model[Order]{orders, archive} {
		if err := m.CreateIfNotExists(ctx, nil); err != nil {
			return err
		}
	}
	defer func() {
		for _, t := range []string{name + "Orders", name + "ByStatus", name + "Archive"} {
			if _, derr := acct.Tables().DeleteTable(ctx, t, nil); derr != nil {
				err = errors.Join(err, tablekit.MapError(derr, "delete table", t))
			}
		}
		if _, derr := acct.Blobs().DeleteContainer(ctx, container, nil); derr != nil {
			err = errors.Join(err, tablekit.MapError(derr, "delete container", container))
		}
	}()
	if inProcess {
		stop, err := startWorker(connStr, name)
		if err != nil {
			return err
		}
		defer func() {
			for _, q := range []string{name, consistency.PoisonQueueName(name)} {
				if _, derr := acct.Queues().DeleteQueue(ctx, q, nil); derr != nil {
					err = errors.Join(err, tablekit.MapError(derr, "delete queue", q))
				}
			}
		}()
		defer func() { err = errors.Join(err, stop()) }()
	}
	requests.Take()

	day := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	large := bytes.Repeat([]byte("sku-0042 x 1; "), 10_000) // 140,000 bytes: past a property's 64 KiB
	for i, o := range []Order{
		{PartitionKey: "c1", RowKey: "o1", Number: "N1", Status: "open", Placed: day, Total: 20, Items: []byte("sku-0001 x 2")},
		{PartitionKey: "c1", RowKey: "o2", Number: "N2", Status: "open", Placed: day.Add(time.Hour), Total: 1400, Items: large},
		{PartitionKey: "c1", RowKey: "o3", Number: "N3", Status: "open", Placed: day.Add(2 * time.Hour), Total: 5},
		{PartitionKey: "c2", RowKey: "o4", Number: "N4", Status: "open", Placed: day.Add(3 * time.Hour), Total: 75},
	} {
		if err := orders.Insert(ctx, &o, nil); err != nil {
			return err
		}
		if i < 3 {
			fmt.Printf("placed %s (%d bytes of items): %s\n", o.Number, len(o.Items), plural(requests.Take()))
		}
	}
	requests.Take()
	if err := waitFor(ctx, "the status index", func() (bool, error) { return count(ctx, orders, "status", "open", 4) }); err != nil {
		return err
	}
	requests.Take()

	o, err := orders.Lookup(ctx, "number", "c1", "N2", nil)
	if err != nil {
		return err
	}
	fmt.Printf("order N2 by number: %s/%s, %s, total %.0f: %s\n", o.PartitionKey, o.RowKey, o.Status, o.Total, plural(requests.Take()))
	recent, err := orders.Latest(ctx, "recent", "c1", 2, nil)
	if err != nil {
		return err
	}
	fmt.Printf("c1's 2 most recent orders: %s, %s: %s\n", recent[0].Number, recent[1].Number, plural(requests.Take()))
	got, err := orders.Get(ctx, "c1", "o2", nil)
	if err != nil {
		return err
	}
	fmt.Printf("order o2 with its items: %d bytes: %s (the entity, its blob)\n", len(got.Items), plural(requests.Take()))

	for _, id := range []string{"o1", "o2"} {
		if _, err := orders.Update(ctx, "c1", id, func(o *Order) error { o.Status = "shipped"; return nil }, nil); err != nil {
			return err
		}
		fmt.Printf("shipped %s: %s\n", id, plural(requests.Take()))
	}
	if err := waitFor(ctx, "the shipped orders", func() (bool, error) { return count(ctx, orders, "status", "shipped", 2) }); err != nil {
		return err
	}
	requests.Take()
	fmt.Printf("shipped, across customers: %s: %s\n", numbers(ctx, orders, "shipped"), plural(requests.Take()))

	for _, id := range []string{"o1", "o2"} {
		if err := orders.Archive(ctx, "c1", id, archive.Table().Name(), nil); err != nil {
			return err
		}
		fmt.Printf("archive %s: %s\n", id, plural(requests.Take()))
	}
	if err := waitFor(ctx, "the archive", func() (bool, error) { return count(ctx, orders, "status", "shipped", 0) }); err != nil {
		return err
	}
	if err := waitFor(ctx, "the archive", func() (bool, error) {
		_, err := archive.Table().Get(ctx, "c1", "o2", nil)
		return err == nil, ignoreNotFound(err)
	}); err != nil {
		return err
	}
	requests.Take()
	fmt.Printf("shipped after the archive: [%s]\n", numbers(ctx, orders, "shipped"))
	recent, err = orders.Latest(ctx, "recent", "c1", 10, nil)
	if err != nil {
		return err
	}
	fmt.Printf("c1's recent orders after the archive: %d (%s)\n", len(recent), recent[0].Number)
	if _, err := orders.Lookup(ctx, "number", "c1", "N1", nil); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("archived N1 is still found by number: %v", err)
	}
	old, err := archive.Get(ctx, "c1", "o2", nil)
	if err != nil {
		return err
	}
	fmt.Printf("archived o2: %s, %d bytes of items\n", old.Status, len(old.Items))
	rep, err := orders.Verify(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Printf("verify: %d orders, %d views missing, %d stale, %d orphaned\n", rep.Primaries, len(rep.Missing), len(rep.Stale), len(rep.Orphans))
	return nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil
	}
	return err
}

// count reports whether index holds n orders with value (a worker lags).
func count(ctx context.Context, orders *patterns.Model[Order], index, value string, n int) (bool, error) {
	got := 0
	for _, err := range orders.Find(ctx, index, value, value, nil) {
		if err != nil {
			return false, err
		}
		got++
	}
	return got == n, nil
}

func numbers(ctx context.Context, orders *patterns.Model[Order], status string) string {
	var out []string
	for o, err := range orders.Find(ctx, "status", status, status, nil) {
		if err != nil {
			return err.Error()
		}
		out = append(out, o.Number)
	}
	return strings.Join(out, ", ")
}

// waitFor polls done until it holds, or gives up after a minute: the
// worker applies the intents after their delay (1 s).
func waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: is a worker reading the queue? %w", what, ctx.Err())
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
		Queues: []string{queue}, PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
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

package patterns_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's employee needs several patterns at once: read by email in
// its department (an index in its partition, written in its transaction),
// found by id across the company (an index in another table, kept by the
// worker), its department's latest hires newest first (a tail), its photo
// in a blob, and archived when it leaves. One Model keeps them all.
func ExampleModel() {
	type Employee struct {
		PartitionKey string // department
		RowKey       string // employee id
		ETag         string
		Name         string
		Email        string
		Hired        time.Time
		Photo        []byte `table:"Photo,blob"`
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	queue, err := consistency.NewQueue(acct, "exmodel", nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewModel(acct, "exmodel", patterns.Views[Employee]{
		Indexes: []patterns.Index[Employee]{{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }}},
		EventualIndexes: []patterns.Index[Employee]{{Name: "id", Unique: true, Table: "exmodelbyid",
			Key: func(e *Employee) string { return e.RowKey }, Partition: func(*Employee) string { return "all" }}},
		Tails: []patterns.Tail[Employee]{{Name: "hired", Time: func(e *Employee) time.Time { return e.Hired }}},
	}, &patterns.ModelOptions{Queue: queue, Container: "exmodel-photos"})
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil { // tables, container, queue
		log.Fatal(err)
	}
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for i, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000123", Name: "Jun Cao", Email: "junc@contoso.com", Hired: day, Photo: []byte("jpeg...")},
		{PartitionKey: "Sales", RowKey: "000223", Name: "Jane Jones", Email: "jonesj@contoso.com", Hired: day.AddDate(0, 1, 0)},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil { // the intent, then one transaction
			log.Fatal(err)
		}
		fmt.Println("hired", i+1, e.Name)
	}
	jane, err := employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by email:", jane.RowKey, jane.Name)
	latest, err := employees.Latest(ctx, "hired", "Sales", 1, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("latest hire:", latest[0].Name)
	jun, err := employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("photo: %q\n", jun.Photo)

	// The worker keeps the id index, and moves an archived employee with
	// every view.
	// The archive: a Model with no view, which reads the photos back.
	archive, err := patterns.NewModel(acct, "exmodelarchive", patterns.Views[Employee]{}, &patterns.ModelOptions{Container: "exmodel-photos"})
	if err != nil {
		log.Fatal(err)
	}
	if err := archive.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	if err := employees.Archive(ctx, "Sales", "000123", archive.Table().Name(), nil); err != nil {
		log.Fatal(err)
	}
	// In production the tablekit-worker binary runs; here Drain applies
	// what the queue holds and returns once it is empty, waiting up to 10 s
	// for the intents' 1 s delay. The archived employee's insert intent
	// finds no employee to index: Drain retries it at once, not after the
	// worker's backoff, until it stops waiting for the insert.
	worker, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: []string{queue.Name()}, PollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Drain(ctx, &consistency.DrainOptions{Wait: 10 * time.Second}); err != nil {
		log.Fatal(err)
	}
	rep, err := employees.Verify(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the archive:", rep.Primaries, "employee, views OK:", rep.OK())
	old, err := archive.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("archived: %s, photo %q\n", old.Name, old.Photo)

	for _, t := range []string{"exmodel", "exmodelbyid", "exmodelarchive"} {
		_, _ = acct.Tables().DeleteTable(ctx, t, nil)
	}
	_, _ = acct.Blobs().DeleteContainer(ctx, "exmodel-photos", nil)
	// Output:
	// hired 1 Jun Cao
	// hired 2 Jane Jones
	// by email: 000223 Jane Jones
	// latest hire: Jane Jones
	// photo: "jpeg..."
	// after the archive: 1 employee, views OK: true
	// archived: Jun Cao, photo "jpeg..."
}

package patterns_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's denormalization pattern: the department keeps a copy of its
// manager's name and phone, so one point query returns everything. The
// manager (an employee) and the department share a partition, so every
// change keeps them consistent in one entity group transaction.
func ExampleDenormalization() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		Name         string
		Phone        string
		Manages      string // the RowKey of the department managed, if any
	}
	type Department struct {
		PartitionKey string
		RowKey       string
		ETag         string
		ManagerID    string // the manager's RowKey: the link
		ManagerName  string
		ManagerPhone string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	directory, err := patterns.NewDenormalization(acct, "exdenormalization",
		func(e *Employee) []string { // the targets of a source
			if e.Manages == "" {
				return nil
			}
			return []string{e.Manages}
		},
		func(d *Department) string { return d.ManagerID }, // the source of a target
		func(e *Employee, d *Department) { d.ManagerName, d.ManagerPhone = e.Name, e.Phone },
		&patterns.DenormalizationOptions[Employee]{
			// Keep the managers' lists in step when a department moves.
			Link: func(e *Employee, dept string) { e.Manages = dept },
			Unlink: func(e *Employee, dept string) {
				if e.Manages == dept {
					e.Manages = ""
				}
			},
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := directory.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000100", Name: "Mary Smith", Phone: "555-0100"},
		{PartitionKey: "Sales", RowKey: "000200", Name: "Bob Lee", Phone: "555-0200"},
	} {
		if err := directory.Sources().Insert(ctx, &e, nil); err != nil {
			log.Fatal(err)
		}
	}
	if err := directory.Targets().Insert(ctx, &Department{PartitionKey: "Sales", RowKey: "Department"}, nil); err != nil {
		log.Fatal(err)
	}
	show := func() {
		d, err := directory.Targets().Get(ctx, "Sales", "Department", nil) // one point query
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("Sales is managed by", d.ManagerName, d.ManagerPhone)
	}

	// Mary becomes the manager: the department gets her details and she
	// lists the department, in one transaction.
	if _, err := directory.UpdateTarget(ctx, "Sales", "Department", func(d *Department) error {
		d.ManagerID = "000100"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	show()
	// Mary's new phone reaches the department in the same transaction.
	if _, err := directory.UpdateSource(ctx, "Sales", "000100", func(e *Employee) error {
		e.Phone = "555-0111"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	show()
	// The department moves to Bob; Mary's later changes stay hers.
	if _, err := directory.UpdateTarget(ctx, "Sales", "Department", func(d *Department) error {
		d.ManagerID = "000200"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := directory.UpdateSource(ctx, "Sales", "000100", func(e *Employee) error {
		e.Phone = "555-0122"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	show()
	// Output:
	// Sales is managed by Mary Smith 555-0100
	// Sales is managed by Mary Smith 555-0111
	// Sales is managed by Bob Lee 555-0200
}

// The denormalization pattern across tables: the departments, in a table
// of their own, show their manager's first name and phone, and the
// consistency worker copies every change of the manager into them.
func ExampleEventualDenormalization() {
	type Manager struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		Phone        string
		Manages      string // the department managed
	}
	type Department struct {
		PartitionKey     string
		RowKey           string
		ManagerID        string // keys.Join of the manager's keys: the link
		ManagerFirstName string
		ManagerPhone     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	departments, err := patterns.NewTable[Department](acct, "exdepartments", nil)
	if err != nil {
		log.Fatal(err)
	}
	queue, err := consistency.NewQueue(acct, "exeventualdenormalization", nil)
	if err != nil {
		log.Fatal(err)
	}
	managers, err := patterns.NewEventualDenormalization(acct, "exmanagers", queue,
		func(m *Manager) []consistency.EntityRef {
			return []consistency.EntityRef{{Table: departments.Name(), PartitionKey: m.Manages, RowKey: "Department"}}
		},
		map[string]string{"FirstName": "ManagerFirstName", "Phone": "ManagerPhone"},
		&patterns.EventualDenormalizationOptions{Link: "ManagerID"})
	if err != nil {
		log.Fatal(err)
	}
	if err := departments.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	if err := managers.CreateIfNotExists(ctx, nil); err != nil { // the managers' table and the queue
		log.Fatal(err)
	}

	mary := Manager{PartitionKey: "Managers", RowKey: "000100", FirstName: "Mary", Phone: "555-0100", Manages: "Sales"}
	if err := managers.Sources().Insert(ctx, &mary, nil); err != nil {
		log.Fatal(err)
	}
	sales := Department{PartitionKey: "Sales", RowKey: "Department", ManagerID: keys.Join("Managers", "000100"), ManagerFirstName: "Mary", ManagerPhone: "555-0100"}
	if err := departments.Insert(ctx, &sales, nil); err != nil {
		log.Fatal(err)
	}

	// Mary changes her phone: the change and the intent to copy it are
	// written now, the copy follows when the worker runs.
	if _, err := managers.UpdateSource(ctx, "Managers", "000100", func(m *Manager) error {
		m.Phone = "555-0111"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	before, err := departments.Get(ctx, "Sales", "Department", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("before the worker:", before.ManagerFirstName, before.ManagerPhone)

	// In production the tablekit-worker binary applies the queue's
	// transactions; here a worker runs in-process until the queue is empty.
	worker, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues:       []string{queue.Name()},
		UntilEmpty:   true,
		PollInterval: 100 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx, nil); err != nil {
		log.Fatal(err)
	}
	after, err := departments.Get(ctx, "Sales", "Department", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the worker: ", after.ManagerFirstName, after.ManagerPhone)
	// Output:
	// before the worker: Mary 555-0100
	// after the worker:  Mary 555-0111
}

// The guide's compound key pattern: an employee's yearly reviews live in
// the employee's partition under RowKeys "empid_000123_2012", ..., so one
// review is a point query and all of them are one range query.
func ExampleCompoundKeys() {
	type ReviewKey struct {
		ID   int
		Year int
	}
	type Review struct {
		PartitionKey  string
		RowKey        string
		ManagerRating int
		PeerRating    int
		Comments      string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	reviews, err := patterns.NewCompoundKeys[ReviewKey, Review](acct, "excompoundkeys", "empid_{ID:6}_{Year}", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := reviews.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for _, r := range []struct {
		key    ReviewKey
		review Review
	}{
		{ReviewKey{123, 2012}, Review{ManagerRating: 3, PeerRating: 4, Comments: "steady"}},
		{ReviewKey{123, 2013}, Review{ManagerRating: 4, PeerRating: 4, Comments: "led the launch"}},
		{ReviewKey{124, 2013}, Review{ManagerRating: 5, PeerRating: 3, Comments: "new hire"}},
	} {
		rk, err := reviews.RowKey(r.key)
		if err != nil {
			log.Fatal(err)
		}
		r.review.PartitionKey, r.review.RowKey = "Sales", rk
		if err := reviews.Table().Insert(ctx, &r.review, nil); err != nil {
			log.Fatal(err)
		}
	}

	one, err := reviews.Get(ctx, "Sales", ReviewKey{ID: 123, Year: 2013}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("point query:", one.RowKey, one.Comments)

	// Every review of employee 000123: the first two parts of the key.
	f, err := reviews.RelatedFilter("Sales", ReviewKey{ID: 123}, 2, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f)
	for r, err := range reviews.Related(ctx, "Sales", ReviewKey{ID: 123}, 2, &patterns.RelatedOptions{
		Query: &patterns.QueryOptions{Select: []string{"RowKey", "ManagerRating", "PeerRating", "Comments"}},
	}) {
		if err != nil {
			log.Fatal(err)
		}
		k, err := reviews.Parse(r.RowKey)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(" ", k.Year, r.ManagerRating, r.PeerRating, r.Comments)
	}
	// Output:
	// point query: empid_000123_2013 led the launch
	// (PartitionKey eq 'Sales') and (RowKey ge 'empid_000123_') and (RowKey lt 'empid_000123`')
	//   2012 3 4 steady
	//   2013 4 4 led the launch
}

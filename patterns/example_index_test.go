package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's intra-partition secondary index: next to the employee
// "Sales"/"empid_000223", a copy under "email_jonesj@contoso.com" in the
// same partition, written in the same transaction. A lookup by email is
// a point query, and a range of ids or addresses is a range query.
func ExampleIndexedTable() {
	type Employee struct {
		PartitionKey string // department
		RowKey       string // "empid_" + employee id
		ETag         string
		FirstName    string
		LastName     string
		Age          int
		Email        string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewIndexedTable(acct, "exindexed", []patterns.Index[Employee]{{
		Name:   "email",
		Unique: true,
		Key:    func(e *Employee) string { return e.Email },
		// The guide: the copy need not carry every property.
		Props: []string{"FirstName", "LastName", "Email"},
	}}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "empid_000123", FirstName: "Jun", LastName: "Cao", Age: 31, Email: "junc@contoso.com"},
		{PartitionKey: "Sales", RowKey: "empid_000152", FirstName: "Don", LastName: "Hall", Age: 42, Email: "donh@contoso.com"},
		{PartitionKey: "Sales", RowKey: "empid_000223", FirstName: "Jane", LastName: "Jones", Age: 35, Email: "jonesj@contoso.com"},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil { // one transaction each
			log.Fatal(err)
		}
	}

	// (PartitionKey eq 'Sales') and (RowKey eq 'email_jonesj@contoso.com')
	jane, err := employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by email:", jane.RowKey, jane.FirstName, jane.LastName)

	// (RowKey ge 'empid_000100') and (RowKey le 'empid_000199')
	for e, err := range employees.Between(ctx, "empid", "Sales", "000100", "000199", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("id 0001xx:", e.RowKey, e.FirstName, e.Age)
	}
	// (RowKey ge 'email_j') and (RowKey lt 'email_k')
	for e, err := range employees.Prefix(ctx, "email", "Sales", "j", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("email j*:", e.Email)
	}

	// A unique value is unique in its partition: the transaction fails
	// and nothing is written.
	joe := Employee{PartitionKey: "Sales", RowKey: "empid_000999", FirstName: "Joe", Email: "jonesj@contoso.com"}
	err = employees.Insert(ctx, &joe, nil)
	var conflict *patterns.IndexConflictError
	fmt.Println("same email again:", errors.As(err, &conflict), errors.Is(err, tablekit.ErrAlreadyExists))

	// The entity and its copies change in one transaction.
	if _, err := employees.Update(ctx, "Sales", "empid_000223", func(e *Employee) error {
		e.Email = "jane.jones@contoso.com"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	_, err = employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	fmt.Println("old email:", errors.Is(err, tablekit.ErrNotFound))
	// Output:
	// by email: empid_000223 Jane Jones
	// id 0001xx: empid_000123 Jun 31
	// id 0001xx: empid_000152 Don 42
	// email j*: jonesj@contoso.com
	// email j*: junc@contoso.com
	// same email again: true true
	// old email: true
}

// The guide's inter-partition secondary index: the copy of the employee
// "Sales"/"000223" lives in partition "email_Sales" under RowKey
// "jonesj@contoso.com", kept eventually consistent by the consistency
// worker. A write enqueues its intent, then writes the employee.
func ExampleEventualIndexedTable() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		LastName     string
		Email        string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	queue, err := consistency.NewQueue(acct, "exeventualindexed", nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewEventualIndexedTable(acct, "exeventualindexed", queue, []patterns.Index[Employee]{{
		Name:   "email",
		Unique: true,
		Key:    func(e *Employee) string { return e.Email },
		Props:  []string{"FirstName", "LastName"},
	}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil { // the table and the queue
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Email: "junc@contoso.com"},
		{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones", Email: "jonesj@contoso.com"},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil {
			log.Fatal(err)
		}
	}

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

	// (PartitionKey eq 'email_Sales') and (RowKey eq 'jonesj@contoso.com')
	jane, err := employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("by email:", jane.PartitionKey, jane.RowKey, jane.FirstName, jane.LastName)
	// (PartitionKey eq 'email_Sales') and (RowKey ge 'j') and (RowKey lt 'k')
	for e, err := range employees.Prefix(ctx, "email", "Sales", "j", nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("email j*:", e.RowKey, e.FirstName)
	}
	report, err := employees.Verify(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("index consistent:", report.OK())
	// Output:
	// by email: Sales 000223 Jane Jones
	// email j*: 000223 Jane
	// email j*: 000123 Jun
	// index consistent: true
}

// The guide's index entities, option 2: the entity "Sales"/"Jones" lists
// the ids of the Sales employees named Jones in its EmployeeIDs property,
// and is written in the same transaction as each employee.
func ExampleListIndexedTable() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		LastName     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewListIndexedTable(acct, "exlistindexed", patterns.ListIndex[Employee]{
		Name:     "lastname",
		Property: "EmployeeIDs",
		Key:      func(e *Employee) string { return e.LastName },
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao"},
		{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Jones"},
		{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones"},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil {
			log.Fatal(err)
		}
	}

	// The guide's three steps: read "Sales"/"Jones", parse the list, read
	// each employee (in parallel, so sort them).
	jones, err := patterns.Collect(employees.Find(ctx, "Sales", "Jones", nil))
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(jones, func(a, b Employee) int { return strings.Compare(a.RowKey, b.RowKey) })
	for _, e := range jones {
		fmt.Println("Jones:", e.RowKey, e.FirstName)
	}

	// A last-name change updates three entities in one transaction: the
	// employee and the index entities of the old and the new name.
	if _, err := employees.Update(ctx, "Sales", "000152", func(e *Employee) error {
		e.LastName = "Hall"
		return nil
	}, nil); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"Jones", "Hall"} {
		members, err := employees.Members(ctx, "Sales", name, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name, "lists", members)
	}
	// Output:
	// Jones: 000152 Don
	// Jones: 000223 Jane
	// Jones lists [{Sales 000223}]
	// Hall lists [{Sales 000152}]
}

// The guide's index entities, option 1: a blob per last name lists every
// employee with that name, in every department ("all the employees named
// Jones in the organization").
func ExampleBlobIndexedTable() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		LastName     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewBlobIndexedTable(acct, "exblobindexed", "exblobindexed", patterns.ListIndex[Employee]{
		Name: "lastname",
		Key:  func(e *Employee) string { return e.LastName },
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil { // the table and the container
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Jones"},
		{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones"},
		{PartitionKey: "Marketing", RowKey: "000301", FirstName: "Ken", LastName: "Jones"},
		{PartitionKey: "Marketing", RowKey: "000302", FirstName: "Ana", LastName: "Ruiz"},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil {
			log.Fatal(err)
		}
	}

	fmt.Println("blob:", employees.BlobName("Jones"))
	jones, err := patterns.Collect(employees.Find(ctx, "Jones", nil))
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(jones, func(a, b Employee) int { return strings.Compare(a.RowKey, b.RowKey) })
	for _, e := range jones {
		fmt.Println("Jones:", e.PartitionKey, e.RowKey, e.FirstName)
	}

	// Delete is conditional on the ETag of the value read, and unlists it.
	ken, err := employees.Get(ctx, "Marketing", "000301", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.Delete(ctx, &ken, nil); err != nil {
		log.Fatal(err)
	}
	members, err := employees.Members(ctx, "Jones", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after Ken left:", len(members), "members")
	// Output:
	// blob: exblobindexed/lastname/Jones
	// Jones: Sales 000152 Don
	// Jones: Sales 000223 Jane
	// Jones: Marketing 000301 Ken
	// after Ken left: 2 members
}

// The guide's index entities, option 3: the index entity
// "lastname"/"Jones" lives in a partition of its own and lists the
// employees named Jones in every department; the consistency worker keeps
// its list.
func ExampleEventualListIndexedTable() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		LastName     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	queue, err := consistency.NewQueue(acct, "exeventuallist", nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewEventualListIndexedTable(acct, "exeventuallist", queue, patterns.ListIndex[Employee]{
		Name:     "lastname",
		Property: "EmployeeIDs",
		Key:      func(e *Employee) string { return e.LastName },
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil { // the table and the queue
		log.Fatal(err)
	}
	for _, e := range []Employee{
		{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Jones"},
		{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones"},
		{PartitionKey: "Marketing", RowKey: "000301", FirstName: "Ken", LastName: "Jones"},
	} {
		if err := employees.Insert(ctx, &e, nil); err != nil {
			log.Fatal(err)
		}
	}

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

	jones, err := patterns.Collect(employees.Find(ctx, "Jones", nil))
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(jones, func(a, b Employee) int { return strings.Compare(a.RowKey, b.RowKey) })
	for _, e := range jones {
		fmt.Println("Jones:", e.PartitionKey, e.RowKey, e.FirstName)
	}
	// Output:
	// Jones: Sales 000152 Don
	// Jones: Sales 000223 Jane
	// Jones: Marketing 000301 Ken
}

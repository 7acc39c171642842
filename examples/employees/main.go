// Command employees is the employee directory of the Azure Table storage
// design guide, one section after the other:
//
//   - "Work with heterogeneous entity types": departments and employees
//     side by side in one partition (patterns.MixedTable and an
//     entity.Registry), read back each as its own Go type; an employee by
//     id is a point query.
//   - "Intra-partition secondary index pattern": a copy of each employee
//     under RowKey "email_<address>" in its partition, written in the same
//     entity group transaction (patterns.IndexedTable), so a lookup by
//     email is a point query too.
//   - "Index entities pattern", option 2: the entity "Sales"/"Jones" lists
//     the ids of the Sales employees named Jones (patterns.ListIndexedTable).
//
// Each pattern keeps its rows in a table of its own: a partition of an
// IndexedTable holds only primaries and their copies, and the rows of a
// MixedTable carry a discriminator the other repositories do not write.
//
//   - "Inter-partition secondary index pattern": an organisation-wide
//     email index, copies in partitions "email_<first letter>" of another
//     table, kept eventually consistent by the consistency worker
//     (patterns.EventualIndexedTable): a write enqueues its intent, then
//     writes the employee; the worker makes the copies match it.
//
// The worker is the stock tablekit-worker binary in production. With
// -external-worker (`make demo` sets it, and runs tablekit-worker with
// --queue employees) the program relies on that process; otherwise
// it runs a consistency.Worker in-process on a separate Account, so its
// requests are not counted with the program's own.
//
// Every lookup prints how many HTTP requests it cost, counted by a
// per-retry azcore policy installed through tablekit.AccountOptions.
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
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Department is the department entity of the guide's heterogeneous
// partition: it shares the PartitionKey (the department's name) with the
// department's employees, under the RowKey "Department".
type Department struct {
	PartitionKey    string
	RowKey          string
	DepartmentName  string
	EmployeeCount   int
	ManagerFullName string
}

// Employee is the guide's employee entity: PartitionKey is the department,
// RowKey the employee id (prefixed "empid_" in the secondary index table).
type Employee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	LastName     string
	Age          int
	Email        string
}

func main() {
	connStr := tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString)
	external := flag.Bool("external-worker", false, "a tablekit-worker process applies the transactions: run no worker in this one")
	flag.Parse()
	inProcess := !*external
	if err := run(context.Background(), connStr, "employees", inProcess); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// staff is the directory the program writes: two departments.
var staff = []Employee{
	{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31, Email: "junc@contoso.com"},
	{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Jones", Age: 42, Email: "donj@contoso.com"},
	{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones", Age: 35, Email: "jonesj@contoso.com"},
	{PartitionKey: "Marketing", RowKey: "000301", FirstName: "Ken", LastName: "Jones", Age: 28, Email: "kenj@contoso.com"},
}

// run writes the directory into tables prefixed name; the worker of the
// organisation-wide index reads the queue name. inProcess runs a worker
// inside the program.
func run(ctx context.Context, connStr, name string, inProcess bool) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}

	// Heterogeneous entity types: one registry maps each Go type to the
	// kind written in the EntityType property, with a version.
	reg := entity.NewRegistry(nil)
	if err := reg.Register(entity.Kind{Name: "Department", Version: 1}, Department{}); err != nil {
		return err
	}
	if err := reg.Register(entity.Kind{Name: "Employee", Version: 1}, Employee{}); err != nil {
		return err
	}
	dir, err := patterns.NewMixedTable(acct, name+"dir", reg, nil)
	if err != nil {
		return err
	}
	emails, err := patterns.NewIndexedTable(acct, name+"email", []patterns.Index[Employee]{{
		Name:   "email",
		Unique: true,
		Key:    func(e *Employee) string { return e.Email },
		// The guide: the copy need not carry every property.
		Props: []string{"FirstName", "LastName", "Email"},
	}}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		return err
	}
	names, err := patterns.NewListIndexedTable(acct, name+"names", patterns.ListIndex[Employee]{
		Name:     "lastname",
		Property: "EmployeeIDs",
		Key:      func(e *Employee) string { return e.LastName },
	}, nil)
	if err != nil {
		return err
	}
	queue, err := consistency.NewQueue(acct, name, nil)
	if err != nil {
		return err
	}
	org, err := patterns.NewEventualIndexedTable(acct, name+"org", queue, []patterns.Index[Employee]{{
		Name:   "email",
		Unique: true,
		Key:    func(e *Employee) string { return e.Email },
		Props:  []string{"FirstName", "LastName"},
		Table:  name + "orgemail",
		// Spread the index over partitions by the address's first
		// letter: a lookup knows its partition from the address alone.
		Partition: func(e *Employee) string { return firstLetter(e.Email) },
	}}, nil)
	if err != nil {
		return err
	}
	// org's CreateIfNotExists creates its queue too.
	for _, create := range []func(context.Context, *patterns.CreateOptions) error{dir.CreateIfNotExists, emails.CreateIfNotExists, names.CreateIfNotExists, org.CreateIfNotExists} {
		if err := create(ctx, nil); err != nil {
			return err
		}
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
	defer func() {
		// Drop what the program created, even after a failure.
		for _, t := range []string{name + "dir", name + "email", name + "names", name + "org", name + "orgemail"} {
			if _, derr := acct.Tables().DeleteTable(ctx, t, nil); derr != nil {
				err = errors.Join(err, tablekit.MapError(derr, "delete table", t))
			}
		}
	}()

	requests.Take() // the table creations are not part of the story

	fmt.Println("== heterogeneous entity types: departments and employees in one table")
	depts := map[string]int{}
	for _, e := range staff {
		depts[e.PartitionKey]++
	}
	for _, d := range []Department{
		{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", EmployeeCount: depts["Sales"], ManagerFullName: "Mary Smith"},
		{PartitionKey: "Marketing", RowKey: "Department", DepartmentName: "Marketing", EmployeeCount: depts["Marketing"], ManagerFullName: "Ana Ruiz"},
	} {
		if err := dir.Insert(ctx, &d, nil); err != nil {
			return err
		}
	}
	for _, e := range staff {
		if err := dir.Insert(ctx, &e, nil); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   2 departments and %d employees: %s\n", len(staff), plural(requests.Take()))

	fmt.Println("query   the Sales partition, each row decoded into its own type:")
	for row, err := range dir.Query(ctx, keys.PK().Eq("Sales"), nil) {
		if err != nil {
			return err
		}
		switch v := row.(type) {
		case *Department:
			fmt.Printf("        Department %s: %d employees, manager %s\n", v.DepartmentName, v.EmployeeCount, v.ManagerFullName)
		case *Employee:
			fmt.Printf("        Employee   %s %s %s\n", v.RowKey, v.FirstName, v.LastName)
		default:
			return fmt.Errorf("unexpected row type %T", row)
		}
	}
	fmt.Printf("        cost: %s (a partition scan)\n", plural(requests.Take()))

	row, err := dir.Get(ctx, "Sales", "000223", nil)
	if err != nil {
		return err
	}
	jane, ok := row.(*Employee)
	if !ok {
		return fmt.Errorf("Sales/000223 is a %T, want *Employee", row)
	}
	fmt.Printf("by id   Sales/000223 -> %s %s <%s>: %s (a point query)\n", jane.FirstName, jane.LastName, jane.Email, plural(requests.Take()))

	fmt.Println("\n== intra-partition secondary index: email_ copies in the same partition")
	for _, e := range staff {
		e.RowKey = "empid_" + e.RowKey // the guide's prefixed primary RowKey
		if err := emails.Insert(ctx, &e, nil); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   %d employees, each with its email copy in one transaction: %s\n", len(staff), plural(requests.Take()))

	byEmail, err := emails.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		return err
	}
	fmt.Printf("lookup  RowKey eq 'email_jonesj@contoso.com' -> %s %s (%s): %s\n", byEmail.FirstName, byEmail.LastName, byEmail.RowKey, plural(requests.Take()))

	var starts []string
	for e, err := range emails.Prefix(ctx, "email", "Sales", "j", nil) {
		if err != nil {
			return err
		}
		starts = append(starts, e.Email)
	}
	fmt.Printf("prefix  Sales emails starting with j -> %s: %s\n", strings.Join(starts, ", "), plural(requests.Take()))

	// A second employee of the partition cannot take a unique address:
	// the whole transaction fails and nothing is written.
	dup := Employee{PartitionKey: "Sales", RowKey: "empid_000999", FirstName: "Joe", LastName: "Doe", Email: "jonesj@contoso.com"}
	if err := emails.Insert(ctx, &dup, nil); err == nil {
		return errors.New("a duplicate email was accepted")
	} else if !errors.Is(err, tablekit.ErrAlreadyExists) {
		return err
	}
	fmt.Printf("insert  another jonesj@contoso.com -> refused, nothing written: %s\n", plural(requests.Take()))

	if _, err := emails.Update(ctx, "Sales", "empid_000223", func(e *Employee) error {
		e.Email = "jane.jones@contoso.com"
		return nil
	}, nil); err != nil {
		return err
	}
	fmt.Printf("update  Jane's email, entity and copies in one transaction: %s\n", plural(requests.Take()))
	if _, err := emails.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("old email lookup: got %v, want not found", err)
	}
	fmt.Printf("lookup  jonesj@contoso.com -> not found any more: %s\n", plural(requests.Take()))
	moved, err := emails.Lookup(ctx, "email", "Sales", "jane.jones@contoso.com", nil)
	if err != nil {
		return err
	}
	fmt.Printf("lookup  jane.jones@contoso.com -> %s %s: %s\n", moved.FirstName, moved.LastName, plural(requests.Take()))

	fmt.Println("\n== index entities (option 2): Sales/Jones lists the Sales employees named Jones")
	for _, e := range staff {
		if err := names.Insert(ctx, &e, nil); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   %d employees, each a read of its index entity and one transaction: %s\n", len(staff), plural(requests.Take()))

	jones, err := patterns.Collect(names.Find(ctx, "Sales", "Jones", nil))
	if err != nil {
		return err
	}
	fmt.Printf("lookup  Sales/Jones -> %d employees: %s (the index entity, then each employee)\n", len(jones), plural(requests.Take()))
	// Lookup reads the members in parallel: sort them for printing.
	slices.SortFunc(jones, func(a, b Employee) int { return strings.Compare(a.RowKey, b.RowKey) })
	for _, e := range jones {
		fmt.Printf("        %s %s %s\n", e.RowKey, e.FirstName, e.LastName)
	}

	// The guide's last-name change: one transaction over the employee and
	// the index entities of the old and the new name.
	if _, err := names.Update(ctx, "Sales", "000152", func(e *Employee) error {
		e.LastName = "Hall"
		return nil
	}, nil); err != nil {
		return err
	}
	fmt.Printf("rename  000152 Jones -> Hall, three entities in one transaction: %s\n", plural(requests.Take()))
	for _, last := range []string{"Jones", "Hall"} {
		members, err := names.Members(ctx, "Sales", last, nil)
		if err != nil {
			return err
		}
		var ids []string
		for _, m := range members {
			ids = append(ids, m.RowKey)
		}
		fmt.Printf("members Sales/%s -> [%s]: %s\n", last, strings.Join(ids, " "), plural(requests.Take()))
	}

	fmt.Println("\n== inter-partition secondary index: an organisation-wide email index kept by the worker")
	for _, e := range staff {
		if err := org.Insert(ctx, &e, nil); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   %d employees, each an enqueued intent and an insert: %s\n", len(staff), plural(requests.Take()))
	for _, e := range staff {
		if err := waitFor(ctx, func() (bool, error) {
			_, err := org.Lookup(ctx, "email", firstLetter(e.Email), e.Email, nil)
			if errors.Is(err, tablekit.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return err
		}
	}
	requests.Take() // the polling is not part of the story
	fmt.Println("worker  wrote the copies into partitions email_d, email_j and email_k")

	ken, err := org.Lookup(ctx, "email", "k", "kenj@contoso.com", nil)
	if err != nil {
		return err
	}
	fmt.Printf("lookup  PartitionKey eq 'email_k' and RowKey eq 'kenj@contoso.com' -> %s %s, %s/%s: %s\n",
		ken.FirstName, ken.LastName, ken.PartitionKey, ken.RowKey, plural(requests.Take()))

	if _, err := org.Update(ctx, "Marketing", "000301", func(e *Employee) error {
		e.Email = "ken.jones@contoso.com"
		return nil
	}, nil); err != nil {
		return err
	}
	fmt.Printf("update  Ken's email (read, enqueue, replace): %s\n", plural(requests.Take()))
	if err := waitFor(ctx, func() (bool, error) {
		_, err := org.Lookup(ctx, "email", "k", "kenj@contoso.com", nil)
		if errors.Is(err, tablekit.ErrNotFound) {
			return true, nil
		}
		return false, err
	}); err != nil {
		return err
	}
	requests.Take()
	fmt.Println("worker  moved the copy from kenj@ to ken.jones@")
	ken, err = org.Lookup(ctx, "email", "k", "ken.jones@contoso.com", nil)
	if err != nil {
		return err
	}
	fmt.Printf("lookup  ken.jones@contoso.com -> %s %s, %s/%s: %s\n", ken.FirstName, ken.LastName, ken.PartitionKey, ken.RowKey, plural(requests.Take()))
	return nil
}

// firstLetter is the index partition of an email address.
func firstLetter(email string) string {
	if email == "" {
		return "none"
	}
	return strings.ToLower(email[:1])
}

// waitFor polls done until it reports true, or gives up after a minute.
func waitFor(ctx context.Context, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the index did not converge: is a worker reading the queue? %w", ctx.Err())
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

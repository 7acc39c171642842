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
// The guide's "Inter-partition secondary index pattern" (an
// organisation-wide email index kept by the consistency worker) is not
// shown here yet: its repository, patterns.EventualIndexedTable, is not
// committed.
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
	"fmt"
	"log"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
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
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "employees"); err != nil {
		log.Fatal(err)
	}
}

// counter counts every HTTP attempt the account's clients send, retries
// included, when installed as a per-retry policy.
type counter struct{ n atomic.Int64 }

func (c *counter) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	return req.Next()
}

// since returns the requests sent since the last call.
func (c *counter) since() int64 { return c.n.Swap(0) }

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

func run(ctx context.Context, connStr, name string) (err error) {
	requests := &counter{}
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
	dir, err := patterns.NewMixedTable(acct, name+"dir", reg)
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
	for _, create := range []func(context.Context) error{dir.CreateIfNotExists, emails.CreateIfNotExists, names.CreateIfNotExists} {
		if err := create(ctx); err != nil {
			return err
		}
	}
	defer func() {
		// Drop what the program created, even after a failure.
		for _, t := range []string{name + "dir", name + "email", name + "names"} {
			if _, derr := acct.Tables().DeleteTable(ctx, t, nil); derr != nil {
				err = errors.Join(err, tablekit.MapError(derr, "delete table", t))
			}
		}
	}()

	requests.since() // the table creations are not part of the story

	fmt.Println("== heterogeneous entity types: departments and employees in one table")
	depts := map[string]int{}
	for _, e := range staff {
		depts[e.PartitionKey]++
	}
	for _, d := range []Department{
		{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", EmployeeCount: depts["Sales"], ManagerFullName: "Mary Smith"},
		{PartitionKey: "Marketing", RowKey: "Department", DepartmentName: "Marketing", EmployeeCount: depts["Marketing"], ManagerFullName: "Ana Ruiz"},
	} {
		if err := dir.Insert(ctx, &d); err != nil {
			return err
		}
	}
	for _, e := range staff {
		if err := dir.Insert(ctx, &e); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   2 departments and %d employees: %s\n", len(staff), plural(requests.since()))

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
	fmt.Printf("        cost: %s (a partition scan)\n", plural(requests.since()))

	row, err := dir.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	jane, ok := row.(*Employee)
	if !ok {
		return fmt.Errorf("Sales/000223 is a %T, want *Employee", row)
	}
	fmt.Printf("by id   Sales/000223 -> %s %s <%s>: %s (a point query)\n", jane.FirstName, jane.LastName, jane.Email, plural(requests.since()))

	fmt.Println("\n== intra-partition secondary index: email_ copies in the same partition")
	for _, e := range staff {
		e.RowKey = "empid_" + e.RowKey // the guide's prefixed primary RowKey
		if err := emails.Insert(ctx, &e); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   %d employees, each with its email copy in one transaction: %s\n", len(staff), plural(requests.since()))

	byEmail, err := emails.Lookup(ctx, "email", "Sales", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	fmt.Printf("lookup  RowKey eq 'email_jonesj@contoso.com' -> %s %s (%s): %s\n", byEmail.FirstName, byEmail.LastName, byEmail.RowKey, plural(requests.since()))

	var starts []string
	for e, err := range emails.Prefix(ctx, "email", "Sales", "j", nil) {
		if err != nil {
			return err
		}
		starts = append(starts, e.Email)
	}
	fmt.Printf("prefix  Sales emails starting with j -> %s: %s\n", strings.Join(starts, ", "), plural(requests.since()))

	// A second employee of the partition cannot take a unique address:
	// the whole transaction fails and nothing is written.
	dup := Employee{PartitionKey: "Sales", RowKey: "empid_000999", FirstName: "Joe", LastName: "Doe", Email: "jonesj@contoso.com"}
	if err := emails.Insert(ctx, &dup); err == nil {
		return errors.New("a duplicate email was accepted")
	} else if !errors.Is(err, tablekit.ErrAlreadyExists) {
		return err
	}
	fmt.Printf("insert  another jonesj@contoso.com -> refused, nothing written: %s\n", plural(requests.since()))

	if _, err := emails.Update(ctx, "Sales", "empid_000223", func(e *Employee) error {
		e.Email = "jane.jones@contoso.com"
		return nil
	}); err != nil {
		return err
	}
	fmt.Printf("update  Jane's email, entity and copies in one transaction: %s\n", plural(requests.since()))
	if _, err := emails.Lookup(ctx, "email", "Sales", "jonesj@contoso.com"); !errors.Is(err, tablekit.ErrNotFound) {
		return fmt.Errorf("old email lookup: got %v, want not found", err)
	}
	fmt.Printf("lookup  jonesj@contoso.com -> not found any more: %s\n", plural(requests.since()))
	moved, err := emails.Lookup(ctx, "email", "Sales", "jane.jones@contoso.com")
	if err != nil {
		return err
	}
	fmt.Printf("lookup  jane.jones@contoso.com -> %s %s: %s\n", moved.FirstName, moved.LastName, plural(requests.since()))

	fmt.Println("\n== index entities (option 2): Sales/Jones lists the Sales employees named Jones")
	for _, e := range staff {
		if err := names.Insert(ctx, &e); err != nil {
			return err
		}
	}
	fmt.Printf("wrote   %d employees, each a read of its index entity and one transaction: %s\n", len(staff), plural(requests.since()))

	jones, err := names.Lookup(ctx, "Sales", "Jones")
	if err != nil {
		return err
	}
	fmt.Printf("lookup  Sales/Jones -> %d employees: %s (the index entity, then each employee)\n", len(jones), plural(requests.since()))
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
	}); err != nil {
		return err
	}
	fmt.Printf("rename  000152 Jones -> Hall, three entities in one transaction: %s\n", plural(requests.since()))
	for _, last := range []string{"Jones", "Hall"} {
		ids, err := names.Members(ctx, "Sales", last)
		if err != nil {
			return err
		}
		fmt.Printf("members Sales/%s -> [%s]: %s\n", last, strings.Join(ids, " "), plural(requests.since()))
	}
	return nil
}

package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// The examples of this package run against the test account (Azurite,
// started by TestMain) through connStr. A program of yours connects the
// same way, for instance with
// tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString).

// The guide's employee entity: the department is the PartitionKey, the
// employee id the RowKey. ETag makes Replace, Merge and Delete conditional.
func ExampleTable() {
	type Employee struct {
		PartitionKey string // department
		RowKey       string // employee id
		ETag         string
		Timestamp    time.Time
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
	employees, err := patterns.NewTable[Employee](acct, "exemployees", nil)
	if err != nil {
		log.Fatal(err) // a bad struct tag fails here, before any request
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}

	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31, Email: "junc@contoso.com"}
	if err := employees.Insert(ctx, &jun, nil); err != nil {
		log.Fatal(err)
	}
	err = employees.Insert(ctx, &jun, nil)
	fmt.Println("insert again:", errors.Is(err, tablekit.ErrAlreadyExists))

	got, err := employees.Get(ctx, "Sales", "000123", nil) // a point query
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("get:", got.FirstName, got.LastName, got.Age)

	// Replace is conditional on the ETag that Get returned: a writer
	// holding an older version is refused.
	got.Age = 32
	if err := employees.Replace(ctx, &got, nil); err != nil {
		log.Fatal(err)
	}
	jun.Age = 40 // jun's ETag is the one Insert returned, now stale
	err = employees.Replace(ctx, &jun, nil)
	fmt.Println("stale replace:", errors.Is(err, tablekit.ErrPreconditionFailed))

	if err := employees.Delete(ctx, &got, nil); err != nil {
		log.Fatal(err)
	}
	_, err = employees.Get(ctx, "Sales", "000123", nil)
	fmt.Println("after delete:", errors.Is(err, tablekit.ErrNotFound))
	// Output:
	// insert again: true
	// get: Jun Cao 31
	// stale replace: true
	// after delete: true
}

// Update is a read-modify-write that loses no concurrent change: when
// another writer got there first it reads again and calls fn again.
func ExampleTable_Update() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		Age          int
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewTable[Employee](acct, "exupdate", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	if err := employees.Upsert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", Age: 31}, nil); err != nil {
		log.Fatal(err)
	}

	// Ten birthdays at once: every one of them lands.
	errs := make(chan error)
	for range 10 {
		go func() {
			_, err := employees.Update(ctx, "Sales", "000123", func(e *Employee) error {
				e.Age++
				return nil
			}, nil)
			errs <- err
		}()
	}
	for range 10 {
		if err := <-errs; err != nil {
			log.Fatal(err)
		}
	}
	jun, err := employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(jun.FirstName, "is", jun.Age)
	// Output:
	// Jun is 41
}

// The guide's range query: the Sales employees with ids 000100 to 000199,
// in RowKey order. Every query is classified before it is sent; a table
// scan is refused unless QueryOptions.AllowTableScan is set.
func ExampleTable_Query() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		FirstName    string
		LastName     string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewTable[Employee](acct, "exquery", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	res, err := employees.BulkWrite(ctx, []Employee{
		{PartitionKey: "Sales", RowKey: "000099", FirstName: "Ana", LastName: "Ruiz"},
		{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao"},
		{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don", LastName: "Jones"},
		{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones"},
		{PartitionKey: "Marketing", RowKey: "000150", FirstName: "Ken", LastName: "Jones"},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("written:", res.Written, "in", res.Requests, "transactions") // one per partition

	f := keys.And(keys.PK().Eq("Sales"), keys.RK().Ge("000100"), keys.RK().Le("000199"))
	fmt.Println(f, "is a", keys.Classify(f))
	for e, err := range employees.Query(ctx, f, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(" ", e.RowKey, e.FirstName, e.LastName)
	}

	jones := keys.Prop("LastName").Eq("Jones")
	_, err = employees.Count(ctx, jones, nil)
	fmt.Println("every Jones, no partition:", errors.Is(err, tablekit.ErrTableScan))
	n, err := employees.Count(ctx, jones, &patterns.WhereOptions{AllowTableScan: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("every Jones, scan allowed:", n)
	// Output:
	// written: 5 in 2 transactions
	// (PartitionKey eq 'Sales') and (RowKey ge '000100') and (RowKey le '000199') is a range query
	//   000123 Jun Cao
	//   000152 Don Jones
	// every Jones, no partition: true
	// every Jones, scan allowed: 3
}

// Page reads one page and hands out a token that resumes after it, for
// instance in the next request of a web handler.
func ExampleTable_Page() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		FirstName    string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewTable[Employee](acct, "expage", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	var staff []Employee
	for i, name := range []string{"Ana", "Don", "Jane", "Jun", "Ken"} {
		staff = append(staff, Employee{PartitionKey: "Sales", RowKey: keys.PadInt(int64(100+i), 6), FirstName: name})
	}
	if _, err := employees.BulkWrite(ctx, staff, nil); err != nil {
		log.Fatal(err)
	}

	sales := keys.PK().Eq("Sales")
	token := ""
	for {
		page, err := employees.Page(ctx, sales, token, &patterns.QueryOptions{Top: 2})
		if err != nil {
			log.Fatal(err)
		}
		var line []string
		for _, e := range page.Items {
			line = append(line, e.RowKey+" "+e.FirstName)
		}
		fmt.Println(strings.Join(line, ", "))
		if page.Token == "" {
			break
		}
		token = page.Token
	}
	// Output:
	// 000100 Ana, 000101 Don
	// 000102 Jane, 000103 Jun
	// 000104 Ken
}

// An entity group transaction writes entities of one partition
// atomically. When an operation fails, none is applied, and the error
// names the failing operation, which the SDK does not report.
func ExampleTable_Transaction() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewTable[Employee](acct, "extransaction", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}

	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun"}
	don := Employee{PartitionKey: "Sales", RowKey: "000152", FirstName: "Don"}
	if _, err := employees.Transaction().Insert(&jun).Insert(&don).Submit(ctx, nil); err != nil {
		log.Fatal(err)
	}

	jane := Employee{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane"}
	again := Employee{PartitionKey: "Sales", RowKey: "000152", FirstName: "Donald"}
	_, err = employees.Transaction().Insert(&jane).Insert(&again).Submit(ctx, nil)
	var txErr *tablekit.TransactionError
	if errors.As(err, &txErr) {
		fmt.Println("operation", txErr.Index, "failed:", errors.Is(err, tablekit.ErrAlreadyExists))
	}
	_, err = employees.Get(ctx, "Sales", "000223", nil)
	fmt.Println("Jane was not inserted:", errors.Is(err, tablekit.ErrNotFound))

	// Transactions span one partition: Azure refuses more, and so does
	// tablekit, before any request (Azurite would accept it).
	ken := Employee{PartitionKey: "Marketing", RowKey: "000301", FirstName: "Ken"}
	_, err = employees.Transaction().Insert(&jane).Insert(&ken).Submit(ctx, nil)
	fmt.Println("two partitions:", errors.Is(err, tablekit.ErrInvalidTransaction))
	// Output:
	// operation 1 failed: true
	// Jane was not inserted: true
	// two partitions: true
}

// Command quickstart is tablekit in one screen: connect, create a table,
// write a typed entity, read it back, update it without losing a
// concurrent change, see a stale write refused, query a partition and
// delete.
//
// It connects to AZURE_STORAGE_CONNECTION_STRING, or to Azurite's
// development storage when the variable is unset, so the same program
// runs on Azure unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Employee is stored with the department as PartitionKey and the employee
// id as RowKey, as in the design guide. ETag and Timestamp are filled in
// by tablekit; the ETag makes updates conditional.
type Employee struct {
	PartitionKey string // department
	RowKey       string // employee id
	ETag         string // makes Replace and Delete conditional
	Timestamp    time.Time
	FirstName    string
	LastName     string
	Age          int // Int64 on the wire, never rounded
	Email        string
	Salary       float64 // always a Double, 3.0 included
}

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "quickstart"); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, connStr, tableName string) error {
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		return err
	}
	employees, err := patterns.NewTable[Employee](acct, tableName, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}

	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31, Email: "junc@contoso.com", Salary: 3000}
	if err := employees.Upsert(ctx, &jun, nil); err != nil {
		return err
	}
	fmt.Printf("wrote   %s/%s %s %s\n", jun.PartitionKey, jun.RowKey, jun.FirstName, jun.LastName)

	got, err := employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	fmt.Printf("read    %s %s, age %d, salary %.1f (a float64 stays a Double)\n", got.FirstName, got.LastName, got.Age, got.Salary)

	// Update re-reads and retries when another writer changed the entity
	// in between (HTTP 412), so no concurrent update is lost.
	updated, err := employees.Update(ctx, "Sales", "000123", func(e *Employee) error {
		e.Age++
		return nil
	}, nil)
	if err != nil {
		return err
	}
	fmt.Printf("updated age %d\n", updated.Age)

	// got still carries the ETag read before the update: a Replace with it
	// is refused instead of overwriting the newer entity.
	got.Salary = 3100
	if err := employees.Replace(ctx, &got, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		return fmt.Errorf("replace with a stale ETag: %v, want tablekit.ErrPreconditionFailed", err)
	}
	fmt.Println("refused a replace with a stale ETag (tablekit.ErrPreconditionFailed)")

	for _, id := range []string{"000124", "000125"} {
		e := Employee{PartitionKey: "Sales", RowKey: id, FirstName: "Emp" + id, LastName: "Lee"}
		if err := employees.Upsert(ctx, &e, nil); err != nil {
			return err
		}
	}
	f := keys.And(keys.PK().Eq("Sales"), keys.RK().Ge("000124"))
	fmt.Printf("query   %s (%v)\n", f, keys.Classify(f))
	for e, err := range employees.Query(ctx, f, nil) {
		if err != nil {
			return err
		}
		fmt.Printf("        %s %s %s\n", e.RowKey, e.FirstName, e.LastName)
	}

	// Delete is conditional on the ETag too.
	if err := employees.Delete(ctx, &updated, nil); err != nil {
		return err
	}
	fmt.Printf("deleted %s/%s\n", updated.PartitionKey, updated.RowKey)
	if os.Getenv("QUICKSTART_KEEP") == "" {
		return employees.Drop(ctx, nil)
	}
	return nil
}

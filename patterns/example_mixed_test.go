package patterns_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's heterogeneous partition: the department entity and its
// employees share the PartitionKey, so that a transaction can add an
// employee and count it in the department at once.
func ExampleMixedTable() {
	type Department struct {
		PartitionKey   string
		RowKey         string
		ETag           string
		DepartmentName string
		EmployeeCount  int
	}
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
	// The registry writes each row's kind in a discriminator property and
	// reads every row back into its own type.
	reg := entity.NewRegistry(nil)
	if err := reg.Register(entity.Kind{Name: "Department", Version: 1}, Department{}); err != nil {
		log.Fatal(err)
	}
	if err := reg.Register(entity.Kind{Name: "Employee", Version: 1}, Employee{}); err != nil {
		log.Fatal(err)
	}
	directory, err := patterns.NewMixedTable(acct, "exdirectory", reg, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := directory.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}

	sales := Department{PartitionKey: "Sales", RowKey: "Department", DepartmentName: "Sales", EmployeeCount: 1}
	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao"}
	if _, err := directory.Transaction().Insert(&sales).Insert(&jun).Submit(ctx, nil); err != nil {
		log.Fatal(err)
	}
	// A new employee and the new count, in one transaction conditional on
	// the department's ETag.
	jane := Employee{PartitionKey: "Sales", RowKey: "000223", FirstName: "Jane", LastName: "Jones"}
	sales.EmployeeCount++
	if _, err := directory.Transaction().Insert(&jane).Replace(&sales, nil).Submit(ctx, nil); err != nil {
		log.Fatal(err)
	}

	for row, err := range directory.Query(ctx, keys.PK().Eq("Sales"), nil) {
		if err != nil {
			log.Fatal(err)
		}
		switch v := row.(type) {
		case *Department:
			fmt.Println("department", v.DepartmentName, "with", v.EmployeeCount, "employees")
		case *Employee:
			fmt.Println("employee  ", v.RowKey, v.FirstName, v.LastName)
		}
	}
	// Output:
	// employee   000123 Jun Cao
	// employee   000223 Jane Jones
	// department Sales with 2 employees
}

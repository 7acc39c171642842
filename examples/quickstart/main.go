// Command quickstart connects to the storage account named by
// AZURE_STORAGE_CONNECTION_STRING (Azurite's development storage when
// unset), creates a table, writes one entity and reads it back.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/tablekit/tablekit"
)

func main() {
	ctx := context.Background()
	acct, err := tablekit.Connect(tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), nil)
	if err != nil {
		log.Fatal(err)
	}
	table, err := acct.Table("quickstart")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := table.CreateTable(ctx, nil); err != nil && !errors.Is(tablekit.MapError(err, "", ""), tablekit.ErrAlreadyExists) {
		log.Fatal(tablekit.MapError(err, "create table", "quickstart"))
	}
	entity := []byte(`{"PartitionKey":"Sales","RowKey":"000123","FirstName":"Jun","LastName":"Cao","Age":"31","Age@odata.type":"Edm.Int64"}`)
	if _, err := table.UpsertEntity(ctx, entity, nil); err != nil {
		log.Fatal(tablekit.MapError(err, "upsert entity", "quickstart Sales/000123"))
	}
	fmt.Println("wrote  Sales/000123")
	got, err := table.GetEntity(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(tablekit.MapError(err, "get entity", "quickstart Sales/000123"))
	}
	fmt.Printf("read   %s\n", got.Value)
}

package wire_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/tools/testenv"
)

// A table opened with the Cosmos DB profile refuses, before any request,
// what the Cosmos DB Table API refuses and Azure Table storage accepts: a
// 300-byte RowKey in a write, a transaction and a read-modify-write, and a
// table name with capitals. The storage profile sends the same write.
func TestTableEnforcesItsProfile(t *testing.T) {
	ctx := context.Background()
	counter := &tablekit.RequestCounter{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{counter}}})
	name := strings.ToLower(testenv.TableName(t))
	storage, err := wire.Open(acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if storage.Profile() != wire.StorageProfile {
		t.Fatalf("an Azurite table's profile is %v", storage.Profile())
	}
	if err := storage.Create(ctx); err != nil {
		t.Fatal(err)
	}
	cosmos, err := wire.Open(acct, name, &wire.Options{Profile: wire.CosmosProfile})
	if err != nil {
		t.Fatal(err)
	}
	rk := strings.Repeat("r", 300)
	op := wire.Op{Type: wire.OpUpsertReplace, PartitionKey: "p", RowKey: rk, Entity: []byte(`{"PartitionKey":"p","RowKey":"` + rk + `","N":1}`)}

	before := counter.Count()
	if _, err := cosmos.Write(ctx, "upsert", op); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Cosmos profile: a 300-byte RowKey write = %v, want ErrInvalidKey", err)
	}
	if _, err := cosmos.Batch(ctx, []wire.Op{op}); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Cosmos profile: a transaction with a 300-byte RowKey = %v, want ErrInvalidKey", err)
	}
	if _, err := cosmos.Modify(ctx, "p", rk, func([]byte) (wire.Op, error) { return op, nil }, nil); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("Cosmos profile: a read-modify-write of a 300-byte RowKey = %v, want ErrInvalidKey", err)
	}
	if got := counter.Count() - before; got != 0 {
		t.Errorf("the refusals sent %d requests", got)
	}
	if _, err := wire.Open(acct, "Employees"+name[:5], &wire.Options{Profile: wire.CosmosProfile}); err != nil {
		t.Errorf("Cosmos profile: a table name with capitals (Cosmos DB takes them, case-sensitively) = %v", err)
	}
	if _, err := wire.Open(acct, "Employees-"+name[:5], &wire.Options{Profile: wire.CosmosProfile}); !errors.Is(err, keys.ErrInvalidName) {
		t.Errorf("Cosmos profile: a table name with '-' (Azure Table storage refuses it) = %v, want ErrInvalidName", err)
	}
	if _, err := storage.Write(ctx, "upsert", op); err != nil {
		t.Errorf("storage profile: the same write = %v", err)
	}
}

package wire_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/tools/cosmostest"
)

// A table of a Cosmos DB Table API endpoint gets the Cosmos DB profile and
// the SDK transport from the endpoint alone, with no option.
func TestCosmosEndpointChoosesProfile(t *testing.T) {
	r := cosmostest.New(t)
	tbl, err := wire.Open(r.Account(t), cosmostest.Table, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Profile() != wire.CosmosProfile || tbl.Profile().SortedResults() {
		t.Errorf("a table of %s has the profile %v", cosmostest.Endpoint, tbl.Profile())
	}
	if tbl.REST() {
		t.Error("a Cosmos DB table uses the REST transport; Cosmos DB endpoints take the SDK path")
	}
	if r.Requests() != 0 {
		t.Errorf("Open sent %d requests", r.Requests())
	}
}

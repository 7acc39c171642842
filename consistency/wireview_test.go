package consistency

import (
	"context"
	"encoding/json"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
)

// readEntity is the wire view of getEntity, for the tests that compare
// entities as the Table service's JSON (getProps): the entity as the
// worker reads it, written back as the worker would write it, one raw JSON
// value per property and per `@odata.type` annotation, PartitionKey and
// RowKey included.
func readEntity(ctx context.Context, acct *tablekit.Account, ref EntityRef) (map[string]json.RawMessage, azcore.ETag, bool, error) {
	e, etag, found, err := getEntity(ctx, newTableSet(acct), ref)
	if err != nil || !found {
		return nil, azcore.ETag(etag), found, err
	}
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, "", false, err
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, "", false, err
	}
	return p, azcore.ETag(etag), true, nil
}

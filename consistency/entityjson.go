package consistency

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// EntityRef names one entity: its table, PartitionKey and RowKey.
type EntityRef struct {
	Table        string `json:"table"`
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// String formats the reference for messages: table(PK, RK).
func (r EntityRef) String() string {
	return r.Table + "(" + r.PartitionKey + ", " + r.RowKey + ")"
}

func (r EntityRef) validateField(kind, field string) error {
	if err := keys.ValidateTableName(r.Table); err != nil {
		return invalidArgs(kind, field+".table", err)
	}
	if err := keys.ValidateKey("PartitionKey", r.PartitionKey); err != nil {
		return invalidArgs(kind, field+".pk", err)
	}
	if err := keys.ValidateKey("RowKey", r.RowKey); err != nil {
		return invalidArgs(kind, field+".rk", err)
	}
	return nil
}

// getEntity fetches an entity with full metadata, so that every property
// keeps its type annotation, and decodes it with the entity layer (every
// EDM type kept exactly); the service's metadata (odata.*, Timestamp) is
// dropped. found is false on 404.
func getEntity(ctx context.Context, acct *tablekit.Account, ref EntityRef) (e entity.Entity, etag azcore.ETag, found bool, err error) {
	c, err := acct.Table(ref.Table)
	if err != nil {
		return entity.Entity{}, "", false, Permanent(err)
	}
	return getEntityWith(ctx, c, ref)
}

// getEntityWith is getEntity on a table client. It reads the raw response
// body: the SDK's GetEntity decodes numbers into float64 and so turns a
// Double 3.0 into 3, which would be written back as an Int32.
func getEntityWith(ctx context.Context, c *aztables.Client, ref EntityRef) (entity.Entity, azcore.ETag, bool, error) {
	var raw *http.Response
	resp, err := c.GetEntity(policy.WithCaptureResponse(ctx, &raw), ref.PartitionKey, ref.RowKey, &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatFull)})
	if err != nil {
		err = tablekit.MapError(err, "get entity", ref.String())
		if tablekit.IsNotFound(err) && !isTableNotFound(err) {
			return entity.Entity{}, "", false, nil
		}
		return entity.Entity{}, "", false, err
	}
	body := resp.Value
	if raw != nil {
		if b, err := runtime.Payload(raw); err == nil && len(b) > 0 {
			body = b
		}
	}
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		return entity.Entity{}, "", false, &wrapped{msg: "consistency: read " + ref.String() + ": " + err.Error(), err: err}
	}
	e.ETag, e.Timestamp = "", time.Time{}
	return e, resp.ETag, true, nil
}

// isTableNotFound tells a missing table (an error to report) from a
// missing entity (a normal state).
func isTableNotFound(err error) bool {
	var se *tablekit.ServiceError
	return asServiceError(err, &se) && se.Code == "TableNotFound"
}

// withKeys returns a copy of e under other keys, keeping only the named
// properties (all when names is empty).
func withKeys(e entity.Entity, pk, rk string, names []string) entity.Entity {
	out := entity.Entity{PartitionKey: pk, RowKey: rk, Properties: make(map[string]entity.Value, len(e.Properties))}
	if len(names) == 0 {
		for k, v := range e.Properties {
			out.Properties[k] = v
		}
	} else {
		for _, n := range names {
			if v, ok := e.Properties[n]; ok {
				out.Properties[n] = v
			}
		}
	}
	return out
}

// stringProp returns the text of a property the service carries as a JSON
// string: a String, and also an Int64, DateTime, Guid or Binary (and a
// Double NaN or ±Infinity) as their wire text. ok is false when the
// property is missing or carried as a number or a boolean.
func stringProp(e entity.Entity, name string) (string, bool) {
	v, ok := e.Properties[name]
	if !ok {
		return "", false
	}
	if s, ok := v.V.(string); ok && v.Type == entity.EdmString {
		return s, true
	}
	b, err := v.AppendJSON(nil)
	if err != nil || len(b) == 0 || b[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

// upsertEntity writes e with the given mode. The entity layer checks
// Azure's limits first: an entity the service would reject is a permanent
// error and no request is sent.
func upsertEntity(ctx context.Context, acct *tablekit.Account, table string, e entity.Entity, mode aztables.UpdateMode) error {
	c, err := acct.Table(table)
	if err != nil {
		return Permanent(err)
	}
	ref := EntityRef{table, e.PartitionKey, e.RowKey}
	b, err := e.MarshalJSON()
	if err != nil {
		return Permanent(&wrapped{msg: "consistency: write " + ref.String() + ": " + err.Error(), err: err})
	}
	_, err = c.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: mode})
	return tablekit.MapError(err, "upsert entity", ref.String())
}

// deleteEntityIfExists deletes an entity; a missing entity is success, a
// missing table is not.
func deleteEntityIfExists(ctx context.Context, acct *tablekit.Account, ref EntityRef, etag *azcore.ETag) error {
	c, err := acct.Table(ref.Table)
	if err != nil {
		return Permanent(err)
	}
	_, err = c.DeleteEntity(ctx, ref.PartitionKey, ref.RowKey, &aztables.DeleteEntityOptions{IfMatch: etag})
	err = tablekit.MapError(err, "delete entity", ref.String())
	if tablekit.IsNotFound(err) && !isTableNotFound(err) {
		return nil
	}
	return err
}

// parseStepEntity decodes the entity given in step arguments with the
// entity layer (entity.ParseEntity: keys required, every EDM annotation
// kept, service metadata dropped) and checks it against Azure's limits,
// as every write is checked.
func parseStepEntity(kind string, raw json.RawMessage) (entity.Entity, error) {
	e, err := entity.ParseEntity(raw)
	if err != nil {
		return entity.Entity{}, &wrapped{msg: "consistency: " + kind + ": " + err.Error(), err: ErrInvalidArgs, cause: err}
	}
	return e, nil
}

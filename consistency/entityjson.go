package consistency

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
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

// props is an entity in the Table service's JSON form: property names (and
// their "@odata.type" annotations) to raw JSON values.
type props map[string]json.RawMessage

// readEntity fetches an entity with full metadata, so that every property
// keeps its type annotation, and strips the service's metadata (odata.*,
// Timestamp). found is false on 404.
func readEntity(ctx context.Context, acct *tablekit.Account, ref EntityRef) (p props, etag azcore.ETag, found bool, err error) {
	c, err := acct.Table(ref.Table)
	if err != nil {
		return nil, "", false, Permanent(err)
	}
	return readEntityWith(ctx, c, ref)
}

// readEntityWith is readEntity on a table client. It reads the raw
// response body: the SDK's GetEntity decodes numbers into float64 and so
// turns a Double 3.0 into 3, which would be written back as an Int32.
func readEntityWith(ctx context.Context, c *aztables.Client, ref EntityRef) (props, azcore.ETag, bool, error) {
	var raw *http.Response
	resp, err := c.GetEntity(policy.WithCaptureResponse(ctx, &raw), ref.PartitionKey, ref.RowKey, &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatFull)})
	if err != nil {
		err = tablekit.MapError(err, "get entity", ref.String())
		if tablekit.IsNotFound(err) && !isTableNotFound(err) {
			return nil, "", false, nil
		}
		return nil, "", false, err
	}
	body := resp.Value
	if raw != nil {
		if b, err := runtime.Payload(raw); err == nil && len(b) > 0 {
			body = b
		}
	}
	var p props
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "", false, err
	}
	p.stripMetadata()
	p.annotateDoubles()
	return p, resp.ETag, true, nil
}

// annotateDoubles adds "Edm.Double" to unannotated numbers written with a
// fraction or exponent (3.0, 1e300): the service (and Azurite) omits the
// annotation of finite doubles, and without it a write would store 3.0 as
// an Int32.
func (p props) annotateDoubles() {
	for k, v := range p {
		if strings.Contains(k, "@") || len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
			continue
		}
		if _, ok := p[k+"@odata.type"]; ok {
			continue
		}
		if bytes.ContainsAny(v, ".eE") {
			p[k+"@odata.type"] = json.RawMessage(`"Edm.Double"`)
		}
	}
}

// isTableNotFound tells a missing table (an error to report) from a
// missing entity (a normal state).
func isTableNotFound(err error) bool {
	var se *tablekit.ServiceError
	return asServiceError(err, &se) && se.Code == "TableNotFound"
}

func (p props) stripMetadata() {
	for k := range p {
		if strings.HasPrefix(k, "odata.") || k == "Timestamp" || k == "Timestamp@odata.type" ||
			k == "PartitionKey@odata.type" || k == "RowKey@odata.type" {
			delete(p, k)
		}
	}
}

// withKeys returns a copy of p under other keys, keeping only the named
// properties (all when names is empty) and their annotations.
func (p props) withKeys(pk, rk string, names []string) props {
	out := make(props, len(p))
	if len(names) == 0 {
		for k, v := range p {
			out[k] = v
		}
	} else {
		for _, n := range names {
			if v, ok := p[n]; ok {
				out[n] = v
			}
			if v, ok := p[n+"@odata.type"]; ok {
				out[n+"@odata.type"] = v
			}
		}
	}
	out["PartitionKey"], _ = json.Marshal(pk)
	out["RowKey"], _ = json.Marshal(rk)
	return out
}

// stringProp returns a string property's value; ok is false when it is
// missing or not a string.
func (p props) stringProp(name string) (string, bool) {
	v, ok := p[name]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// upsertEntity writes p with replace semantics.
func upsertEntity(ctx context.Context, acct *tablekit.Account, table string, p props, mode aztables.UpdateMode) error {
	c, err := acct.Table(table)
	if err != nil {
		return Permanent(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return Permanent(err)
	}
	pk, _ := p.stringProp("PartitionKey")
	rk, _ := p.stringProp("RowKey")
	_, err = c.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: mode})
	return tablekit.MapError(err, "upsert entity", EntityRef{table, pk, rk}.String())
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

// decodeEntity parses the JSON object of an entity given in step
// arguments and checks its keys.
func decodeEntity(kind string, raw json.RawMessage) (props, error) {
	var p props
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil || p == nil {
		return nil, argsError(kind, "entity is not a JSON object")
	}
	pk, ok1 := p.stringProp("PartitionKey")
	rk, ok2 := p.stringProp("RowKey")
	if !ok1 || !ok2 {
		return nil, argsError(kind, "entity needs string PartitionKey and RowKey")
	}
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return nil, invalidArgs(kind, "entity.PartitionKey", err)
	}
	if err := keys.ValidateKey("RowKey", rk); err != nil {
		return nil, invalidArgs(kind, "entity.RowKey", err)
	}
	p.stripMetadata()
	return p, nil
}

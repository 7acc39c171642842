package azurite

import (
	"bytes"
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/entity"
)

// parseBatch reads the operations of the change set of a multipart/mixed
// batch body (answer.ParseBatch), each entity decoded by entity's
// rules; parts other than a change set (a query in a batch) are not
// changes and are left out. ok is false when the body cannot be read as
// one.
func parseBatch(contentType string, body []byte) (ops []answer.BatchOp, ok bool) {
	b, err := answer.ParseBatch(contentType, body)
	if err != nil {
		return nil, false
	}
	for _, req := range b.Changes {
		op, ok := batchOpOf(req)
		if !ok {
			return nil, false
		}
		ops = append(ops, op)
	}
	return ops, true
}

// batchOpOf is the rules' view of one operation: its table, its keys
// (from the URL, or an insert's entity) and its entity. ok is false for
// the service's or Tables('t')'s path, a delete or an empty body
// without keys, and an entity that is not JSON entity can read.
func batchOpOf(req answer.BatchRequest) (answer.BatchOp, bool) {
	res := req.Path
	if res.Service || res.Table != "" {
		return answer.BatchOp{}, false
	}
	op := answer.BatchOp{Table: res.Name, PartitionKey: res.PartitionKey, RowKey: res.RowKey}
	if req.Method == http.MethodDelete || len(bytes.TrimSpace(req.Body)) == 0 {
		return op, res.HasKeys
	}
	ent := new(entity.Entity)
	if err := ent.UnmarshalJSON(req.Body); err != nil {
		return answer.BatchOp{}, false
	}
	op.Entity = ent
	if !res.HasKeys {
		op.PartitionKey, op.RowKey = ent.PartitionKey, ent.RowKey
	}
	return op, true
}

package azurite

import (
	"bytes"

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
// (from the URL, or an insert's entity) and its entity, read as the
// service reads it (answer.ChangeOf). ok is false for an operation the
// service refuses the whole batch for, a delete or an empty body without
// keys, and an entity that is not JSON entity can read.
func batchOpOf(req answer.BatchRequest) (answer.BatchOp, bool) {
	c, ok := answer.ChangeOf(req)
	if !ok {
		return answer.BatchOp{}, false
	}
	op := answer.BatchOp{Table: c.Table, PartitionKey: c.PartitionKey, RowKey: c.RowKey}
	if c.Kind == answer.ChangeDelete || len(bytes.TrimSpace(c.Body)) == 0 {
		return op, c.Path.HasKeys
	}
	ent := new(entity.Entity)
	if err := ent.UnmarshalJSON(c.Body); err != nil {
		return answer.BatchOp{}, false
	}
	op.Entity = ent
	if !c.Path.HasKeys {
		op.PartitionKey, op.RowKey = ent.PartitionKey, ent.RowKey
	}
	return op, true
}

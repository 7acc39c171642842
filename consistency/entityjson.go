package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
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

// tableSet opens each table once: one *wire.Table per table name, shared
// by every step a worker (or one Apply) runs, so that no step builds a
// client per message.
type tableSet struct {
	acct *tablekit.Account
	m    sync.Map // table name -> *wire.Table
	n    atomic.Int64
}

// maxCachedTables bounds a tableSet: table names come from messages, and
// a worker fed ever new names must not grow without end. Past the bound,
// tables are opened per step (wire.Open makes no request).
const maxCachedTables = 4096

func newTableSet(acct *tablekit.Account) *tableSet { return &tableSet{acct: acct} }

// table returns the core's handle on table name. An error is permanent:
// the account cannot reach tables at all.
func (s *tableSet) table(name string) (*wire.Table, error) {
	if t, ok := s.m.Load(name); ok {
		return t.(*wire.Table), nil
	}
	t, err := wire.Open(s.acct, name, nil)
	if err != nil {
		return nil, Permanent(err)
	}
	if s.n.Load() >= maxCachedTables {
		return t, nil
	}
	got, loaded := s.m.LoadOrStore(name, t)
	if !loaded {
		s.n.Add(1)
	}
	return got.(*wire.Table), nil
}

// getEntity reads an entity through the core with full metadata
// (wire.Table.GetTyped), so that every property keeps its EDM type
// annotation, and decodes it with the entity layer (every EDM type kept
// exactly); the service's metadata (odata.*, Timestamp) is dropped. found
// is false when the entity does not exist; a missing table is an error.
func getEntity(ctx context.Context, ts *tableSet, ref EntityRef) (entity.Entity, string, bool, error) {
	t, err := ts.table(ref.Table)
	if err != nil {
		return entity.Entity{}, "", false, err
	}
	body, etag, err := t.GetTyped(ctx, ref.PartitionKey, ref.RowKey)
	if err != nil {
		if entityMissing(err) {
			return entity.Entity{}, "", false, nil
		}
		return entity.Entity{}, "", false, err
	}
	e, err := decodeStored(ref, body)
	if err != nil {
		return entity.Entity{}, "", false, err
	}
	return e, etag, true, nil
}

// decodeStored decodes an entity's JSON as read with full metadata.
func decodeStored(ref EntityRef, body []byte) (entity.Entity, error) {
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		return entity.Entity{}, &wrapped{msg: "consistency: read " + ref.String() + ": " + err.Error(), err: err}
	}
	e.ETag, e.Timestamp = "", time.Time{}
	return e, nil
}

// entityMissing reports whether err says the entity does not exist (a
// normal state), not that its table is missing (an error to report) nor
// that a write's outcome is unknown (whatever its last failure was).
func entityMissing(err error) bool {
	return tablekit.IsNotFound(err) && !isTableNotFound(err) && !errors.Is(err, tablekit.ErrOutcomeUnknown)
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
// string (entity.Value.Text); ok is false when the property is missing or
// carried as a number or a boolean.
func stringProp(e entity.Entity, name string) (string, bool) {
	v, ok := e.Properties[name]
	if !ok {
		return "", false
	}
	return v.Text()
}

// upsertEntity writes e (typ: wire.OpUpsertReplace or OpUpsertMerge) through the core
// (wire.Table.Write, which resolves lost responses). The entity layer
// checks Azure's limits first (entity.Entity.MarshalJSON validates as
// Entity.Validate does): an entity the service would reject is a permanent
// error and no request is sent.
func upsertEntity(ctx context.Context, ts *tableSet, table string, e entity.Entity, typ wire.OpType) error {
	t, err := ts.table(table)
	if err != nil {
		return err
	}
	ref := EntityRef{table, e.PartitionKey, e.RowKey}
	b, err := e.MarshalJSON()
	if err != nil {
		return Permanent(&wrapped{msg: "consistency: write " + ref.String() + ": " + err.Error(), err: err})
	}
	_, err = t.Write(ctx, "upsert entity", wire.Op{Type: typ, PartitionKey: e.PartitionKey, RowKey: e.RowKey, Entity: b})
	return err
}

// deleteEntityIfExists deletes an entity through the core, conditionally
// on etag when it is not empty; a missing entity is success, a missing
// table is not.
func deleteEntityIfExists(ctx context.Context, ts *tableSet, ref EntityRef, etag string) error {
	t, err := ts.table(ref.Table)
	if err != nil {
		return err
	}
	_, err = t.Write(ctx, "delete entity", wire.Op{Type: wire.OpDelete, PartitionKey: ref.PartitionKey, RowKey: ref.RowKey, ETag: etag})
	if entityMissing(err) {
		return nil
	}
	return err
}

// modifyErr classifies the failure of a wire.Modify inside a step: a
// race that ran out of attempts is retried later (the entity kept
// changing), an entity the write-id log would push over Azure's limits is
// permanent, and tablekit.ErrOutcomeUnknown stays as it is (IsPermanent
// retries it: the message comes back and the idempotent step re-reads).
func modifyErr(err error, race func(error) bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tablekit.ErrOutcomeUnknown), errors.Is(err, ErrPermanent), errors.Is(err, ErrRetry):
		return err
	case errors.Is(err, tablekit.ErrInvalidEntity), errors.Is(err, tablekit.ErrInvalidKey):
		return Permanent(err)
	case race(err):
		return Retryable(err)
	}
	return err
}

// lostRace is the race of the steps' Modify loops: another writer changed
// or removed the entity (412, 404) or created it first (409); a missing
// table is not a race.
func lostRace(err error) bool {
	return tablekit.IsPreconditionFailed(err) || tablekit.IsAlreadyExists(err) || entityMissing(err)
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

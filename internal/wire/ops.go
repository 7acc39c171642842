package wire

import (
	"fmt"
	"strconv"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// Limits of an entity group transaction (azrules, where their evidence
// is). The SDK checks none of them and Azurite accepts some batches Azure
// rejects, so they are checked before sending.
const (
	// MaxTransactionOps is the most operations one transaction may hold.
	MaxTransactionOps = azrules.MaxBatchOperations
	// MaxTransactionBytes is the largest request body of a transaction.
	MaxTransactionBytes = azrules.MaxBatchBytes
)

// OpType is the kind of one entity write.
type OpType int

// The entity writes.
const (
	// OpInsert adds an entity; it fails if one exists.
	OpInsert OpType = iota
	// OpReplace replaces an existing entity (If-Match: the ETag, or *).
	OpReplace
	// OpMerge merges into an existing entity (If-Match: the ETag, or *).
	OpMerge
	// OpUpsertReplace inserts or replaces.
	OpUpsertReplace
	// OpUpsertMerge inserts or merges.
	OpUpsertMerge
	// OpDelete deletes an existing entity (If-Match: the ETag, or *).
	OpDelete
)

var opNames = [...]string{"insert", "replace", "merge", "upsert-replace", "upsert-merge", "delete"}

func (o OpType) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "OpType(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}

// Op is one entity write on an encoded entity.
type Op struct {
	Type         OpType
	PartitionKey string
	RowKey       string
	// Entity is the entity's JSON (entity.Codec.Marshal's output); unused
	// by OpDelete.
	Entity []byte
	// ETag is the If-Match condition of OpReplace, OpMerge and OpDelete;
	// empty means "*" (the entity must exist, whatever its version).
	ETag string
	// Unique tells that Entity holds a value no other write holds (a fresh
	// blob name, an intent id), or that the caller takes a stored entity
	// equal to Entity as its own write (a bulk load, whose content derives
	// from no read). When a conditional write's answer is lost, a stored
	// entity equal to Entity then settles it as landed. Without it, equal
	// content may be another writer's, and such a write's lost answer is
	// settled only when the stored state refutes it (see Table.Write).
	Unique bool
	// Owned tells that Entity may carry tablekit's write-id log
	// (UpdateLogProperty) besides what it holds: tablekit sets it on its
	// own entities (an index copy written in its primary's transaction),
	// so that a lost answer is settled exactly (a transaction needs one
	// such operation). Leave it false for an entity that must be stored
	// exactly as written; without it, no property is ever added.
	Owned bool
}

// conditional reports whether op can be refused because of another
// writer: an insert, or an update or delete conditional on one ETag.
func (op Op) conditional() bool {
	return op.Type == OpInsert || op.ETag != "" && op.ETag != "*" && (op.Type == OpReplace || op.Type == OpMerge || op.Type == OpDelete)
}

// provenBy reports whether stored (the entity's JSON, nil when absent)
// proves that op landed, or left the state it would have left: it shows
// op's effect, and either op is unconditional or a delete (its effect is
// the same whoever made it: applying it again changes nothing), or Entity
// is unique to op.
func (op Op) provenBy(stored []byte) bool {
	return showsEffect(op, stored) && (op.Unique || op.Type == OpDelete || !op.conditional())
}

// refutedBy reports whether stored (nil when absent) with storedETag
// proves that op never landed: an insert finds nothing, or a conditional
// write's entity still has the version it was conditional on.
func (op Op) refutedBy(stored []byte, storedETag string) bool {
	if op.Type == OpInsert {
		return stored == nil
	}
	return op.conditional() && stored != nil && storedETag == op.ETag
}

// Result is the outcome of one operation of a successful write.
type Result struct {
	StatusCode int    // 201 or 204
	ETag       string // the entity's new ETag; empty for deletes
}

// ValidateKeys checks a PartitionKey and RowKey against Azure's key rules.
func ValidateKeys(pk, rk string) error {
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return keys.ValidateKey("RowKey", rk)
}

// ValidateTransaction checks ops against the rules Azure applies to an
// entity group transaction: 1 to 100 operations, one PartitionKey, at most
// one operation per entity, valid keys, and a request body of at most
// 4 MiB. Errors wrap tablekit.ErrInvalidTransaction (or ErrInvalidKey) and
// name the operation's index.
func ValidateTransaction(ops []Op) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: no operations", errs.ErrInvalidTransaction)
	}
	if err := azrules.CheckBatchOperations(len(ops)); err != nil {
		return fmt.Errorf("%w: %v", errs.ErrInvalidTransaction, err)
	}
	var seen RowKeySet
	size := 0
	for i, op := range ops {
		if op.Type < OpInsert || op.Type > OpDelete {
			return fmt.Errorf("%w: operation %d: unknown type %v", errs.ErrInvalidTransaction, i, op.Type)
		}
		if err := ValidateKeys(op.PartitionKey, op.RowKey); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if op.PartitionKey != ops[0].PartitionKey {
			return fmt.Errorf("%w: operation %d has PartitionKey %q but operation 0 has %q; a transaction covers one partition", errs.ErrInvalidTransaction, i, op.PartitionKey, ops[0].PartitionKey)
		}
		if j, dup := seen.Lookup(ops, op.RowKey); dup {
			return fmt.Errorf("%w: operations %d and %d both touch RowKey %q; one operation per entity", errs.ErrInvalidTransaction, j, i, op.RowKey)
		}
		seen.Add(ops, i)
		if op.Type != OpDelete && len(op.Entity) == 0 {
			return fmt.Errorf("%w: operation %d (%v) has no entity body", errs.ErrInvalidTransaction, i, op.Type)
		}
		size += OpWireSize(op)
	}
	if size > MaxTransactionBytes {
		return fmt.Errorf("%w: the request body would be about %d bytes; at most %d (4 MiB) are allowed", errs.ErrInvalidTransaction, size, MaxTransactionBytes)
	}
	return nil
}

// OpWireSize bounds from above the bytes one operation adds to a batch
// body: the MIME part headers, the request line with the percent-encoded
// keys and the table URL (up to 256 bytes), the operation's headers and the
// entity.
func OpWireSize(op Op) int {
	const overhead = 256 /* part headers */ + 256 /* URL */ + 320 /* request headers */
	return overhead + 3*(len(op.PartitionKey)+len(op.RowKey)) + len(op.ETag) + len(op.Entity)
}

// validateOp checks one single-entity write before any request.
func validateOp(op Op) error {
	if op.Type < OpInsert || op.Type > OpDelete {
		return fmt.Errorf("tablekit: unknown write type %v", op.Type)
	}
	if err := ValidateKeys(op.PartitionKey, op.RowKey); err != nil {
		return err
	}
	if op.Type != OpDelete && len(op.Entity) == 0 {
		return tkerr.Errorf("tablekit: %v of (%q, %q): %w: no entity body", op.Type, op.PartitionKey, op.RowKey, errs.ErrInvalidEntity)
	}
	return nil
}

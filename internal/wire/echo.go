package wire

// Open outcomes. When a write reaches the service but its response is lost
// (a reset connection, a timeout, a 5xx from a proxy), azcore retries it,
// and the retry fails because of the write's own first attempt: an insert
// meets its own entity (409), a conditional update its own new ETag (412),
// a delete finds nothing (404). When azcore gives up, or the caller's
// context ends, the write may have landed too. Reporting either as a plain
// failure would make callers repeat a write that happened (a double
// increment) or give up on one that did (a blob deleted under a stored
// reference). So such a failure is resolved by reading the entity back.

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/keys"
)

// openOutcome reports whether err leaves open whether the write landed.
func openOutcome(typ OpType, err error, tries int32) bool {
	if err == nil {
		return false
	}
	if IsTransientOrLost(err) {
		return true
	}
	return tries >= 2 && isEcho(typ, err)
}

// isEcho reports whether err is what a retried write meets when its own
// first attempt landed.
func isEcho(typ OpType, err error) bool {
	switch typ {
	case OpInsert:
		return errors.Is(err, errs.ErrAlreadyExists)
	case OpReplace, OpMerge:
		return errors.Is(err, errs.ErrPreconditionFailed)
	case OpDelete:
		return errors.Is(err, errs.ErrNotFound) || errors.Is(err, errs.ErrPreconditionFailed)
	}
	return false
}

// IsTransientOrLost reports whether err is a failure after which a request
// may or may not have been applied: a transient service answer after
// azcore's retries, a transport failure, or the context ending mid-request.
func IsTransientOrLost(err error) bool {
	var te *errs.TransactionError
	if errors.As(err, &te) {
		return te.StatusCode == 408 || te.StatusCode == 429 || te.StatusCode >= 500
	}
	return errs.IsTransient(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func outcomeUnknown(op, resource string, err error) error {
	return errs.NewOutcomeUnknown(op, resource, err)
}

// showsEffect reports whether stored (the entity's JSON, nil when absent)
// is the state op leaves behind.
func showsEffect(op Op, stored []byte) bool {
	if op.Type == OpDelete {
		return stored == nil
	}
	if stored == nil {
		return false
	}
	var have, want entity.Entity
	if have.UnmarshalJSON(stored) != nil || want.UnmarshalJSON(op.Entity) != nil {
		return false
	}
	merge := op.Type == OpMerge || op.Type == OpUpsertMerge
	if !merge && len(have.Properties) != len(want.Properties) {
		return false
	}
	for name, w := range want.Properties {
		h, ok := have.Properties[name]
		if !ok || !sameValue(h, w) {
			return false
		}
	}
	return true
}

// sameValue compares two property values. Numbers compare by value across
// Int32, Int64 and Double: the service may drop the Double annotation of
// an integral value (Azurite does), so a stored 3.0 can read back as 3.
func sameValue(a, b entity.Value) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && (fa == fb || math.IsNaN(fa) && math.IsNaN(fb))
	}
	if a.Type != b.Type {
		return false
	}
	switch av := a.V.(type) {
	case time.Time:
		bv, ok := b.V.(time.Time)
		return ok && av.Equal(bv)
	case []byte:
		bv, ok := b.V.([]byte)
		return ok && bytes.Equal(av, bv)
	}
	return a.V == b.V
}

func number(v entity.Value) (float64, bool) {
	switch n := v.V.(type) {
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// batchApplied tells from the operations' entities, read with one range
// query over their RowKeys, whether a transaction whose answer was lost
// landed (yes: every operation proven by its entity, see Op.provenBy; no:
// one refuted, see Op.refutedBy, and a transaction is all or nothing), and
// returns the stored ETags. first is when the transaction's first attempt
// was sent: an entity stamped before it refutes the transaction (for an
// insert, the entity was there already; for the others, it was not written
// since; see serviceClock). An entity stamped after it that shows a
// conditional operation's effect proves nothing: another writer may have
// stored the same content (two workers incrementing one counter from the
// same value). When ops[marked] carries the write marker id (see
// markBatch), its log settles the whole transaction.
func (t *Table) batchApplied(ctx context.Context, ops []Op, marked int, id string, first time.Time) ([]Result, verdict) {
	rks := make([]string, len(ops))
	for i, op := range ops {
		rks[i] = op.RowKey
	}
	f, err := keys.And(keys.PK().Eq(ops[0].PartitionKey), keys.RK().Between(slices.Min(rks), slices.Max(rks))).Build()
	if err != nil {
		return nil, unknown
	}
	stored := map[string][]byte{}
	etags := map[string]string{}
	for raw, err := range t.Rows(ctx, Query{Filter: f}) {
		if err != nil {
			return nil, unknown
		}
		var e entity.Entity
		if e.UnmarshalJSON(raw) != nil {
			return nil, unknown
		}
		stored[e.RowKey] = raw
		etags[e.RowKey] = e.ETag
	}
	for _, op := range ops {
		s, etag := stored[op.RowKey], etags[op.RowKey]
		if t.refuted(op, s, etag, first) {
			return nil, no
		}
	}
	results := make([]Result, len(ops))
	for i, op := range ops {
		results[i] = Result{StatusCode: 204, ETag: etags[op.RowKey]}
	}
	if marked >= 0 {
		m := ops[marked]
		switch markVerdict(m, id, stored[m.RowKey]) {
		case yes:
			results[marked].ETag = etagIfLast(id, stored[m.RowKey], etags[m.RowKey])
			return results, yes
		case no:
			return nil, no
		}
	}
	for _, op := range ops {
		if !op.provenBy(stored[op.RowKey]) {
			return nil, unknown
		}
	}
	return results, yes
}

package patterns

// Ambiguous outcomes. When a write reaches the service but its response is
// lost (a reset connection, a timeout, a 5xx from a proxy), azcore retries
// it, and the retry fails because of the write's own first attempt: an
// insert meets its own entity (409), a conditional update its own new ETag
// (412), a delete finds nothing (404). Reporting that failure would make
// callers retry a write that happened (a double increment in Update) or
// give up on one that did. So when an operation took more than one attempt
// and fails that way, tablekit reads the entity back and reports success
// when the stored state is exactly what the operation writes.

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// ambiguous reports whether err, after more than one attempt, may be the
// echo of the operation's own first attempt.
func ambiguous(typ OpType, err error, tries int32) bool {
	if tries < 2 || err == nil {
		return false
	}
	switch typ {
	case OpInsert:
		return errors.Is(err, tablekit.ErrAlreadyExists)
	case OpReplace, OpMerge:
		return errors.Is(err, tablekit.ErrPreconditionFailed)
	case OpDelete:
		return errors.Is(err, tablekit.ErrNotFound) || errors.Is(err, tablekit.ErrPreconditionFailed)
	}
	return false
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

// readStored fetches one entity's JSON and ETag; nil when it does not
// exist.
func readStored(ctx context.Context, client *aztables.Client, fast *fastPath, table, pk, rk string) ([]byte, string, error) {
	body, etag, err := fetchEntity(ctx, client, fast, table, pk, rk)
	if errors.Is(err, tablekit.ErrNotFound) {
		return nil, "", nil
	}
	return body, etag, err
}

// fetchEntity reads one entity's JSON and ETag, on the fast path when
// there is one; label names the entity in errors. A missing entity is an
// error wrapping tablekit.ErrNotFound and the SDK's error.
func fetchEntity(ctx context.Context, client *aztables.Client, fast *fastPath, label, pk, rk string) ([]byte, string, error) {
	if fast != nil {
		return fast.get(ctx, pk, rk, label)
	}
	resp, err := client.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		return nil, "", tablekit.MapError(err, "get", label)
	}
	return resp.Value, string(resp.ETag), nil
}

// batchApplied reports whether every operation of a transaction shows its
// effect in the partition (read with one range query over the operations'
// RowKeys), and returns the stored ETags.
func batchApplied(ctx context.Context, client *aztables.Client, fast *fastPath, table string, ops []Op) ([]OpResult, bool) {
	rks := make([]string, len(ops))
	for i, op := range ops {
		rks[i] = op.RowKey
	}
	f := keys.And(keys.PK().Eq(ops[0].PartitionKey), keys.RK().Between(slices.Min(rks), slices.Max(rks)))
	q, err := prepareQuery(table, f, &QueryOptions{SelectAll: true}, nil)
	if err != nil {
		return nil, false
	}
	stored := map[string][]byte{}
	etags := map[string]string{}
	for raw, err := range rawRows(ctx, client, fast, q) {
		if err != nil {
			return nil, false
		}
		var e entity.Entity
		if e.UnmarshalJSON(raw) != nil {
			return nil, false
		}
		stored[e.RowKey] = raw
		etags[e.RowKey] = e.ETag
	}
	results := make([]OpResult, len(ops))
	for i, op := range ops {
		if !showsEffect(op, stored[op.RowKey]) {
			return nil, false
		}
		results[i] = OpResult{StatusCode: 204, ETag: etags[op.RowKey]}
	}
	return results, true
}

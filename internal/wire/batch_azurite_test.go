package wire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/tools/testenv"
)

func openBoth(t *testing.T) map[string]*wire.Table {
	t.Helper()
	acct := testenv.Account(t)
	name := testenv.TableName(t)
	out := map[string]*wire.Table{}
	for label, o := range map[string]*wire.Options{"rest": nil, "sdk": {SDKPath: true}} {
		tbl, err := wire.Open(acct, name, o)
		if err != nil {
			t.Fatal(err)
		}
		out[label] = tbl
	}
	if err := out["rest"].Create(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

func row(pk, rk string) []byte {
	return []byte(`{"PartitionKey":"` + pk + `","RowKey":"` + rk + `","N":1}`)
}

// A changeset mixing writes and deletes comes back with one result per
// operation, in order: each write's ETag is the one the entity now has,
// a delete has none.
func TestBatchResultsWithDeletes(t *testing.T) {
	ctx := context.Background()
	for label, tbl := range openBoth(t) {
		pk := "results-" + label
		seed := []wire.Op{
			{Type: wire.OpInsert, PartitionKey: pk, RowKey: "d1", Entity: row(pk, "d1")},
			{Type: wire.OpInsert, PartitionKey: pk, RowKey: "d2", Entity: row(pk, "d2")},
			{Type: wire.OpInsert, PartitionKey: pk, RowKey: "m", Entity: row(pk, "m")},
		}
		if _, err := tbl.Batch(ctx, seed); err != nil {
			t.Fatalf("%s: seed: %v", label, err)
		}
		ops := []wire.Op{
			{Type: wire.OpDelete, PartitionKey: pk, RowKey: "d1"},
			{Type: wire.OpInsert, PartitionKey: pk, RowKey: "i", Entity: row(pk, "i")},
			{Type: wire.OpMerge, PartitionKey: pk, RowKey: "m", Entity: row(pk, "m")},
			{Type: wire.OpDelete, PartitionKey: pk, RowKey: "d2"},
			{Type: wire.OpUpsertReplace, PartitionKey: pk, RowKey: "u", Entity: row(pk, "u")},
		}
		res, err := tbl.Batch(ctx, ops)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if len(res) != len(ops) {
			t.Fatalf("%s: %d results for %d operations", label, len(res), len(ops))
		}
		for i, op := range ops {
			r := res[i]
			if r.StatusCode != 204 && r.StatusCode != 201 {
				t.Errorf("%s: operation %d (%v): status %d", label, i, op.Type, r.StatusCode)
			}
			if op.Type == wire.OpDelete {
				if r.ETag != "" {
					t.Errorf("%s: delete %d has ETag %q", label, i, r.ETag)
				}
				if body, _, err := tbl.Stored(ctx, pk, op.RowKey); err != nil || body != nil {
					t.Errorf("%s: deleted %s still there (%v)", label, op.RowKey, err)
				}
				continue
			}
			_, etag, err := tbl.Get(ctx, pk, op.RowKey)
			if err != nil || etag != r.ETag || etag == "" {
				t.Errorf("%s: operation %d: result ETag %q, stored %q (%v)", label, i, r.ETag, etag, err)
			}
		}
	}
}

// A failing operation inside a 202 becomes a *tablekit.TransactionError
// naming its index and unwrapping to the sentinel, on both transports,
// and nothing of the transaction is applied.
func TestBatchFailureNamesOperation(t *testing.T) {
	ctx := context.Background()
	for label, tbl := range openBoth(t) {
		pk := "fail-" + label
		if _, err := tbl.Write(ctx, "insert", wire.Op{Type: wire.OpInsert, PartitionKey: pk, RowKey: "b", Entity: row(pk, "b")}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			ops      []wire.Op
			index    int
			status   int
			sentinel error
		}{
			{[]wire.Op{
				{Type: wire.OpInsert, PartitionKey: pk, RowKey: "a", Entity: row(pk, "a")},
				{Type: wire.OpDelete, PartitionKey: pk, RowKey: "b"},
				{Type: wire.OpInsert, PartitionKey: pk, RowKey: "c", Entity: row(pk, "c")},
				{Type: wire.OpDelete, PartitionKey: pk, RowKey: "missing"},
			}, 3, 404, tablekit.ErrNotFound},
			{[]wire.Op{
				{Type: wire.OpUpsertMerge, PartitionKey: pk, RowKey: "a", Entity: row(pk, "a")},
				{Type: wire.OpInsert, PartitionKey: pk, RowKey: "b", Entity: row(pk, "b")},
			}, 1, 409, tablekit.ErrAlreadyExists},
		}
		for _, c := range cases {
			_, err := tbl.Batch(ctx, c.ops)
			var te *tablekit.TransactionError
			if !errors.As(err, &te) || te.Index != c.index || te.StatusCode != c.status || !errors.Is(err, c.sentinel) {
				t.Errorf("%s: Batch = %v, want operation %d failing with %d (%v)", label, err, c.index, c.status, c.sentinel)
			}
			if body, _, err := tbl.Stored(ctx, pk, "a"); err != nil || body != nil {
				t.Errorf("%s: part of a failed transaction was applied (%v)", label, err)
			}
			if body, _, err := tbl.Stored(ctx, pk, "b"); err != nil || body == nil {
				t.Errorf("%s: the delete of a failed transaction was applied (%v)", label, err)
			}
		}
	}
}

package wire

import (
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/internal/errs"
)

// sdkPath sends every operation through the aztables client: the
// transport for Cosmos DB Table endpoints, and for callers that ask for it.
type sdkPath struct {
	client *aztables.Client
	table  string
}

func (s *sdkPath) get(ctx context.Context, pk, rk string, _ bool) ([]byte, string, error) {
	resp, err := s.client.GetEntity(ctx, pk, rk, &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatFull)})
	if err != nil {
		return nil, "", errs.MapError(err, "get", entityLabel(s.table, pk, rk))
	}
	return resp.Value, string(resp.ETag), nil
}

func (s *sdkPath) write(ctx context.Context, op Op, verb, label string) (string, error) {
	var err error
	var newETag azcore.ETag
	ifMatch := azcore.ETag(op.ETag)
	if ifMatch == "" {
		ifMatch = azcore.ETagAny
	}
	switch op.Type {
	case OpInsert:
		var resp aztables.AddEntityResponse
		resp, err = s.client.AddEntity(ctx, op.Entity, nil)
		newETag = resp.ETag
	case OpReplace, OpMerge:
		mode := aztables.UpdateModeReplace
		if op.Type == OpMerge {
			mode = aztables.UpdateModeMerge
		}
		var resp aztables.UpdateEntityResponse
		resp, err = s.client.UpdateEntity(ctx, op.Entity, &aztables.UpdateEntityOptions{IfMatch: &ifMatch, UpdateMode: mode})
		newETag = resp.ETag
	case OpUpsertReplace, OpUpsertMerge:
		mode := aztables.UpdateModeReplace
		if op.Type == OpUpsertMerge {
			mode = aztables.UpdateModeMerge
		}
		var resp aztables.UpsertEntityResponse
		resp, err = s.client.UpsertEntity(ctx, op.Entity, &aztables.UpsertEntityOptions{UpdateMode: mode})
		newETag = resp.ETag
	case OpDelete:
		_, err = s.client.DeleteEntity(ctx, op.PartitionKey, op.RowKey, &aztables.DeleteEntityOptions{IfMatch: &ifMatch})
	}
	if err != nil {
		return "", errs.MapError(err, verb, label)
	}
	return string(newETag), nil
}

func (s *sdkPath) page(ctx context.Context, q Query, pos *Continuation) ([][]byte, *Continuation, error) {
	o := &aztables.ListEntitiesOptions{Top: &q.Top}
	if q.Filter != "" {
		o.Filter = &q.Filter
	}
	if q.Select != "" {
		o.Select = &q.Select
	}
	if pos != nil {
		o.NextPartitionKey = &pos.PK
		o.NextRowKey = &pos.RK
	}
	resp, err := s.client.NewListEntitiesPager(o).NextPage(ctx)
	if err != nil {
		return nil, nil, errs.MapError(err, "query", q.label(s.table))
	}
	var next *Continuation
	if resp.NextPartitionKey != nil && *resp.NextPartitionKey != "" {
		next = &Continuation{PK: *resp.NextPartitionKey}
		if resp.NextRowKey != nil {
			next.RK = *resp.NextRowKey
		}
	}
	return resp.Entities, next, nil
}

func (s *sdkPath) batch(ctx context.Context, ops []Op, label string) ([]Result, error) {
	actions := make([]aztables.TransactionAction, len(ops))
	for i, op := range ops {
		a := aztables.TransactionAction{Entity: op.Entity}
		etag := azcore.ETagAny
		if op.ETag != "" {
			etag = azcore.ETag(op.ETag)
		}
		switch op.Type {
		case OpInsert:
			a.ActionType = aztables.TransactionTypeAdd
		case OpReplace:
			a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateReplace, &etag
		case OpMerge:
			a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateMerge, &etag
		case OpUpsertReplace:
			a.ActionType = aztables.TransactionTypeInsertReplace
		case OpUpsertMerge:
			a.ActionType = aztables.TransactionTypeInsertMerge
		case OpDelete:
			a.ActionType, a.IfMatch = aztables.TransactionTypeDelete, &etag
			a.Entity = KeysOnly(op.PartitionKey, op.RowKey)
		}
		actions[i] = a
	}
	var raw *http.Response
	_, err := s.client.SubmitTransaction(policy.WithCaptureResponse(ctx, &raw), actions, nil)
	if err != nil {
		return nil, errs.MapError(err, "transaction on", label)
	}
	results := make([]Result, len(ops))
	if raw != nil {
		if body, perr := runtime.Payload(raw); perr == nil {
			if _, ok := batchOutcome(body, len(ops), results); !ok {
				clear(results)
			}
		}
	}
	return results, nil
}

// KeysOnly is the minimal entity body holding only the keys (the SDK needs
// one for a delete).
func KeysOnly(pk, rk string) []byte {
	b := make([]byte, 0, len(pk)+len(rk)+32)
	b = append(b, `{"PartitionKey":`...)
	b = AppendJSONString(b, pk)
	b = append(b, `,"RowKey":`...)
	b = AppendJSONString(b, rk)
	return append(b, '}')
}

package patterns

// The fast path: tablekit's own REST calls through the account's azcore
// pipeline (tablekit.TableHTTP), used for every Table[T] operation on Azure
// Storage and Azurite. aztables decodes each entity, page and batch body
// into map[string]any and encodes it again; here the codec's JSON goes to
// the wire as is, and pages are split and decoded straight into T. Retries,
// logging, tracing and authentication stay azcore's. Cosmos DB Table
// endpoints, whose formats differ in details, use the SDK path.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
)

// fastPath sends table operations as raw REST requests.
type fastPath struct {
	h     *tablekit.TableHTTP
	table string
}

func newFastPath(acct *tablekit.Account, table string, disabled bool) *fastPath {
	if disabled {
		return nil
	}
	h := acct.TableHTTP()
	if h == nil || h.IsCosmos() {
		return nil
	}
	return &fastPath{h: h, table: table}
}

// entityPath is "/table(PartitionKey='pk',RowKey='rk')" with the keys'
// quotes doubled (OData) and percent-encoded.
func entityPath(table, pk, rk string) string {
	var b strings.Builder
	b.Grow(len(table) + len(pk) + len(rk) + 32)
	b.WriteByte('/')
	b.WriteString(table)
	b.WriteString("(PartitionKey='")
	b.WriteString(url.PathEscape(strings.ReplaceAll(pk, "'", "''")))
	b.WriteString("',RowKey='")
	b.WriteString(url.PathEscape(strings.ReplaceAll(rk, "'", "''")))
	b.WriteString("')")
	return b.String()
}

// do sends one request and returns the response when its status is one of
// ok, else the typed error.
func (f *fastPath) do(ctx context.Context, method, path string, query url.Values, body []byte, header map[string]string, op, resource string, ok ...int) (*http.Response, error) {
	req, err := f.h.NewRequest(ctx, method, path, query)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Raw().Header[k] = []string{v}
	}
	if body != nil {
		ct := header["Content-Type"]
		if ct == "" {
			ct = "application/json"
		}
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), ct); err != nil {
			return nil, err
		}
	}
	resp, err := f.h.Do(req)
	if err != nil {
		return nil, tablekit.MapError(err, op, resource)
	}
	if !runtime.HasStatusCode(resp, ok...) {
		return nil, tablekit.MapError(runtime.NewResponseError(resp), op, resource)
	}
	return resp, nil
}

// write sends one entity write and returns the new ETag.
func (f *fastPath) write(ctx context.Context, typ OpType, pk, rk string, body []byte, etag, op, resource string) (string, error) {
	method, path, header := opRequest(typ, f.table, pk, rk, etag)
	resp, err := f.do(ctx, method, path, nil, body, header, op, resource, http.StatusCreated, http.StatusNoContent)
	if err != nil {
		return "", err
	}
	return resp.Header.Get("ETag"), nil
}

// opRequest maps an operation to its method, path and headers, for single
// requests and for the parts of a batch alike.
func opRequest(typ OpType, table, pk, rk, etag string) (method, path string, header map[string]string) {
	header = map[string]string{}
	switch typ {
	case OpInsert:
		header["Prefer"] = "return-no-content"
		return http.MethodPost, "/" + table, header
	case OpReplace, OpMerge, OpDelete:
		if etag == "" {
			etag = "*"
		}
		header["If-Match"] = etag
	}
	method = http.MethodPut
	switch typ {
	case OpMerge, OpUpsertMerge:
		method = "MERGE"
	case OpDelete:
		method = http.MethodDelete
	}
	return method, entityPath(table, pk, rk), header
}

// get reads one entity's JSON and ETag.
func (f *fastPath) get(ctx context.Context, pk, rk, resource string) ([]byte, string, error) {
	resp, err := f.do(ctx, http.MethodGet, entityPath(f.table, pk, rk), nil, nil, nil, "get", resource, http.StatusOK)
	if err != nil {
		return nil, "", err
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, "", err
	}
	return body, resp.Header.Get("ETag"), nil
}

// page fetches one query page: the rows' JSON (sub-slices of the body)
// and the continuation, nil after the last page.
func (f *fastPath) page(ctx context.Context, q query, pos *continuation) ([][]byte, *continuation, error) {
	v := url.Values{}
	if q.filter != "" {
		v["$filter"] = []string{q.filter}
	}
	if q.selects != "" {
		v["$select"] = []string{q.selects}
	}
	v["$top"] = []string{strconv.Itoa(int(q.top))}
	if pos != nil {
		v["NextPartitionKey"] = []string{pos.PK}
		if pos.RK != "" {
			v["NextRowKey"] = []string{pos.RK}
		}
	}
	resp, err := f.do(ctx, http.MethodGet, "/"+f.table+"()", v, nil, nil, "query", q.table+" filter "+quoteFilter(q.filter), http.StatusOK)
	if err != nil {
		return nil, nil, err
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, nil, err
	}
	rows, err := entity.SplitPage(body)
	if err != nil {
		return nil, nil, err
	}
	var next *continuation
	if npk := resp.Header.Get("x-ms-continuation-NextPartitionKey"); npk != "" {
		next = &continuation{PK: npk, RK: resp.Header.Get("x-ms-continuation-NextRowKey")}
	}
	return rows, next, nil
}

// submit sends ops (validated by the caller) as one batch request.
func (f *fastPath) submit(ctx context.Context, ops []Op) ([]OpResult, error) {
	batch, changeset := "batch_"+randomID(), "changeset_"+randomID()
	body := buildBatchBody(f.h.Endpoint(), f.table, batch, changeset, ops)
	resource := f.table + " (PartitionKey " + strconv.Quote(ops[0].PartitionKey) + ")"
	resp, err := f.do(ctx, http.MethodPost, "/$batch", nil, body,
		map[string]string{"Content-Type": "multipart/mixed; boundary=" + batch},
		"transaction on", resource, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	payload, err := runtime.Payload(resp)
	if err != nil {
		return nil, err
	}
	if tablekit.ParseTransactionError(payload) != nil {
		return nil, tablekit.MapError(runtime.NewResponseError(resp), "transaction on", resource)
	}
	results := make([]OpResult, len(ops))
	parseBatchResults(resp.Header.Get("Content-Type"), payload, results)
	return results, nil
}

// buildBatchBody writes the multipart/mixed body of an entity group
// transaction: one changeset, one application/http part per operation,
// the entity JSON copied as the codec produced it.
func buildBatchBody(endpoint, table, batch, changeset string, ops []Op) []byte {
	size := 256
	for _, op := range ops {
		size += opWireSize(op)
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	for _, op := range ops {
		method, path, header := opRequest(op.Type, table, op.PartitionKey, op.RowKey, op.ETag)
		b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		b.WriteString(method + " " + endpoint + path + " HTTP/1.1\r\n")
		b.WriteString("Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n")
		if v := header["If-Match"]; v != "" {
			b.WriteString("If-Match: " + v + "\r\n")
		}
		if v := header["Prefer"]; v != "" {
			b.WriteString("Prefer: " + v + "\r\n")
		}
		if op.Type != OpDelete {
			b.WriteString("Content-Type: application/json\r\n\r\n")
			b.Write(op.Entity)
			b.WriteString("\r\n")
		} else {
			b.WriteString("\r\n")
		}
	}
	b.WriteString("--" + changeset + "--\r\n--" + batch + "--\r\n")
	return b.Bytes()
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

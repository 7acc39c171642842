package wire

// The REST transport: tablekit's own requests through the account's azcore
// pipeline (internal/tablehttp). aztables decodes each entity, page and
// batch body into map[string]any and encodes it again; here the codec's
// JSON goes to the wire as is, and pages are split without decoding.
// Retries, logging, the HTTP span and authentication stay azcore's.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/tablehttp"
)

type restPath struct {
	h     *tablehttp.Client
	table string
}

// entityPath is "/table(PartitionKey='pk',RowKey='rk')" with the keys'
// quotes doubled (OData) and percent-encoded.
func entityPath(table, pk, rk string) string {
	return string(appendEntityPath(make([]byte, 0, len(table)+len(pk)+len(rk)+32), table, pk, rk))
}

// appendEntityPath appends entityPath(table, pk, rk) to dst.
func appendEntityPath(dst []byte, table, pk, rk string) []byte {
	dst = append(dst, '/')
	dst = append(dst, table...)
	dst = append(dst, "(PartitionKey='"...)
	dst = appendKeyLiteral(dst, pk)
	dst = append(dst, "',RowKey='"...)
	dst = appendKeyLiteral(dst, rk)
	return append(dst, "')"...)
}

// appendKeyLiteral appends key as it goes between the quotes of a key
// literal in a path: quotes doubled, then escaped as url.PathEscape
// escapes. A key of only letters, digits and - _ . ~ (which neither
// changes) is appended as is, without the two passes over it.
func appendKeyLiteral(dst []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		if !unreserved[key[i]] {
			return append(dst, url.PathEscape(strings.ReplaceAll(key, "'", "''"))...)
		}
	}
	return append(dst, key...)
}

// unreserved marks the bytes RFC 3986 calls unreserved: url.PathEscape
// leaves them as they are, and none is a quote.
var unreserved = func() (t [256]bool) {
	for c := range t {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
	}
	return t
}()

// do sends one request and returns the response when its status is one of
// ok, else the typed error.
func (f *restPath) do(ctx context.Context, method, path string, query url.Values, body []byte, header map[string]string, op, resource string, ok ...int) (*http.Response, error) {
	req, err := f.request(ctx, method, path, query, body, header)
	if err != nil {
		return nil, err
	}
	return f.send(req, op, resource, ok...)
}

// request builds a request; body is sent as JSON unless header sets a
// Content-Type.
func (f *restPath) request(ctx context.Context, method, path string, query url.Values, body []byte, header map[string]string) (*policy.Request, error) {
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
	return req, nil
}

// send sends req and returns the response when its status is one of ok,
// else the typed error.
func (f *restPath) send(req *policy.Request, op, resource string, ok ...int) (*http.Response, error) {
	resp, err := f.h.Do(req)
	if err != nil || !runtime.HasStatusCode(resp, ok...) {
		return nil, failed(resp, err, op, resource)
	}
	return resp, nil
}

// failed is the typed error of a request that returned err, or else resp
// with a status it did not want.
func failed(resp *http.Response, err error, op, resource string) error {
	if err != nil {
		return errs.MapError(err, op, resource)
	}
	return errs.MapError(runtime.NewResponseError(resp), op, resource)
}

func (f *restPath) write(ctx context.Context, op Op, verb, label string) (string, error) {
	method, path, oh := opRequest(op.Type, f.table, op.PartitionKey, op.RowKey, op.ETag)
	var body []byte
	if op.Type != OpDelete {
		body = op.Entity
	}
	header := map[string]string{}
	if oh.ifMatch != "" {
		header["If-Match"] = oh.ifMatch
	}
	if oh.prefer != "" {
		header["Prefer"] = oh.prefer
	}
	resp, err := f.do(ctx, method, path, nil, body, header, verb, label, http.StatusCreated, http.StatusNoContent)
	if err != nil {
		return "", err
	}
	return resp.Header.Get("ETag"), nil
}

// opHeaders are the headers an operation needs beyond every request's.
type opHeaders struct {
	ifMatch string
	prefer  string
}

// opRequest maps an operation to its method, path and headers, for single
// requests and for the parts of a batch alike.
func opRequest(typ OpType, table, pk, rk, etag string) (method, path string, h opHeaders) {
	method, h = opMethod(typ, etag)
	return method, string(appendOpPath(nil, typ, table, pk, rk)), h
}

// opMethod is the method and headers of an operation of type typ.
func opMethod(typ OpType, etag string) (method string, h opHeaders) {
	switch typ {
	case OpInsert:
		return http.MethodPost, opHeaders{prefer: "return-no-content"}
	case OpReplace, OpMerge, OpDelete:
		if etag == "" {
			etag = "*"
		}
		h.ifMatch = etag
	}
	method = http.MethodPut
	switch typ {
	case OpMerge, OpUpsertMerge:
		method = "MERGE"
	case OpDelete:
		method = http.MethodDelete
	}
	return method, h
}

// appendOpPath appends the path an operation of type typ is sent to.
func appendOpPath(dst []byte, typ OpType, table, pk, rk string) []byte {
	if typ == OpInsert {
		return append(append(dst, '/'), table...)
	}
	return appendEntityPath(dst, table, pk, rk)
}

func (f *restPath) get(ctx context.Context, pk, rk string, typed bool) ([]byte, string, error) {
	var header map[string]string
	if typed {
		header = map[string]string{"Accept": "application/json;odata=fullmetadata"}
	}
	req, err := f.request(ctx, http.MethodGet, entityPath(f.table, pk, rk), nil, nil, header)
	if err != nil {
		return nil, "", err
	}
	resp, err := f.h.Do(req)
	if err != nil || !runtime.HasStatusCode(resp, http.StatusOK) {
		return nil, "", failed(resp, err, "get", entityLabel(f.table, pk, rk))
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil, "", err
	}
	return body, resp.Header.Get("ETag"), nil
}

func (f *restPath) page(ctx context.Context, q Query, pos *Continuation) ([][]byte, *Continuation, error) {
	// The rows alias the body and outlive this call: its buffer is sized
	// by Content-Length but not pooled.
	body, next, err := f.pageBody(ctx, q, pos, nil)
	if err != nil {
		return nil, nil, err
	}
	var rows [][]byte
	r := entity.NewPageReader(body)
	for r.Next() {
		row, err := r.Raw()
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	return rows, next, nil
}

func (f *restPath) batch(ctx context.Context, ops []Op, label string) ([]Result, error) {
	batch, changeset := "batch_"+RandomID(), "changeset_"+RandomID()
	bp := bodies.Get()
	body := appendBatchBody((*bp)[:0], f.h.Endpoint(), f.table, batch, changeset, ops)
	req, err := f.request(ctx, http.MethodPost, "/$batch", nil, body,
		map[string]string{"Content-Type": "multipart/mixed; boundary=" + batch})
	if err != nil {
		return nil, err
	}
	// The 202's body is read here, by its Content-Length into a pooled
	// buffer, not by azcore's growing download (a failure status's body
	// still is). azcore does not retry a failed body download of a POST
	// either: a broken-off answer is an open outcome for Table.Batch.
	runtime.SkipBodyDownload(req)
	resp, err := f.send(req, "transaction on", label, http.StatusAccepted)
	if err != nil {
		return nil, err
	}
	buf := pages.Get()
	defer pages.Put(buf)
	payload, err := readBody(resp, buf)
	if err != nil {
		return nil, errs.MapError(err, "transaction on (reading the answer)", label)
	}
	results := make([]Result, len(ops))
	failed, ok := batchOutcome(payload, len(ops), results)
	if failed || !ok {
		// The inner failure becomes a *tablekit.TransactionError naming
		// the operation, as for the SDK path. A body the reader could not
		// follow is a failure only if MapError finds one in it.
		resp.Body = io.NopCloser(bytes.NewReader(bytes.Clone(payload)))
		mapped := errs.MapError(runtime.NewResponseError(resp), "transaction on", label)
		var te *errs.TransactionError
		if errors.As(mapped, &te) && te.Index < 0 && len(ops) == 1 {
			// Azure names no index when the change set holds one
			// operation (emulator/answer.BatchError.Message).
			te.Index = 0
		}
		if failed || errors.As(mapped, &te) {
			return nil, mapped
		}
	}
	if !ok {
		// A body it cannot read leaves results zero: the transaction
		// succeeded either way.
		clear(results)
	}
	if attempts.Count(ctx) == 1 {
		// A 202 answers a body the service read to its end, and it was
		// sent once: no try of it is still writing, and no error holds
		// it, so the buffer can serve the next transaction. (After a
		// retry an abandoned try might still be reading it: it is left
		// to the collector.)
		*bp = body
		bodies.Put(bp)
	}
	return results, nil
}

// appendBatchBody appends the multipart/mixed body of an entity group
// transaction: one changeset, one application/http part per operation,
// the entity JSON copied as the codec produced it. Every part's headers end
// with a blank line, a delete's too (its body is empty), as the Microsoft
// SDKs write them.
func appendBatchBody(dst []byte, endpoint, table, batch, changeset string, ops []Op) []byte {
	// Each part's fixed text (boundary line, part headers, request line,
	// headers) is under 300 bytes.
	size := 4*len(batch) + 4*len(changeset) + 128
	for _, op := range ops {
		size += 300 + len(changeset) + len(endpoint) + len(table) + 3*(len(op.PartitionKey)+len(op.RowKey)) + len(op.ETag) + len(op.Entity)
	}
	b := slices.Grow(dst, size)
	b = append(b, "--"...)
	b = append(b, batch...)
	b = append(b, "\r\nContent-Type: multipart/mixed; boundary="...)
	b = append(b, changeset...)
	b = append(b, "\r\n\r\n"...)
	for _, op := range ops {
		method, h := opMethod(op.Type, op.ETag)
		b = append(b, "--"...)
		b = append(b, changeset...)
		b = append(b, "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"...)
		b = append(b, method...)
		b = append(b, ' ')
		b = append(b, endpoint...)
		b = appendOpPath(b, op.Type, table, op.PartitionKey, op.RowKey)
		b = append(b, " HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n"...)
		if h.ifMatch != "" {
			b = append(b, "If-Match: "...)
			b = append(b, h.ifMatch...)
			b = append(b, "\r\n"...)
		}
		if h.prefer != "" {
			b = append(b, "Prefer: "...)
			b = append(b, h.prefer...)
			b = append(b, "\r\n"...)
		}
		if op.Type != OpDelete {
			b = append(b, "Content-Type: application/json\r\n\r\n"...)
			b = append(b, op.Entity...)
			b = append(b, "\r\n"...)
		} else {
			// The blank line that ends the headers, then the empty body's
			// line break before the next boundary.
			b = append(b, "\r\n\r\n"...)
		}
	}
	b = append(b, "--"...)
	b = append(b, changeset...)
	b = append(b, "--\r\n--"...)
	b = append(b, batch...)
	b = append(b, "--\r\n"...)
	return b
}

// RandomID returns 32 random hex digits.
func RandomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

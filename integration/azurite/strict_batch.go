package azurite

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// batchOp is one operation of an entity group transaction.
type batchOp struct {
	table  string
	pk, rk string
	entity *strictEntity // nil for a delete
}

// checkBatch applies the transaction rules of "Performing entity group
// transactions" to a $batch body, in Azure's order: at most 100
// operations; then, operation by operation, the PartitionKey of the first,
// one operation per entity, and the entity rules. A body it cannot read is
// left to Azurite.
func checkBatch(contentType string, body []byte) *answer {
	ops, ok := parseBatch(contentType, body)
	if !ok || len(ops) == 0 {
		return nil
	}
	if len(ops) > strictMaxBatchOps {
		return &answer{refusal: *badRequest("InvalidInput", msgTooManyChanges), batch: true, index: strictMaxBatchOps - 1}
	}
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if op.pk != ops[0].pk {
			return &answer{refusal: *badRequest("CommandsInBatchActOnDifferentPartitions", msgDifferentPartitions), batch: true, index: i}
		}
		if seen[op.rk] {
			return &answer{refusal: *badRequest("InvalidDuplicateRow", msgDuplicateRow), batch: true, index: i}
		}
		seen[op.rk] = true
		if op.entity != nil {
			if ref := op.entity.check(op.pk, op.rk); ref != nil {
				return &answer{refusal: *ref, batch: true, index: i}
			}
		}
	}
	return nil
}

// parseBatch reads the operations of the change set of a multipart/mixed
// batch body.
func parseBatch(contentType string, body []byte) ([]batchOp, bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		return nil, false
	}
	var ops []batchOp
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return ops, true
		}
		if err != nil {
			return nil, false
		}
		pmt, pparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil || pmt != "multipart/mixed" {
			continue // a query in a batch: not a change
		}
		cr := multipart.NewReader(part, pparams["boundary"])
		for {
			cp, err := cr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, false
			}
			op, ok := parseBatchOp(cp)
			if !ok {
				return nil, false
			}
			ops = append(ops, op)
		}
	}
}

// parseBatchOp reads one application/http part: a request line, headers
// and the entity's JSON.
func parseBatchOp(part io.Reader) (batchOp, bool) {
	tp := textproto.NewReader(bufio.NewReader(part))
	line, err := tp.ReadLine()
	if err != nil {
		return batchOp{}, false
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return batchOp{}, false
	}
	if _, err := tp.ReadMIMEHeader(); err != nil && err != io.EOF {
		return batchOp{}, false
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		return batchOp{}, false
	}
	u, err := url.Parse(f[1])
	if err != nil {
		return batchOp{}, false
	}
	res, ok := parseResource(u)
	if !ok {
		return batchOp{}, false
	}
	op := batchOp{table: res.name, pk: res.pk, rk: res.rk}
	if f[0] == http.MethodDelete {
		return op, res.hasKeys
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return op, res.hasKeys
	}
	ent, err := parseEntity(body)
	if err != nil {
		return batchOp{}, false
	}
	op.entity = ent
	if !res.hasKeys {
		op.pk, op.rk = ent.pk, ent.rk
	}
	return op, true
}

// writeBatchRefusal answers a refused transaction as Azure does: 202
// Accepted, and a multipart body holding one change-set response with the
// failing operation's status line and an OData error whose message starts
// with "N:", N the operation's 0-based index.
func writeBatchRefusal(w http.ResponseWriter, r *http.Request, ans *answer) {
	id := requestID()
	batch, changeset := "batchresponse_"+requestID(), "changesetresponse_"+requestID()
	var b bytes.Buffer
	b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("HTTP/1.1 " + strconv.Itoa(ans.status) + " " + http.StatusText(ans.status) + "\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\nDataServiceVersion: 3.0;\r\n")
	b.WriteString("Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n")
	b.Write(odataError(ans.code, strconv.Itoa(ans.index)+":"+ans.msg, id))
	b.WriteString("\r\n--" + changeset + "--\r\n--" + batch + "--\r\n")
	h := w.Header()
	setServiceHeaders(h, r, id)
	h.Set("Content-Type", "multipart/mixed; boundary="+batch)
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusAccepted)
	w.Write(b.Bytes())
}

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
	"strings"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/azrules"
)

// parseBatch reads the operations of the change set of a multipart/mixed
// batch body. ok is false when the body cannot be read as one.
func parseBatch(contentType string, body []byte) (ops []azrules.BatchOp, ok bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		return nil, false
	}
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
func parseBatchOp(part io.Reader) (azrules.BatchOp, bool) {
	tp := textproto.NewReader(bufio.NewReader(part))
	line, err := tp.ReadLine()
	if err != nil {
		return azrules.BatchOp{}, false
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return azrules.BatchOp{}, false
	}
	if _, err := tp.ReadMIMEHeader(); err != nil && err != io.EOF {
		return azrules.BatchOp{}, false
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		return azrules.BatchOp{}, false
	}
	u, err := url.Parse(f[1])
	if err != nil {
		return azrules.BatchOp{}, false
	}
	res, ok := parseResource(u)
	if !ok {
		return azrules.BatchOp{}, false
	}
	op := azrules.BatchOp{Table: res.name, PartitionKey: res.pk, RowKey: res.rk}
	if f[0] == http.MethodDelete || len(bytes.TrimSpace(body)) == 0 {
		return op, res.hasKeys
	}
	ent := new(entity.Entity)
	if err := ent.UnmarshalJSON(body); err != nil {
		return azrules.BatchOp{}, false
	}
	op.Entity = ent
	if !res.hasKeys {
		op.PartitionKey, op.RowKey = ent.PartitionKey, ent.RowKey
	}
	return op, true
}

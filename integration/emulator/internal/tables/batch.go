package tables

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

	"github.com/tablekit/tablekit/integration/emulator/internal/auth"
	"github.com/tablekit/tablekit/internal/azrules"
)

// maxBatchOps is the most operations a change set may hold.
const maxBatchOps = 100

// batchOp is one operation of an entity group transaction as read.
type batchOp struct {
	method    string // after X-HTTP-Method
	table     string
	contentID string
	noContent bool // Prefer: return-no-content
	w         writeOp
	err       *azrules.Error // what reading it found wrong
}

// batch answers an entity group transaction: one change set of at most
// 100 operations on one partition, each entity once, all applied or none.
// The answer is 202 with a multipart body: each operation's response, or
// the failing operation's alone, its message prefixed with its index.
func (s *Service) batch(q *request) {
	body, ok := s.readBody(q, s.maxBody())
	if !ok {
		return
	}
	ops, ok := s.parseBatch(q.r.Header.Get("Content-Type"), body)
	if !ok {
		s.fail(q, errInvalidInput)
		return
	}
	if len(ops) == 0 {
		s.batchReply(q, "", nil, nil, 0)
		return
	}
	// Azure's order: the count, then each operation's partition,
	// uniqueness and entity.
	if len(ops) > maxBatchOps {
		s.batchFail(q, maxBatchOps-1, errTooManyOps)
		return
	}
	first := ops[0]
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if op.err != nil {
			s.batchFail(q, i, op.err)
			return
		}
		if op.w.e.PartitionKey != first.w.e.PartitionKey || s.tableKey(op.table) != s.tableKey(first.table) {
			s.batchFail(q, i, errOtherParts)
			return
		}
		if seen[op.w.e.RowKey] {
			s.batchFail(q, i, errDuplicateRow)
			return
		}
		seen[op.w.e.RowKey] = true
	}
	for _, op := range ops {
		a := auth.Operation{ResourceType: 'o', Name: op.table, PartitionKey: op.w.e.PartitionKey, RowKey: op.w.e.RowKey, HasKeys: true}
		perms := []byte{'u'}
		switch {
		case op.w.kind == opInsert:
			perms = []byte{'a'}
		case op.w.kind == opDelete:
			perms = []byte{'d'}
		case !op.w.conditional:
			perms = []byte{'u', 'a'}
		}
		for _, p := range perms {
			a.Permission = p
			if _, ok := s.authorize(q, a); !ok {
				return
			}
		}
	}
	t := s.lookup(first.table)
	if t == nil {
		s.batchFail(q, 0, errTableNotFound)
		return
	}
	if !s.admit(q, t.name, first.w.e.PartitionKey, len(ops)) {
		return
	}
	rows := make([]*row, len(ops))
	t.mu.Lock()
	for i, op := range ops {
		r, ae := s.prepare(t, op.w)
		if ae != nil {
			t.mu.Unlock()
			s.batchFail(q, i, ae)
			return
		}
		rows[i] = r
	}
	// One transaction, one time: every entity it writes gets the same
	// Timestamp, later than any earlier write.
	ts := s.clock.now()
	for i, op := range ops {
		if op.w.kind == opDelete {
			t.rows.Delete(s.key(op.w.e.PartitionKey, op.w.e.RowKey))
			continue
		}
		rows[i].ts = ts
		t.rows.ReplaceOrInsert(rows[i])
	}
	t.mu.Unlock()
	s.batchReply(q, t.name, ops, rows, ts)
}

// parseBatch reads the change set of a multipart/mixed batch body.
func (s *Service) parseBatch(contentType string, body []byte) ([]batchOp, bool) {
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
			return nil, false
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
			op, ok := s.parseBatchOp(cp)
			if !ok {
				return nil, false
			}
			ops = append(ops, op)
		}
	}
}

// parseBatchOp reads one application/http part: a request line, headers
// and the entity's JSON. ok is false when the part cannot be read at
// all; an operation the service refuses has err set.
func (s *Service) parseBatchOp(part io.Reader) (batchOp, bool) {
	tp := textproto.NewReader(bufio.NewReader(part))
	line, err := tp.ReadLine()
	if err != nil {
		return batchOp{}, false
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return batchOp{}, false
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
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
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	_, rest, _ := strings.Cut(p, "/")
	if rest, err = url.PathUnescape(rest); err != nil {
		return batchOp{}, false
	}
	res, ok := parsePath(rest)
	if !ok || res.service || res.name == "Tables" || res.name == "$batch" {
		return batchOp{}, false
	}
	op := batchOp{method: f[0], table: res.name, contentID: hdr.Get("Content-ID"), noContent: strings.Contains(hdr.Get("Prefer"), "return-no-content")}
	if op.method == http.MethodPost && hdr.Get("X-HTTP-Method") != "" {
		op.method = strings.ToUpper(hdr.Get("X-HTTP-Method"))
	}
	ifMatch := hdr.Get("If-Match")
	switch op.method {
	case http.MethodPost:
		if res.hasKeys {
			return batchOp{}, false
		}
		op.w.kind = opInsert
		op.w.e, op.err = s.parseEntity(body, "", "", false)
	case http.MethodPut, http.MethodPatch, "MERGE":
		if !res.hasKeys {
			return batchOp{}, false
		}
		op.w = writeOp{merge: op.method != http.MethodPut, conditional: ifMatch != "", ifMatch: ifMatch, body: len(body)}
		op.w.e, op.err = s.parseEntity(body, res.pk, res.rk, true)
	case http.MethodDelete:
		if !res.hasKeys {
			return batchOp{}, false
		}
		op.w = writeOp{kind: opDelete, ifMatch: ifMatch}
		op.w.e.PartitionKey, op.w.e.RowKey = res.pk, res.rk
		if ifMatch == "" {
			op.err = errNoIfMatch
		}
	default:
		op.err = errMethod
	}
	if op.err != nil && !res.hasKeys {
		// An insert whose body could not be read: its keys are unknown,
		// so the partition and duplicate checks cannot count it.
		op.w.e.PartitionKey, op.w.e.RowKey = "", ""
	}
	return op, true
}

// batchParts starts a batch response: the outer boundary's first line,
// the change set's header.
func batchParts() (b *bytes.Buffer, batch, changeset string) {
	batch, changeset = "batchresponse_"+azrules.RequestID(), "changesetresponse_"+azrules.RequestID()
	b = new(bytes.Buffer)
	b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	return b, batch, changeset
}

func (s *Service) batchSend(q *request, b *bytes.Buffer, batch, changeset string) {
	b.WriteString("--" + changeset + "--\r\n--" + batch + "--\r\n")
	h := q.headers()
	h.Set("Content-Type", "multipart/mixed; boundary="+batch)
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	q.w.WriteHeader(http.StatusAccepted)
	q.w.Write(b.Bytes())
}

// batchFail answers a transaction that failed at operation i with e, as
// Azure does: 202, and one inner response with e's status and an OData
// error whose message starts with "i:".
func (s *Service) batchFail(q *request, i int, e *azrules.Error) {
	b, batch, changeset := batchParts()
	b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("HTTP/1.1 " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status) + "\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\nDataServiceVersion: 3.0;\r\n")
	b.WriteString("Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n")
	b.Write(azrules.ODataBody(e.Code, strconv.Itoa(i)+":"+e.Message, q.id))
	b.WriteString("\r\n")
	s.batchSend(q, b, batch, changeset)
}

// batchReply answers a transaction that succeeded: each operation's
// response in order (201 with the entity for an insert that asked for
// content, 204 otherwise), with its ETag.
func (s *Service) batchReply(q *request, name string, ops []batchOp, rows []*row, ts int64) {
	b, batch, changeset := batchParts()
	for i, op := range ops {
		b.WriteString("--" + changeset + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		status := http.StatusNoContent
		if op.w.kind == opInsert && !op.noContent {
			status = http.StatusCreated
		}
		b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
		if op.contentID != "" {
			b.WriteString("Content-ID: " + op.contentID + "\r\n")
		}
		b.WriteString("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\n")
		var entityBody []byte
		if op.w.kind == opInsert {
			if op.noContent {
				b.WriteString("Preference-Applied: return-no-content\r\n")
			} else {
				b.WriteString("Preference-Applied: return-content\r\n")
			}
			b.WriteString("DataServiceVersion: 3.0;\r\n")
			link := q.base + "/" + entityLink(name, rows[i].pk, rows[i].rk)
			if !op.noContent {
				sub := &request{r: q.r, base: q.base, fmt: minimal}
				entityBody = s.appendRow(nil, sub, name, rows[i], nil, s.metadata(sub, name, true, nil))
				b.WriteString("Content-Type: " + minimal.contentType() + "\r\n")
			}
			b.WriteString("Location: " + link + "\r\nDataServiceId: " + link + "\r\n")
		} else {
			b.WriteString("DataServiceVersion: 1.0;\r\n")
		}
		if op.w.kind != opDelete {
			b.WriteString("ETag: " + etag(ts) + "\r\n")
		}
		b.WriteString("\r\n")
		b.Write(entityBody)
		b.WriteString("\r\n")
	}
	s.batchSend(q, b, batch, changeset)
}

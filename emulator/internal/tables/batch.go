package tables

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// batchOp is one operation of an entity group transaction as read.
type batchOp struct {
	method    string // after X-HTTP-Method
	table     string
	contentID string
	noContent bool // Prefer: return-no-content
	w         writeOp
	err       *answer.Error // what reading it found wrong, before Azure's rules
}

// batch answers an entity group transaction: one change set of at most
// 100 operations on one partition, each entity once, all applied or none.
// The answer is 202 with a multipart body: each operation's response, or
// the failing operation's alone, its message prefixed with its index
// unless it is the only one (answer.BatchError.Message).
func (s *Service) batch(q *request) {
	// The operations, and the permissions they need, are in the body:
	// the request is authenticated before it is read (a table SAS for
	// its own table, any permission), and each operation authorized once
	// read.
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Name: q.query.Get("tn")}); !ok {
		return
	}
	body, ok := s.readBody(q, s.maxBody())
	if !ok {
		return
	}
	b, err := answer.ParseBatch(q.r.Header.Get("Content-Type"), body)
	if err == nil && b.ChangeSets == 0 && b.Others == 1 && len(b.Queries) == 1 {
		s.batchRetrieve(q, b.Queries[0])
		return
	}
	ops, ok := s.parseBatch(b, err)
	if !ok {
		s.fail(q, errInvalidInput)
		return
	}
	q.extraChangeSets = max(b.ChangeSets-1, 0)
	if len(ops) == 0 {
		s.batchReply(q, "", nil, nil, 0)
		return
	}
	if be := s.checkBatch(ops); be != nil {
		batchFail(q, ops, be)
		return
	}
	first := ops[0]
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
		batchFail(q, ops, &answer.BatchError{Index: 0, Err: errTableNotFound})
		return
	}
	if !s.admit(q, t.name, first.w.e.PartitionKey, true, len(ops)) {
		return
	}
	if s.d != nil {
		ws := make([]writeOp, len(ops))
		for i, op := range ops {
			ws[i] = op.w
		}
		rows, ts, i, ae := s.writeDisk(t, ws)
		if i < 0 {
			s.fail(q, ae)
			return
		}
		if ae != nil {
			batchFail(q, ops, &answer.BatchError{Index: i, Err: ae})
			return
		}
		s.batchReply(q, t.name, ops, rows, ts)
		return
	}
	rows := make([]*row, len(ops))
	t.mu.Lock()
	for i, op := range ops {
		r, ae := s.prepare(t, op.w)
		if ae != nil {
			t.mu.Unlock()
			batchFail(q, ops, &answer.BatchError{Index: i, Err: ae})
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

// parseBatch reads the first change set of a multipart/mixed batch body
// as answer.ParseBatch read it (b, err). ok is false when the body could
// not be read, holds a part other than a change set (a query beside
// changes, or several queries: "Performing entity group transactions"
// allows a query operation only alone in its batch), or an operation
// addresses no table's entities; an operation the service refuses has
// err set.
func (s *Service) parseBatch(b answer.Batch, err error) ([]batchOp, bool) {
	if err != nil || b.Others > 0 {
		return nil, false
	}
	ops := make([]batchOp, 0, len(b.Changes))
	for _, req := range b.Changes {
		op, ok := batchOpOf(req)
		if !ok {
			return nil, false
		}
		ops = append(ops, op)
	}
	return ops, true
}

// batchOpOf is one operation of the change set as the service reads it
// (answer.ChangeOf): the entity's JSON decoded by the service's rules.
func batchOpOf(req answer.BatchRequest) (batchOp, bool) {
	c, ok := answer.ChangeOf(req)
	if !ok {
		return batchOp{}, false
	}
	op := batchOp{method: c.Method, table: c.Table, contentID: c.Header.Get("Content-ID"), noContent: strings.Contains(c.Header.Get("Prefer"), "return-no-content")}
	ifMatch := c.Header.Get("If-Match")
	switch c.Kind {
	case answer.ChangeInsert:
		op.w.kind = opInsert
		op.w.e, op.err = decodeEntity(c.Body, "", "", false)
	case answer.ChangeUpdate:
		op.w = writeOp{merge: op.method != http.MethodPut, conditional: ifMatch != "", ifMatch: ifMatch}
		op.w.e, op.err = decodeEntity(c.Body, c.PartitionKey, c.RowKey, true)
	case answer.ChangeDelete:
		op.w = writeOp{kind: opDelete, ifMatch: ifMatch}
		op.w.e.PartitionKey, op.w.e.RowKey = c.PartitionKey, c.RowKey
		if ifMatch == "" {
			op.err = errNoIfMatch
		}
	default:
		op.err = answer.UnsupportedHTTPVerb()
	}
	if c.Path.HasKeys && op.err == nil {
		op.err = answer.CheckURLKeys(c.PartitionKey, c.RowKey)
	}
	if op.err != nil && !c.Path.HasKeys {
		// An insert whose body could not be read: its keys are unknown,
		// so the partition and duplicate checks cannot count it.
		op.w.e.PartitionKey, op.w.e.RowKey = "", ""
	}
	return op, true
}

// batchFail answers a transaction refused at be's operation, with that
// operation's Preference-Applied as its success would carry it (Azure
// answers a failed insert's Prefer: return-no-content so, as the
// recorded aztables TestBatchError shows).
func batchFail(q *request, ops []batchOp, be *answer.BatchError) {
	if be.Index < len(ops) && ops[be.Index].w.kind == opInsert {
		be.Preference = preference(ops[be.Index])
	}
	if be.Index < len(ops) {
		be.ContentID = ops[be.Index].contentID
	}
	be.ExtraChangeSets = q.extraChangeSets
	be.Operations = len(ops)
	answer.WriteBatchError(q.w, q.r, be)
}

// preference is an insert's Preference-Applied.
func preference(op batchOp) string {
	if op.noContent {
		return "return-no-content"
	}
	return "return-content"
}

// batchParts starts a batch response: the outer boundary's first line,
// the change set's header.
func batchParts() (b *bytes.Buffer, batch, changeset string) {
	batch, changeset = "batchresponse_"+answer.RequestID(), "changesetresponse_"+answer.RequestID()
	b = new(bytes.Buffer)
	b.WriteString("--" + batch + "\r\nContent-Type: multipart/mixed; boundary=" + changeset + "\r\n\r\n")
	return b, batch, changeset
}

func (s *Service) batchSend(q *request, b *bytes.Buffer, batch, changeset string) {
	b.WriteString("--" + changeset + "--\r\n")
	answer.AppendRefusedChangeSets(b, batch, q.extraChangeSets)
	b.WriteString("--" + batch + "--\r\n")
	q.sendMultipart(b, batch)
}

// sendMultipart answers 202 with b, a multipart body of boundary batch.
func (q *request) sendMultipart(b *bytes.Buffer, batch string) {
	h := q.headers()
	h.Set("Content-Type", "multipart/mixed; boundary="+batch)
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	q.w.WriteHeader(http.StatusAccepted)
	q.w.Write(b.Bytes())
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
			b.WriteString("Preference-Applied: " + preference(op) + "\r\n")
			b.WriteString("DataServiceVersion: 3.0;\r\n")
			link := q.base + "/" + entityLink(name, rows[i].pk, rows[i].rk)
			if !op.noContent {
				sub := &request{r: q.r, query: q.query, base: q.base, fmt: minimal}
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

// checkBatch applies the transaction rules in Azure's order: the count,
// then operation by operation the partition and one operation per entity
// (answer.CheckBatch) and the entity's rules (checkEntity: Azure Table
// storage's or Cosmos DB's). An operation that could not be read fails
// at its place in that order, as does one on another table than the
// first's (another entity group).
func (s *Service) checkBatch(ops []batchOp) *answer.BatchError {
	rules := make([]answer.BatchOp, len(ops))
	for i, op := range ops {
		// Entity stays nil: the entity rules are the profile's, below.
		rules[i] = answer.BatchOp{Table: op.table, PartitionKey: op.w.e.PartitionKey, RowKey: op.w.e.RowKey}
	}
	be := answer.CheckBatch(rules)
	if len(ops) > answer.MaxBatchOperations {
		return be
	}
	k := len(ops)
	if be != nil {
		k = be.Index
	}
	for i := 0; i < len(ops) && i <= k; i++ {
		op := &ops[i]
		if op.err != nil {
			return &answer.BatchError{Index: i, Err: op.err}
		}
		if i == k {
			break
		}
		if s.tableKey(op.table) != s.tableKey(ops[0].table) {
			return &answer.BatchError{Index: i, Err: answer.New(http.StatusBadRequest, answer.CodeDifferentPartitions, answer.MsgDifferentPartitions)}
		}
		if op.w.kind != opDelete {
			if ae := s.checkEntity(&op.w.e); ae != nil {
				return &answer.BatchError{Index: i, Err: ae}
			}
		}
	}
	return be
}

// batchRetrieve answers a batch holding one query operation and nothing
// else, which "Performing entity group transactions" allows (a query
// operation may not share a batch with inserts, updates or deletes; it
// is sent alone) and the older .NET SDK (Microsoft.WindowsAzure.Storage)
// sends for TableBatchOperation.Retrieve: the point read's
// answer as the batch's one part, outside any change set (the OData
// batch response form, MS-ODATA 2.2.7.6.8). A query of a table's
// entities rather than of one entity is refused 400 InvalidInput, as a
// batch the service cannot take (no evidence shows Azure's answer).
func (s *Service) batchRetrieve(q *request, req answer.BatchRequest) {
	p := req.Path
	if req.Method != http.MethodGet || !p.HasKeys || p.Name == "Tables" {
		s.fail(q, errInvalidInput)
		return
	}
	f, ferr := formatOf(req.Query, req.Header)
	sub := &request{r: q.r, query: q.query, base: q.base, fmt: f}
	status, ae, etagValue := http.StatusOK, ferr, ""
	var body []byte
	if ae == nil {
		ae = answer.CheckURLKeys(p.PartitionKey, p.RowKey)
	}
	if ae == nil {
		if _, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Permission: 'r', Name: p.Name, PartitionKey: p.PartitionKey, RowKey: p.RowKey, HasKeys: true}); !ok {
			return
		}
		t := s.lookup(p.Name)
		if t == nil {
			ae = errTableNotFound
		} else {
			if !s.admit(q, t.name, p.PartitionKey, true, 1) {
				return
			}
			r, found, gone, err := s.getRow(t, p.PartitionKey, p.RowKey)
			switch {
			case err != nil:
				ae = answer.InternalError()
			case gone:
				ae = errTableNotFound
			case !found:
				ae = errNotFound
			default:
				sel := parseSelect(req.Query.Get("$select"))
				etagValue = etag(r.ts)
				body = s.appendRow(nil, sub, t.name, r, sel, s.metadata(sub, t.name, true, sel))
			}
		}
	}
	ct := sub.fmt.contentType()
	if ae != nil {
		status, ct = ae.Status, minimal.contentType()
		body = answer.ODataBody(ae.Code, ae.Message, q.id)
	}
	batch := "batchresponse_" + answer.RequestID()
	b := new(bytes.Buffer)
	b.WriteString("--" + batch + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\nCache-Control: no-cache\r\nDataServiceVersion: 3.0;\r\n")
	b.WriteString("Content-Type: " + ct + "\r\n")
	if etagValue != "" {
		b.WriteString("ETag: " + etagValue + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	b.WriteString("\r\n--" + batch + "--\r\n")
	q.sendMultipart(b, batch)
}

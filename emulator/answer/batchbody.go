package answer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// BatchRequest is one operation of an entity group transaction as its
// batch body carries it: an application/http part of the change set.
type BatchRequest struct {
	// Method is the request line's, or X-HTTP-Method's (upper-cased)
	// when the line's is POST and that header is set.
	Method string
	// Path is what the request line's URL addresses.
	Path TablePath
	// Header is the part's request headers (Content-ID, If-Match,
	// Prefer, ...).
	Header http.Header
	// Body is the request's body as sent: an entity's JSON, or empty.
	Body []byte
	// Query is the URL's query ($select, ...).
	Query url.Values
}

// Batch is a $batch body as read by ParseBatch.
type Batch struct {
	// Changes is the first change set's operations, in the body's order:
	// the service processes that one only ("Performing entity group
	// transactions": it refuses further change sets with 400).
	Changes []BatchRequest
	// ChangeSets counts the body's change sets.
	ChangeSets int
	// Others counts the body's parts that are not a change set (a query
	// sent in a batch).
	Others int
	// Queries is those of the Others that are an application/http
	// request, read.
	Queries []BatchRequest
}

// ParseBatch reads a $batch request's body, given its Content-Type: a
// multipart/mixed body whose change sets (multipart/mixed parts) hold
// one application/http request each part, a request line, headers and
// a body. It answers an error naming what could not be read: the media
// types, the multipart framing, a request line, its headers or its URL
// (ParseTablePath).
func ParseBatch(contentType string, body []byte) (Batch, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return Batch{}, fmt.Errorf("batch Content-Type %q: %w", contentType, err)
	}
	if mt != "multipart/mixed" || params["boundary"] == "" {
		return Batch{}, fmt.Errorf("batch Content-Type %q: not multipart/mixed with a boundary", contentType)
	}
	var b Batch
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return Batch{}, fmt.Errorf("batch body: %w", err)
		}
		pmt, pparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil || pmt != "multipart/mixed" {
			b.Others++
			if err == nil && pmt == "application/http" {
				if q, err := parseBatchRequest(part); err == nil {
					b.Queries = append(b.Queries, q)
				}
			}
			continue
		}
		b.ChangeSets++
		if b.ChangeSets > 1 {
			continue
		}
		cr := multipart.NewReader(part, pparams["boundary"])
		for {
			cp, err := cr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return Batch{}, fmt.Errorf("batch change set: %w", err)
			}
			op, err := parseBatchRequest(cp)
			if err != nil {
				return Batch{}, fmt.Errorf("batch operation %d: %w", len(b.Changes), err)
			}
			b.Changes = append(b.Changes, op)
		}
	}
}

// parseBatchRequest reads one application/http part.
func parseBatchRequest(part io.Reader) (BatchRequest, error) {
	tp := textproto.NewReader(bufio.NewReader(part))
	line, err := tp.ReadLine()
	if err != nil {
		return BatchRequest{}, fmt.Errorf("request line: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return BatchRequest{}, fmt.Errorf("request line %q: no method and URL", line)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return BatchRequest{}, fmt.Errorf("headers: %w", err)
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		return BatchRequest{}, fmt.Errorf("body: %w", err)
	}
	u, err := url.Parse(f[1])
	if err != nil {
		return BatchRequest{}, fmt.Errorf("URL: %w", err)
	}
	p, ok := ParseTablePath(u.EscapedPath())
	if !ok {
		return BatchRequest{}, errors.New("URL " + f[1] + ": not a Table service path")
	}
	r := BatchRequest{Method: f[0], Path: p, Header: http.Header(hdr), Body: body, Query: u.Query()}
	if r.Method == http.MethodPost && r.Header.Get("X-HTTP-Method") != "" {
		r.Method = strings.ToUpper(r.Header.Get("X-HTTP-Method"))
	}
	if r.Header == nil {
		r.Header = http.Header{}
	}
	return r, nil
}

// ChangeKind is what one operation of a change set does, as the service
// reads its method.
type ChangeKind int

// The kinds of change.
const (
	// ChangeUnsupported is a method the service does not take in a
	// change set (GET, ...): it answers 400 UnsupportedHttpVerb at the
	// operation's index.
	ChangeUnsupported ChangeKind = iota
	// ChangeInsert is a POST to the table: an insert, its keys in its
	// body.
	ChangeInsert
	// ChangeUpdate is a PUT (replace), PATCH or MERGE (merge) on an
	// entity, an upsert without If-Match.
	ChangeUpdate
	// ChangeDelete is a DELETE on an entity.
	ChangeDelete
)

// Change is one operation of a change set as the Table service reads it
// before its body: what it does, on which table, and the keys its URL
// names. The one reading of a batch's operations, for the emulator and
// for the strict proxy in front of Azurite.
type Change struct {
	BatchRequest
	// Kind is what the operation does.
	Kind ChangeKind
	// Table is the table the operation's URL names.
	Table string
	// PartitionKey and RowKey are the URL's keys; empty for an insert,
	// whose keys are its body's.
	PartitionKey, RowKey string
}

// ChangeOf reads one operation of a change set as the service does. ok
// is false when the service refuses the whole batch for it (400
// InvalidInput): a URL that names no table's entities (the service,
// Tables, Tables('t'), $batch), an insert (POST) whose URL names keys, an
// update or delete whose URL names none. A method the service does not
// take is ChangeUnsupported, with ok true: it fails at its own index.
func ChangeOf(req BatchRequest) (c Change, ok bool) {
	res := req.Path
	if res.Service || res.Name == "Tables" || res.Name == "$batch" {
		return Change{}, false
	}
	c = Change{BatchRequest: req, Table: res.Name}
	if res.HasKeys {
		c.PartitionKey, c.RowKey = res.PartitionKey, res.RowKey
	}
	switch req.Method {
	case http.MethodPost:
		c.Kind = ChangeInsert
		return c, !res.HasKeys
	case http.MethodPut, http.MethodPatch, "MERGE":
		c.Kind = ChangeUpdate
		return c, res.HasKeys
	case http.MethodDelete:
		c.Kind = ChangeDelete
		return c, res.HasKeys
	}
	c.Kind = ChangeUnsupported
	return c, true
}

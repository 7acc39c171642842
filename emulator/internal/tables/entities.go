package tables

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/entity"
)

// parseEntity reads an entity to write and applies Azure's rules to it
// (decodeEntity, then checkEntity).
func (s *Service) parseEntity(body []byte, pk, rk string, url bool) (entity.Entity, *answer.Error) {
	e, ae := decodeEntity(body, pk, rk, url)
	if ae == nil {
		ae = s.checkEntity(&e)
	}
	return e, ae
}

// decodeEntity reads an entity to write. For an insert (url false) the
// keys come from the body, which must hold both (400 PropertiesNeedValue);
// for an update they come from the URL and the body's are ignored. The
// service's metadata (odata.*, Timestamp) is dropped.
func decodeEntity(body []byte, pk, rk string, url bool) (entity.Entity, *answer.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		if !url {
			return entity.Entity{}, errNeedsValue
		}
		body = []byte("{}")
	}
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		return entity.Entity{}, errInvalidInput
	}
	if url {
		e.PartitionKey, e.RowKey = pk, rk
	} else if !hasKeys(body, &e) {
		return entity.Entity{}, errNeedsValue
	}
	e.ETag, e.Timestamp = "", time.Time{}
	return e, nil
}

// hasKeys reports whether an entity's JSON, which decoded into e, has
// both PartitionKey and RowKey. Nearly every body names them plainly; one
// that does not is decoded again by entity.ParseEntity, which requires
// them (and whose only other refusal, a broken limit, says nothing about
// the keys: the limit is reported instead).
func hasKeys(body []byte, e *entity.Entity) bool {
	if bytes.Contains(body, []byte(`"PartitionKey"`)) && bytes.Contains(body, []byte(`"RowKey"`)) {
		return true
	}
	_, err := entity.ParseEntity(body)
	return err == nil || e.Validate() != nil
}

// etagMatches reports whether an If-Match value matches a stored write.
func etagMatches(ifMatch string, ts int64) bool {
	return ifMatch == "*" || ifMatch == etag(ts)
}

func (s *Service) insertEntity(q *request, name string) {
	// The keys are in the body, which is read only once the request is
	// authorized; a table SAS's key range is checked against them after.
	g, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Permission: 'a', Name: name})
	if !ok {
		return
	}
	preferApplied(q)
	body, ok := s.readBody(q, s.maxBody())
	if !ok {
		return
	}
	e, ae := s.parseEntity(body, "", "", false)
	if ae == nil && g.KeyRange != nil && !g.KeyRange.Contains(e.PartitionKey, e.RowKey) {
		s.fail(q, answer.AuthorizationFailure())
		return
	}
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	if ae != nil {
		s.fail(q, ae)
		return
	}
	if !s.admit(q, t.name, e.PartitionKey, true, 1) {
		return
	}
	var r *row
	if s.d != nil {
		rows, _, _, ae := s.writeDisk(t, []writeOp{{kind: opInsert, e: e}})
		if ae != nil {
			s.fail(q, ae)
			return
		}
		r = rows[0]
	} else if r, ok = s.insertMemory(q, t, e); !ok {
		return
	}

	h := q.headers()
	h.Set("ETag", etag(r.ts))
	link := q.base + "/" + entityLink(t.name, r.pk, r.rk)
	h.Set("Location", link)
	if preferNoContent(q.r) {
		h.Set("Preference-Applied", "return-no-content")
		h.Set("DataServiceId", link)
		q.reply(http.StatusNoContent, nil)
		return
	}
	preferContent(q)
	q.reply(http.StatusCreated, s.appendRow(nil, q, t.name, r, nil, s.metadata(q, t.name, true, nil)))
}

// insertMemory stores e in t (in memory) unless an entity has its keys;
// false means the answer was sent.
func (s *Service) insertMemory(q *request, t *table, e entity.Entity) (*row, bool) {
	r := s.key(e.PartitionKey, e.RowKey)
	r.props = propsOf(e)
	t.mu.Lock()
	if t.gone {
		t.mu.Unlock()
		s.fail(q, errTableNotFound)
		return nil, false
	}
	if _, found := t.rows.Get(r); found {
		t.mu.Unlock()
		s.fail(q, errEntityExists)
		return nil, false
	}
	r.ts = s.clock.now()
	t.rows.ReplaceOrInsert(r)
	t.mu.Unlock()
	return r, true
}

// metadata is the odata.metadata link of a response in q's format ("" in
// nometadata): the table's entity set, /@Element for one entity, and the
// $select list when there is one.
func (s *Service) metadata(q *request, table string, element bool, sel []string) string {
	if q.fmt == noMetadata {
		return ""
	}
	m := q.base + "/$metadata#" + table
	if element {
		m += "/@Element"
	}
	if sel != nil {
		m += "&$select=" + strings.Join(sel, ",")
	}
	return m
}

func (s *Service) getEntity(q *request, name, pk, rk string) {
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Permission: 'r', Name: name, PartitionKey: pk, RowKey: rk, HasKeys: true}); !ok {
		return
	}
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	if !s.admit(q, t.name, pk, true, 1) {
		return
	}
	r, found, gone, err := s.getRow(t, pk, rk)
	switch {
	case err != nil:
		s.fail(q, answer.InternalError())
		return
	case gone:
		s.fail(q, errTableNotFound)
		return
	case !found:
		s.fail(q, errNotFound)
		return
	}
	sel := parseSelect(q.query.Get("$select"))
	q.headers().Set("ETag", etag(r.ts))
	q.reply(http.StatusOK, s.appendRow(nil, q, t.name, r, sel, s.metadata(q, t.name, true, sel)))
}

// getRow reads the entity (pk, rk) of t; gone means t is deleted. err is
// the disk's failure.
func (s *Service) getRow(t *table, pk, rk string) (r *row, found, gone bool, err error) {
	if s.d != nil {
		return s.getDisk(t, pk, rk)
	}
	t.mu.RLock()
	r, found = t.rows.Get(s.key(pk, rk))
	gone = t.gone
	t.mu.RUnlock()
	return r, found, gone, nil
}

// writeEntity answers Update, Merge, Insert Or Replace and Insert Or
// Merge: with If-Match the entity must exist (404) and match (412);
// without it the write is an upsert.
func (s *Service) writeEntity(q *request, name, pk, rk string, merge bool) {
	ifMatch, conditional := q.r.Header.Get("If-Match"), q.r.Header.Get("If-Match") != ""
	op := auth.Operation{ResourceType: 'o', Permission: 'u', Name: name, PartitionKey: pk, RowKey: rk, HasKeys: true}
	if _, ok := s.authorize(q, op); !ok {
		return
	}
	if !conditional {
		op.Permission = 'a'
		if _, ok := s.authorize(q, op); !ok {
			return
		}
	}
	body, ok := s.readBody(q, s.maxBody())
	if !ok {
		return
	}
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	e, ae := s.parseEntity(body, pk, rk, true)
	if ae != nil {
		s.fail(q, ae)
		return
	}
	if !s.admit(q, t.name, pk, true, 1) {
		return
	}
	r, ae := s.apply(t, writeOp{merge: merge, conditional: conditional, ifMatch: ifMatch, e: e})
	if ae != nil {
		s.fail(q, ae)
		return
	}
	q.headers().Set("ETag", etag(r.ts))
	q.reply(http.StatusNoContent, nil)
}

// writeOp is one entity write, as a request or a transaction's operation
// asks for it.
type writeOp struct {
	kind        opKind
	merge       bool
	conditional bool
	ifMatch     string
	e           entity.Entity
}

type opKind uint8

const (
	opUpsert opKind = iota // replace or merge, per merge and conditional
	opInsert
	opDelete
)

// apply applies w to t under t's lock. It returns the new row (nil for a
// delete).
func (s *Service) apply(t *table, w writeOp) (*row, *answer.Error) {
	if s.d != nil {
		rows, _, _, ae := s.writeDisk(t, []writeOp{w})
		if ae != nil {
			return nil, ae
		}
		return rows[0], nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ae := s.prepare(t, w)
	if ae != nil {
		return nil, ae
	}
	s.commit(t, w, r)
	return r, nil
}

// prepare checks w against t's current state (t locked) and returns the
// row it would store (nil for a delete), without storing it.
func (s *Service) prepare(t *table, w writeOp) (*row, *answer.Error) {
	if t.gone {
		return nil, errTableNotFound
	}
	k := s.key(w.e.PartitionKey, w.e.RowKey)
	old, found := t.rows.Get(k)
	return s.decide(w, k, old, found)
}

// decide checks w against the entity stored at its keys (old, when
// found) and returns the row it would store in k (nil for a delete).
func (s *Service) decide(w writeOp, k, old *row, found bool) (*row, *answer.Error) {
	switch w.kind {
	case opInsert:
		if found {
			return nil, errEntityExists
		}
		k.props = propsOf(w.e)
		return k, nil
	case opDelete:
		if !found {
			return nil, errNotFound
		}
		if !etagMatches(w.ifMatch, old.ts) {
			return nil, errCondition
		}
		return nil, nil
	}
	if w.conditional {
		if !found {
			return nil, errNotFound
		}
		if !etagMatches(w.ifMatch, old.ts) {
			return nil, errCondition
		}
	}
	k.props = propsOf(w.e)
	if w.merge && found {
		k.props = merged(old.props, k.props)
		if len(old.props) > 0 {
			m := k.asEntity()
			if ae := s.checkEntity(&m); ae != nil {
				return nil, ae
			}
		}
	}
	return k, nil
}

// commit stores what prepare returned (t locked).
func (s *Service) commit(t *table, w writeOp, r *row) {
	if w.kind == opDelete {
		t.rows.Delete(s.key(w.e.PartitionKey, w.e.RowKey))
		return
	}
	r.ts = s.clock.now()
	t.rows.ReplaceOrInsert(r)
}

func (s *Service) deleteEntity(q *request, name, pk, rk string) {
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'o', Permission: 'd', Name: name, PartitionKey: pk, RowKey: rk, HasKeys: true}); !ok {
		return
	}
	ifMatch := q.r.Header.Get("If-Match")
	if ifMatch == "" {
		s.fail(q, errNoIfMatch)
		return
	}
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	if !s.admit(q, t.name, pk, true, 1) {
		return
	}
	if _, ae := s.apply(t, writeOp{kind: opDelete, ifMatch: ifMatch, e: entity.Entity{PartitionKey: pk, RowKey: rk}}); ae != nil {
		s.fail(q, ae)
		return
	}
	q.reply(http.StatusNoContent, nil)
}

// encodeToken writes a continuation value as Azure does: "1!", the
// length of the base64 text, "!", and the base64 text with its padding
// '=' written '-'.
func encodeToken(k string) string {
	b := base64.StdEncoding.EncodeToString([]byte(k))
	return "1!" + strconv.Itoa(len(b)) + "!" + strings.ReplaceAll(b, "=", "-")
}

// decodeToken reads what encodeToken wrote.
func decodeToken(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, "1!")
	if !ok {
		return "", false
	}
	n, b64, ok := strings.Cut(rest, "!")
	if !ok || n != strconv.Itoa(len(b64)) {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b64, "-", "="))
	if err != nil {
		return "", false
	}
	return string(b), true
}

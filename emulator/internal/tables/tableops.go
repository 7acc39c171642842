package tables

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
	"github.com/tablekit/tablekit/keys"
)

var errNameEmpty = answer.New(http.StatusBadRequest, "TableNameEmpty", "The specified table name is empty.")

// checkTableName applies the profile's table name rules with Azure's
// answers: a length out of azrules.MinTableNameLength..MaxTableNameLength
// is OutOfRangeInput, any other break InvalidResourceName.
func (s *Service) checkTableName(name string) *answer.Error {
	var err error
	if s.cfg.Cosmos {
		err = keys.ValidateCosmosTableName(name)
	} else {
		err = keys.ValidateTableName(name)
	}
	switch {
	case err == nil:
		return nil
	case len(name) < azrules.MinTableNameLength || len(name) > azrules.MaxTableNameLength:
		return answer.ResourceNameLength()
	}
	return answer.InvalidResourceName()
}

func (s *Service) createTable(q *request) {
	// The name is in the body: the request is authorized before it is
	// read, and again for the name once it is known.
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'c', Permission: 'c'}); !ok {
		return
	}
	preferApplied(q)
	body, ok := s.readBody(q, s.maxBody())
	if !ok {
		return
	}
	var in struct {
		TableName *string `json:"TableName"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.fail(q, errInvalidInput)
		return
	}
	if in.TableName == nil || *in.TableName == "" {
		s.fail(q, errNameEmpty)
		return
	}
	name := *in.TableName
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'c', Permission: 'c', Name: name}); !ok {
		return
	}
	if e := s.checkTableName(name); e != nil {
		s.fail(q, e)
		return
	}
	if !s.admit(q, name, "", false, 1) {
		return
	}
	k := s.tableKey(name)
	if s.d != nil {
		t, err := s.createTableDisk(k, name)
		switch {
		case err != nil:
			s.fail(q, answer.InternalError())
			return
		case t == nil:
			s.fail(q, errTableExists)
			return
		}
	} else {
		s.mu.Lock()
		if s.tables[k] != nil {
			s.mu.Unlock()
			s.fail(q, errTableExists)
			return
		}
		s.tables[k] = newTable(name, s.cfg.Cosmos, s.cfg.Now())
		s.mu.Unlock()
	}

	h := q.headers()
	link := q.base + "/Tables('" + name + "')"
	h.Set("Location", link)
	if preferNoContent(q.r) {
		h.Set("Preference-Applied", "return-no-content")
		h.Set("DataServiceId", link)
		q.reply(http.StatusNoContent, nil)
		return
	}
	preferContent(q)
	q.reply(http.StatusCreated, s.appendTable(nil, q, name, q.base+"/$metadata#Tables/@Element"))
}

// preferNoContent reports whether the client sent Prefer: return-no-content.
// Azure's 204 to it carries Preference-Applied and DataServiceId (the
// new resource's URL, as Location): the JavaScript SDK's nock recordings
// keep every header (tableclient_createentity_getentity_and_delete,
// recording_should_createentity_with_boolean.js, 2021).
func preferNoContent(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Prefer"), "return-no-content")
}

// preferApplied sets Preference-Applied: return-no-content on the answer
// to an insert or a Create Table that asked for it, once the request is
// authorized: a refusal carries it too, as Azure answers (the Python
// SDK's recordings of 2017, every header: 409 TableAlreadyExists and
// EntityAlreadyExists, 400 InvalidResourceName for a table's name).
func preferApplied(q *request) {
	if preferNoContent(q.r) {
		q.w.Header().Set("Preference-Applied", "return-no-content")
	}
}

// preferContent sets Preference-Applied: return-content on a 201 when the
// client asked for it; a request with no Prefer gets none: the Python
// SDK's untrimmed recording of a 201 Create Table without Prefer has no
// Preference-Applied (azure-sdk-for-python, test_table.pyTestTable
// test_create_table_fail_on_exist.json, 2021), nor have aztables'
// recorded inserts and table creations (TestAddBasicEntity, 2024).
func preferContent(q *request) {
	if strings.Contains(q.r.Header.Get("Prefer"), "return-content") {
		q.headers().Set("Preference-Applied", "return-content")
	}
}

// appendTable appends one table as the service writes it.
func (s *Service) appendTable(b []byte, q *request, name, metadata string) []byte {
	b = append(b, '{')
	if metadata != "" && q.fmt != noMetadata {
		b = append(b, `"odata.metadata":`...)
		b = appendQuoted(b, metadata)
		b = append(b, ',')
	}
	if q.fmt == fullMetadata {
		b = append(b, `"odata.type":`...)
		b = appendQuoted(b, s.cfg.Account+".Tables")
		b = append(b, `,"odata.id":`...)
		b = appendQuoted(b, q.base+"/Tables('"+name+"')")
		b = append(b, `,"odata.editLink":`...)
		b = appendQuoted(b, "Tables('"+name+"')")
		b = append(b, ',')
	}
	b = append(b, `"TableName":`...)
	b = appendQuoted(b, name)
	return append(b, '}')
}

func (s *Service) deleteTable(q *request, name string) {
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'c', Permission: 'd', Name: name}); !ok {
		return
	}
	if !s.admit(q, name, "", false, 1) {
		return
	}
	k := s.tableKey(name)
	var t *table
	if s.d != nil {
		var err error
		if t, err = s.deleteTableDisk(k); err != nil {
			s.fail(q, answer.InternalError())
			return
		}
	} else {
		s.mu.Lock()
		t = s.tables[k]
		delete(s.tables, k)
		s.mu.Unlock()
	}
	if t == nil {
		s.fail(q, errNotFound)
		return
	}
	t.mu.Lock()
	t.gone = true
	t.mu.Unlock()
	q.reply(http.StatusNoContent, nil)
}

// queryTables answers Query Tables: every table (one, for Tables('t')),
// filtered by $filter on TableName, in name order, $top a page, with
// NextTableName continuation.
func (s *Service) queryTables(q *request, one string) {
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'c', Permission: 'l', Name: one}); !ok {
		return
	}
	if !s.admit(q, "", "", false, 1) {
		return
	}
	if one != "" {
		t := s.lookup(one)
		if t == nil {
			s.fail(q, errNotFound)
			return
		}
		q.reply(http.StatusOK, s.appendTable(nil, q, t.name, q.base+"/$metadata#Tables/@Element"))
		return
	}
	v := q.query
	top, f, e := pageOf(v, s.cfg.Cosmos)
	if e != nil {
		s.fail(q, e)
		return
	}
	next := ""
	if c := v.Get("NextTableName"); c != "" {
		var ok bool
		if next, ok = decodeToken(c); !ok {
			s.fail(q, errInvalidInput)
			return
		}
		next, _, _ = strings.Cut(next, "\x01")
	}
	s.mu.RLock()
	names := make([]string, 0, len(s.tables))
	for k := range s.tables {
		if k >= next {
			names = append(names, k)
		}
	}
	tabs := make(map[string]*table, len(names))
	for _, k := range names {
		tabs[k] = s.tables[k]
	}
	s.mu.RUnlock()
	slices.Sort(names)

	b := []byte(`{`)
	if q.fmt != noMetadata {
		b = append(b, `"odata.metadata":`...)
		b = appendQuoted(b, q.base+"/$metadata#Tables")
		b = append(b, ',')
	}
	b = append(b, `"value":[`...)
	n := 0
	cont := ""
	for _, k := range names {
		// A full page continues at the next table of the account, whether
		// or not the filter matches it, so the last page may be empty, as
		// Azure's are (the JavaScript SDK's nock recordings of listTables,
		// tableserviceclient, 2020: a page of 5, then a token naming a
		// table the filter leaves out, then an empty page with none).
		// $top=0 is a page of no table and no continuation.
		if n == top {
			if top > 0 {
				cont = nextTableName(k, tabs[k].created)
			}
			break
		}
		name := tabs[k].name
		if !f.Match(func(p string) (keys.Value, bool) {
			if p == "TableName" {
				return keys.StringValue(name), true
			}
			return keys.Value{}, false
		}) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = s.appendTable(b, q, name, "")
		n++
	}
	b = append(b, "]}"...)
	if cont != "" {
		q.headers().Set("x-ms-continuation-NextTableName", cont)
	}
	q.reply(http.StatusOK, b)
}

// pageOf reads a query's $top and $filter (keys.ParseFilter), in that
// order. $top is what azrules.CheckTop accepts, 0 to 1,000 (on Cosmos DB
// also more, answered as 1,000), absent azrules.MaxTop; $top=0 is a page
// of no entity and no continuation, as Azure answers it. Any other $top,
// or a filter ParseFilter refuses, is 400 InvalidInput; a well-formed
// filter of a form Azure does not implement (keys.ErrUnsupportedFilter:
// two properties or two constants compared, the constant first) is 501
// NotImplemented.
func pageOf(v map[string][]string, cosmos bool) (int, keys.Filter, *answer.Error) {
	top := azrules.MaxTop
	if t, ok := v["$top"]; ok && len(t) > 0 {
		n, err := strconv.Atoi(t[0])
		switch {
		case err == nil && cosmos && n > azrules.MaxTop:
			n = azrules.MaxTop
		case azrules.CheckTop(t[0]) != nil:
			return 0, keys.Filter{}, errInvalidInput
		}
		top = n
	}
	var filter string
	if f := v["$filter"]; len(f) > 0 {
		filter = f[0]
	}
	f, err := keys.ParseFilter(filter)
	switch {
	case errors.Is(err, keys.ErrUnsupportedFilter):
		return 0, keys.Filter{}, errFilterNotImplemented
	case err != nil:
		return 0, keys.Filter{}, answer.InvalidFilter(filter, err)
	}
	return top, f, nil
}

// serveService answers the account-level requests: service properties
// (GET and PUT ?restype=service&comp=properties) and statistics.
func (s *Service) serveService(q *request, method string) {
	v := q.query
	comp := v.Get("comp")
	if v.Get("restype") != "service" || (comp != "properties" && comp != "stats") {
		s.fail(q, errInvalidInput)
		return
	}
	perm := byte('r')
	if method == http.MethodPut {
		perm = 'w'
	}
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 's', Permission: perm}); !ok {
		return
	}
	h := q.headers()
	switch {
	case method == http.MethodPut && comp == "properties":
		body, ok := s.readBody(q, 1<<20)
		if !ok {
			return
		}
		p, e := svcprops.Parse(body)
		if e != nil {
			s.fail(q, e)
			return
		}
		if s.d != nil {
			if s.setPropertiesDisk(&p) != nil {
				s.fail(q, answer.InternalError())
				return
			}
		} else {
			s.setProperties(&p)
		}
		q.w.WriteHeader(http.StatusAccepted)
	case method == http.MethodGet && comp == "properties":
		s.mu.RLock()
		body, err := xml.Marshal(&s.props)
		s.mu.RUnlock()
		if err != nil {
			s.fail(q, answer.InternalError())
			return
		}
		h.Set("Content-Type", "application/xml")
		q.w.WriteHeader(http.StatusOK)
		q.w.Write(append([]byte(xml.Header[:len(xml.Header)-1]), body...))
	case method == http.MethodGet && comp == "stats":
		h.Set("Content-Type", "application/xml")
		q.w.WriteHeader(http.StatusOK)
		q.w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime></LastSyncTime></GeoReplication></StorageServiceStats>`))
	default:
		s.fail(q, answer.UnsupportedHTTPVerb())
	}
}

// serveACL answers Get and Set Table ACL (?comp=acl): the stored access
// policies, checked as the other services check theirs (acl.Parse: at
// most five, permissions among r, a, u, d) and kept as Azure reads them
// back (acl.Marshal: times in its form).
func (s *Service) serveACL(q *request, name, method string) {
	if q.query.Get("comp") != "acl" {
		s.fail(q, errInvalidInput)
		return
	}
	if _, ok := s.authorize(q, auth.Operation{ResourceType: 'c', Permission: 'r', Name: name}); !ok {
		return
	}
	t := s.openTable(q, name)
	if t == nil {
		return
	}
	switch method {
	case http.MethodGet:
		t.mu.RLock()
		body := t.acl
		t.mu.RUnlock()
		if body == nil {
			body = []byte(`<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />`)
		}
		q.headers().Set("Content-Type", "application/xml")
		q.w.WriteHeader(http.StatusOK)
		q.w.Write(body)
	case http.MethodPut:
		body, ok := s.readBody(q, 1<<20)
		if !ok {
			return
		}
		list, e := acl.Parse(body, acl.TablePermissions)
		if e != nil {
			s.fail(q, e)
			return
		}
		body = acl.Marshal(list)
		if s.d != nil {
			switch err := s.setACLDisk(t, body); {
			case errors.Is(err, errGone):
				s.fail(q, errTableNotFound)
				return
			case err != nil:
				s.fail(q, answer.InternalError())
				return
			}
		} else {
			t.mu.Lock()
			t.acl = body
			t.mu.Unlock()
		}
		q.headers()
		q.w.WriteHeader(http.StatusNoContent)
	default:
		s.fail(q, answer.UnsupportedHTTPVerb())
	}
}

// nextTableName is Azure's NextTableName token for the table whose key
// (its lower-case name on Table storage) is k, created at created: the
// key, U+0001, and the creation time as a Windows FILETIME in 16 hex
// digits, in encodeToken's form. Azure's recorded tokens decode so
// ("listtabletestnode13\x0101d6978b3493d39d": 2020-10-01 00:38:39.236 UTC,
// the table's creation in that session; the JavaScript SDK's nock
// recordings of listTables).
func nextTableName(k string, created time.Time) string {
	const fileTimeOffset = 116444736000000000 // 100 ns from 1601 to 1970
	ft := uint64(created.UnixNano()/100 + fileTimeOffset)
	h := strconv.FormatUint(ft, 16)
	return encodeToken(k + "\x01" + strings.Repeat("0", 16-len(h)) + h)
}

// Policy returns the stored access policy id of the table named name, and
// false when there is none: the Table service's part of an
// auth.PolicyLookup (auth.Authenticator.SetPolicies), for a SAS that names
// a policy (si).
func (s *Service) Policy(name, id string) (auth.AccessPolicy, bool) {
	t := s.lookup(name)
	if t == nil {
		return auth.AccessPolicy{}, false
	}
	t.mu.RLock()
	body := t.acl
	t.mu.RUnlock()
	list, e := acl.Parse(body, acl.TablePermissions)
	if e != nil {
		return auth.AccessPolicy{}, false
	}
	return acl.Find(list, id)
}

package azurite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Strict mode: a loopback reverse proxy in front of Azurite's table
// endpoint that refuses what Azure Table storage refuses and Azurite lets
// through (DESIGN.md fact 3), with Azure's status, error code and message.
// It is an independent referee: it shares no code with tablekit's own
// validation, so a rule tablekit forgets is caught here.
//
// The rules, and Azure's answer to each (REST reference, "Table service
// error codes" and "Performing entity group transactions"):
//
//	batch spanning partitions         202, inner 400 CommandsInBatchActOnDifferentPartitions
//	two operations on one entity      202, inner 400 InvalidDuplicateRow
//	more than 100 operations          202, inner 400 InvalidInput (index 99)
//	more than 252 custom properties   400 TooManyProperties
//	an entity over 1 MiB              400 EntityTooLarge
//	property name longer than 255     400 PropertyNameTooLong
//	property name not an identifier   400 PropertyNameInvalid
//	$top above 1000                   400 InvalidInput
//	unterminated string in $filter    400 InvalidInput
//	SAS key range, entity outside it  403 AuthorizationFailure
//	SAS key range, query              only entities inside the range
//
// Inside a batch the entity rules answer as the batch rules do: 202 with
// the failing operation's index. Every other request passes through
// untouched: bodies are read only for entity writes and batches, and
// forwarded byte for byte; responses are streamed. The one change to a
// request is the query under a key-range SAS, whose $filter gets the range
// and-ed to it, which is how Azure answers it.

// Azure's limits the proxy enforces.
const (
	strictMaxBatchOps     = 100
	strictMaxProperties   = 252
	strictMaxEntitySize   = 1 << 20
	strictMaxNameLength   = 255
	strictMaxTop          = 1000
	strictMaxInspectBytes = 8 << 20 // larger bodies are forwarded unexamined
)

// Azure's messages (the service appends "\nRequestId:...\nTime:...").
const (
	msgDifferentPartitions = "All commands in a batch must operate on same entity group."
	msgDuplicateRow        = "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."
	msgTooManyChanges      = "The batch request operation exceeds the maximum 100 changes per change set."
	msgTooManyProperties   = "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties."
	msgEntityTooLarge      = "The entity is larger than the maximum allowed size (1MB)."
	msgNameTooLong         = "The property name exceeds the maximum allowed length (255)."
	msgNameInvalid         = "The property name is invalid."
	msgInvalidInput        = "One of the request inputs is not valid."
	msgAuthorization       = "This request is not authorized to perform this operation."
)

// refusal is Azure's answer to a request the proxy refuses.
type refusal struct {
	status int
	code   string
	msg    string
}

func badRequest(code, msg string) *refusal {
	return &refusal{status: http.StatusBadRequest, code: code, msg: msg}
}

// answer is what the proxy sends instead of forwarding a request: a
// refusal, at the top level or (batch) inside a 202 batch response for the
// operation at index.
type answer struct {
	refusal
	batch bool
	index int
}

func forbidden() *answer {
	return &answer{refusal: refusal{http.StatusForbidden, "AuthorizationFailure", msgAuthorization}}
}

// tableProxy is the loopback reverse proxy of one Instance in front of
// Azurite's table endpoint: it adds latency (load.go), refuses what Azure
// refuses (Strict) and throttles at scalability targets (load.go), each
// only when its option is set.
type tableProxy struct {
	srv *http.Server
	rp  *httputil.ReverseProxy
	tr  *http.Transport

	strict          bool
	latency, jitter time.Duration
	throttle        *throttle // nil: no throttling
	stats           proxyCounters
}

// proxyConfig is what Options asks of the proxy.
type proxyConfig struct {
	strict          bool
	latency, jitter time.Duration
	throttle        *ThrottleOptions
}

// startProxy listens on a free loopback port and forwards to upstream
// (Azurite's table endpoint, scheme and host). It returns the proxy's base
// URL, such as http://127.0.0.1:41235.
func startProxy(upstream string, cfg proxyConfig) (*tableProxy, string, error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	// Azurite (Node) closes a connection idle for 5 s; a request sent on
	// it at that moment fails, and the proxy would answer 502 to a write
	// the client then retries. Idle connections are dropped well before.
	p := &tableProxy{tr: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     2 * time.Second,
	}, strict: cfg.strict, latency: max(cfg.latency, 0), jitter: max(cfg.jitter, 0)}
	if cfg.throttle != nil {
		p.throttle = newThrottle(*cfg.throttle)
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // keep the Host the client signed and addressed
		},
		Transport:      p.tr,
		FlushInterval:  -1,
		ModifyResponse: p.settleQuery,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go p.srv.Serve(ln)
	return p, "http://" + ln.Addr().String(), nil
}

func (p *tableProxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if p.srv.Shutdown(ctx) != nil {
		p.srv.Close()
	}
	p.tr.CloseIdleConnections()
}

// ServeHTTP holds the request for the latency, then applies Strict's
// rules, then the throttle, and forwards what passes. A request Strict
// refuses costs nothing; one the client gives up on during the latency
// is neither answered nor forwarded.
func (p *tableProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.delay(r) {
		p.stats.abandoned.Add(1)
		return
	}
	if p.strict {
		if ans := p.check(r); ans != nil {
			p.stats.refused.Add(1)
			if ans.batch {
				writeBatchRefusal(w, r, ans)
			} else {
				writeRefusal(w, r, ans)
			}
			return
		}
	}
	if p.throttle != nil {
		var ans *answer
		if r, ans = p.admit(r); ans != nil {
			writeRefusal(w, r, ans)
			return
		}
	}
	p.stats.forwarded.Add(1)
	p.rp.ServeHTTP(w, r)
}

// check applies the rules to r. It may replace r.Body with the same bytes
// (after reading them) and, under a key-range SAS, narrow a query's
// $filter. A non-nil answer is sent instead of forwarding the request.
func (p *tableProxy) check(r *http.Request) *answer {
	res, ok := parseResource(r.URL)
	if !ok {
		return nil
	}
	sas := sasRangeOf(r.URL)
	switch {
	case r.Method == http.MethodPost && res.name == "$batch":
		body, ok := readBody(r)
		if !ok {
			return nil
		}
		return checkBatch(r.Header.Get("Content-Type"), body)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if res.hasKeys {
			if sas != nil && !sas.contains(res.pk, res.rk) {
				return forbidden()
			}
			return nil
		}
		if ref := checkQuery(r.URL.Query()); ref != nil {
			return &answer{refusal: *ref}
		}
		if sas != nil && res.name != "Tables" {
			narrowQuery(r.URL, sas)
		}
	case r.Method == http.MethodDelete && res.hasKeys:
		if sas != nil && !sas.contains(res.pk, res.rk) {
			return forbidden()
		}
	case isEntityWrite(r.Method, res):
		body, ok := readBody(r)
		if !ok {
			return nil
		}
		ent, err := parseEntity(body)
		if err != nil {
			return nil // not JSON we understand: Azurite answers
		}
		pk, rk := res.pk, res.rk
		if !res.hasKeys {
			pk, rk = ent.pk, ent.rk
		}
		if sas != nil && !sas.contains(pk, rk) {
			return forbidden()
		}
		if ref := ent.check(pk, rk); ref != nil {
			return &answer{refusal: *ref}
		}
	}
	return nil
}

// isEntityWrite reports whether the request writes one entity: POST to a
// table (insert), PUT, PATCH or MERGE on an entity.
func isEntityWrite(method string, res resource) bool {
	switch method {
	case http.MethodPost:
		return !res.hasKeys && res.name != "" && res.name != "Tables" && !strings.HasPrefix(res.name, "$")
	case http.MethodPut, http.MethodPatch, "MERGE":
		return res.hasKeys
	}
	return false
}

// readBody reads r's body (up to strictMaxInspectBytes) and puts the same
// bytes back. ok is false when the body was too large to examine; it is
// then forwarded whole, unexamined.
func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, strictMaxInspectBytes+1))
	if err != nil || len(buf) > strictMaxInspectBytes {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
		return nil, false
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(buf))
	return buf, true
}

type readCloser struct {
	io.Reader
	io.Closer
}

// resource is what a table-service URL path addresses, after the account:
// a table or "Tables" or "$batch" (name), and an entity's keys.
type resource struct {
	name    string
	hasKeys bool
	pk, rk  string
}

// parseResource reads a path-style URL: /account/name or
// /account/name(PartitionKey='..',RowKey='..'); "()" after a name is a
// query of that table.
func parseResource(u *url.URL) (resource, bool) {
	p, err := url.PathUnescape(u.EscapedPath())
	if err != nil {
		return resource{}, false
	}
	p = strings.TrimPrefix(p, "/")
	i := strings.IndexByte(p, '/')
	if i < 0 {
		return resource{}, false
	}
	seg := p[i+1:]
	open := strings.IndexByte(seg, '(')
	if open < 0 {
		return resource{name: seg}, true
	}
	res := resource{name: seg[:open]}
	inner := strings.TrimSuffix(seg[open+1:], ")")
	if len(inner) == len(seg[open+1:]) {
		return resource{}, false
	}
	if inner == "" {
		return res, true
	}
	pk, rest, ok := keyLiteral(inner, "PartitionKey=")
	if !ok || !strings.HasPrefix(rest, ",") {
		return resource{}, false
	}
	rk, rest, ok := keyLiteral(rest[1:], "RowKey=")
	if !ok || rest != "" {
		return resource{}, false
	}
	res.hasKeys, res.pk, res.rk = true, pk, rk
	return res, true
}

// keyLiteral reads name='value' (two quotes inside stand for one) at
// the start of s and returns the value and what follows.
func keyLiteral(s, name string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, name+"'") {
		return "", "", false
	}
	s = s[len(name)+1:]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}

// checkQuery applies the query rules: $top at most 1000, and a $filter
// whose string literals are all closed.
func checkQuery(q url.Values) *refusal {
	if top := q.Get("$top"); top != "" {
		if n, err := strconv.Atoi(top); err == nil && n > strictMaxTop {
			return badRequest("InvalidInput", msgInvalidInput)
		}
	}
	if f := q.Get("$filter"); f != "" && unterminatedLiteral(f) {
		return badRequest("InvalidInput", msgInvalidInput)
	}
	return nil
}

// unterminatedLiteral reports whether an OData filter ends inside a string
// literal (two quotes inside a literal stand for one).
func unterminatedLiteral(f string) bool {
	in := false
	for i := 0; i < len(f); i++ {
		if f[i] != '\'' {
			continue
		}
		if in && i+1 < len(f) && f[i+1] == '\'' {
			i++
			continue
		}
		in = !in
	}
	return in
}

// sasRange is the key range of a table SAS (spk, srk, epk, erk), inclusive,
// compared as the service sorts keys: by PartitionKey, then RowKey.
type sasRange struct {
	spk, srk, epk, erk string
	hasStart, hasEnd   bool
}

func sasRangeOf(u *url.URL) *sasRange {
	q := u.Query()
	if q.Get("sig") == "" {
		return nil
	}
	r := &sasRange{spk: q.Get("spk"), srk: q.Get("srk"), epk: q.Get("epk"), erk: q.Get("erk")}
	r.hasStart, r.hasEnd = q.Has("spk"), q.Has("epk")
	if !r.hasStart && !r.hasEnd {
		return nil
	}
	return r
}

func (s *sasRange) contains(pk, rk string) bool {
	if s.hasStart && (pk < s.spk || pk == s.spk && s.srk != "" && rk < s.srk) {
		return false
	}
	if s.hasEnd && (pk > s.epk || pk == s.epk && s.erk != "" && rk > s.erk) {
		return false
	}
	return true
}

// filter is the range as an OData filter.
func (s *sasRange) filter() string {
	lit := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	var parts []string
	if s.hasStart {
		if s.srk != "" {
			parts = append(parts, "(PartitionKey gt "+lit(s.spk)+" or (PartitionKey eq "+lit(s.spk)+" and RowKey ge "+lit(s.srk)+"))")
		} else {
			parts = append(parts, "PartitionKey ge "+lit(s.spk))
		}
	}
	if s.hasEnd {
		if s.erk != "" {
			parts = append(parts, "(PartitionKey lt "+lit(s.epk)+" or (PartitionKey eq "+lit(s.epk)+" and RowKey le "+lit(s.erk)+"))")
		} else {
			parts = append(parts, "PartitionKey le "+lit(s.epk))
		}
	}
	return strings.Join(parts, " and ")
}

// narrowQuery ands the SAS range to the query's $filter, leaving every
// other query parameter byte for byte as it was.
func narrowQuery(u *url.URL, s *sasRange) {
	params := strings.Split(u.RawQuery, "&")
	found := false
	for i, kv := range params {
		k, v, _ := strings.Cut(kv, "=")
		if k != "$filter" && k != "%24filter" {
			continue
		}
		old, err := url.QueryUnescape(v)
		if err != nil {
			return
		}
		params[i] = k + "=" + queryEscape("("+old+") and ("+s.filter()+")")
		found = true
	}
	if !found {
		params = append(params, "$filter="+queryEscape(s.filter()))
	}
	u.RawQuery = strings.Join(params, "&")
}

func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// strictEntity is an entity body as the rules see it.
type strictEntity struct {
	pk, rk string
	props  []strictProp
}

type strictProp struct {
	name     string
	raw      json.RawMessage
	edmType  string // from the name@odata.type annotation
	jsonKind byte   // first byte of the JSON value
}

// parseEntity reads a JSON entity body, keeping every property in order.
func parseEntity(body []byte) (*strictEntity, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	e := &strictEntity{}
	types := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		switch {
		case strings.HasSuffix(name, "@odata.type"):
			var t string
			_ = json.Unmarshal(raw, &t)
			types[strings.TrimSuffix(name, "@odata.type")] = t
		case strings.HasPrefix(name, "odata."):
		case name == "PartitionKey":
			_ = json.Unmarshal(raw, &e.pk)
		case name == "RowKey":
			_ = json.Unmarshal(raw, &e.rk)
		case name == "Timestamp":
		default:
			e.props = append(e.props, strictProp{name: name, raw: raw, jsonKind: raw[0]})
		}
	}
	for i := range e.props {
		e.props[i].edmType = types[e.props[i].name]
	}
	return e, nil
}

// check applies the entity rules in the order the service does: names,
// then the number of properties, then the size.
func (e *strictEntity) check(pk, rk string) *refusal {
	for _, p := range e.props {
		if utf16Units(p.name) > strictMaxNameLength {
			return badRequest("PropertyNameTooLong", msgNameTooLong)
		}
		if !isIdentifier(p.name) {
			return badRequest("PropertyNameInvalid", msgNameInvalid)
		}
	}
	if len(e.props) > strictMaxProperties {
		return badRequest("TooManyProperties", msgTooManyProperties)
	}
	if e.size(pk, rk) > strictMaxEntitySize {
		return badRequest("EntityTooLarge", msgEntityTooLarge)
	}
	return nil
}

// size is the entity's size by the formula of "Understanding the Table
// service data model": 4 + 2*len(PartitionKey) + 2*len(RowKey) + for each
// property 8 + 2*len(name) + the value's size (String 4 + 2*len, Binary
// 4 + len, Int32 4, Int64, Double and DateTime 8, Boolean 1, Guid 16),
// lengths in UTF-16 code units. Null values are not stored.
func (e *strictEntity) size(pk, rk string) int {
	n := 4 + 2*utf16Units(pk) + 2*utf16Units(rk)
	for _, p := range e.props {
		if p.jsonKind == 'n' {
			continue
		}
		n += 8 + 2*utf16Units(p.name) + p.valueSize()
	}
	return n
}

func (p strictProp) valueSize() int {
	switch p.edmType {
	case "Edm.Binary":
		var s string
		_ = json.Unmarshal(p.raw, &s)
		return 4 + len(s)*3/4 - strings.Count(s, "=")
	case "Edm.Int64", "Edm.Double", "Edm.DateTime":
		return 8
	case "Edm.Int32":
		return 4
	case "Edm.Boolean":
		return 1
	case "Edm.Guid":
		return 16
	case "Edm.String":
	case "":
		switch p.jsonKind {
		case 't', 'f':
			return 1
		case '"':
		default: // a number: Int32 when it is one, else Double
			if n, err := strconv.ParseInt(string(p.raw), 10, 32); err == nil && n == int64(int32(n)) {
				return 4
			}
			return 8
		}
	}
	var s string
	_ = json.Unmarshal(p.raw, &s)
	return 4 + 2*utf16Units(s)
}

// isIdentifier reports whether name follows the rules of C# identifiers:
// a letter or '_', then letters, digits, '_', connecting punctuation,
// combining marks and formatting characters.
func isIdentifier(name string) bool {
	if name == "" || !utf8.ValidString(name) {
		return false
	}
	for i, r := range name {
		letter := unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
		if i == 0 {
			if !letter && r != '_' {
				return false
			}
			continue
		}
		if !letter && !unicode.Is(unicode.Nd, r) && !unicode.In(r, unicode.Pc, unicode.Mn, unicode.Mc, unicode.Cf) {
			return false
		}
	}
	return true
}

func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// writeRefusal answers r as Azure answers a refused request: the status,
// x-ms-error-code, and a JSON OData error whose message carries a request
// id and the time.
func writeRefusal(w http.ResponseWriter, r *http.Request, ref *answer) {
	id := requestID()
	h := w.Header()
	setServiceHeaders(h, r, id)
	h.Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("x-ms-error-code", ref.code)
	w.WriteHeader(ref.status)
	w.Write(odataError(ref.code, ref.msg, id))
}

func setServiceHeaders(h http.Header, r *http.Request, id string) {
	h.Set("Cache-Control", "no-cache")
	h.Set("DataServiceVersion", "3.0;")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("x-ms-request-id", id)
	if v := r.Header.Get("x-ms-version"); v != "" {
		h.Set("x-ms-version", v)
	}
	if v := r.Header.Get("x-ms-client-request-id"); v != "" {
		h.Set("x-ms-client-request-id", v)
	}
}

// odataError is Azure's JSON error body; message is the text Azure puts
// first (with "N:" in a batch).
func odataError(code, message, id string) []byte {
	var e struct {
		OData struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	e.OData.Code = code
	e.OData.Message.Lang = "en-US"
	e.OData.Message.Value = message + "\nRequestId:" + id + "\nTime:" + time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	b, _ := json.Marshal(e)
	return b
}

// requestID is a random id in the shape of Azure's x-ms-request-id.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

package azurite

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/load"
	"github.com/tablekit/tablekit/entity"
)

// Strict mode: a loopback reverse proxy in front of Azurite's table
// endpoint that refuses what Azure Table storage refuses and Azurite lets
// through (docs/RULES.md), with Azure's status, error code and message.
// Azure's answers are emulator/answer', which tablekit's emulator answers
// by too; the rules and limits are azrules', the ones the client checks
// (answer.CheckEntity, CheckQuery, CheckBatch say which):
//
//	batch spanning partitions         202, inner 400 CommandsInBatchActOnDifferentPartitions
//	two operations on one entity      202, inner 400 InvalidDuplicateRow
//	more than 100 operations          202, inner 400 InvalidInput (index 99)
//	a key with / \ # ? or a control character, or over 1 KiB
//	                                  400 OutOfRangeInput
//	more than 252 custom properties   400 TooManyProperties
//	a String over 32K UTF-16 units, a Binary over 64 KiB
//	                                  400 PropertyValueTooLarge
//	an entity over 1 MiB              400 EntityTooLarge
//	property name longer than 255     400 PropertyNameTooLong
//	property name not an identifier   400 PropertyNameInvalid
//	$top not an integer in 0..1000    400 InvalidInput
//	$top=0                            200, no entity (Azurite ignores it)
//	$filter keys.ParseFilter refuses  400 InvalidInput (an unterminated
//	                                  string, a malformed literal, ...)
//	$filter of two properties, two constants or the constant first
//	                                  501 NotImplemented
//	SAS key range, entity outside it  403 AuthorizationFailure
//	SAS key range, query              only entities inside the range
//
// Inside a batch the entity rules answer as the batch rules do: 202 with
// the failing operation's index. Every other request passes through
// untouched: bodies are read only for entity writes and batches, and
// forwarded byte for byte; responses are streamed. A body the proxy cannot
// read as an entity is left to Azurite. The changes to a request are to
// a query's $filter: under a key-range SAS it gets the range and-ed to
// it, which is how Azure answers it; with $top=0 a condition no entity
// meets, and $top=1, so that Azurite answers no entity and no
// continuation, as Azure does.

// strictMaxInspectBytes bounds the bodies the proxy reads; larger ones are
// forwarded unexamined.
const strictMaxInspectBytes = 8 << 20

// tableProxy is the loopback reverse proxy of one Instance in front of
// Azurite's table endpoint: it adds latency (load.go), refuses what Azure
// refuses (Strict) and throttles at scalability targets (load.go), each
// only when its option is set.
type tableProxy struct {
	srv *http.Server
	rp  *httputil.ReverseProxy
	tr  *http.Transport

	strict   bool
	latency  *load.Latency
	throttle *load.Throttle // nil: no throttling
	stats    proxyCounters
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
	}, strict: cfg.strict, latency: load.NewLatency(load.LatencyOptions{Fixed: cfg.latency, Jitter: cfg.jitter})}
	if cfg.throttle != nil {
		p.throttle = load.NewThrottle(*cfg.throttle)
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
		if e, be := p.check(r); e != nil || be != nil {
			p.stats.refused.Add(1)
			if be != nil {
				answer.WriteBatchError(w, r, be)
			} else {
				odata, _ := answer.TableFormat(r.URL.Query(), r.Header)
				answer.WriteTableAs(w, r, e, answer.TableContentType(odata))
			}
			return
		}
	}
	if p.throttle != nil {
		var e *answer.Error
		if r, e = p.admit(r); e != nil {
			answer.WriteTable(w, r, e)
			return
		}
	}
	p.stats.forwarded.Add(1)
	p.rp.ServeHTTP(w, r)
}

// check applies the rules to r. It may replace r.Body with the same bytes
// (after reading them) and, under a key-range SAS, narrow a query's
// $filter. A non-nil answer (a batch's inside a 202) is sent instead of
// forwarding the request.
func (p *tableProxy) check(r *http.Request) (*answer.Error, *answer.BatchError) {
	res, ok := answer.ParseTablePath(r.URL.EscapedPath())
	if !ok || res.Service || res.Table != "" {
		return nil, nil // the service itself and Tables('t'): no rule applies
	}
	sas := answer.KeyRangeOf(r.URL.Query())
	switch {
	case r.Method == http.MethodPost && res.Name == "$batch":
		body, ok := readBody(r)
		if !ok {
			return nil, nil
		}
		ops, ok := parseBatch(r.Header.Get("Content-Type"), body)
		if !ok {
			return nil, nil // a body it cannot read is left to Azurite
		}
		return nil, answer.CheckBatch(ops)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if res.HasKeys {
			if sas != nil && !sas.Contains(res.PartitionKey, res.RowKey) {
				return answer.AuthorizationFailure(), nil
			}
			return nil, nil
		}
		if e := answer.CheckQuery(r.URL.Query()); e != nil {
			return e, nil
		}
		if sas != nil && res.Name != "Tables" {
			if !narrowQuery(r.URL, sas) {
				return answer.AuthorizationFailure(), nil
			}
		}
		if r.URL.Query().Get("$top") == "0" && !emptyPage(r.URL, res.Name == "Tables") {
			return answer.InvalidInput(), nil
		}
	case r.Method == http.MethodDelete && res.HasKeys:
		if sas != nil && !sas.Contains(res.PartitionKey, res.RowKey) {
			return answer.AuthorizationFailure(), nil
		}
	case isEntityWrite(r.Method, res):
		body, ok := readBody(r)
		if !ok {
			return nil, nil
		}
		var ent entity.Entity
		if ent.UnmarshalJSON(body) != nil {
			return nil, nil // not an entity we understand: Azurite answers
		}
		pk, rk := res.PartitionKey, res.RowKey
		if !res.HasKeys {
			pk, rk = ent.PartitionKey, ent.RowKey
		}
		if sas != nil && !sas.Contains(pk, rk) {
			return answer.AuthorizationFailure(), nil
		}
		return answer.CheckEntity(pk, rk, ent), nil
	}
	return nil, nil
}

// isEntityWrite reports whether the request writes one entity: POST to a
// table (insert), PUT, PATCH or MERGE on an entity.
func isEntityWrite(method string, res answer.TablePath) bool {
	switch method {
	case http.MethodPost:
		return !res.HasKeys && res.Name != "" && res.Name != "Tables" && !strings.HasPrefix(res.Name, "$")
	case http.MethodPut, http.MethodPatch, "MERGE":
		return res.HasKeys
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

// emptyPage turns a query with $top=0, which Azure answers with no
// entity and no continuation and Azurite ignores (Azurite issue #1428),
// into one Azurite answers so: $top=1 and a condition no entity (or
// table) meets. It returns false when the query's $filter cannot be read.
func emptyPage(u *url.URL, tables bool) bool {
	never := "PartitionKey lt ''"
	if tables {
		never = "TableName lt ''"
	}
	if !andFilter(u, never) {
		return false
	}
	params := strings.Split(u.RawQuery, "&")
	for i, kv := range params {
		if k, _, _ := strings.Cut(kv, "="); k == "$top" || k == "%24top" {
			params[i] = k + "=1"
		}
	}
	u.RawQuery = strings.Join(params, "&")
	return true
}

// narrowQuery ands the SAS range to the query's $filter, leaving every
// other query parameter byte for byte as it was. It returns false when
// the query's $filter cannot be read.
func narrowQuery(u *url.URL, kr *answer.KeyRange) bool {
	rng, err := kr.Filter().Build()
	if err != nil {
		return false
	}
	return andFilter(u, rng)
}

// andFilter ands cond to the query's $filter (or makes it the $filter),
// leaving every other query parameter byte for byte as it was. It
// returns false when the query's $filter cannot be read.
func andFilter(u *url.URL, cond string) bool {
	params := strings.Split(u.RawQuery, "&")
	found := false
	for i, kv := range params {
		k, v, _ := strings.Cut(kv, "=")
		if k != "$filter" && k != "%24filter" {
			continue
		}
		old, err := url.QueryUnescape(v)
		if err != nil {
			return false
		}
		params[i] = k + "=" + queryEscape("("+old+") and ("+cond+")")
		found = true
	}
	if !found {
		params = append(params, "$filter="+queryEscape(cond))
	}
	u.RawQuery = strings.Join(params, "&")
	return true
}

func queryEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

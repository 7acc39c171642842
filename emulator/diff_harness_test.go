package emulator_test

// The differential tests of the Table service (issue 34, section 5): the
// same generated requests go, as raw HTTP signed with Shared Key Lite
// through an azcore pipeline (tablekit's own REST transport), to Azurite
// behind the strict proxy and to the emulator, each case on a fresh table
// of the same name on both, in the same order. Every answer is reduced to
// a list of facts (status, error code, headers that matter, each entity
// returned, each operation of a batch) with the values the service
// chooses (ETags, Timestamps, request ids, dates) replaced by their form;
// the two lists must be equal. Where they are not, the difference must be
// one the table of known differences (diff_known_test.go) explains, with
// its evidence that Azure answers as the emulator does, or one the list
// of expected failures names (an emulator bug, reported, to be fixed);
// anything else fails the test.
//
// They need Azurite: the azurite tier (TABLEKIT_TEST_TIERS=azurite).
// TABLEKIT_TEST_SEED changes the generator's seed (the default is fixed,
// so a failure reproduces); -diff.verbose logs every exchange; -diff.self
// puts a second Azurite in the emulator's place, the harness's own check
// (no difference may appear, and none is explained).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/tools/testenv"
)

var (
	diffVerbose = flag.Bool("diff.verbose", false, "the differential tests log every exchange")
	diffSelf    = flag.Bool("diff.self", false, "the differential tests put a second Azurite in the emulator's place")
)

// service is one of the two services under comparison.
type service struct {
	name string // "azurite" or "emulator"
	base string // the table endpoint, http://127.0.0.1:PORT/devstoreaccount1
	c    *tablehttp.Client
}

func newService(t *testing.T, name, endpoint, account, key string) *service {
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		t.Fatalf("%s: account key: %v", name, err)
	}
	// No retries: a 500 or a 503 is an answer to compare, not to hide.
	c := tablehttp.New(endpoint, tablehttp.Auth{Account: account, Key: k},
		azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}, nil)
	return &service{name: name, base: endpoint, c: c}
}

// rig is the pair of services and the record of what the known
// differences and expected failures explained, shared by all cases.
type rig struct {
	az, em  *service
	seed    uint64
	verbose bool
	self    bool // -diff.self: Azurite against Azurite

	mu        sync.Mutex
	explained map[string]int // known difference or expected failure name -> facts explained
}

// diffRig starts Azurite (strict) and the emulator once for the whole
// test; cases run on tables of their own.
func diffRig(t *testing.T) *rig {
	testenv.Tier(t, testenv.TierAzurite)
	az := azurite.StartTB(t, &azurite.Options{Strict: true})
	em := emulator.StartTB(t, nil)
	self := *diffSelf
	if self {
		// The harness's own check: a second Azurite in the emulator's
		// place must answer every case as the first does.
		az2 := azurite.StartTB(t, &azurite.Options{Strict: true})
		em.TableURL, em.AccountName, em.AccountKey = az2.TableURL, azurite.AccountName, azurite.AccountKey
	}
	return &rig{
		self:      self,
		az:        newService(t, "azurite", az.TableURL, azurite.AccountName, azurite.AccountKey),
		em:        newService(t, "emulator", em.TableURL, em.AccountName, em.AccountKey),
		seed:      testenv.Seed(t, 34),
		verbose:   *diffVerbose,
		explained: map[string]int{},
	}
}

// etagKind says which ETag a request sends in If-Match.
type etagKind int

const (
	noEtag      etagKind = iota
	etagCurrent          // the entity's ETag as this service last returned it
	etagStale            // the ETag this service returned before that
	etagStar             // *
)

// request is one generated request, the same for both services except
// for what each one chose before (ETags) and its own URL in batch bodies.
type request struct {
	label  string
	method string
	// path follows the account, escaped: "/Tables", "/T()",
	// "/T(PartitionKey='a',RowKey='b')"; "T" is replaced by the case's
	// table name where it stands alone before "(" or at the end.
	path    string
	query   url.Values
	accept  string // "" is minimal metadata
	prefer  string
	ifMatch etagKind
	key     string // PartitionKey + "\x00" + RowKey, for ifMatch
	body    []byte
	// batch, when set, is sent as a $batch body built for each service.
	batch *batch
	// filter is the tree the $filter was generated from, for the
	// known differences that depend on it.
	filter *fnode
	// data is the table's content when the request was sent, for the
	// known differences that need it (filters).
	data []*gentity
	// table is the case's table, set when the request is sent.
	table string
}

// answer is a response reduced to facts: key -> value, compared key by
// key. Keys sort in the order they were added (seq).
type answer struct {
	facts map[string]string
	order []string
	raw   string // status line, headers and body, for failure messages
	// etag is the ETag header or the batch parts' ETags, for the
	// case's state (keyed like request.key).
	etags map[string]string
	// rows are the keys (PartitionKey + "\x00" + RowKey) of the
	// entities a query returned, in order; rowsKnown is false when
	// some row lacks its keys ($select) or the body is no page.
	rows      []string
	rowsKnown bool
	// next are the continuation headers, for paging.
	nextPK, nextRK string
	hasNext        bool
}

func (a *answer) set(k, v string) {
	if a.facts == nil {
		a.facts = map[string]string{}
	}
	if _, ok := a.facts[k]; !ok {
		a.order = append(a.order, k)
	}
	a.facts[k] = v
}

// The forms of the values a service chooses.
var (
	reGUID      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	reHTTPDate  = regexp.MustCompile(`^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$`)
	reTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z$`)
	reETag      = regexp.MustCompile(`^W/"datetime'(\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z)'"$`)
	reBoundary  = regexp.MustCompile(`^multipart/mixed; ?boundary=batchresponse_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	reErrorText = regexp.MustCompile(`(?s)^(.*)\nRequestId:([0-9a-f-]{36})\nTime:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z)$`)
)

// form replaces a value the service chooses by its form's name, or
// marks it as malformed.
func form(name string, re *regexp.Regexp, v string) string {
	if re.MatchString(v) {
		return "<" + name + ">"
	}
	return "<malformed " + name + ": " + v + ">"
}

// send sends r to s on table and reduces the response to an answer.
// etags is the case's state on s: the ETags s returned, per entity, in
// order.
func (s *service) send(ctx context.Context, table string, r *request, etags map[string][]string) (*answer, error) {
	path := tablePath(r.path, table)
	req, err := s.c.NewRequest(ctx, r.method, path, r.query)
	if err != nil {
		return nil, err
	}
	h := req.Raw().Header
	if r.accept != "" {
		h.Set("Accept", r.accept)
	}
	if r.prefer != "" {
		h.Set("Prefer", r.prefer)
	}
	switch r.ifMatch {
	case etagCurrent, etagStale:
		hist := etags[r.key]
		i := len(hist) - 1
		if r.ifMatch == etagStale {
			i--
		}
		if i < 0 {
			return nil, fmt.Errorf("%s: no %s ETag for %q", r.label, map[etagKind]string{etagCurrent: "current", etagStale: "stale"}[r.ifMatch], r.key)
		}
		h.Set("If-Match", hist[i])
	case etagStar:
		h.Set("If-Match", "*")
	}
	switch {
	case r.batch != nil:
		body, ct := r.batch.build(s.base, table, etags)
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), ct); err != nil {
			return nil, err
		}
	case r.body != nil:
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(r.body)), "application/json"); err != nil {
			return nil, err
		}
	}
	resp, err := s.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return s.reduce(r, table, resp, body), nil
}

// tablePath puts the table's name into a request path: "/T..." becomes
// "/<table>...".
func tablePath(p, table string) string {
	if p == "/T" || strings.HasPrefix(p, "/T(") || strings.HasPrefix(p, "/T?") {
		return "/" + table + p[2:]
	}
	return p
}

// reduce turns a response into facts.
func (s *service) reduce(r *request, table string, resp *http.Response, body []byte) *answer {
	a := &answer{etags: map[string]string{}}
	var raw strings.Builder
	fmt.Fprintf(&raw, "%d\n", resp.StatusCode)
	hk := slices.Sorted(mapKeys(resp.Header))
	for _, k := range hk {
		fmt.Fprintf(&raw, "%s: %s\n", k, strings.Join(resp.Header[k], ", "))
	}
	raw.Write(body)
	a.raw = raw.String()

	a.set("status", strconv.Itoa(resp.StatusCode))
	h := resp.Header
	if v := h.Get("x-ms-error-code"); v != "" {
		a.set("header x-ms-error-code", v)
	}
	for _, k := range []string{"Preference-Applied", "DataServiceVersion", "Cache-Control", "X-Content-Type-Options"} {
		if v := h.Get(k); v != "" {
			a.set("header "+k, v)
		}
	}
	a.set("header x-ms-request-id", form("guid", reGUID, h.Get("x-ms-request-id")))
	a.set("header Date", form("date", reHTTPDate, h.Get("Date")))
	if v := h.Get("x-ms-version"); v != "" {
		a.set("header x-ms-version", v)
	}
	for _, k := range []string{"Location", "DataServiceId"} {
		if v := h.Get(k); v != "" {
			a.set("header "+k, s.localURL(v))
		}
	}
	if v := h.Get("ETag"); v != "" {
		a.set("header ETag", form("etag", reETag, v))
		a.etags[r.key] = v
	}
	if pk, rk := h.Get("x-ms-continuation-NextPartitionKey"), h.Get("x-ms-continuation-NextRowKey"); pk != "" || rk != "" {
		a.set("header x-ms-continuation-NextPartitionKey", pk)
		a.set("header x-ms-continuation-NextRowKey", rk)
		a.nextPK, a.nextRK, a.hasNext = pk, rk, true
	}
	if v := h.Get("x-ms-continuation-NextTableName"); v != "" {
		a.set("header x-ms-continuation-NextTableName", v)
	}
	ct := h.Get("Content-Type")
	if strings.HasPrefix(ct, "multipart/mixed") {
		a.set("header Content-Type", form("batch content type", reBoundary, ct))
	} else if ct != "" {
		a.set("header Content-Type", ct)
	}
	if len(body) == 0 {
		a.set("body", "<empty>")
		return a
	}
	if strings.HasPrefix(ct, "multipart/mixed") {
		s.reduceBatch(a, r, ct, body)
		return a
	}
	s.reduceJSON(a, "", body)
	return a
}

// localURL replaces the service's own endpoint in a URL by "{base}".
func (s *service) localURL(v string) string {
	if strings.HasPrefix(v, s.base) {
		return "{base}" + v[len(s.base):]
	}
	return v
}

// reduceJSON adds the facts of a JSON body (an entity, a page of
// entities, a table, an error) under prefix.
func (s *service) reduceJSON(a *answer, prefix string, body []byte) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		a.set(prefix+"body", "<not a JSON object: "+string(body)+">")
		return
	}
	if e, ok := top["odata.error"]; ok {
		var oe struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		}
		if err := json.Unmarshal(e, &oe); err != nil {
			a.set(prefix+"error", "<malformed odata.error: "+string(e)+">")
			return
		}
		a.set(prefix+"error code", oe.Code)
		a.set(prefix+"error lang", oe.Message.Lang)
		m := reErrorText.FindStringSubmatch(oe.Message.Value)
		if m == nil {
			a.set(prefix+"error message form", "<malformed: "+oe.Message.Value+">")
			return
		}
		a.set(prefix+"error message form", "<text>\\nRequestId:<guid>\\nTime:<timestamp>")
		if prefix != "" {
			// Inside a batch, the failing operation's index.
			idx, _, ok := strings.Cut(m[1], ":")
			if _, err := strconv.Atoi(idx); !ok || err != nil {
				idx = "<none>"
			}
			a.set(prefix+"error index", idx)
		}
		return
	}
	keys := slices.Sorted(mapKeys(top))
	for _, k := range keys {
		v := top[k]
		switch k {
		case "value":
			var rows []json.RawMessage
			if err := json.Unmarshal(v, &rows); err != nil {
				a.set(prefix+"value", "<not an array: "+string(v)+">")
				continue
			}
			a.set(prefix+"value count", strconv.Itoa(len(rows)))
			a.rowsKnown = true
			for i, row := range rows {
				a.set(fmt.Sprintf("%svalue[%d]", prefix, i), s.entityFacts(row))
				var keys struct {
					PK *string `json:"PartitionKey"`
					RK *string `json:"RowKey"`
				}
				if json.Unmarshal(row, &keys) != nil || keys.PK == nil || keys.RK == nil {
					a.rowsKnown = false
					continue
				}
				a.rows = append(a.rows, *keys.PK+"\x00"+*keys.RK)
			}
		default:
			a.set(prefix+"body "+k, s.fieldFact(k, v))
		}
	}
}

// fieldFact is one member of an entity or a response object, with
// service-chosen values replaced by their form.
func (s *service) fieldFact(k string, v json.RawMessage) string {
	var str string
	isStr := json.Unmarshal(v, &str) == nil && len(v) > 0 && v[0] == '"'
	switch {
	case k == "odata.etag" && isStr:
		return form("etag", reETag, str)
	case k == "Timestamp" && isStr:
		return form("timestamp", reTimestamp, str)
	case (k == "odata.metadata" || k == "odata.id") && isStr:
		return strconv.Quote(s.localURL(str))
	}
	return string(v)
}

// entityFacts is an entity as one fact: its members sorted by name, each
// name=value with the value's JSON text as the service wrote it
// (numbers are not reformatted: 3.0 and 3 differ), service-chosen
// values by their form, and whether its ETag names its Timestamp.
func (s *service) entityFacts(row json.RawMessage) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(row, &m); err != nil {
		return "<not an object: " + string(row) + ">"
	}
	var b strings.Builder
	for i, k := range slices.Sorted(mapKeys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + s.fieldFact(k, m[k]))
	}
	var etag, ts string
	json.Unmarshal(m["odata.etag"], &etag)
	json.Unmarshal(m["Timestamp"], &ts)
	if g := reETag.FindStringSubmatch(etag); g != nil && ts != "" {
		if strings.ReplaceAll(g[1], "%3A", ":") == ts {
			b.WriteString(" [etag=Timestamp]")
		} else {
			b.WriteString(" [etag!=Timestamp]")
		}
	}
	return b.String()
}

// reduceBatch adds the facts of a batch response: each operation's
// status, ETag form, error code and index.
func (s *service) reduceBatch(a *answer, r *request, ct string, body []byte) {
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		a.set("batch", "<bad content type>")
		return
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, err := mr.NextPart()
	if err != nil {
		a.set("batch", "<no part: "+err.Error()+">")
		return
	}
	pct := part.Header.Get("Content-Type")
	_, pparams, err := mime.ParseMediaType(pct)
	if err != nil || pparams["boundary"] == "" {
		a.set("batch", "<first part is not a changeset: "+pct+">")
		return
	}
	if !strings.HasPrefix(pparams["boundary"], "changesetresponse_") || !reGUID.MatchString(strings.TrimPrefix(pparams["boundary"], "changesetresponse_")) {
		a.set("batch changeset boundary", "<malformed: "+pparams["boundary"]+">")
	}
	cr := multipart.NewReader(part, pparams["boundary"])
	n := 0
	for ; ; n++ {
		p, err := cr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			a.set(fmt.Sprintf("batch[%d]", n), "<malformed: "+err.Error()+">")
			break
		}
		prefix := fmt.Sprintf("batch[%d] ", n)
		a.set(prefix+"part Content-Type", p.Header.Get("Content-Type"))
		resp, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			a.set(prefix+"response", "<malformed: "+err.Error()+">")
			continue
		}
		pb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.set(prefix+"status", resp.Status)
		for _, k := range []string{"Preference-Applied", "DataServiceVersion", "Content-Type", "X-Content-Type-Options", "Cache-Control"} {
			if v := resp.Header.Get(k); v != "" {
				a.set(prefix+"header "+k, v)
			}
		}
		for _, k := range []string{"Location", "DataServiceId"} {
			if v := resp.Header.Get(k); v != "" {
				a.set(prefix+"header "+k, s.localURL(v))
			}
		}
		if v := resp.Header.Get("ETag"); v != "" {
			a.set(prefix+"header ETag", form("etag", reETag, v))
			if r.batch != nil && n < len(r.batch.ops) {
				a.etags[r.batch.ops[n].key()] = v
			}
		}
		if len(pb) > 0 {
			s.reduceJSON(a, prefix, pb)
		}
	}
	a.set("batch parts", strconv.Itoa(n))
}

func mapKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// dcase is one differential case: a table of its own, created on both
// services, and the requests sent to both in order.
type dcase struct {
	t     *testing.T
	rig   *rig
	table string
	// etags per service: what each returned, per entity, in order.
	azTags, emTags map[string][]string
}

// newCase creates the case's table on both services (and compares the
// answers).
func (rg *rig) newCase(t *testing.T, table string) *dcase {
	c := &dcase{t: t, rig: rg, table: table, azTags: map[string][]string{}, emTags: map[string][]string{}}
	c.do(&request{label: "create table", method: http.MethodPost, path: "/Tables",
		body: []byte(`{"TableName":"` + table + `"}`)})
	return c
}

// do sends r to Azurite, then to the emulator, compares the answers and
// returns both.
func (c *dcase) do(r *request) (az, em *answer) {
	c.t.Helper()
	ctx := context.Background()
	r.table = c.table
	az, err := c.rig.az.send(ctx, c.table, r, c.azTags)
	if err != nil {
		c.t.Fatalf("%s: azurite: %v", r.label, err)
	}
	em, err = c.rig.em.send(ctx, c.table, r, c.emTags)
	if err != nil {
		c.t.Fatalf("%s: emulator: %v", r.label, err)
	}
	for k, v := range az.etags {
		c.azTags[k] = append(c.azTags[k], v)
	}
	for k, v := range em.etags {
		c.emTags[k] = append(c.emTags[k], v)
	}
	c.compare(r, az, em)
	return az, em
}

// describe is a request as a failure message shows it.
func (c *dcase) describe(r *request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.method, tablePath(r.path, c.table))
	if len(r.query) > 0 {
		b.WriteString("?" + r.query.Encode())
	}
	if r.accept != "" {
		b.WriteString(" Accept: " + r.accept)
	}
	if r.prefer != "" {
		b.WriteString(" Prefer: " + r.prefer)
	}
	if r.ifMatch != noEtag {
		b.WriteString(" If-Match: " + map[etagKind]string{etagCurrent: "current", etagStale: "stale", etagStar: "*"}[r.ifMatch])
	}
	if r.body != nil {
		body := string(r.body)
		if len(body) > 600 {
			body = body[:600] + fmt.Sprintf("...(%d bytes)", len(r.body))
		}
		b.WriteString("\n  body: " + body)
	}
	if r.batch != nil {
		b.WriteString("\n  batch: " + r.batch.String())
	}
	return b.String()
}

// compare checks the two answers fact by fact; a difference must be
// explained by a known difference or an expected failure.
func (c *dcase) compare(r *request, az, em *answer) {
	c.t.Helper()
	keys := slices.Clone(az.order)
	for _, k := range em.order {
		if _, ok := az.facts[k]; !ok {
			keys = append(keys, k)
		}
	}
	var unexplained []string
	for _, k := range keys {
		av, aok := az.facts[k]
		ev, eok := em.facts[k]
		if aok == eok && av == ev {
			continue
		}
		if !aok {
			av = "<absent>"
		}
		if !eok {
			ev = "<absent>"
		}
		d := &fact{key: k, az: av, em: ev, azOK: aok, emOK: eok}
		if name := c.explain(r, az, em, d); name != "" {
			c.rig.mu.Lock()
			for _, n := range strings.Split(name, " + ") {
				c.rig.explained[n]++
			}
			c.rig.mu.Unlock()
			if c.rig.verbose {
				c.t.Logf("%s: %s: explained by %q: azurite %s, emulator %s", r.label, k, name, av, ev)
			}
			continue
		}
		unexplained = append(unexplained, fmt.Sprintf("  %s:\n    azurite:  %s\n    emulator: %s", k, clipN(av, 400), clipN(ev, 400)))
	}
	if c.rig.verbose {
		c.t.Logf("%s\n%s\n--- azurite:\n%s\n--- emulator:\n%s", r.label, c.describe(r), clip(az.raw), clip(em.raw))
	}
	if len(unexplained) > 0 {
		c.t.Errorf("%s (table %s, seed %d): the answers differ:\n%s\n%s\n--- azurite answered:\n%s\n--- emulator answered:\n%s",
			r.label, c.table, c.rig.seed, c.describe(r), strings.Join(unexplained, "\n"), clip(az.raw), clip(em.raw))
	}
}

func clip(s string) string { return clipN(s, 1500) }

func clipN(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// fact is one difference between the answers.
type fact struct {
	key        string
	az, em     string
	azOK, emOK bool
}

// explain returns the name of the known difference or expected failure
// that explains d, or "": one that explains it as a whole, or the
// entries whose rewrites, applied to both values, make them equal.
func (c *dcase) explain(r *request, az, em *answer, d *fact) string {
	if c.rig.self {
		return ""
	}
	all := append(slices.Clip(knownDifferences), expectedFailures...)
	for _, k := range all {
		if k.explains != nil && k.explains(r, az, em, d) {
			return k.name
		}
	}
	if !d.azOK || !d.emOK {
		return ""
	}
	av, ev := d.az, d.em
	var used []string
	for _, k := range all {
		if k.rewrite == nil {
			continue
		}
		a, e := k.rewrite(av), k.rewrite(ev)
		if a != av || e != ev {
			used = append(used, k.name)
		}
		av, ev = a, e
	}
	if av != ev || len(used) == 0 {
		return ""
	}
	return strings.Join(used, " + ")
}

// page follows a query's continuation on both services, comparing each
// page, up to max pages. Each service is sent its own continuation (they
// are compared, so they are the same unless a known difference explains
// them).
func (c *dcase) page(r *request, max int) {
	c.t.Helper()
	ctx := context.Background()
	var azNext, emNext *answer
	r.table = c.table
	for i := 0; i < max; i++ {
		azr, emr := *r, *r
		if i > 0 {
			if !azNext.hasNext && !emNext.hasNext {
				return
			}
			if azNext.hasNext != emNext.hasNext {
				return // compared already: a difference has been reported
			}
			azr.query = withNext(r.query, azNext)
			emr.query = withNext(r.query, emNext)
			azr.label = fmt.Sprintf("%s, page %d", r.label, i+1)
			emr.label = azr.label
		}
		az, err := c.rig.az.send(ctx, c.table, &azr, c.azTags)
		if err != nil {
			c.t.Fatalf("%s: azurite: %v", azr.label, err)
		}
		em, err := c.rig.em.send(ctx, c.table, &emr, c.emTags)
		if err != nil {
			c.t.Fatalf("%s: emulator: %v", azr.label, err)
		}
		c.compare(&azr, az, em)
		azNext, emNext = az, em
	}
}

func withNext(q url.Values, a *answer) url.Values {
	n := url.Values{}
	for k, v := range q {
		n[k] = v
	}
	n.Set("NextPartitionKey", a.nextPK)
	if a.nextRK != "" {
		n.Set("NextRowKey", a.nextRK)
	}
	return n
}

// checkExplained fails when a known difference or an expected failure
// explained nothing in a run that had the cases meant for it: an entry
// that no longer matches is stale (the emulator was fixed, or the
// difference is gone) and must be removed.
func (rg *rig) checkExplained(t *testing.T) {
	if rg.self {
		return
	}
	rg.mu.Lock()
	defer rg.mu.Unlock()
	var names []string
	for _, k := range knownDifferences {
		names = append(names, k.name)
	}
	for _, k := range expectedFailures {
		names = append(names, k.name)
	}
	sort.Strings(names)
	for _, n := range names {
		if rg.explained[n] == 0 {
			t.Errorf("known difference or expected failure %q explained nothing in this run: remove it if the difference is gone", n)
		} else if rg.verbose {
			t.Logf("%q explained %d facts", n, rg.explained[n])
		}
	}
}

package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// The forms of the values a service chooses. A value compared by its form
// is also remembered (see memory), so later requests that carry it work.
var (
	// tableETag is a Table service ETag: the entity's Timestamp,
	// URL-escaped, in a weak ETag.
	tableETag = regexp.MustCompile(`^W/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{1,7})?Z'"$`)
	// blobETag is a Blob or Queue service ETag: "0x" and 15 or 16 hex
	// digits, quoted.
	blobETag = regexp.MustCompile(`^"0x[0-9A-F]{15,16}"$`)
	// timestamp is an entity's Timestamp: UTC, at most 7 fractional
	// digits.
	timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z$`)
	// httpDate is an RFC 1123 date in GMT, as Last-Modified and the
	// queue's message times are written.
	httpDate = regexp.MustCompile(`^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$`)
	// guid is a lowercase GUID (request ids, message ids).
	guid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// base64Form is an opaque base64 value (a pop receipt).
	base64Form = regexp.MustCompile(`^[A-Za-z0-9+/]+=*$`)
	// messageTail is what follows the text of an error message: the
	// request's id and the time, 7 fractional digits.
	messageTail = regexp.MustCompile(`^\nRequestId:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\nTime:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$`)
	// snapshot is a blob snapshot's time, as x-ms-snapshot and the
	// snapshot query parameter carry it: UTC, 7 fractional digits.
	snapshot = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z$`)
	// batchBoundary is a batch or changeset response's boundary.
	batchBoundary = regexp.MustCompile(`^multipart/mixed; ?boundary=(batchresponse|changesetresponse)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// continuation reports whether v has the form of Azure's continuation
// tokens (NextPartitionKey, NextRowKey, NextTableName): "1!", the length
// of what follows, "!", and the key in base64 with '=' written as '-'.
func continuation(v string) bool {
	rest, ok := strings.CutPrefix(v, "1!")
	if !ok {
		return false
	}
	n, enc, ok := strings.Cut(rest, "!")
	if !ok {
		return false
	}
	l, err := strconv.Atoi(n)
	if err != nil || l != len(enc) {
		return false
	}
	for _, c := range enc {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// headerRule is how a recorded response header is compared.
type headerRule int

const (
	exactly        headerRule = iota // the same value
	ignored                          // the recorder's or the transport's, not the service's answer
	asURL                            // the recorded host rewritten to the target's, then the same
	asETag                           // an ETag's form; remembered
	asContinuation                   // Azure's continuation form; remembered
	asDate                           // an RFC 1123 date
	asPopReceipt                     // base64; remembered
	asContentType                    // the same, or a batch response's boundary by its form
	asSnapshot                       // a snapshot's time by its form; remembered
	asGUID                           // a GUID the service chose (a copy id); remembered
	asLeaseID                        // the proposed lease id when the request proposed one, else a GUID; remembered
)

// headerRules are the rules by lowercase name; a header not listed is
// compared exactly.
var headerRules = map[string]headerRule{
	"date":                   ignored,
	"server":                 ignored,
	"transfer-encoding":      ignored,
	"content-length":         ignored, // but on HEAD (see response): Azure sends 0 on a 204, Go's server none, which HTTP allows
	"cache-control":          ignored,
	"x-content-type-options": ignored,
	"x-ms-request-id":        ignored,
	"x-ms-client-request-id": ignored,
	"vary":                   ignored,
	"connection":             ignored,
	"keep-alive":             ignored,
	// The recording account had blob versioning on, an account setting
	// and not the API's answer: a version id says so, and nothing else.
	"x-ms-version-id":                    ignored,
	"x-ms-is-current-version":            ignored,
	"location":                           asURL,
	"dataserviceid":                      asURL,
	"etag":                               asETag,
	"x-ms-continuation-nextpartitionkey": asContinuation,
	"x-ms-continuation-nextrowkey":       asContinuation,
	"x-ms-continuation-nexttablename":    asContinuation,
	"last-modified":                      asDate,
	"x-ms-time-next-visible":             asDate,
	"x-ms-creation-time":                 asDate,
	"x-ms-popreceipt":                    asPopReceipt,
	"content-type":                       asContentType,
	"x-ms-snapshot":                      asSnapshot,
	"x-ms-copy-id":                       asGUID,
	"x-ms-lease-id":                      asLeaseID,
	"x-ms-copy-completion-time":          asDate,
	"x-ms-access-tier-change-time":       asDate,
	"x-ms-copy-source":                   asURL,
}

// differ collects the differences of one exchange.
type differ struct {
	t     *Target
	mem   *memory
	req   *Entry // the recorded exchange being compared
	diffs []string
}

func (d *differ) addf(format string, args ...any) {
	d.diffs = append(d.diffs, fmt.Sprintf(format, args...))
}

// response compares the target's answer (status, header, body) with the
// recorded one.
func (d *differ) response(e *Entry, status int, header http.Header, body []byte) {
	d.req = e
	if status != e.StatusCode {
		d.addf("status: recorded %d, got %d", e.StatusCode, status)
	}
	d.headers("", e.ResponseHeaders, header)
	if r, ok := e.responseHeader("Content-Length"); ok && e.RequestMethod == http.MethodHead {
		// A HEAD's Content-Length is the resource's size, not the
		// length of a body compared below.
		if g := header.Get("Content-Length"); g != r {
			d.addf("header Content-Length: recorded %q, got %q", r, g)
		}
	}
	ct, _ := e.responseHeader("Content-Type")
	rec, err := bodyBytes(e.ResponseBody, ct)
	if err != nil {
		d.addf("recorded body: %v", err)
		return
	}
	d.body("body", ct, rec, header.Get("Content-Type"), body)
}

// unrecorded are headers whose absence is part of the answer: a
// continuation where Azure gave none says there is more to read, an error
// code says the request failed, and DataServiceVersion, which the
// recordings keep wherever Azure sent it (a transaction's operations), is
// absent from the Table service's own answers, errors included.
var unrecorded = []string{
	"x-ms-continuation-NextPartitionKey",
	"x-ms-continuation-NextRowKey",
	"x-ms-continuation-NextTableName",
	"x-ms-error-code",
	"DataServiceVersion",
}

// headers compares the recorded headers with the target's, each by its
// rule. Headers the target adds are not compared, but for unrecorded.
func (d *differ) headers(where string, rec map[string]Header, got http.Header) {
	for _, name := range unrecorded {
		if g := got.Get(name); g != "" && !hasHeader(rec, name) {
			d.addf("%sheader %s: recorded none, got %q", where, name, g)
		}
	}
	for name, rv := range rec {
		r := string(rv)
		lname := strings.ToLower(name)
		rule := headerRules[lname]
		if strings.HasPrefix(lname, "access-control-") {
			rule = ignored
		}
		if rule == ignored {
			continue
		}
		vals, present := got[http.CanonicalHeaderKey(name)]
		g := strings.Join(vals, ", ")
		if !present {
			d.addf("%sheader %s: recorded %q, got none", where, name, r)
			continue
		}
		d.headerValue(where, name, rule, r, g)
	}
}

func hasHeader(h map[string]Header, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func (d *differ) headerValue(where, name string, rule headerRule, r, g string) {
	switch rule {
	case asURL:
		if want := d.t.rewriteHosts(r); g != want {
			d.addf("%sheader %s: want %q (recorded %q), got %q", where, name, want, r, g)
		}
	case asETag:
		d.form(where+"header "+name, r, g, func(v string) bool { return tableETag.MatchString(v) || blobETag.MatchString(v) })
	case asContinuation:
		d.form(where+"header "+name, r, g, continuation)
	case asDate:
		d.form(where+"header "+name, r, g, httpDate.MatchString)
	case asPopReceipt:
		d.form(where+"header "+name, r, g, base64Form.MatchString)
	case asSnapshot:
		d.form(where+"header "+name, r, g, snapshot.MatchString)
	case asGUID:
		d.form(where+"header "+name, r, g, guid.MatchString)
	case asLeaseID:
		if d.req == nil || d.req.proposesLease() {
			if g != r {
				d.addf("%sheader %s: recorded %q, got %q", where, name, r, g)
			}
			return
		}
		d.form(where+"header "+name, r, g, guid.MatchString)
	case asContentType:
		if batchBoundary.MatchString(r) {
			if !batchBoundary.MatchString(g) {
				d.addf("%sheader %s: recorded %q, got %q, not of its form", where, name, r, g)
			}
			return
		}
		if !sameMediaType(r, g) {
			d.addf("%sheader %s: recorded %q, got %q", where, name, r, g)
		}
	default:
		if g != r {
			d.addf("%sheader %s: recorded %q, got %q", where, name, r, g)
		}
	}
}

// sameMediaType reports whether two Content-Types are the same media type
// with the same parameters: spacing around ';' means nothing to a client
// (RFC 9110), and Azure itself writes it both ways (with spaces on a
// response, without inside a batch).
func sameMediaType(r, g string) bool {
	rt, rp, err1 := mime.ParseMediaType(r)
	gt, gp, err2 := mime.ParseMediaType(g)
	if err1 != nil || err2 != nil {
		return r == g
	}
	return rt == gt && reflect.DeepEqual(rp, gp)
}

// form checks that got has the form of a service-chosen value and
// remembers it in place of the recorded one.
func (d *differ) form(what, r, g string, ok func(string) bool) {
	if !ok(r) {
		// The rule does not describe what Azure answered: the rule is
		// wrong, and must be fixed rather than pass anything.
		d.addf("%s: recorded %q does not have the form the replay expects", what, r)
		return
	}
	// Remembered even when not of the form, so that the session's later
	// requests still mean what they meant (the difference is reported
	// once, here).
	d.mem.remember(r, g)
	if !ok(g) {
		d.addf("%s: recorded %q, got %q, not of its form", what, r, g)
	}
}

// body compares two bodies by the recorded Content-Type.
func (d *differ) body(where, recCT string, rec []byte, gotCT string, got []byte) {
	rct := strings.ToLower(recCT)
	switch {
	case len(rec) == 0:
		if len(bytes.TrimSpace(got)) > 0 {
			d.addf("%s: recorded none, got %q", where, clip(got))
		}
	case strings.Contains(rct, "json"):
		d.jsonBody(where, rec, got)
	case strings.HasPrefix(rct, "multipart/"):
		d.multipartBody(where, recCT, rec, gotCT, got)
	case strings.Contains(rct, "xml"):
		d.xmlBody(where, rec, got)
	default:
		if !bytes.Equal(rec, got) {
			d.addf("%s: recorded %q, got %q", where, clip(rec), clip(got))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// jsonBody compares two JSON documents structurally; numbers are compared
// as written (3.0 and 3 differ on the wire: one is a Double, one an Int32).
func (d *differ) jsonBody(where string, rec, got []byte) {
	rv, err := decodeJSON(rec)
	if err != nil {
		d.addf("%s: recorded JSON: %v", where, err)
		return
	}
	gv, err := decodeJSON(got)
	if err != nil {
		d.addf("%s: recorded JSON, got %q: %v", where, clip(got), err)
		return
	}
	d.jsonValue(where, rv, gv)
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// jsonValue compares recorded and got at path.
func (d *differ) jsonValue(path string, rec, got any) {
	switch r := rec.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			d.addf("%s: recorded an object, got %s", path, show(got))
			return
		}
		for k, rv := range r {
			gv, ok := g[k]
			if !ok {
				d.addf("%s.%s: recorded %s, got none", path, k, show(rv))
				continue
			}
			d.jsonMember(path+"."+k, k, rv, gv)
		}
		for k, gv := range g {
			if _, ok := r[k]; !ok {
				d.addf("%s.%s: not recorded, got %s", path, k, show(gv))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			d.addf("%s: recorded an array, got %s", path, show(got))
			return
		}
		if len(g) != len(r) {
			d.addf("%s: recorded %d elements, got %d", path, len(r), len(g))
		}
		for i := 0; i < len(r) && i < len(g); i++ {
			d.jsonValue(fmt.Sprintf("%s[%d]", path, i), r[i], g[i])
		}
	default:
		if !reflect.DeepEqual(rec, got) {
			d.addf("%s: recorded %s, got %s", path, show(rec), show(got))
		}
	}
}

// jsonMember compares an object's member by its name's rule.
func (d *differ) jsonMember(path, name string, rec, got any) {
	r, rok := rec.(string)
	g, gok := got.(string)
	if !rok || !gok {
		d.jsonValue(path, rec, got)
		return
	}
	switch {
	case name == "odata.metadata" || name == "odata.id" || name == "odata.editLink":
		if want := d.t.rewriteHosts(r); g != want {
			d.addf("%s: want %q (recorded %q), got %q", path, want, r, g)
		}
	case name == "odata.type":
		// <account>.<table> under full metadata: the recorded account
		// is the target's.
		want := r
		if _, rest, ok := strings.Cut(r, "."); ok {
			want = d.t.AccountName + "." + rest
		}
		if g != want {
			d.addf("%s: want %q (recorded %q), got %q", path, want, r, g)
		}
	case name == "odata.etag":
		d.form(path, r, g, tableETag.MatchString)
	case name == "Timestamp":
		d.form(path, r, g, timestamp.MatchString)
	case strings.HasSuffix(path, "odata.error.message.value"):
		d.message(path, r, g)
	default:
		if r != g {
			d.addf("%s: recorded %q, got %q", path, r, g)
		}
	}
}

// message compares an error message: its text exactly, the request id and
// time that Azure appends by their form.
func (d *differ) message(path, r, g string) {
	i := strings.Index(r, "\nRequestId:")
	if i < 0 {
		if r != g {
			d.addf("%s: recorded %q, got %q", path, r, g)
		}
		return
	}
	text, tail := r[:i], r[i:]
	if !messageTail.MatchString(tail) {
		d.addf("%s: recorded %q does not have the form the replay expects", path, r)
		return
	}
	gtext, gtail, ok := strings.Cut(g, "\nRequestId:")
	if !ok || gtext != text || !messageTail.MatchString("\nRequestId:"+gtail) {
		d.addf("%s: recorded %q, got %q", path, r, g)
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// part is one operation's answer inside a batch response.
type part struct {
	status int
	header http.Header
	body   []byte
}

// multipartBody compares two batch responses operation by operation.
func (d *differ) multipartBody(where, recCT string, rec []byte, gotCT string, got []byte) {
	rparts, err := parts(recCT, rec)
	if err != nil {
		d.addf("%s: recorded batch response: %v", where, err)
		return
	}
	gparts, err := parts(gotCT, got)
	if err != nil {
		d.addf("%s: recorded a batch response, got %q: %v", where, clip(got), err)
		return
	}
	if len(rparts) != len(gparts) {
		d.addf("%s: recorded %d operations' answers, got %d", where, len(rparts), len(gparts))
	}
	for i := 0; i < len(rparts) && i < len(gparts); i++ {
		rp, gp := rparts[i], gparts[i]
		at := fmt.Sprintf("%s operation %d: ", where, i)
		if rp.status != gp.status {
			d.addf("%sstatus: recorded %d, got %d", at, rp.status, gp.status)
		}
		rh := map[string]Header{}
		for k := range rp.header {
			rh[k] = Header(rp.header.Get(k))
		}
		d.headers(at, rh, gp.header)
		d.body(strings.TrimSuffix(at, ": ")+" body", rp.header.Get("Content-Type"), rp.body, gp.header.Get("Content-Type"), gp.body)
	}
}

// parts reads a batch response: its changeset's parts, or its own parts
// when an operation stands outside a changeset.
func parts(ct string, body []byte) ([]part, error) {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("Content-Type %q is not multipart with a boundary", ct)
	}
	var out []part
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		pct := p.Header.Get("Content-Type")
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(strings.ToLower(pct), "multipart/") {
			inner, err := parts(pct, b)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
			continue
		}
		// A part without a body may end with its last header line: the
		// multipart reader takes the blank line's CRLF as the delimiter's.
		b = append(b, "\r\n"...)
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
		if err != nil {
			return nil, fmt.Errorf("an operation's answer: %w", err)
		}
		rb, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil && err != io.ErrUnexpectedEOF {
			return nil, err
		}
		out = append(out, part{status: resp.StatusCode, header: resp.Header, body: bytes.TrimRight(rb, "\r\n")})
	}
}

// xnode is an XML element, for comparing Queue and Blob service bodies.
type xnode struct {
	name     string
	attrs    map[string]string
	children []*xnode
	text     string
}

// xmlBody compares two XML documents element by element.
func (d *differ) xmlBody(where string, rec, got []byte) {
	rn, err := parseXML(rec)
	if err != nil {
		d.addf("%s: recorded XML: %v", where, err)
		return
	}
	gn, err := parseXML(got)
	if err != nil {
		d.addf("%s: recorded XML, got %q: %v", where, clip(got), err)
		return
	}
	d.xmlNode(where+" "+rn.name, rn, gn)
}

func parseXML(b []byte) (*xnode, error) {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	var stack []*xnode
	var root *xnode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no element")
	}
	return root, nil
}

// xmlNode compares two elements: name, attributes, children in order,
// and text by the element's rule.
func (d *differ) xmlNode(path string, r, g *xnode) {
	if r.name != g.name {
		d.addf("%s: recorded element %s, got %s", path, r.name, g.name)
		return
	}
	for k, rv := range r.attrs {
		gv, ok := g.attrs[k]
		switch {
		case !ok:
			d.addf("%s@%s: recorded %q, got none", path, k, rv)
		case k == "ServiceEndpoint":
			if want := d.t.rewriteHosts(rv); gv != want && gv != want+"/" {
				d.addf("%s@%s: want %q (recorded %q), got %q", path, k, want, rv, gv)
			}
		case gv != rv:
			d.addf("%s@%s: recorded %q, got %q", path, k, rv, gv)
		}
	}
	var rn, gn []string
	for _, c := range r.children {
		rn = append(rn, c.name)
	}
	for _, c := range g.children {
		gn = append(gn, c.name)
	}
	if !reflect.DeepEqual(rn, gn) {
		// Compared one by one, the rest would differ only by the shift:
		// say which elements differ, each once, or that the order does.
		d.children(path, rn, gn)
		return
	}
	if len(r.children) > 0 {
		for i := 0; i < len(r.children) && i < len(g.children); i++ {
			d.xmlNode(path+"/"+r.children[i].name, r.children[i], g.children[i])
		}
		return
	}
	rt, gt := strings.TrimSpace(r.text), strings.TrimSpace(g.text)
	switch r.name {
	case "MessageId":
		d.form(path, rt, gt, guid.MatchString)
	case "PopReceipt":
		d.form(path, rt, gt, base64Form.MatchString)
	case "InsertionTime", "ExpirationTime", "TimeNextVisible", "Last-Modified", "Creation-Time",
		"AccessTierChangeTime", "CopyCompletionTime", "DeletedTime":
		d.form(path, rt, gt, httpDate.MatchString)
	case "Snapshot":
		d.form(path, rt, gt, snapshot.MatchString)
	case "CopyId":
		d.form(path, rt, gt, guid.MatchString)
	case "CopySource":
		if want := d.t.rewriteHosts(rt); gt != want {
			d.addf("%s: want %q (recorded %q), got %q", path, want, rt, gt)
		}
	case "Etag":
		d.form(path, rt, gt, func(v string) bool { return blobETag.MatchString(v) || blobETag.MatchString(`"`+v+`"`) })
	case "Message":
		d.message(path, rt, gt)
	case "Marker":
		// The marker the request sent: a NextMarker the replay
		// remembered is sent as the target answered it.
		if want := d.mem.value(rt); gt != want {
			d.addf("%s: want %q (recorded %q), got %q", path, want, rt, gt)
		}
	case "NextMarker":
		if (rt == "") != (gt == "") {
			d.addf("%s: recorded %q, got %q", path, rt, gt)
		}
		d.mem.remember(rt, gt)
	default:
		if rt != gt {
			d.addf("%s: recorded %q, got %q", path, rt, gt)
		}
	}
}

// children reports how two lists of child element names differ: each
// name recorded more or fewer times than got, or, the same names each as
// often, their order.
func (d *differ) children(path string, rec, got []string) {
	count := func(names []string) (map[string]int, []string) {
		m := map[string]int{}
		var order []string
		for _, n := range names {
			if m[n] == 0 {
				order = append(order, n)
			}
			m[n]++
		}
		return m, order
	}
	rc, rorder := count(rec)
	gc, gorder := count(got)
	same := true
	for _, n := range rorder {
		switch {
		case gc[n] == 0 && rc[n] == 1:
			d.addf("%s: recorded element %s, got none", path, n)
		case gc[n] != rc[n]:
			d.addf("%s: recorded %d %s elements, got %d", path, rc[n], n, gc[n])
		default:
			continue
		}
		same = false
	}
	for _, n := range gorder {
		if rc[n] == 0 {
			d.addf("%s: element %s not recorded", path, n)
			same = false
		}
	}
	if same {
		d.addf("%s: recorded children in the order %v, got %v", path, rec, got)
	}
}

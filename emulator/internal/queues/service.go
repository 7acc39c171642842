package queues

import (
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/body"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// serveService answers the account-level operations: List Queues, Get and
// Set Queue Service Properties, Get Queue Service Stats (on the secondary
// endpoint).
func (s *Service) serveService(w http.ResponseWriter, r *http.Request, q url.Values, secondary bool) *answer.Error {
	comp, restype := q.Get("comp"), q.Get("restype")
	switch {
	case comp == "list" && restype == "":
		if r.Method != http.MethodGet {
			return answer.UnsupportedHTTPVerb()
		}
		if e := s.authorize(r, 's', 'l', ""); e != nil {
			return e
		}
		return s.listQueues(w, r, q)
	case restype == "service" && comp == "properties":
		switch r.Method {
		case http.MethodGet:
			if e := s.authorize(r, 's', 'r', ""); e != nil {
				return e
			}
			s.mu.RLock()
			p := s.props
			s.mu.RUnlock()
			s.writeXML(w, r, http.StatusOK, &p)
			return nil
		case http.MethodPut:
			if e := s.authorize(r, 's', 'w', ""); e != nil {
				return e
			}
			return s.setProperties(w, r)
		}
		return answer.UnsupportedHTTPVerb()
	case restype == "service" && comp == "stats":
		if r.Method != http.MethodGet {
			return answer.UnsupportedHTTPVerb()
		}
		if e := s.authorize(r, 's', 'r', ""); e != nil {
			return e
		}
		// Azure answers statistics on the secondary endpoint only (on
		// the primary: 400 InvalidQueryParameterValue, as Azurite
		// answers too).
		if !secondary {
			return answer.InvalidQueryParameter("comp", comp, "")
		}
		var st struct {
			XMLName xml.Name `xml:"StorageServiceStats"`
			Status  string   `xml:"GeoReplication>Status"`
			Sync    string   `xml:"GeoReplication>LastSyncTime"`
		}
		st.Status, st.Sync = "live", s.now().Format(http.TimeFormat)
		s.writeXML(w, r, http.StatusOK, &st)
		return nil
	}
	if comp == "properties" || comp == "stats" {
		return answer.InvalidQueryParameter("restype", restype, "")
	}
	return answer.InvalidQueryParameter("comp", comp, "")
}

// listResult is List Queues' answer.
type listResult struct {
	XMLName    xml.Name    `xml:"EnumerationResults"`
	Endpoint   string      `xml:"ServiceEndpoint,attr"`
	Prefix     *string     `xml:"Prefix"`
	Marker     *string     `xml:"Marker"`
	MaxResults *int        `xml:"MaxResults"`
	Queues     []listQueue `xml:"Queues>Queue"`
	NextMarker string      `xml:"NextMarker"`
}

type listQueue struct {
	Name     string    `xml:"Name"`
	Metadata *metadata `xml:"Metadata"`
}

// metadata writes a queue's metadata as XML elements named by the names.
type metadata map[string]string

// MarshalXML writes the metadata sorted by name.
func (m metadata) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := e.EncodeElement(m[k], xml.StartElement{Name: xml.Name{Local: k}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// maxListResults is the most queues one List Queues page holds.
const maxListResults = 5000

// listQueues answers List Queues: queues in name order from the marker
// (Azure's "/account/queue" form, the first queue of the page), at most
// maxresults of them, with NextMarker naming the next page's first queue.
func (s *Service) listQueues(w http.ResponseWriter, r *http.Request, q url.Values) *answer.Error {
	res := listResult{Endpoint: endpoint(r, s.cfg.Account)}
	limit := maxListResults
	if v, ok := q["maxresults"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return answer.InvalidQueryParameter("maxresults", v[0], "")
		}
		if n <= 0 {
			return answer.OutOfRangeQueryParameter("maxresults", v[0], 1, math.MaxInt32)
		}
		res.MaxResults = &n
		limit = min(n, maxListResults)
	}
	prefix := q.Get("prefix")
	if _, ok := q["prefix"]; ok {
		res.Prefix = &prefix
	}
	var from string
	if v, ok := q["marker"]; ok && v[0] != "" {
		m := v[0]
		res.Marker = &m
		from = strings.TrimPrefix(m, "/"+s.cfg.Account+"/")
	}
	withMeta := false
	for _, inc := range strings.Split(q.Get("include"), ",") {
		switch inc {
		case "metadata":
			withMeta = true
		case "":
		default:
			return answer.InvalidQueryParameter("include", q.Get("include"), "")
		}
	}

	s.mu.RLock()
	names := make([]string, 0, len(s.queues))
	for name := range s.queues {
		if strings.HasPrefix(name, prefix) && name >= from {
			names = append(names, name)
		}
	}
	queues := make([]*queue, 0, min(len(names), limit+1))
	sort.Strings(names)
	if len(names) > limit {
		res.NextMarker = "/" + s.cfg.Account + "/" + names[limit]
		names = names[:limit]
	}
	for _, name := range names {
		queues = append(queues, s.queues[name])
	}
	s.mu.RUnlock()

	for _, qu := range queues {
		lq := listQueue{Name: qu.name}
		if withMeta {
			qu.mu.Lock()
			md := metadata(copyMap(qu.metadata))
			qu.mu.Unlock()
			lq.Metadata = &md
		}
		res.Queues = append(res.Queues, lq)
	}
	s.writeXML(w, r, http.StatusOK, &res)
	return nil
}

// endpoint is the service's URL as List Queues writes it.
func endpoint(r *http.Request, account string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/" + account + "/"
}

// setProperties answers Set Queue Service Properties: the elements the
// body holds replace the stored ones; those it leaves out stay.
func (s *Service) setProperties(w http.ResponseWriter, r *http.Request) *answer.Error {
	body, e := readBody(r)
	if e != nil {
		return e
	}
	p, e := svcprops.Parse(body)
	if e != nil {
		return e
	}
	s.mu.Lock()
	s.props.Merge(p)
	pending := s.saveProperties()
	s.mu.Unlock()
	if e := wait(pending); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusAccepted)
	return nil
}

// maxBody bounds what a request body may hold; a message's own limit is
// far lower (maxMessage).
const maxBody = 4 << 20

// readBody reads r's body once, into a buffer of its Content-Length
// (package body), or answers RequestBodyTooLarge past maxBody (unread when
// the Content-Length says so) and OperationTimedOut when the server's read
// deadline cut it. Callers authorize r first.
func readBody(r *http.Request) ([]byte, *answer.Error) {
	b, f := body.Read(r, maxBody)
	switch f {
	case body.OK:
		return b, nil
	case body.TooLarge:
		return nil, answer.RequestBodyTooLarge()
	case body.TimedOut:
		return nil, answer.OperationTimedOut()
	case body.Unauthorized:
		return nil, answer.InternalError()
	}
	return nil, answer.InvalidXMLDocument()
}

// writeXML answers status with v as the body; reads are not to be cached.
func (s *Service) writeXML(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		answer.WriteXML(w, r, answer.InternalError())
		return
	}
	h := s.begin(w, r)
	h.Set("Content-Type", "application/xml")
	if r.Method == http.MethodGet {
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?>`)
		w.Write(b)
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

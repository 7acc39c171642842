package blobs

import (
	"encoding/xml"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// createContainer is Create Container: 201, or 409
// ContainerAlreadyExists.
func (s *Service) createContainer(q *request) *answer.Error {
	md, e := parseMetadata(q.r.Header)
	if e != nil {
		return e
	}
	access, e := parsePublicAccess(q.r.Header)
	if e != nil {
		return e
	}
	s.mu.Lock()
	if _, ok := s.containers[q.container]; ok {
		s.mu.Unlock()
		return errContainerAlreadyExists
	}
	now, etag := s.clock.next()
	c := &container{name: q.container, meta: md, etag: etag, modified: now, access: access,
		blobs: map[string]*blob{}, staged: map[string]*staging{}}
	s.containers[q.container] = c
	i, _ := slices.BinarySearch(s.names, q.container)
	s.names = slices.Insert(s.names, i, q.container)
	q.pending = s.saveContainer(c, true)
	s.mu.Unlock()
	setVersion(q, etag, now)
	q.w.WriteHeader(http.StatusCreated)
	return nil
}

// deleteContainer is Delete Container: 202, 404 ContainerNotFound, or
// 412 when If-Modified-Since or If-Unmodified-Since fails.
func (s *Service) deleteContainer(q *request) *answer.Error {
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	cond.onContainer = true
	if cond.hasMatch || cond.hasNoneMatch {
		return errUnsupportedCondition
	}
	s.mu.Lock()
	c := s.containers[q.container]
	if c == nil {
		s.mu.Unlock()
		return errContainerNotFound
	}
	c.mu.Lock()
	if e := cond.write(true, c.etag, c.modified, c.lease); e != nil {
		c.mu.Unlock()
		s.mu.Unlock()
		return e
	}
	c.deleted = true
	c.mu.Unlock()
	delete(s.containers, q.container)
	i, _ := slices.BinarySearch(s.names, q.container)
	s.names = slices.Delete(s.names, i, i+1)
	q.pending = s.dropContainer(q.container)
	s.mu.Unlock()
	setCommon(q.w.Header(), q.r)
	q.w.WriteHeader(http.StatusAccepted)
	return nil
}

// containerProperties is Get Container Properties and Get Container
// Metadata.
func (s *Service) containerProperties(q *request) *answer.Error {
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	md, etag, modified, access, l := c.meta, c.etag, c.modified, c.access, c.lease.current(s.cfg.Now)
	c.mu.RUnlock()
	cond := conditions{leaseID: q.r.Header.Get("x-ms-lease-id"), onContainer: true}
	if e := cond.lease(true, l, false); e != nil {
		return e
	}
	h := setVersion(q, etag, modified)
	setMetadataHeaders(h, md)
	if q.comp == "" {
		setLeaseHeaders(h, l)
		if access != "" {
			h.Set("x-ms-blob-public-access", access)
		}
		h.Set("x-ms-has-immutability-policy", "false")
		h.Set("x-ms-has-legal-hold", "false")
		h.Set("x-ms-default-encryption-scope", "$account-encryption-key")
		h.Set("x-ms-deny-encryption-scope-override", "false")
		h.Set("x-ms-immutable-storage-with-versioning-enabled", "false")
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// setContainerMetadata is Set Container Metadata: it replaces the
// metadata. Only If-Modified-Since applies.
func (s *Service) setContainerMetadata(q *request) *answer.Error {
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	cond.onContainer, cond.leaseOptional = true, true
	if cond.hasMatch || cond.hasNoneMatch || cond.hasUnmodSince {
		return errUnsupportedCondition
	}
	md, e := parseMetadata(q.r.Header)
	if e != nil {
		return e
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	if e := cond.write(true, c.etag, c.modified, c.lease); e != nil {
		c.mu.Unlock()
		return e
	}
	now, etag := s.clock.next()
	c.meta, c.etag, c.modified = md, etag, now
	q.pending = s.saveContainer(c, false)
	c.mu.Unlock()
	setVersion(q, etag, now)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// maxResults is the largest page of a listing.
const maxResults = 5000

// listParams are a listing's query parameters.
type listParams struct {
	prefix, marker, delimiter string
	max                       int
	maxGiven                  bool
	metadata                  bool
	snapshots, copy           bool // include=snapshots, include=copy
	tags                      bool // include=tags
}

// parseList reads prefix, marker, maxresults and include. maxresults
// must be a positive integer; above 5000 it is 5000.
func parseList(q *request, includes []string) (listParams, *answer.Error) {
	v := q.query
	p := listParams{prefix: v.Get("prefix"), marker: v.Get("marker"), delimiter: v.Get("delimiter"), max: maxResults}
	if m := v.Get("maxresults"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil {
			return p, answer.InvalidQueryParameter("maxresults", m, "")
		}
		if n < 1 {
			return p, answer.OutOfRangeQueryParameter("maxresults", m, 1, math.MaxInt32)
		}
		p.max, p.maxGiven = min(n, maxResults), true
	}
	for _, inc := range v["include"] {
		for _, item := range strings.Split(inc, ",") {
			item = strings.ToLower(strings.TrimSpace(item))
			if item == "" {
				continue
			}
			if !slices.Contains(includes, item) {
				return p, answer.InvalidQueryParameter("include", inc, "")
			}
			switch item {
			case "metadata":
				p.metadata = true
			case "snapshots":
				p.snapshots = true
			case "copy":
				p.copy = true
			case "tags":
				p.tags = true
			}
		}
	}
	return p, nil
}

// xmlMetadata writes metadata as <Metadata><name>value</name>...</Metadata>.
type xmlMetadata metadata

// MarshalXML writes the pairs as elements named by the metadata names.
func (m xmlMetadata) MarshalXML(enc *xml.Encoder, start xml.StartElement) error {
	if err := enc.EncodeToken(start); err != nil {
		return err
	}
	for _, p := range m {
		if err := enc.EncodeElement(p.value, xml.StartElement{Name: xml.Name{Local: p.name}}); err != nil {
			return err
		}
	}
	return enc.EncodeToken(start.End())
}

type xmlContainer struct {
	Name       string `xml:"Name"`
	Properties struct {
		LastModified                          string `xml:"Last-Modified"`
		Etag                                  string `xml:"Etag"`
		LeaseStatus                           string `xml:"LeaseStatus"`
		LeaseState                            string `xml:"LeaseState"`
		LeaseDuration                         string `xml:"LeaseDuration,omitempty"`
		PublicAccess                          string `xml:"PublicAccess,omitempty"`
		DefaultEncryptionScope                string `xml:"DefaultEncryptionScope"`
		DenyEncryptionScopeOverride           bool   `xml:"DenyEncryptionScopeOverride"`
		HasImmutabilityPolicy                 bool   `xml:"HasImmutabilityPolicy"`
		HasLegalHold                          bool   `xml:"HasLegalHold"`
		ImmutableStorageWithVersioningEnabled bool   `xml:"ImmutableStorageWithVersioningEnabled"`
	} `xml:"Properties"`
	Metadata *xmlMetadata `xml:"Metadata,omitempty"`
}

type xmlContainerList struct {
	XMLName         xml.Name       `xml:"EnumerationResults"`
	ServiceEndpoint string         `xml:"ServiceEndpoint,attr"`
	Prefix          *string        `xml:"Prefix,omitempty"`
	Marker          *string        `xml:"Marker,omitempty"`
	MaxResults      *int           `xml:"MaxResults,omitempty"`
	Containers      []xmlContainer `xml:"Containers>Container"`
	NextMarker      string         `xml:"NextMarker"`
}

// listContainers is List Containers: names in order from the marker,
// a page of at most maxresults, and NextMarker where the next page
// starts ("/ACCOUNT/NAME", as Azure writes it).
func (s *Service) listContainers(q *request) *answer.Error {
	p, e := parseList(q, []string{"metadata", "deleted", "system"})
	if e != nil {
		return e
	}
	out := xmlContainerList{ServiceEndpoint: serviceEndpoint(q.r, s.cfg.Account)}
	echoListParams(q, &out.Prefix, &out.Marker, &out.MaxResults, p)
	start := max(strings.TrimPrefix(p.marker, "/"+s.cfg.Account+"/"), p.prefix)
	s.mu.RLock()
	i, _ := slices.BinarySearch(s.names, start)
	var cs []*container
	for ; i < len(s.names); i++ {
		name := s.names[i]
		if !strings.HasPrefix(name, p.prefix) {
			break
		}
		if len(cs) == p.max {
			out.NextMarker = "/" + s.cfg.Account + "/" + name
			break
		}
		cs = append(cs, s.containers[name])
	}
	s.mu.RUnlock()
	out.Containers = []xmlContainer{}
	now := s.cfg.Now()
	for _, c := range cs {
		c.mu.RLock()
		var x xmlContainer
		x.Name = c.name
		x.Properties.LastModified = httpTime(c.modified)
		x.Properties.Etag = c.etag
		l := c.lease.at(now)
		x.Properties.LeaseStatus, x.Properties.LeaseState, x.Properties.LeaseDuration = l.status(), l.state.String(), l.duration()
		x.Properties.PublicAccess = c.access
		x.Properties.DefaultEncryptionScope = "$account-encryption-key"
		if p.metadata {
			md := xmlMetadata(c.meta)
			x.Metadata = &md
		}
		c.mu.RUnlock()
		out.Containers = append(out.Containers, x)
	}
	return writeXMLBody(q, out)
}

// echoListParams sets the elements a listing echoes: those the request
// gave.
func echoListParams(q *request, prefix, marker **string, max **int, p listParams) {
	v := q.query
	if v.Has("prefix") {
		*prefix = &p.prefix
	}
	if v.Has("marker") {
		*marker = &p.marker
	}
	if p.maxGiven {
		*max = &p.max
	}
}

// serviceEndpoint is the account's endpoint as listings name it: with a
// trailing slash, as Azure's ServiceEndpoint="https://ACCOUNT.blob.core.windows.net/"
// (the Python and .NET SDKs' recorded listings) and the Queue service's.
func serviceEndpoint(r *http.Request, account string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/" + account + "/"
}

// writeXMLBody answers 200 with v as the XML body.
func writeXMLBody(q *request, v any) *answer.Error {
	b, err := xml.Marshal(v)
	if err != nil {
		return answer.InternalError()
	}
	b = append([]byte(xml.Header[:len(xml.Header)-1]), b...)
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	q.w.WriteHeader(http.StatusOK)
	q.w.Write(b)
	return nil
}

// httpTime writes t as HTTP headers and listings write times.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

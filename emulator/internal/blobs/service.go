package blobs

import (
	"encoding/xml"
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/cors"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// secondarySuffix ends the account segment of a request to the
// account's read-only secondary endpoint (path-style, as Azurite takes
// it: /ACCOUNT-secondary/...). Azure's secondary of an RA-GRS account
// serves reads; the emulator's answers them from the same data, with no
// replication lag.
const secondarySuffix = "-secondary"

// serviceProperties is Get Blob Service Properties.
func (s *Service) serviceProperties(q *request) *answer.Error {
	s.mu.RLock()
	p := s.props
	s.mu.RUnlock()
	return writeXMLBody(q, &p)
}

// setServiceProperties is Set Blob Service Properties: 202 once the
// elements the body holds replace the stored ones.
func (s *Service) setServiceProperties(q *request) *answer.Error {
	body, e := readBody(q, maxPropertiesBody)
	if e != nil {
		return e
	}
	p, e := svcprops.Parse(body)
	if e != nil {
		return e
	}
	s.mu.Lock()
	s.props.Merge(p)
	q.pending = s.saveProperties()
	s.mu.Unlock()
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusAccepted)
	return nil
}

// maxPropertiesBody bounds a Set Blob Service Properties body; the
// document is a few KiB at most.
const maxPropertiesBody = 1 << 20

// corsRules returns the service's CORS rules.
func (s *Service) corsRules() []cors.Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.props.CorsRules()
}

// preflight answers an OPTIONS request (Preflight Blob Request): without
// credentials, against the service's rules whatever the path names.
func (s *Service) preflight(w http.ResponseWriter, r *http.Request) {
	if e := cors.Preflight(w.Header(), r, s.corsRules()); e != nil {
		writeError(w, r, e)
		return
	}
	setCommon(w.Header(), r)
	w.WriteHeader(http.StatusOK)
}

// serviceStats is Get Blob Service Stats, which Azure answers on the
// secondary endpoint only (on the primary: 400 InvalidQueryParameterValue,
// as Azurite answers too): geo-replication live, synchronized now.
func (s *Service) serviceStats(q *request) *answer.Error {
	if !q.secondary {
		return answer.InvalidQueryParameter("comp", q.comp, "")
	}
	var st struct {
		XMLName xml.Name `xml:"StorageServiceStats"`
		Status  string   `xml:"GeoReplication>Status"`
		Sync    string   `xml:"GeoReplication>LastSyncTime"`
	}
	st.Status, st.Sync = "live", httpTime(s.cfg.Now())
	return writeXMLBody(q, &st)
}

// containerACL is Get Container ACL: the container's public access level
// in x-ms-blob-public-access and its stored access policies.
func (s *Service) containerACL(q *request) *answer.Error {
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	etag, modified, access, l := c.etag, c.modified, c.access, c.lease.current(s.cfg.Now)
	doc := acl.Document{List: c.acl}
	c.mu.RUnlock()
	// A lease ID given must be the container's lease (REST "Get
	// Container ACL").
	cond := conditions{leaseID: q.r.Header.Get("x-ms-lease-id"), onContainer: true}
	if e := cond.lease(true, l, false); e != nil {
		return e
	}
	h := q.w.Header()
	if access != "" {
		h.Set("x-ms-blob-public-access", access)
	}
	h.Set("ETag", etag)
	h.Set("Last-Modified", httpTime(modified))
	return writeXMLBody(q, &doc)
}

// accountProperties is Get Account Information: the account's SKU and
// kind.
func (s *Service) accountProperties(q *request) *answer.Error {
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("x-ms-sku-name", "Standard_RAGRS")
	h.Set("x-ms-account-kind", "StorageV2")
	h.Set("x-ms-is-hns-enabled", "false")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

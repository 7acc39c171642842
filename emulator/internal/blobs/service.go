package blobs

import (
	"encoding/xml"
	"net/http"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// secondarySuffix ends the account segment of a request to the
// account's read-only secondary endpoint (path-style, as Azurite takes
// it: /ACCOUNT-secondary/...). Azure's secondary of an RA-GRS account
// serves reads; the emulator's answers them from the same data, with no
// replication lag.
const secondarySuffix = "-secondary"

// serviceProperties is Get Blob Service Properties' answer: a new
// account's, analytics, soft delete and static websites off, no CORS
// rules (what the service shows until they are set; the emulator does not
// set them: Set Blob Service Properties answers 501).
type serviceProperties struct {
	XMLName       xml.Name `xml:"StorageServiceProperties"`
	Logging       logging  `xml:"Logging"`
	HourMetrics   metrics  `xml:"HourMetrics"`
	MinuteMetrics metrics  `xml:"MinuteMetrics"`
	Cors          struct{} `xml:"Cors"`
	DeleteRetain  enabled  `xml:"DeleteRetentionPolicy"`
	StaticWebsite enabled  `xml:"StaticWebsite"`
}

type logging struct {
	Version         string  `xml:"Version"`
	Delete          bool    `xml:"Delete"`
	Read            bool    `xml:"Read"`
	Write           bool    `xml:"Write"`
	RetentionPolicy enabled `xml:"RetentionPolicy"`
}

type metrics struct {
	Version         string  `xml:"Version"`
	Enabled         bool    `xml:"Enabled"`
	RetentionPolicy enabled `xml:"RetentionPolicy"`
}

type enabled struct {
	Enabled bool `xml:"Enabled"`
}

// serviceProperties is Get Blob Service Properties.
func (s *Service) serviceProperties(q *request) *answer.Error {
	return writeXMLBody(q, &serviceProperties{
		Logging:       logging{Version: "1.0"},
		HourMetrics:   metrics{Version: "1.0"},
		MinuteMetrics: metrics{Version: "1.0"},
	})
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
	st.Status, st.Sync = "live", httpTime(time.Now())
	return writeXMLBody(q, &st)
}

// containerACL is Get Container ACL: the container's public access level
// in x-ms-blob-public-access and its stored access policies.
func (s *Service) containerACL(q *request) *answer.Error {
	c, e := s.rlockContainer(q.container)
	if e != nil {
		return e
	}
	etag, modified, access, l := c.etag, c.modified, c.access, c.lease.current()
	doc := signedIdentifiers{List: c.acl}
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

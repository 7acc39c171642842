// Package acl is the stored access policies document of Set Container
// ACL, Set Queue ACL and Set Table ACL (a SignedIdentifiers XML body), read
// and checked once for the three services: at most azrules.MaxStoredAccessPolicies policies, ids
// of 1 to 64 characters, permissions among the service's letters, start
// and expiry times in one of the ISO 8601 forms Azure takes (a date alone
// included, kept as midnight UTC and read back in Azure's form,
// 2011-10-11T00:00:00.0000000Z: the Python SDK's recorded
// test_set_table_acl_with_signed_identifiers of 2017, strong, and of 2021,
// which reads 2021-06-08T02:05:09Z back as 2021-06-08T02:05:09.0000000Z);
// anything else is 400 InvalidXmlDocument,
// as Azure documents the limits (REST "Set Container ACL", "Set Queue
// ACL", "Set Table ACL", "Define a stored access policy"). The error code
// is Azurite 3.37's for six policies or a letter out of place on each
// service (its TableHandler.setAccessPolicy and the Blob and Queue
// handlers): medium evidence, as no recording of Azure shows that answer.
package acl

import (
	"encoding/xml"
	"strings"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// Permission letters a stored access policy may hold, per service, in
// the order Azure documents them (REST "Create a service SAS").
const (
	ContainerPermissions = "racwdxyltmeopi"
	QueuePermissions     = "raup"
	TablePermissions     = "raud"
)

// maxIDLength is the longest signed identifier ("Establishing a stored
// access policy": "up to 64 characters").
const maxIDLength = 64

// Document is a SignedIdentifiers body, as set and as read back.
type Document struct {
	XMLName xml.Name     `xml:"SignedIdentifiers"`
	List    []Identifier `xml:"SignedIdentifier"`
}

// Identifier is one stored access policy. Its fields are the XML's, and
// a location stores them as JSON under the same names.
type Identifier struct {
	ID     string `xml:"Id"`
	Policy Policy `xml:"AccessPolicy"`
}

// Policy is a stored access policy's fields; an empty one is left to the
// SAS that names it.
type Policy struct {
	Start      string `xml:"Start,omitempty"`
	Expiry     string `xml:"Expiry,omitempty"`
	Permission string `xml:"Permission,omitempty"`
}

// Parse reads a Set ... ACL body whose permissions must be among letters
// (ContainerPermissions, QueuePermissions, TablePermissions). An empty body is no policy
// (it removes them all). The policies' times come back in Azure's form.
func Parse(body []byte, letters string) ([]Identifier, *answer.Error) {
	var doc Document
	if len(body) > 0 {
		if err := xml.Unmarshal(body, &doc); err != nil {
			return nil, answer.InvalidXMLDocument()
		}
	}
	if len(doc.List) > azrules.MaxStoredAccessPolicies {
		return nil, answer.InvalidXMLDocument()
	}
	for i := range doc.List {
		si := &doc.List[i]
		if si.ID == "" || len(si.ID) > maxIDLength {
			return nil, answer.InvalidXMLDocument()
		}
		for _, r := range si.Policy.Permission {
			if !strings.ContainsRune(letters, r) {
				return nil, answer.InvalidXMLDocument()
			}
		}
		for _, t := range []*string{&si.Policy.Start, &si.Policy.Expiry} {
			if *t == "" {
				continue
			}
			v, ok := parseTime(*t)
			if !ok {
				return nil, answer.InvalidXMLDocument()
			}
			*t = v.Format(azureTime)
		}
	}
	return doc.List, nil
}

// azureTime is the form Azure reads a policy's times back in: UTC, seven
// fractional digits.
const azureTime = "2006-01-02T15:04:05.0000000Z"

// timeForms are the ISO 8601 forms a policy's time may take, as a SAS's
// st and se may (REST "Create a service SAS": a date, a date with hours
// and minutes, with seconds, with a fraction; Z or an offset).
var timeForms = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"}

// parseTime reads a policy's time in one of timeForms, in UTC.
func parseTime(s string) (time.Time, bool) {
	for _, f := range timeForms {
		if t, err := time.Parse(f, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// Marshal writes list as Get ... ACL answers it, times in Azure's form
// (Document's MarshalXML).
func Marshal(list []Identifier) []byte {
	b, _ := xml.Marshal(Document{List: list})
	return append([]byte(xml.Header[:len(xml.Header)-1]), b...)
}

// MarshalXML writes d as Get ... ACL answers it: an identifier whose
// policy is empty has no AccessPolicy element, as Azure reads one back
// (the Python SDKs' recorded set_queue_acl_with_empty_signed_identifier
// and set_container_acl_with_empty_signed_identifier, 2019, and
// set_table_acl_with_empty_signed_identifier, 2017: set with
// <AccessPolicy />, read back as <SignedIdentifier><Id>empty</Id></SignedIdentifier>).
func (d Document) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	type identifier struct {
		ID     string  `xml:"Id"`
		Policy *Policy `xml:"AccessPolicy,omitempty"`
	}
	out := struct {
		List []identifier `xml:"SignedIdentifier"`
	}{}
	for _, si := range d.List {
		id := identifier{ID: si.ID}
		if si.Policy != (Policy{}) {
			p := si.Policy
			id.Policy = &p
		}
		out.List = append(out.List, id)
	}
	start.Name = xml.Name{Local: "SignedIdentifiers"}
	return e.EncodeElement(out, start)
}

// Find returns the policy id of list as the Authenticator checks a SAS
// that names it (si), and false when list has none.
func Find(list []Identifier, id string) (auth.AccessPolicy, bool) {
	for _, si := range list {
		if si.ID != id {
			continue
		}
		p := auth.AccessPolicy{Permission: si.Policy.Permission}
		// Times were checked when the policy was set.
		p.Start, _ = parseTime(si.Policy.Start)
		p.Expiry, _ = parseTime(si.Policy.Expiry)
		return p, true
	}
	return auth.AccessPolicy{}, false
}

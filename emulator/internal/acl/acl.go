// Package acl is the stored access policies document of Set Container
// ACL, Set Queue ACL and Set Table ACL (a SignedIdentifiers XML body), read
// and checked once for the three services: at most azrules.MaxStoredAccessPolicies policies, ids
// of 1 to 64 characters, permissions among the service's letters, start
// and expiry times in ISO 8601; anything else is 400 InvalidXmlDocument,
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
// (it removes them all).
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
	for _, si := range doc.List {
		if si.ID == "" || len(si.ID) > maxIDLength {
			return nil, answer.InvalidXMLDocument()
		}
		for _, r := range si.Policy.Permission {
			if !strings.ContainsRune(letters, r) {
				return nil, answer.InvalidXMLDocument()
			}
		}
		for _, t := range []string{si.Policy.Start, si.Policy.Expiry} {
			if t == "" {
				continue
			}
			if _, err := time.Parse(time.RFC3339Nano, t); err != nil {
				return nil, answer.InvalidXMLDocument()
			}
		}
	}
	return doc.List, nil
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
		p.Start, _ = time.Parse(time.RFC3339Nano, si.Policy.Start)
		p.Expiry, _ = time.Parse(time.RFC3339Nano, si.Policy.Expiry)
		return p, true
	}
	return auth.AccessPolicy{}, false
}

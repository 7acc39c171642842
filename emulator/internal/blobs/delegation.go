package blobs

import (
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// Get User Delegation Key (POST /ACCOUNT?restype=service&comp=userdelegationkey),
// as Azure answers it: only to a bearer token (Shared Key and SAS are
// 403 AuthenticationFailed, "Only authentication scheme Bearer is
// supported"), for a KeyInfo body whose Start (optional: now) and Expiry
// are at most seven days ahead, with a UserDelegationKey naming the
// token's oid and tid, the window to the second, service b, the request's
// version and the key's value (auth.DelegationKeyValue: derived from the
// account key and the key's fields, so that the same SAS is accepted
// after a restart). The user delegation SAS signed with it is checked by
// package auth.

// maxKeyInfoBody bounds a KeyInfo body: three short elements.
const maxKeyInfoBody = 64 << 10

// maxKeyAhead is how far ahead a user delegation key may start or end
// ("within seven days of the current time", REST "Get User Delegation
// Key"; a real account refuses an Expiry 7 days and 1 second after the
// request: Azure/azure-powershell issue 17183).
const maxKeyAhead = 7 * 24 * time.Hour

// keyInfo is Get User Delegation Key's request body.
type keyInfo struct {
	XMLName          xml.Name `xml:"KeyInfo"`
	Start            *string  `xml:"Start"`
	Expiry           *string  `xml:"Expiry"`
	DelegatedUserTid *string  `xml:"DelegatedUserTid"`
}

// userDelegationKey is its answer, the elements in Azure's order.
type userDelegationKey struct {
	XMLName                xml.Name `xml:"UserDelegationKey"`
	SignedOid              string   `xml:"SignedOid"`
	SignedTid              string   `xml:"SignedTid"`
	SignedStart            string   `xml:"SignedStart"`
	SignedExpiry           string   `xml:"SignedExpiry"`
	SignedService          string   `xml:"SignedService"`
	SignedVersion          string   `xml:"SignedVersion"`
	SignedDelegatedUserTid string   `xml:"SignedDelegatedUserTid,omitempty"`
	Value                  string   `xml:"Value"`
}

var errMissingXMLNode = answer.New(http.StatusBadRequest, "MissingRequiredXmlNode", "A required XML node was not specified in the request body.")

// invalidKeyTime is Azure's answer to a KeyInfo time out of range or of
// the wrong form: 400 InvalidXmlNodeValue, whose XmlNodeName and
// XmlNodeValue both carry the value (as real answers to an Expiry more
// than seven days ahead have them: Azure/azure-sdk-for-net issues 17690
// and 45789, jschneier/django-storages issue 1525).
func invalidKeyTime(v string) *answer.Error {
	return answer.New(http.StatusBadRequest, "InvalidXmlNodeValue", "The value for one of the XML nodes is not in the correct format.").
		WithDetails(answer.Detail{Name: "XmlNodeName", Value: v}, answer.Detail{Name: "XmlNodeValue", Value: v})
}

// userDelegationKey is Get User Delegation Key.
func (s *Service) userDelegationKey(q *request) *answer.Error {
	oid, tid := "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000000"
	if s.cfg.Auth == nil {
		q.admit()
	} else {
		g, e := s.cfg.Auth.Authorize(q.r, auth.Operation{Service: auth.Blob, ResourceType: 's'})
		if e != nil {
			return e
		}
		if !g.Bearer {
			return auth.BearerOnly()
		}
		q.admit()
		oid, tid = auth.BearerIdentity(q.r)
	}
	data, e := readBody(q, maxKeyInfoBody)
	if e != nil {
		return e
	}
	var ki keyInfo
	if err := xml.Unmarshal(data, &ki); err != nil {
		return answer.InvalidXMLDocument()
	}
	if ki.Expiry == nil {
		return errMissingXMLNode
	}
	now := s.cfg.Now().UTC()
	k := auth.DelegationKey{ObjectID: oid, TenantID: tid, Start: now.Truncate(time.Second), Version: q.r.Header.Get("x-ms-version")}
	if k.Version == "" {
		k.Version = azrules.NewestServiceVersion
	}
	var err error
	if k.Expiry, err = parseKeyTime(*ki.Expiry); err != nil {
		return invalidKeyTime(*ki.Expiry)
	}
	if ki.Start != nil {
		if k.Start, err = parseKeyTime(*ki.Start); err != nil || k.Start.Sub(now) > maxKeyAhead {
			return invalidKeyTime(*ki.Start)
		}
	}
	if k.Expiry.Sub(now) > maxKeyAhead || !k.Expiry.After(k.Start) {
		return invalidKeyTime(*ki.Expiry)
	}
	if ki.DelegatedUserTid != nil {
		k.DelegatedUserTenantID = strings.TrimSpace(*ki.DelegatedUserTid)
	}
	v := userDelegationKey{SignedOid: k.ObjectID, SignedTid: k.TenantID,
		SignedStart: k.Start.Format(auth.KeyTimeFormat), SignedExpiry: k.Expiry.Format(auth.KeyTimeFormat),
		SignedService: "b", SignedVersion: k.Version, SignedDelegatedUserTid: k.DelegatedUserTenantID}
	if s.cfg.Auth != nil {
		v.Value = s.cfg.Auth.DelegationKeyValue(k)
	}
	return writeXMLBody(q, &v)
}

// parseKeyTime reads a KeyInfo time: ISO 8601 in UTC (a fraction of a
// second is dropped, as the key's times are whole seconds).
func parseKeyTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	return t.UTC().Truncate(time.Second), err
}

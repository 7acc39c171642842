package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// User delegation keys and user delegation SAS (Blob service only, as
// Azure serves them).
//
// Get User Delegation Key hands a bearer token's holder a key for a
// window of at most seven days; a user delegation SAS is signed with it
// (HMAC-SHA256 of a string to sign whose layout follows sv) and carries
// the key's fields (skoid, sktid, skt, ske, sks, skv), so the service
// finds the key again from the SAS alone. Azure keeps its keys to itself;
// the emulator derives each key's value from the account key and the
// key's fields (delegationValue), so that a restart, or another emulator
// serving the same account and key, accepts the same SAS, and the value
// reveals nothing of the account key (an HMAC under it).

// DelegationKey is a user delegation key's fields, as Get User Delegation
// Key answers them and a user delegation SAS repeats them.
type DelegationKey struct {
	// ObjectID and TenantID are the key owner's object and tenant ids
	// (SignedOid, SignedTid; skoid, sktid): the bearer token's oid and
	// tid claims.
	ObjectID, TenantID string
	// Start and Expiry bound the key's validity (SignedStart,
	// SignedExpiry; skt, ske), in whole seconds.
	Start, Expiry time.Time
	// Version is the service version that made the key (SignedVersion;
	// skv). The service is always the Blob service (SignedService b).
	Version string
	// DelegatedUserTenantID is the tenant of the user the key is
	// delegated to (KeyInfo's DelegatedUserTid, SignedDelegatedUserTid;
	// skdutid), from version 2025-07-05; empty when the request names
	// none.
	DelegatedUserTenantID string
}

// KeyTimeFormat is how the key's times are written: ISO 8601 in UTC to
// the second, as Azure writes SignedStart and SignedExpiry and the SDKs
// write skt and ske.
const KeyTimeFormat = "2006-01-02T15:04:05Z"

// DelegationKeyValue returns the value of key k (UserDelegationKey's
// Value, base64) under the account's primary key.
func (a *Authenticator) DelegationKeyValue(k DelegationKey) string {
	if len(a.acct.Keys) == 0 {
		return ""
	}
	v := delegationValue(a.acct.Keys[0], a.acct.Name, k.ObjectID, k.TenantID,
		k.Start.UTC().Format(KeyTimeFormat), k.Expiry.UTC().Format(KeyTimeFormat), "b", k.Version, k.DelegatedUserTenantID)
	return base64.StdEncoding.EncodeToString(v[:])
}

// delegationValue derives a user delegation key's value from an account
// key and the key's fields: HMAC-SHA256 under the account key of the
// fields, one a line, after a label that keeps these MACs apart from
// every signature the account key makes. The times are KeyTimeFormat's.
func delegationValue(accountKey []byte, account, oid, tid, start, expiry, service, version, dutid string) [sha256.Size]byte {
	m := hmac.New(sha256.New, accountKey)
	for _, f := range [...]string{"tablekit user delegation key v1", account, oid, tid, start, expiry, service, version} {
		m.Write([]byte(f))
		m.Write([]byte{'\n'})
	}
	m.Write([]byte(dutid))
	var v [sha256.Size]byte
	m.Sum(v[:0])
	return v
}

// The versions at which a user delegation SAS's string to sign changed.
const (
	v20200210 = "2020-02-10" // saoid, suoid and scid signed
	v20250705 = "2025-07-05" // skdutid and sduoid signed
	v20260406 = "2026-04-06" // srh and srq signed
)

// delegationFields are the query parameters that make a SAS a user
// delegation SAS (Azurite's test: any of them).
var delegationFields = [...]string{"skoid", "sktid", "skt", "ske", "sks", "skv"}

// isDelegation reports whether q is a user delegation SAS.
func isDelegation(q url.Values) bool {
	for _, f := range delegationFields {
		if q.Has(f) {
			return true
		}
	}
	return false
}

// delegationSAS checks a user delegation SAS (q, version sv, signature
// sig) on r for op: the signature under the key its fields name, the
// key's window and the SAS's on the service's clock, then what a service
// SAS is checked for (grant).
func (a *Authenticator) delegationSAS(r *http.Request, q url.Values, sv string, sig *[sha256.Size]byte, op Operation) (*Grant, *answer.Error) {
	for _, f := range delegationFields {
		if q.Get(f) == "" {
			return nil, authenticationFailed()
		}
	}
	// A user delegation key is the Blob service's alone (sks=b), a user
	// delegation SAS is from version 2018-11-09, and it names no stored
	// access policy ("Stored access policies are not supported for a
	// user delegation SAS", REST "Create a user delegation SAS").
	if op.Service != Blob || sv < v20181109 || q.Get("sks") != "b" || q.Has("si") || q.Get("sp") == "" || q.Get("se") == "" {
		return nil, authenticationFailed()
	}
	keyStart, err1 := parseSASTime(q.Get("skt"))
	keyExpiry, err2 := parseSASTime(q.Get("ske"))
	if err1 != nil || err2 != nil {
		return nil, authenticationFailed()
	}
	toSign, e := a.delegationStringToSign(q, sv, op)
	if e != nil {
		return nil, e
	}
	skt, ske := keyStart.UTC().Format(KeyTimeFormat), keyExpiry.UTC().Format(KeyTimeFormat)
	signed := false
	for _, k := range a.acct.Keys {
		udk := delegationValue(k, a.acct.Name, q.Get("skoid"), q.Get("sktid"), skt, ske, "b", q.Get("skv"), q.Get("skdutid"))
		m := hmac.New(sha256.New, udk[:])
		m.Write(toSign)
		if hmac.Equal(m.Sum(nil), sig[:]) {
			signed = true
			break
		}
	}
	if !signed {
		return nil, authenticationFailed()
	}
	// saoid and suoid name a user for a POSIX ACL check, which only an
	// account with a hierarchical namespace makes; on another account
	// Azure refuses them ("If this value is set in an non-HNS enabled
	// account, an authorization failure will be thrown": the .NET SDK's
	// SasQueryParameters). The emulator's accounts have none.
	if q.Get("saoid") != "" || q.Get("suoid") != "" {
		return nil, answer.AuthorizationFailure()
	}
	if sv >= v20250705 && q.Get("sduoid") != "" {
		return nil, notImplemented("a user delegation SAS bound to a delegated user (sduoid)")
	}
	if sv >= v20260406 && (q.Get("srh") != "" || q.Get("srq") != "") {
		return nil, notImplemented("SAS-signed request headers and query parameters (srh, srq)")
	}
	// The key must be valid now, as well as the SAS (no clock skew, as
	// for the SAS's own times).
	if now := a.now(); now.Before(keyStart) || now.After(keyExpiry) {
		return nil, authenticationFailed()
	}
	start, expiry, ok := sasTimes(q) // se is there: checked above
	if !ok {
		return nil, authenticationFailed()
	}
	return a.grant(r, q, op, false, q.Get("sp"), start, expiry)
}

// delegationStringToSign is a user delegation SAS's string to sign for
// op, in the layout of version sv (the Azure SDKs' signing code: azblob's
// sas.BlobSignatureValues.SignWithUserDelegation, the JavaScript SDK's
// generateBlobSASQueryParametersUDK* and the Python SDK's
// add_resource_signature): sp, st, se, the canonicalized resource, skoid,
// sktid, skt, ske, sks, skv; saoid, suoid, scid from 2020-02-10; skdutid
// and sduoid from 2025-07-05; sip, spr, sv, sr, the snapshot time (the
// version id for sr=bv); ses from 2020-12-06; srh and srq from
// 2026-04-06; rscc, rscd, rsce, rscl, rsct. Fields are joined by
// newlines.
func (a *Authenticator) delegationStringToSign(q url.Values, sv string, op Operation) ([]byte, *answer.Error) {
	b := make([]byte, 0, 512)
	line := func(s string) { b = append(append(b, s...), '\n') }
	for _, k := range [...]string{"sp", "st", "se"} {
		line(q.Get(k))
	}
	sr := q.Get("sr")
	b = append(b, "/blob/"...)
	b = append(b, a.acct.Name...)
	b = append(b, '/')
	b, ok := appendBlobResource(b, sr, op)
	if !ok {
		return nil, authenticationFailed()
	}
	b = append(b, '\n')
	for _, k := range [...]string{"skoid", "sktid", "skt", "ske", "sks", "skv"} {
		line(q.Get(k))
	}
	if sv >= v20200210 {
		for _, k := range [...]string{"saoid", "suoid", "scid"} {
			line(q.Get(k))
		}
	}
	if sv >= v20250705 {
		line(q.Get("skdutid"))
		line(q.Get("sduoid"))
	}
	line(q.Get("sip"))
	line(q.Get("spr"))
	line(sv)
	line(sr)
	switch sr {
	case "bs":
		line(q.Get("snapshot"))
	case "bv":
		line(q.Get("versionid"))
	default:
		line("")
	}
	if sv >= v20201206 {
		line(q.Get("ses"))
	}
	if sv >= v20260406 {
		line(q.Get("srh"))
		line(q.Get("srq"))
	}
	return appendResponseOverrides(b, q), nil
}

// notImplemented is a SAS field the emulator does not serve.
func notImplemented(what string) *answer.Error {
	return answer.New(http.StatusNotImplemented, "NotImplemented", "The emulator does not implement "+what+".")
}

// BearerOnly is Azure's answer to Get User Delegation Key authorized
// otherwise than by a bearer token (a real Blob service's answer to a
// Shared Key request, quoted in Azure/azure-storage-net-data-movement
// issue 176, 2020).
func BearerOnly() *answer.Error {
	return authenticationFailed().WithDetails(answer.Detail{Name: "AuthenticationErrorDetail", Value: "Only authentication scheme Bearer is supported"})
}

// zeroGUID stands for an id a token does not carry.
const zeroGUID = "00000000-0000-0000-0000-000000000000"

// BearerIdentity returns the object and tenant ids of the bearer token in
// r's Authorization header, as a user delegation key names its owner:
// the token's oid and tid claims (what Azure's keys carry: the JavaScript
// SDK's recordings of real keys name the token's oid and tid); a token
// without tid names its tenant in its issuer
// (https://sts.windows.net/TENANT/); an id the token does not carry is
// the zero GUID. Call it once Authorize has granted r as a bearer token
// (Grant.Bearer).
func BearerIdentity(r *http.Request) (oid, tid string) {
	oid, tid = zeroGUID, zeroGUID
	h := header(r.Header, "Authorization")
	token, ok := strings.CutPrefix(h, bearerPrefix)
	if !ok {
		return oid, tid
	}
	_, rest, _ := strings.Cut(strings.TrimSpace(token), ".")
	payload, _, _ := strings.Cut(rest, ".")
	var c struct {
		ObjectID string `json:"oid"`
		TenantID string `json:"tid"`
		Issuer   string `json:"iss"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(payload); err != nil || json.Unmarshal(b, &c) != nil {
		return oid, tid
	}
	if c.ObjectID != "" {
		oid = c.ObjectID
	}
	switch {
	case c.TenantID != "":
		tid = c.TenantID
	default:
		for _, p := range validIssuerPrefixes {
			if t, ok := strings.CutPrefix(c.Issuer, p); ok {
				if t = strings.Trim(t, "/"); t != "" && !strings.Contains(t, "/") {
					tid = t
				}
				break
			}
		}
	}
	return oid, tid
}

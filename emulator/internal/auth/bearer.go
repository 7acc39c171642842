package auth

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Bearer tokens (Microsoft Entra ID), checked as Azurite's --oauth basic
// checks them (src/{blob,queue,table}/authentication/*TokenAuthenticator.ts):
// the token must be a JWT whose payload has nbf, exp and iat; now must lie
// in [nbf, exp] with no clock skew; iss must begin with one of Azure's
// token services' addresses (the tenant is not checked); aud must be
// Azure Storage (https://storage.azure.com, its application id) or the
// service's own endpoint for this account in one of Azure's clouds. The
// signature is not checked: any key signs, none is needed. A token that
// passes has the account's full access, as a Shared Key has.
//
// The answers are Azure's (recorded in SDK and tool issue threads from
// 2022 to 2026): 401 InvalidAuthenticationInfo, "Server failed to
// authenticate the request. Please refer to the information in the
// www-authenticate header.", with the challenge (WWWAuthenticate) and an
// AuthenticationErrorDetail saying which check failed. Before version
// 2019-12-12 Azure answered 403 AuthenticationFailed with the same detail
// (recorded in 2020; Azurite answers so for every version); the Table
// service, whose versions end at 2019-02-02, answers 401 (by analogy).

// bearerPrefix is the scheme of a bearer Authorization header.
const bearerPrefix = "Bearer "

// challengeVersion is the first service version whose refusals of a
// bearer token are 401 with a challenge.
const challengeVersion = "2019-12-12"

// The token services whose issuers Azurite accepts (a prefix: the tenant
// follows): Azure's public cloud (and Fairfax), Germany, China, and the
// test environment (without its trailing slash, as Azurite has it).
var validIssuerPrefixes = []string{
	"https://sts.windows.net/",
	"https://sts.microsoftonline.de/",
	"https://sts.chinacloudapi.cn/",
	"https://sts.windows-ppe.net",
}

// The audiences any service accepts: Azure Storage's resource id and its
// application id.
var storageAudiences = []string{"https://storage.azure.com", "e406a681-f3d4-42a8-90b6-c2b029497af1"}

// The DNS suffixes of the clouds' storage endpoints
// (https://ACCOUNT.SERVICE.SUFFIX).
var cloudSuffixes = []string{".core.windows.net", ".core.chinacloudapi.cn", ".core.usgovcloudapi.net", ".core.cloudapi.de"}

// EnableBearer makes the Authenticator accept bearer tokens (Azurite's
// --oauth basic). https says whether the services it checks for are
// served over TLS: a bearer token on plain HTTP is refused, as Azurite
// refuses it. Call it before the services serve.
func (a *Authenticator) EnableBearer(https bool) {
	a.bearer = true
	a.bearerHTTPS = https
}

// isBearer reports whether an Authorization header value is a bearer
// token the Authenticator is to check.
func (a *Authenticator) isBearer(h string) bool {
	return a.bearer && strings.HasPrefix(h, bearerPrefix)
}

// bearerToken checks the bearer token in header h on r for service svc
// of account.
func (a *Authenticator) bearerToken(r *http.Request, svc Service, account, h string) (*Grant, *answer.Error) {
	if !a.bearerHTTPS {
		return nil, authenticationFailed().WithDetails(answer.Detail{Name: "AuthenticationErrorDetail", Value: "Authentication scheme Bearer is not allowed with HTTP."})
	}
	refuse := func(detail string) (*Grant, *answer.Error) {
		return nil, tokenRefused(r, svc, detail)
	}
	c, ok := decodeClaims(strings.TrimSpace(h[len(bearerPrefix):]))
	if !ok || c.NotBefore == nil || c.Expires == nil || c.IssuedAt == nil {
		return refuse("Authentication scheme Bearer is not supported.")
	}
	now := a.now()
	if now.Before(unixTime(*c.NotBefore)) {
		return refuse("Lifetime validation failed. The token is not yet valid.")
	}
	if now.After(unixTime(*c.Expires)) {
		return refuse("Lifetime validation failed. The token is expired.")
	}
	if !validIssuer(c.Issuer) {
		return refuse("Issuer validation failed. Issuer did not match.")
	}
	if !validAudience(c.Audience, svc, account) {
		return refuse("Audience validation failed. Audience did not match.")
	}
	return grantBearer, nil
}

// grantBearer is a valid token's grant: the account's full access.
var grantBearer = &Grant{Bearer: true}

// tokenRefused is Azure's answer to a bearer token that fails a check
// (detail says which): 401 with the challenge from version 2019-12-12 on,
// 403 before. The Table service's versions end at 2019-02-02 (what the
// SDKs send today): it answers 401 whatever the version, as the
// services answer a request without credentials.
func tokenRefused(r *http.Request, svc Service, detail string) *answer.Error {
	d := answer.Detail{Name: "AuthenticationErrorDetail", Value: detail}
	if v := header(r.Header, "X-Ms-Version"); svc != Table && v != "" && v < challengeVersion {
		return authenticationFailed().WithDetails(d)
	}
	return answer.New(http.StatusUnauthorized, "InvalidAuthenticationInfo",
		"Server failed to authenticate the request. Please refer to the information in the www-authenticate header.").WithDetails(d)
}

// claims are the parts of a token's payload that are checked. The times
// are seconds since 1970 (JSON numbers; a fraction is allowed, as
// Azurite's JavaScript allows it).
type claims struct {
	Audience  string   `json:"aud"`
	Issuer    string   `json:"iss"`
	NotBefore *float64 `json:"nbf"`
	Expires   *float64 `json:"exp"`
	IssuedAt  *float64 `json:"iat"`
}

// decodeClaims decodes a compact JWS (header.payload.signature, the
// signature possibly empty) without checking its signature. ok is false
// when the token is not of that form or its header or payload is not a
// JSON object.
func decodeClaims(token string) (c claims, ok bool) {
	head, rest, ok1 := strings.Cut(token, ".")
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || head == "" || payload == "" || strings.Contains(sig, ".") {
		return claims{}, false
	}
	var h map[string]any
	if b, err := base64.RawURLEncoding.DecodeString(head); err != nil || json.Unmarshal(b, &h) != nil || h == nil {
		return claims{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return claims{}, false
	}
	return c, true
}

// unixTime converts seconds since 1970 to a time.
func unixTime(s float64) time.Time {
	return time.UnixMilli(int64(s * 1000))
}

func validIssuer(iss string) bool {
	for _, p := range validIssuerPrefixes {
		if strings.HasPrefix(iss, p) {
			return true
		}
	}
	return false
}

// validAudience reports whether aud names Azure Storage, or service svc
// of account in one of Azure's clouds (a trailing slash allowed).
func validAudience(aud string, svc Service, account string) bool {
	aud = strings.TrimSuffix(aud, "/")
	for _, s := range storageAudiences {
		if aud == s {
			return true
		}
	}
	host, ok := strings.CutPrefix(aud, "https://")
	if !ok {
		return false
	}
	var name string
	switch svc {
	case Blob:
		name = ".blob"
	case Queue:
		name = ".queue"
	case Table:
		name = ".table"
	default:
		return false
	}
	for _, suffix := range cloudSuffixes {
		if acct, ok := strings.CutSuffix(host, name+suffix); ok {
			return acct == account
		}
	}
	return false
}

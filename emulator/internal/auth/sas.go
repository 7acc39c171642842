package auth

import (
	"crypto/sha256"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// AccessPolicy is a stored access policy (a signed identifier on a table,
// queue or container): the fields it fixes for a service SAS that names it
// with si. A zero field is left to the SAS.
type AccessPolicy struct {
	Start, Expiry time.Time
	Permission    string
}

// PolicyLookup returns the stored access policy id of the table, queue or
// container name of service svc, and false when there is none.
type PolicyLookup func(svc Service, name, id string) (AccessPolicy, bool)

// SetPolicies sets how Authorize finds stored access policies. Until it
// is called every signed identifier is unknown, and a SAS naming one gets
// 403 AuthenticationFailed, as Azure answers for an identifier the
// resource does not have. Call it before the Authenticator serves
// requests.
func (a *Authenticator) SetPolicies(lookup PolicyLookup) { a.policies = lookup }

// SetClock replaces the Authenticator's clock (time.Now), for tests of
// expiry and of Shared Key's 15-minute date window. Call it before the
// Authenticator serves requests.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }

// SetDateClock gives Shared Key's date window a clock of its own, for an
// emulator whose clock a test moves (SetClock) while its clients still
// date their requests by the real one. Until it is called the window
// follows SetClock's clock. Call it before the Authenticator serves
// requests.
func (a *Authenticator) SetDateClock(now func() time.Time) { a.dateNow = now }

// hasSig reports whether the raw query has a sig parameter.
func hasSig(raw string) bool {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "sig" || strings.HasPrefix(kv, "sig=") {
			return true
		}
	}
	return false
}

// The versions at which the strings to sign changed.
const (
	v20150221 = "2015-02-21" // canonicalized resource starts with the service name
	v20150405 = "2015-04-05" // signed IP and protocol; account SAS
	v20181109 = "2018-11-09" // blob: signed resource and snapshot time
	v20201206 = "2020-12-06" // signed encryption scope
)

// serviceLetter is the account SAS's ss letter of each service.
var serviceLetter = [...]byte{Blob: 'b', Queue: 'q', Table: 't'}

var serviceName = [...]string{Blob: "blob", Queue: "queue", Table: "table"}

// sas checks a shared access signature on r for op.
func (a *Authenticator) sas(r *http.Request, op Operation) (*Grant, *answer.Error) {
	if op.Service < Blob || op.Service > Table {
		return nil, answer.AuthorizationFailure()
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, authenticationFailed()
	}
	sv := q.Get("sv")
	var sig [sha256.Size]byte
	// A '+' left unencoded in sig reads as a space.
	if sv == "" || !decodeSig(strings.ReplaceAll(q.Get("sig"), " ", "+"), &sig) {
		return nil, authenticationFailed()
	}
	if isDelegation(q) {
		return a.delegationSAS(r, q, sv, &sig, op)
	}
	account := q.Has("ss") || q.Has("srt")
	var toSign []byte
	var e *answer.Error
	if account {
		toSign, e = a.accountStringToSign(q, sv)
	} else {
		toSign, e = a.serviceStringToSign(q, sv, op)
	}
	if e != nil {
		return nil, e
	}
	if !a.matches(toSign, &sig) {
		return nil, authenticationFailed()
	}

	sp, st, se := q.Get("sp"), q.Get("st"), q.Get("se")
	start, expiry, ok := sasTimes(q)
	if !ok {
		return nil, authenticationFailed()
	}
	if si := q.Get("si"); si != "" && !account {
		pol, ok := a.policy(op, q, si)
		if !ok {
			return nil, authenticationFailed()
		}
		if pol.Permission != "" && sp != "" || !pol.Start.IsZero() && st != "" || !pol.Expiry.IsZero() && se != "" {
			// A field in both the SAS and the policy: Azure answers 400.
			return nil, invalidQueryParameter()
		}
		if pol.Permission != "" {
			sp = pol.Permission
		}
		if !pol.Start.IsZero() {
			start = pol.Start
		}
		if !pol.Expiry.IsZero() {
			expiry = pol.Expiry
		}
	}
	return a.grant(r, q, op, account, sp, start, expiry)
}

// grant finishes checking a SAS whose signature is good: its times (sp,
// start and expiry, after a stored access policy's) on the service's
// clock, its address range and protocol, and what it allows (an account
// SAS's services, resource types and permissions; a service SAS's
// resource and permissions, and a table SAS's key range).
func (a *Authenticator) grant(r *http.Request, q url.Values, op Operation, account bool, sp string, start, expiry time.Time) (*Grant, *answer.Error) {
	if expiry.IsZero() || sp == "" {
		return nil, authenticationFailed()
	}
	// No clock skew is tolerated: Azure's guidance is to back-date st.
	now := a.now()
	if now.After(expiry) || !start.IsZero() && now.Before(start) {
		return nil, authenticationFailed()
	}
	if sip := q.Get("sip"); sip != "" {
		ok, ip, valid := inRange(sip, r.RemoteAddr)
		if !valid {
			return nil, authenticationFailed()
		}
		if !ok {
			return nil, sourceIPMismatch(ip)
		}
	}
	switch spr := q.Get("spr"); spr {
	case "", "https,http", "http,https":
	case "https":
		if r.TLS == nil {
			return nil, protocolMismatch()
		}
	default:
		return nil, authenticationFailed()
	}

	if account {
		if op.Service != 0 && strings.IndexByte(q.Get("ss"), serviceLetter[op.Service]) < 0 {
			return nil, serviceMismatch()
		}
		if op.ResourceType != 0 && strings.IndexByte(q.Get("srt"), op.ResourceType) < 0 {
			return nil, resourceTypeMismatch()
		}
		if op.Permission != 0 && strings.IndexByte(sp, op.Permission) < 0 {
			return nil, permissionMismatch()
		}
		return grantSAS, nil
	}
	if op.Service == Table && (op.ResourceType != 'o' || !strings.EqualFold(q.Get("tn"), op.Name)) {
		// A table SAS reaches the entities of its own table only.
		return nil, answer.AuthorizationFailure()
	}
	if op.Permission != 0 && strings.IndexByte(sp, op.Permission) < 0 {
		return nil, permissionMismatch()
	}
	kr := answer.KeyRangeOf(q)
	if op.Service != Table || kr == nil {
		return grantSAS, nil
	}
	if op.HasKeys && !kr.Contains(op.PartitionKey, op.RowKey) {
		return nil, answer.AuthorizationFailure()
	}
	return &Grant{SAS: true, KeyRange: kr}, nil
}

// policy looks up the stored access policy si names for op's resource.
func (a *Authenticator) policy(op Operation, q url.Values, si string) (AccessPolicy, bool) {
	if a.policies == nil {
		return AccessPolicy{}, false
	}
	name := op.Name
	if op.Service == Table {
		name = q.Get("tn")
	}
	return a.policies(op.Service, name, si)
}

// accountStringToSign is the account SAS's string to sign: account, sp,
// ss, srt, st, se, sip, spr, sv, then ses from 2020-12-06, each ending in
// a newline.
func (a *Authenticator) accountStringToSign(q url.Values, sv string) ([]byte, *answer.Error) {
	if sv < v20150405 || q.Get("ss") == "" || q.Get("srt") == "" || q.Get("sp") == "" || q.Get("se") == "" {
		return nil, authenticationFailed()
	}
	b := make([]byte, 0, 256)
	b = append(b, a.acct.Name...)
	b = append(b, '\n')
	for _, k := range [...]string{"sp", "ss", "srt", "st", "se", "sip", "spr", "sv"} {
		b = append(b, q.Get(k)...)
		b = append(b, '\n')
	}
	if sv >= v20201206 {
		b = append(b, q.Get("ses")...)
		b = append(b, '\n')
	}
	return b, nil
}

// serviceStringToSign is a service SAS's string to sign for op's service,
// in the layout of version sv.
func (a *Authenticator) serviceStringToSign(q url.Values, sv string, op Operation) ([]byte, *answer.Error) {
	line := func(b []byte, s string) []byte { return append(append(b, s...), '\n') }
	b := make([]byte, 0, 256)
	for _, k := range [...]string{"sp", "st", "se"} {
		b = line(b, q.Get(k))
	}
	// The canonicalized resource: /service/account/name[/blob], without
	// the service before 2015-02-21.
	if sv >= v20150221 {
		b = append(b, '/')
		b = append(b, serviceName[op.Service]...)
	}
	b = append(b, '/')
	b = append(b, a.acct.Name...)
	b = append(b, '/')
	sr := q.Get("sr")
	switch op.Service {
	case Table:
		b = append(b, strings.ToLower(q.Get("tn"))...)
	case Queue:
		b = append(b, op.Name...)
	case Blob:
		var ok bool
		if b, ok = appendBlobResource(b, sr, op); !ok {
			return nil, authenticationFailed()
		}
	}
	b = append(b, '\n')
	b = line(b, q.Get("si"))
	if sv >= v20150405 {
		b = line(b, q.Get("sip"))
		b = line(b, q.Get("spr"))
	}
	switch op.Service {
	case Table:
		b = line(b, sv)
		for _, k := range [...]string{"spk", "srk", "epk"} {
			b = line(b, q.Get(k))
		}
		b = append(b, q.Get("erk")...)
	case Queue:
		b = append(b, sv...)
	case Blob:
		b = line(b, sv)
		if sv >= v20181109 {
			b = line(b, sr)
			snapshot := ""
			if sr == "bs" {
				snapshot = q.Get("snapshot")
			}
			b = line(b, snapshot)
		}
		if sv >= v20201206 {
			b = line(b, q.Get("ses"))
		}
		b = appendResponseOverrides(b, q)
	}
	return b, nil
}

// appendBlobResource appends what a blob SAS's canonicalized resource
// holds past the account: the container, then /BLOB when the SAS is for a
// blob, a snapshot or a version (sr b, bs or bv). ok is false for any
// other sr: a directory SAS (sr=d) needs a hierarchical namespace, and an
// unknown resource is not served.
func appendBlobResource(b []byte, sr string, op Operation) (_ []byte, ok bool) {
	b = append(b, op.Name...)
	switch sr {
	case "b", "bs", "bv":
		b = append(b, '/')
		b = append(b, op.Blob...)
	case "c":
	default:
		return b, false
	}
	return b, true
}

// appendResponseOverrides appends the response header overrides a blob
// SAS signs, the last fields of its string to sign: rscc, rscd, rsce and
// rscl, each ending in a newline, then rsct.
func appendResponseOverrides(b []byte, q url.Values) []byte {
	for _, k := range [...]string{"rscc", "rscd", "rsce", "rscl"} {
		b = append(append(b, q.Get(k)...), '\n')
	}
	return append(b, q.Get("rsct")...)
}

// sasTimes reads a SAS's st and se, either of which may be absent (zero);
// ok is false when one cannot be read.
func sasTimes(q url.Values) (start, expiry time.Time, ok bool) {
	var err error
	if st := q.Get("st"); st != "" {
		if start, err = parseSASTime(st); err != nil {
			return time.Time{}, time.Time{}, false
		}
	}
	if se := q.Get("se"); se != "" {
		if expiry, err = parseSASTime(se); err != nil {
			return time.Time{}, time.Time{}, false
		}
	}
	return start, expiry, true
}

// parseSASTime reads st and se: ISO 8601 in UTC, to the day, minute,
// second or fraction of a second.
func parseSASTime(s string) (time.Time, error) {
	var err error
	for _, layout := range [...]string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"} {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// inRange reports whether the request's address (remoteAddr, host:port)
// is in sip (one IPv4 address or a range "a-b"), the address as text, and
// whether sip was valid.
func inRange(sip, remoteAddr string) (ok bool, ip string, valid bool) {
	lo, hi, isRange := strings.Cut(sip, "-")
	from, err := netip.ParseAddr(lo)
	if err != nil {
		return false, "", false
	}
	to := from
	if isRange {
		if to, err = netip.ParseAddr(hi); err != nil {
			return false, "", false
		}
	}
	host := remoteAddr
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil {
		host = ap.Addr().Unmap().String()
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false, host, true
	}
	addr = addr.Unmap()
	return from.Compare(addr) <= 0 && addr.Compare(to) <= 0, addr.String(), true
}

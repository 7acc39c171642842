package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
)

// dateSkew is how far a Shared Key request's date may be from the
// service's clock: Azure refuses requests dated more than 15 minutes
// away ("Request date header too old"), in either direction.
const dateSkew = 15 * time.Minute

// keyMAC computes HMAC-SHA256 under one key with pooled hashers: a hasher
// is built once per pooled slot, not once per request.
type keyMAC struct{ pool sync.Pool }

// macState is a pooled hasher and the buffer its sums go to (a sum
// written through the hash.Hash interface would escape to the heap).
type macState struct {
	h   hash.Hash
	out [sha256.Size]byte
}

func newKeyMAC(key []byte) *keyMAC {
	m := &keyMAC{}
	m.pool.New = func() any { return &macState{h: hmac.New(sha256.New, key)} }
	return m
}

// equal reports whether sig is the HMAC of msg, comparing in constant
// time.
func (m *keyMAC) equal(msg []byte, sig *[sha256.Size]byte) bool {
	st := m.pool.Get().(*macState)
	st.h.Reset()
	st.h.Write(msg)
	ok := hmac.Equal(st.h.Sum(st.out[:0]), sig[:])
	m.pool.Put(st)
	return ok
}

// matches reports whether sig is the HMAC of msg under any of the
// account's keys.
func (a *Authenticator) matches(msg []byte, sig *[sha256.Size]byte) bool {
	for _, k := range a.keys {
		if k.equal(msg, sig) {
			return true
		}
	}
	return false
}

// decodeSig decodes a base64 signature into sig; false when it is not
// the base64 of an HMAC-SHA256.
func decodeSig(s string, sig *[sha256.Size]byte) bool {
	var src [64]byte
	if len(s) != base64.StdEncoding.EncodedLen(sha256.Size) {
		return false
	}
	copy(src[:], s)
	var dst [48]byte
	n, err := base64.StdEncoding.Decode(dst[:], src[:len(s)])
	if err != nil || n != sha256.Size {
		return false
	}
	copy(sig[:], dst[:n])
	return true
}

// scratch holds a request's string to sign and the x-ms- header names,
// pooled so that verification allocates nothing in the common case.
type scratch struct {
	buf    []byte
	names  []string
	params []param
}

type param struct{ name, value string }

var scratchPool = sync.Pool{New: func() any {
	return &scratch{buf: make([]byte, 0, 512), names: make([]string, 0, 8), params: make([]param, 0, 8)}
}}

// release returns s to the pool, dropping its references to the request.
func (s *scratch) release() {
	clear(s.names)
	s.names = s.names[:0]
	clear(s.params[:cap(s.params)])
	s.params = s.params[:0]
	scratchPool.Put(s)
}

// header returns the first value of the header with canonical key k.
func header(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// sharedKey checks a Shared Key or Shared Key Lite Authorization header
// (value auth) on r for service svc.
func (a *Authenticator) sharedKey(r *http.Request, svc Service, auth string) *answer.Error {
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok || (scheme != "SharedKey" && scheme != "SharedKeyLite") {
		return invalidAuthenticationInfo()
	}
	account, sigText, ok := strings.Cut(strings.TrimSpace(rest), ":")
	if !ok || account == "" {
		return invalidAuthenticationInfo()
	}
	var sig [sha256.Size]byte
	if account != a.acct.Name || !decodeSig(sigText, &sig) {
		return authenticationFailed()
	}
	msDate, date := header(r.Header, "X-Ms-Date"), header(r.Header, "Date")
	signed := msDate
	if signed == "" {
		signed = date
	}
	if signed == "" {
		return authenticationFailed() // "Request date header not specified"
	}
	t, err := parseHTTPTime(signed)
	if err != nil {
		return authenticationFailed()
	}
	now := a.now
	if a.dateNow != nil {
		now = a.dateNow
	}
	if d := now().Sub(t); d > dateSkew || d < -dateSkew {
		return authenticationFailed() // "Request date header too old"
	}
	lite := scheme == "SharedKeyLite"

	s := scratchPool.Get().(*scratch)
	defer s.release()
	if svc == Table {
		s.buf = a.tableStringToSign(s.buf[:0], r, lite, signed)
		if a.matches(s.buf, &sig) {
			return nil
		}
		return authenticationFailed()
	}
	// Blob and Queue: the Date line is the Date header; a client that
	// sends x-ms-date may leave it empty, as the SDKs do. The x-ms-
	// headers are sorted by byte order (azqueue, Azurite) or by the
	// service's collation (azblob); Azure accepts both.
	s.names = xmsNames(s.names[:0], r.Header)
	slices.SortFunc(s.names, compareLower)
	collatedDiffers := !slices.IsSortedFunc(s.names, compareCollated)
	for _, emptyDate := range [2]bool{false, true} {
		if emptyDate && (date == "" || msDate == "") {
			break
		}
		lineDate := date
		if emptyDate {
			lineDate = ""
		}
		buf, err := a.blobStringToSign(s, r, lite, lineDate)
		if err != nil {
			return err
		}
		s.buf = buf
		if a.matches(s.buf, &sig) {
			return nil
		}
		if collatedDiffers {
			slices.SortFunc(s.names, compareCollated)
			if s.buf, err = a.blobStringToSign(s, r, lite, lineDate); err != nil {
				return err
			}
			if a.matches(s.buf, &sig) {
				return nil
			}
			slices.SortFunc(s.names, compareLower)
		}
	}
	return authenticationFailed()
}

// tableStringToSign appends the Table service's string to sign:
// Shared Key is VERB, Content-MD5, Content-Type, date, resource; Shared
// Key Lite is date, resource. The date is x-ms-date when present, else
// Date; the resource carries only ?comp=.
func (a *Authenticator) tableStringToSign(b []byte, r *http.Request, lite bool, date string) []byte {
	if !lite {
		b = append(b, r.Method...)
		b = append(b, '\n')
		b = append(b, header(r.Header, "Content-Md5")...)
		b = append(b, '\n')
		b = append(b, header(r.Header, "Content-Type")...)
		b = append(b, '\n')
	}
	b = append(b, date...)
	b = append(b, '\n')
	return a.compResource(b, r)
}

// compResource appends the canonicalized resource of the Table service
// and of Shared Key Lite: /account, the path as sent, and ?comp=value.
func (a *Authenticator) compResource(b []byte, r *http.Request) []byte {
	b = a.pathResource(b, r)
	if v, ok := queryValue(r.URL.RawQuery, "comp"); ok {
		b = append(b, "?comp="...)
		b = append(b, v...)
	}
	return b
}

// pathResource appends /account and the request's path exactly as it was
// sent. Path-style requests to the emulator carry the account in the path
// too (/devstoreaccount1/devstoreaccount1/mytable), which is how the SDKs
// sign them and how Azurite checks them.
func (a *Authenticator) pathResource(b []byte, r *http.Request) []byte {
	b = append(b, '/')
	b = append(b, a.acct.Name...)
	p := requestPath(r)
	if p == "" {
		p = "/"
	}
	return append(b, p...)
}

// requestPath is the path of r as the client sent it (before any prefix
// stripping by a handler).
func requestPath(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		if i := strings.IndexByte(u, '?'); i >= 0 {
			return u[:i]
		}
		return u
	}
	return r.URL.EscapedPath()
}

// queryValue returns the decoded value of the first query parameter
// named name in raw.
func queryValue(raw, name string) (string, bool) {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != name {
			continue
		}
		if d, err := url.QueryUnescape(v); err == nil {
			return d, true
		}
		return v, true
	}
	return "", false
}

// blobStringToSign builds the Blob and Queue services' string to sign
// (version 2015-02-21 and later: a zero Content-Length is an empty line)
// in s.buf, with the x-ms- headers in s.names' order.
func (a *Authenticator) blobStringToSign(s *scratch, r *http.Request, lite bool, date string) ([]byte, *answer.Error) {
	h := r.Header
	b := append(s.buf[:0], r.Method...)
	b = append(b, '\n')
	if lite {
		b = append(b, header(h, "Content-Md5")...)
		b = append(b, '\n')
		b = append(b, header(h, "Content-Type")...)
		b = append(b, '\n')
		b = append(b, date...)
		b = append(b, '\n')
		b = appendXMSHeaders(b, h, s.names)
		return a.compResource(b, r), nil
	}
	b = append(b, header(h, "Content-Encoding")...)
	b = append(b, '\n')
	b = append(b, header(h, "Content-Language")...)
	b = append(b, '\n')
	// Before version 2015-02-21 a zero Content-Length was signed as "0".
	switch cl, v := header(h, "Content-Length"), header(h, "X-Ms-Version"); {
	case cl == "0" && v != "" && v < "2015-02-21":
		b = append(b, '0')
	case cl == "0":
	case cl != "":
		b = append(b, cl...)
	case r.ContentLength > 0:
		b = strconv.AppendInt(b, r.ContentLength, 10)
	}
	b = append(b, '\n')
	for _, k := range [...]string{"Content-Md5", "Content-Type"} {
		b = append(b, header(h, k)...)
		b = append(b, '\n')
	}
	b = append(b, date...)
	b = append(b, '\n')
	for _, k := range [...]string{"If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"} {
		b = append(b, header(h, k)...)
		b = append(b, '\n')
	}
	b = appendXMSHeaders(b, h, s.names)
	b = a.pathResource(b, r)
	return appendParams(b, s, r.URL.RawQuery)
}

// xmsNames appends the names of h's x-ms- headers.
func xmsNames(names []string, h http.Header) []string {
	for k := range h {
		if len(k) >= 5 && strings.EqualFold(k[:5], "x-ms-") {
			names = append(names, k)
		}
	}
	return names
}

// appendXMSHeaders appends the canonicalized headers: lowercase name,
// ':', the values joined by ',', a newline.
func appendXMSHeaders(b []byte, h http.Header, names []string) []byte {
	for _, k := range names {
		b = appendLower(b, k)
		b = append(b, ':')
		for i, v := range h[k] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, v...)
		}
		b = append(b, '\n')
	}
	return b
}

// appendParams appends the query parameters as Shared Key canonicalizes
// them: names lowercased and sorted, values decoded, a name's values
// sorted and joined by ',', each pair on its own line. Values are decoded
// straight into b; only a repeated name's values are decoded apart, to
// sort them.
func appendParams(b []byte, s *scratch, raw string) ([]byte, *answer.Error) {
	ps := s.params[:0]
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			return nil, authenticationFailed()
		}
		if !validEscapes(v) {
			return nil, authenticationFailed()
		}
		ps = append(ps, param{strings.ToLower(k), v})
	}
	slices.SortFunc(ps, func(x, y param) int {
		if c := strings.Compare(x.name, y.name); c != 0 {
			return c
		}
		xv, _ := url.QueryUnescape(x.value)
		yv, _ := url.QueryUnescape(y.value)
		return strings.Compare(xv, yv)
	})
	for i, p := range ps {
		if i > 0 && ps[i-1].name == p.name {
			b = append(b, ',')
		} else {
			b = append(b, '\n')
			b = append(b, p.name...)
			b = append(b, ':')
		}
		b = appendUnescaped(b, p.value)
	}
	s.params = ps[:0]
	return b, nil
}

// appendUnescaped appends the query text v decoded ('+' is a space, %XX a
// byte); v has been checked to decode.
func appendUnescaped(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(v):
			b = append(b, unhex(v[i+1])<<4|unhex(v[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return b
}

// validEscapes reports whether every '%' in v starts a %XX escape.
func validEscapes(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] == '%' {
			if i+2 >= len(v) || !ishex(v[i+1]) || !ishex(v[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

// parseHTTPTime reads a Date or x-ms-date header. The usual form (RFC
// 1123 in GMT) is parsed with a literal zone, which allocates nothing;
// the others HTTP allows go through http.ParseTime.
func parseHTTPTime(s string) (time.Time, error) {
	if t, err := time.Parse("Mon, 02 Jan 2006 15:04:05 GMT", s); err == nil {
		return t, nil
	}
	return http.ParseTime(s)
}

func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// compareLower orders header names by their lowercase bytes.
func compareLower(x, y string) int {
	for i := 0; i < len(x) && i < len(y); i++ {
		if a, b := lower(x[i]), lower(y[i]); a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return len(x) - len(y)
}

// collation0 and collation2 are the weights by which the Blob service
// orders canonicalized header names (a culture-aware string order, as
// azblob's SharedKeyCredential reproduces it): at the first level '-'
// and the apostrophe weigh nothing and letters compare case-insensitively; ties
// are broken at the second level by the ignored characters' positions.
var collation0 = [128]uint16{
	'!': 0x71c, '#': 0x71f, '$': 0x721, '%': 0x723, '&': 0x725, '*': 0x72d,
	'+': 0x803, '.': 0x733,
	'0': 0xd03, '1': 0xd1a, '2': 0xd1c, '3': 0xd1e, '4': 0xd20, '5': 0xd22,
	'6': 0xd24, '7': 0xd26, '8': 0xd28, '9': 0xd2a,
	'^': 0x743, '_': 0x744, '`': 0x748, '|': 0x74c, '~': 0x750,
}

var collation2 = [128]uint16{'\'': 0x8012, '-': 0x8212}

func init() {
	letters := [26]uint16{0xe02, 0xe09, 0xe0a, 0xe1a, 0xe21, 0xe23, 0xe25, 0xe2c, 0xe32, 0xe35, 0xe36, 0xe48, 0xe51,
		0xe70, 0xe7c, 0xe7e, 0xe89, 0xe8a, 0xe91, 0xe99, 0xe9f, 0xea2, 0xea4, 0xea6, 0xea7, 0xea9}
	for i, w := range letters {
		collation0['A'+i] = w
		collation0['a'+i] = w
	}
}

// compareCollated is the Blob service's order of header names (see
// collation0).
func compareCollated(x, y string) int {
	weight := func(t *[128]uint16, s string, i int) uint16 {
		if i >= len(s) {
			return 1
		}
		if s[i] >= 128 {
			return 0xffff
		}
		return t[s[i]]
	}
	tables := [2]*[128]uint16{&collation0, &collation2}
	for level, i, j := 0, 0, 0; level < len(tables); {
		if level == len(tables)-1 && i != j {
			if i > j {
				return -1
			}
			return 1
		}
		w1, w2 := weight(tables[level], x, i), weight(tables[level], y, j)
		switch {
		case w1 == 1 && w2 == 1:
			i, j = 0, 0
			level++
		case w1 == w2:
			i++
			j++
		case w1 == 0:
			i++
		case w2 == 0:
			j++
		case w1 < w2:
			return -1
		default:
			return 1
		}
	}
	return 0
}

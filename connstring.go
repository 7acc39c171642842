package tablekit

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/keys"
)

// ErrInvalidConnectionString is the sentinel wrapped by every connection
// string parsing error. It unwraps to ErrInvalidArgument.
var ErrInvalidConnectionString = keys.NewArgumentSentinel("tablekit: invalid connection string")

// connError reports a problem in a connection string. It names the setting
// at fault but never echoes a key or a SAS signature.
type connError struct{ msg string }

func (e *connError) Error() string { return "tablekit: invalid connection string: " + e.msg }
func (e *connError) Unwrap() error { return ErrInvalidConnectionString }

// The well-known development account (public, documented by Microsoft;
// it only works against a local emulator): azrules.DevAccountName and
// DevAccountKey.
const (
	devAccountName = azrules.DevAccountName
	devAccountKey  = azrules.DevAccountKey
)

// settings is a parsed connection string: where each service lives and how
// to authenticate.
type settings struct {
	accountName string
	accountKey  string // base64; empty with SAS or token credentials
	sas         string // query string without '?'
	tableURL    string
	queueURL    string
	blobURL     string
}

// parseConnectionString understands every form the Azure portal, Azure CLI
// and Azurite documentation hand out:
//
//   - UseDevelopmentStorage=true[;DevelopmentStorageProxyUri=http://host]
//   - DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..[;EndpointSuffix=..]
//   - explicit TableEndpoint=/QueueEndpoint=/BlobEndpoint= with AccountName+AccountKey
//   - SAS: endpoints with SharedAccessSignature=.. (no key)
func parseConnectionString(cs string) (settings, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		i := strings.IndexByte(part, '=')
		if i <= 0 {
			// Echo the segment only when it cannot be a credential: a
			// key or a signature pasted alone is not a word.
			if !isLetters(part) || len(part) > 40 || strings.Contains(strings.ToLower(cs), "accountkey") || strings.Contains(strings.ToLower(cs), "sharedaccesssignature") {
				return settings{}, &connError{msg: "a segment is not of the form Key=Value"}
			}
			return settings{}, &connError{msg: "segment " + quote(part) + " is not of the form Key=Value"}
		}
		key := strings.ToLower(strings.TrimSpace(part[:i]))
		if !knownSettings[key] {
			name := strings.TrimSpace(part[:i])
			if !isLetters(name) || len(name) > 40 {
				return settings{}, &connError{msg: "a segment is not of the form Key=Value with a known key"}
			}
			return settings{}, &connError{msg: "unknown setting " + quote(name)}
		}
		if _, dup := kv[key]; dup {
			return settings{}, &connError{msg: "setting " + part[:i] + " appears twice"}
		}
		kv[key] = strings.TrimSpace(part[i+1:])
	}
	if len(kv) == 0 {
		return settings{}, &connError{msg: "it is empty"}
	}

	if v, ok := kv["usedevelopmentstorage"]; ok {
		if !strings.EqualFold(v, "true") {
			return settings{}, &connError{msg: "UseDevelopmentStorage must be true when present"}
		}
		base := "http://127.0.0.1"
		if p := kv["developmentstorageproxyuri"]; p != "" {
			u, err := url.Parse(p)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return settings{}, &connError{msg: "DevelopmentStorageProxyUri is not an absolute URL"}
			}
			base = u.Scheme + "://" + u.Hostname()
		}
		return settings{
			accountName: devAccountName,
			accountKey:  devAccountKey,
			blobURL:     base + ":" + strconv.Itoa(azrules.DefaultBlobPort) + "/" + devAccountName,
			queueURL:    base + ":" + strconv.Itoa(azrules.DefaultQueuePort) + "/" + devAccountName,
			tableURL:    base + ":" + strconv.Itoa(azrules.DefaultTablePort) + "/" + devAccountName,
		}, nil
	}

	s := settings{
		accountName: kv["accountname"],
		accountKey:  kv["accountkey"],
		sas:         strings.TrimPrefix(kv["sharedaccesssignature"], "?"),
		tableURL:    kv["tableendpoint"],
		queueURL:    kv["queueendpoint"],
		blobURL:     kv["blobendpoint"],
	}
	if s.accountKey != "" && s.sas != "" {
		return settings{}, &connError{msg: "AccountKey and SharedAccessSignature are both set; use one"}
	}
	if s.accountKey != "" && s.accountName == "" {
		return settings{}, &connError{msg: "AccountKey is set but AccountName is missing"}
	}
	if s.accountKey == "" && s.sas == "" {
		return settings{}, &connError{msg: "neither AccountKey nor SharedAccessSignature is set"}
	}
	if s.accountKey != "" {
		if err := checkKey(s.accountKey); err != nil {
			return settings{}, err
		}
	}
	if s.sas != "" {
		if err := checkSAS(s.sas); err != nil {
			return settings{}, err
		}
	}

	// Derive missing endpoints from the account name and suffix.
	if s.accountName != "" {
		proto := strings.ToLower(kv["defaultendpointsprotocol"])
		if proto == "" {
			proto = "https"
		}
		if proto != "https" && proto != "http" {
			return settings{}, &connError{msg: "DefaultEndpointsProtocol must be http or https"}
		}
		suffix := kv["endpointsuffix"]
		if suffix == "" {
			suffix = "core.windows.net"
		}
		derive := func(service string) string {
			return proto + "://" + s.accountName + "." + service + "." + suffix
		}
		explicit := s.tableURL != "" || s.queueURL != "" || s.blobURL != ""
		if !explicit || kv["endpointsuffix"] != "" || kv["defaultendpointsprotocol"] != "" {
			if s.tableURL == "" {
				s.tableURL = derive("table")
			}
			if s.queueURL == "" {
				s.queueURL = derive("queue")
			}
			if s.blobURL == "" {
				s.blobURL = derive("blob")
			}
		}
	}
	if s.tableURL == "" && s.queueURL == "" && s.blobURL == "" {
		return settings{}, &connError{msg: "no endpoint: set AccountName or TableEndpoint/QueueEndpoint/BlobEndpoint"}
	}
	for name, p := range map[string]*string{"TableEndpoint": &s.tableURL, "QueueEndpoint": &s.queueURL, "BlobEndpoint": &s.blobURL} {
		if *p == "" {
			continue
		}
		u, err := url.Parse(*p)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return settings{}, &connError{msg: name + " is not an absolute http(s) URL"}
		}
		*p = strings.TrimSuffix(*p, "/")
	}
	if s.accountName == "" && s.accountKey == "" {
		// SAS-only strings name no account; take it from the first
		// endpoint's host for error messages.
		for _, p := range []string{s.tableURL, s.queueURL, s.blobURL} {
			if p != "" {
				s.accountName = accountFromEndpoint(p)
				break
			}
		}
	}
	return s, nil
}

// errSAS is checkSAS's error. It never shows the value: a SAS that is not
// a query string may still be a credential (a bare signature, say).
var errSAS = &connError{msg: "SharedAccessSignature is not a SAS token: want the query string of a SAS, key=value pairs joined by & and holding one sig (sv=...&sig=...)"}

// checkSAS accepts a SAS query string (without its leading '?'): key=value
// pairs joined by '&', keys of letters and digits, values validly
// %-escaped, no white space or '#', and exactly one non-empty sig. Any
// other value would travel after '?' in every request URL, where Redact
// could not tell the secret from the rest and the service would refuse
// it anyway.
func checkSAS(sas string) error {
	sigs := 0
	for _, pair := range strings.Split(sas, "&") {
		if pair == "" {
			continue // a stray '&' is harmless
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return errSAS
		}
		for i := 0; i < len(k); i++ {
			if c := k[i] | 0x20; (c < 'a' || c > 'z') && (k[i] < '0' || k[i] > '9') {
				return errSAS
			}
		}
		if strings.Contains(v, "#") || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return errSAS
		}
		if _, err := url.QueryUnescape(v); err != nil {
			return errSAS
		}
		if strings.EqualFold(k, "sig") {
			if v == "" {
				return errSAS
			}
			sigs++
		}
	}
	if sigs != 1 {
		return errSAS
	}
	return nil
}

var knownSettings = map[string]bool{
	"usedevelopmentstorage": true, "developmentstorageproxyuri": true,
	"defaultendpointsprotocol": true, "accountname": true, "accountkey": true,
	"endpointsuffix": true, "sharedaccesssignature": true,
	"tableendpoint": true, "queueendpoint": true, "blobendpoint": true,
	"fileendpoint": true, "tablesecondaryendpoint": true, "queuesecondaryendpoint": true,
	"blobsecondaryendpoint": true, "filesecondaryendpoint": true,
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}

// accountFromEndpoint names the account of a service URL: the first label
// of the host (contoso.table.core.windows.net), or the first path segment
// on path-style endpoints (http://127.0.0.1:10002/devstoreaccount1).
func accountFromEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil || host == "localhost" || !strings.Contains(host, ".") {
		seg, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		return seg
	}
	name, _, _ := strings.Cut(host, ".")
	return name
}

func checkKey(key string) error {
	for i := 0; i < len(key); i++ {
		c := key[i]
		ok := (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='
		if !ok {
			return &connError{msg: "AccountKey is not base64"}
		}
	}
	return nil
}

func quote(s string) string { return "\"" + s + "\"" }

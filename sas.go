package tablekit

// Table service SAS, signed locally with the account key.
//
// aztables v1.4.1 signs PartitionKey/RowKey ranges but leaves spk, srk, epk
// and erk out of the query string, so the service recomputes the signature
// without them and answers 403; its GetTableSASURL also drops the '/'
// between a path-style endpoint (Azurite's http://host:port/account) and
// the table name, and formats non-UTC times with a literal "Z". This file
// builds the string to sign from the REST specification ("Create a service
// SAS", Table service, version 2018-11-09 and later) and emits every signed
// field.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// ErrNoSharedKey is returned by Account.TableSAS when the account was not
// created with an account key (a SAS connection string, a Microsoft Entra
// ID credential): a service SAS can only be signed with the key.
var ErrNoSharedKey = errors.New("tablekit: the account has no shared key to sign a SAS with")

// ErrInvalidSAS is wrapped by the errors Account.TableSAS returns for
// parameters the service would reject or misread: no permission, no
// expiry, an expiry before the start, a RowKey bound without its
// PartitionKey bound, a bad IP range or protocol. It unwraps to
// ErrInvalidArgument.
var ErrInvalidSAS = keys.NewArgumentSentinel("tablekit: invalid SAS parameters")

// TableSASVersion is the signed version (sv) of the SAS tokens tablekit
// issues; it fixes the layout of the string to sign.
const TableSASVersion = TableServiceVersion

// sasTimeFormat is ISO 8601 in UTC to the second, as the service expects.
const sasTimeFormat = "2006-01-02T15:04:05Z"

// TableSASPermissions are the operations a table SAS allows (sp).
type TableSASPermissions struct {
	Read   bool // r: get and query entities
	Add    bool // a: insert entities (and upserts, with Update)
	Update bool // u: replace and merge entities (and upserts, with Add)
	Delete bool // d: delete entities
}

// String is the permission string in the service's order ("raud").
func (p TableSASPermissions) String() string {
	var b strings.Builder
	if p.Read {
		b.WriteByte('r')
	}
	if p.Add {
		b.WriteByte('a')
	}
	if p.Update {
		b.WriteByte('u')
	}
	if p.Delete {
		b.WriteByte('d')
	}
	return b.String()
}

// TableSASOptions narrows a table SAS. A nil *TableSASOptions means the
// whole table, any IP, HTTPS or HTTP.
//
// The key range is inclusive at both ends and compares keys as strings, the
// way the service sorts them. A StartRowKey applies within
// StartPartitionKey only, and an EndRowKey within EndPartitionKey: to scope
// a SAS to one partition, set StartPartitionKey and EndPartitionKey to the
// same value; to one entity, set the row keys equal too.
type TableSASOptions struct {
	StartPartitionKey string // spk; "" = from the first partition
	StartRowKey       string // srk; requires StartPartitionKey
	EndPartitionKey   string // epk; "" = to the last partition
	EndRowKey         string // erk; requires EndPartitionKey

	// Protocol is "https" (HTTPS only) or "https,http"; "" omits spr,
	// which allows both.
	Protocol string
	// IPRange is one address ("168.1.5.60") or an inclusive range
	// ("168.1.5.60-168.1.5.70") the requests must come from; "" = any.
	IPRange string
	// Identifier names a stored access policy of the table (si); its
	// permissions, start and expiry then apply, and TableSAS accepts zero
	// permissions and a zero expiry.
	Identifier string
}

// TableSAS is a signed table SAS. Its Query, URL and ConnectionString are
// bearer credentials: hand them to the party they were issued for only.
// Printing a TableSAS with fmt shows the signature as REDACTED.
type TableSAS struct {
	// Table is the table the SAS is scoped to.
	Table string
	// Endpoint is the table service endpoint, such as
	// https://myaccount.table.core.windows.net or, on Azurite,
	// http://127.0.0.1:10002/devstoreaccount1.
	Endpoint string
	// Start and Expiry bound the validity (UTC, to the second); a zero
	// Start means "valid now".
	Start, Expiry time.Time
	// StringToSign is what was signed, for diagnosing a 403: the service
	// reports the string it computed when the signature does not match.
	StringToSign string

	query string
}

// Query is the SAS query string, without the leading '?': sv, tn, sp, st,
// se, sip, spr, si, spk, srk, epk, erk and sig, URL-encoded and sorted.
func (s *TableSAS) Query() string { return s.query }

// URL is the table's URL with the SAS, e.g.
// http://127.0.0.1:10002/devstoreaccount1/mytable?se=...&sig=...
// (the account segment of a path-style endpoint is kept).
func (s *TableSAS) URL() string {
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return ""
	}
	u = u.JoinPath(s.Table)
	u.RawQuery = s.query
	return u.String()
}

// ConnectionString is a connection string for Connect that authenticates
// with this SAS: "TableEndpoint=<endpoint>;SharedAccessSignature=<query>".
// The resulting Account reaches this table only (use it with
// patterns.NewTable); batches need Azure (Azurite refuses SAS on $batch).
func (s *TableSAS) ConnectionString() string {
	return "TableEndpoint=" + s.Endpoint + ";SharedAccessSignature=" + s.query
}

// Format prints the SAS with its signature replaced by REDACTED, for every
// verb: a *TableSAS that reaches a log line does not hand out access.
func (s TableSAS) Format(f fmt.State, verb rune) {
	_, _ = f.Write([]byte("TableSAS{" + s.Table + " " + s.Endpoint + "?" + Redact(s.query) + "}"))
}

// TableSAS signs a service SAS for one table with the account key, locally
// (no request). p lists the allowed operations; the SAS is valid from start
// (zero: at once) until expiry; opts narrows it to a key range, a protocol
// or an IP range.
//
// The key range is what makes a SAS per user: the guide's "each user's SAS
// token only allows them access to their own entities" is a SAS whose
// StartPartitionKey and EndPartitionKey are the user's partition. Azure
// enforces the range (requests outside it fail with 403, and queries return
// only entities inside it); Azurite checks the signature, permissions and
// expiry but not the range. A per-user SAS, on the server:
//
//	sas, err := acct.TableSAS("notes", tablekit.TableSASPermissions{Read: true, Add: true, Update: true},
//		time.Time{}, time.Now().Add(time.Hour),
//		&tablekit.TableSASOptions{StartPartitionKey: userID, EndPartitionKey: userID})
//	// send sas.ConnectionString() (or sas.URL()) to the user's app, which runs
//	// tablekit.Connect(cs, nil) and patterns.NewTable[Note](acct, "notes", nil)
//
// A SAS authorizes single-entity operations and queries; on Azurite,
// batches (entity group transactions) with a SAS are refused with 403.
//
// Errors: ErrNoSharedKey when the account has no key; ErrNoEndpoint
// without a table endpoint; ErrInvalidName for a bad table name;
// ErrInvalidKey for a range bound that is not a valid key; ErrInvalidSAS
// for the other parameter errors. No error contains the key or signature.
func (a *Account) TableSAS(table string, p TableSASPermissions, start, expiry time.Time, opts *TableSASOptions) (*TableSAS, error) {
	if a.auth.Key == nil {
		return nil, tkerr.Errorf("tablekit: TableSAS for table %q: %w", table, ErrNoSharedKey)
	}
	if a.urls.table == "" {
		return nil, tkerr.Errorf("tablekit: TableSAS for table %q: %w", table, ErrNoEndpoint)
	}
	v := TableSASValues{Permissions: p, Start: start, Expiry: expiry, Table: table}
	if opts != nil {
		v.Options = *opts
	}
	return v.sign(a.name, a.auth.Key, a.urls.table)
}

// TableSASValues are the fields of a table service SAS, before signing.
// Account.TableSAS builds and signs them; StringToSign exposes the layout.
type TableSASValues struct {
	Table         string
	Permissions   TableSASPermissions
	Start, Expiry time.Time
	Options       TableSASOptions
}

func sasErr(table, msg string) error {
	return tkerr.Errorf("tablekit: TableSAS for table %q: %s: %w", table, msg, ErrInvalidSAS)
}

// validate checks the values the way the service would, before anything
// is signed.
func (v *TableSASValues) validate() error {
	if err := validateTableName(v.Table); err != nil {
		return err
	}
	o := &v.Options
	if o.Identifier == "" {
		if v.Permissions == (TableSASPermissions{}) {
			return sasErr(v.Table, "no permission granted (set Read, Add, Update or Delete)")
		}
		if v.Expiry.IsZero() {
			return sasErr(v.Table, "Expiry is zero (required without a stored access policy Identifier)")
		}
	}
	if !v.Start.IsZero() && !v.Expiry.IsZero() && !v.Start.Before(v.Expiry) {
		return sasErr(v.Table, "Start is not before Expiry")
	}
	for _, k := range []struct{ name, val string }{
		{"StartPartitionKey", o.StartPartitionKey}, {"StartRowKey", o.StartRowKey},
		{"EndPartitionKey", o.EndPartitionKey}, {"EndRowKey", o.EndRowKey},
	} {
		if err := keys.ValidateKey(k.name, k.val); err != nil {
			return tkerr.Errorf("tablekit: TableSAS for table %q: %w", v.Table, err)
		}
	}
	if o.StartRowKey != "" && o.StartPartitionKey == "" {
		return sasErr(v.Table, "StartRowKey is set without StartPartitionKey")
	}
	if o.EndRowKey != "" && o.EndPartitionKey == "" {
		return sasErr(v.Table, "EndRowKey is set without EndPartitionKey")
	}
	if o.StartPartitionKey != "" && o.EndPartitionKey != "" && o.StartPartitionKey > o.EndPartitionKey {
		return sasErr(v.Table, "StartPartitionKey sorts after EndPartitionKey (the range would be empty)")
	}
	switch o.Protocol {
	case "", "https", "https,http":
	default:
		return sasErr(v.Table, "Protocol must be \"https\" or \"https,http\"")
	}
	if o.IPRange != "" {
		lo, hi, isRange := strings.Cut(o.IPRange, "-")
		a, err := netip.ParseAddr(lo)
		if err == nil && isRange {
			var b netip.Addr
			if b, err = netip.ParseAddr(hi); err == nil && b.Less(a) {
				err = errors.New("reversed")
			}
		}
		if err != nil {
			return sasErr(v.Table, "IPRange must be an IP address or an ascending range a-b")
		}
	}
	if strings.ContainsAny(o.Identifier, "\n\r") || len(o.Identifier) > 64 {
		return sasErr(v.Table, "Identifier must be at most 64 characters on one line")
	}
	return nil
}

// StringToSign is the Table service SAS string to sign for account, as the
// REST specification lays it out for signed version 2018-11-09 and later:
//
//	signedpermissions \n signedstart \n signedexpiry \n
//	canonicalizedresource \n signedidentifier \n signedIP \n
//	signedProtocol \n signedversion \n
//	startingpartitionkey \n startingrowkey \n endingpartitionkey \n endingrowkey
//
// where canonicalizedresource is "/table/<account>/<table in lower case>",
// times are UTC "YYYY-MM-DDThh:mm:ssZ" and absent fields are empty. The
// signature is base64(HMAC-SHA256(decoded account key, StringToSign)).
func (v TableSASValues) StringToSign(account string) string {
	o := v.Options
	return strings.Join([]string{
		v.Permissions.String(),
		sasTime(v.Start),
		sasTime(v.Expiry),
		"/table/" + account + "/" + strings.ToLower(v.Table),
		o.Identifier,
		o.IPRange,
		o.Protocol,
		TableSASVersion,
		o.StartPartitionKey,
		o.StartRowKey,
		o.EndPartitionKey,
		o.EndRowKey,
	}, "\n")
}

func sasTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(sasTimeFormat)
}

func (v TableSASValues) sign(account string, key []byte, endpoint string) (*TableSAS, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	sts := v.StringToSign(account)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(sts))
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))

	o := v.Options
	q := url.Values{}
	add := func(k, val string) {
		if val != "" {
			q.Set(k, val)
		}
	}
	add("sv", TableSASVersion)
	add("tn", strings.ToLower(v.Table))
	add("sp", v.Permissions.String())
	add("st", sasTime(v.Start))
	add("se", sasTime(v.Expiry))
	add("sip", o.IPRange)
	add("spr", o.Protocol)
	add("si", o.Identifier)
	// The range fields: signed, and sent, so that the service computes
	// the same string (aztables signs them but does not send them).
	add("spk", o.StartPartitionKey)
	add("srk", o.StartRowKey)
	add("epk", o.EndPartitionKey)
	add("erk", o.EndRowKey)
	add("sig", sig)

	s := &TableSAS{
		Table:        v.Table,
		Endpoint:     strings.TrimSuffix(endpoint, "/"),
		StringToSign: sts,
		// Encode writes a space as '+', which some servers read as a
		// literal plus in a SAS field; %20 means a space everywhere.
		query: strings.ReplaceAll(q.Encode(), "+", "%20"),
	}
	if !v.Start.IsZero() {
		s.Start = v.Start.UTC().Truncate(time.Second)
	}
	if !v.Expiry.IsZero() {
		s.Expiry = v.Expiry.UTC().Truncate(time.Second)
	}
	return s, nil
}

// ---- Redaction of Account values (secrets never leak) ----
//
// Without this method, fmt prints an Account's unexported fields: the
// decoded account key (as decimal bytes) and the SAS query with its
// signature. It lives here, apart from account.go, until that file's owner
// takes it over.

// Format prints an Account as its name and endpoints, for every verb
// (%v, %+v, %#v, %s): never its key or SAS.
func (a *Account) Format(f fmt.State, verb rune) {
	if a == nil {
		_, _ = f.Write([]byte("<nil>"))
		return
	}
	auth := "none"
	switch {
	case a.auth.Key != nil:
		auth = "shared key"
	case a.auth.Token != nil:
		auth = "token credential"
	case a.auth.SAS != "":
		auth = "SAS"
	}
	_, _ = f.Write([]byte("tablekit.Account{name: " + a.name + ", auth: " + auth +
		", table: " + a.urls.table + ", queue: " + a.urls.queue + ", blob: " + a.urls.blob + "}"))
}

package answer

import (
	"net/url"
	"strings"
)

// TablePath is what a path-style Table service URL path addresses:
// /account (the service), /account/Tables, /account/Tables('t'),
// /account/$batch, /account/t, /account/t() and
// /account/t(PartitionKey='p',RowKey='r').
type TablePath struct {
	// Account is the first segment, unescaped.
	Account string
	// Service is set for the account itself (/account or /account/):
	// service properties and stats.
	Service bool
	// Name is what follows the account up to any "(": "Tables",
	// "$batch" or a table's name.
	Name string
	// Parens is set when Name is followed by (...), empty or not.
	Parens bool
	// Table is the name in Tables('t'), quotes inside undoubled.
	Table string
	// HasKeys is set for an entity's path; PartitionKey and RowKey are
	// then its keys, quotes inside undoubled.
	HasKeys              bool
	PartitionKey, RowKey string
}

// ParseTablePath reads a Table service URL path as the request carries
// it escaped (url.URL.EscapedPath): the account is the first segment,
// and the rest, unescaped, is one of TablePath's forms. Inside the
// quotes of a key or of Tables('t'), two quotes stand for one. ok is
// false when the path is none of those forms or does not unescape.
func ParseTablePath(escapedPath string) (p TablePath, ok bool) {
	acct, rest, _ := strings.Cut(strings.TrimPrefix(escapedPath, "/"), "/")
	acct, err := url.PathUnescape(acct)
	if err != nil {
		return TablePath{}, false
	}
	rest, err = url.PathUnescape(rest)
	if err != nil {
		return TablePath{}, false
	}
	p.Account = acct
	if rest == "" {
		p.Service = true
		return p, true
	}
	open := strings.IndexByte(rest, '(')
	if open < 0 {
		p.Name = rest
		return p, true
	}
	if !strings.HasSuffix(rest, ")") {
		return TablePath{}, false
	}
	p.Name, p.Parens = rest[:open], true
	inner := rest[open+1 : len(rest)-1]
	if inner == "" {
		return p, true
	}
	if p.Name == "Tables" {
		v, after, ok := Unquote(inner)
		if !ok || after != "" {
			return TablePath{}, false
		}
		p.Table = v
		return p, true
	}
	pk, after, ok := keyLiteral(inner, "PartitionKey=")
	if !ok || !strings.HasPrefix(after, ",") {
		return TablePath{}, false
	}
	rk, after, ok := keyLiteral(after[1:], "RowKey=")
	if !ok || after != "" {
		return TablePath{}, false
	}
	p.HasKeys, p.PartitionKey, p.RowKey = true, pk, rk
	return p, true
}

// keyLiteral reads name='value' at the start of s.
func keyLiteral(s, name string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, name) {
		return "", "", false
	}
	return Unquote(s[len(name):])
}

// Unquote reads the OData string literal 'value' at the start of s, two
// quotes inside standing for one, and returns the value and what
// follows the closing quote. ok is false when s does not start with a
// quote or the literal is not closed.
func Unquote(s string) (val, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), s[i+1:], true
	}
	return "", "", false
}

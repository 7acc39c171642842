package emulator

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Account is a storage account the emulator serves (Options.Accounts).
type Account struct {
	// Name is the account's name: 3 to 24 lowercase letters and digits.
	Name string
	// Keys are the account's keys, base64, one or two as an Azure
	// account's key1 and key2: a request signed with either is
	// authenticated. The first is the one connection strings carry.
	Keys []string

	decoded [][]byte // Keys decoded, set by Options.accounts
}

// AccountsEnv is the environment variable Azurite reads its accounts
// from, which `tablekit emulator` reads too: ParseAccounts' format.
const AccountsEnv = "AZURITE_ACCOUNTS"

// SkipAPIVersionCheckEnv is the environment variable Azurite reads as
// --skipApiVersionCheck, which `tablekit emulator` reads too: exactly
// "true" (case-sensitive, as Azurite's README says) sets
// Options.SkipAPIVersionCheck; any other value leaves the flag to say.
const SkipAPIVersionCheckEnv = "AZURITE_SKIP_API_VERSION_CHECK"

// ParseAccounts reads accounts in the format of Azurite's AZURITE_ACCOUNTS:
// "account1:key1[:key2];account2:key1[:key2];...", keys in base64, empty
// entries (a trailing ";") skipped. Where Azurite falls back to the
// development account on a malformed value, ParseAccounts returns an
// error naming the entry (never a key).
func ParseAccounts(s string) ([]Account, error) {
	var out []Account
	for i, entry := range strings.Split(strings.TrimSpace(s), ";") {
		if entry == "" {
			continue
		}
		parts := strings.Split(entry, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("emulator: %s entry %d (account %q): want account:key1[:key2]", AccountsEnv, i+1, parts[0])
		}
		out = append(out, Account{Name: parts[0], Keys: parts[1:]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("emulator: %s names no account", AccountsEnv)
	}
	return out, nil
}

// accounts returns the accounts o serves, checked, with their keys
// decoded: Options.Accounts, or the one of AccountName and AccountKey (the
// development account's by default).
func (o *Options) accounts() ([]Account, error) {
	in := o.Accounts
	if len(in) == 0 {
		a := Account{Name: o.AccountName, Keys: []string{o.AccountKey}}
		if a.Name == "" {
			a.Name = DevAccountName
		}
		if a.Keys[0] == "" {
			a.Keys[0] = DevAccountKey
		}
		in = []Account{a}
	} else if o.AccountName != "" || o.AccountKey != "" {
		return nil, errors.New("emulator: set Options.Accounts or AccountName and AccountKey, not both")
	}
	out := make([]Account, 0, len(in))
	seen := map[string]bool{}
	for _, a := range in {
		if !validAccountName(a.Name) {
			return nil, fmt.Errorf("emulator: account name %q: Azure's account names are 3 to 24 lowercase letters and digits", a.Name)
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("emulator: account %q is listed twice", a.Name)
		}
		seen[a.Name] = true
		if len(a.Keys) == 0 || len(a.Keys) > 2 {
			return nil, fmt.Errorf("emulator: account %q has %d keys; want one or two", a.Name, len(a.Keys))
		}
		b := Account{Name: a.Name, Keys: append([]string(nil), a.Keys...)}
		for n, k := range a.Keys {
			key, err := base64.StdEncoding.DecodeString(k)
			if err != nil || len(key) == 0 {
				return nil, fmt.Errorf("emulator: account %q: key %d is not base64", a.Name, n+1)
			}
			b.decoded = append(b.decoded, key)
		}
		out = append(out, b)
	}
	return out, nil
}

// accountRouter sends a request to the handler of the account its path
// names (/ACCOUNT/... or /ACCOUNT-secondary/...).
type accountRouter map[string]http.Handler

// with returns the router as a handler; a request naming no account it
// knows goes to first's handler, which answers it as a single-account
// service answers a foreign account (400 InvalidUri, or the Table
// service's 404).
func (a accountRouter) with(first string) http.Handler {
	if len(a) == 1 {
		return a[first]
	}
	fallback := a[first]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if h := a[strings.TrimSuffix(seg, "-secondary")]; h != nil {
			h.ServeHTTP(w, r)
			return
		}
		fallback.ServeHTTP(w, r)
	})
}

// Accounts returns the names of the accounts the emulator serves, the
// Instance's own first.
func (i *Instance) Accounts() []string {
	names := make([]string, len(i.accounts))
	for n, a := range i.accounts {
		names[n] = a.Name
	}
	return names
}

// ConnectionStringFor returns the connection string of the served account
// named name (its first key, the services' endpoints with its path), or
// an error when the emulator does not serve it.
func (i *Instance) ConnectionStringFor(name string) (string, error) {
	for _, a := range i.accounts {
		if a.Name != name {
			continue
		}
		var proto, endpoints string
		for _, e := range []struct{ key, url string }{{"BlobEndpoint", i.BlobURL}, {"QueueEndpoint", i.QueueURL}, {"TableEndpoint", i.TableURL}} {
			if e.url == "" {
				continue // not served (Options.Services)
			}
			proto, _, _ = strings.Cut(e.url, ":")
			endpoints += ";" + e.key + "=" + i.urlFor(e.url, name)
		}
		return "DefaultEndpointsProtocol=" + proto + ";AccountName=" + name +
			";AccountKey=" + a.Keys[0] + endpoints + ";", nil
	}
	return "", fmt.Errorf("emulator: account %q is not served (served: %s)", name, strings.Join(i.Accounts(), ", "))
}

// urlFor turns a service URL of the Instance's account into name's.
func (i *Instance) urlFor(url, name string) string {
	return strings.TrimSuffix(url, "/"+i.AccountName) + "/" + name
}

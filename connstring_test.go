package tablekit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

const testKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func TestConnectForms(t *testing.T) {
	tests := []struct {
		name               string
		cs                 string
		account            string
		table, queue, blob string
		hasKey             bool
	}{
		{
			name:    "development storage",
			cs:      "UseDevelopmentStorage=true",
			account: "devstoreaccount1",
			table:   "http://127.0.0.1:10002/devstoreaccount1",
			queue:   "http://127.0.0.1:10001/devstoreaccount1",
			blob:    "http://127.0.0.1:10000/devstoreaccount1",
			hasKey:  true,
		},
		{
			name:    "development storage with proxy",
			cs:      "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite.local",
			account: "devstoreaccount1",
			table:   "http://azurite.local:10002/devstoreaccount1",
			queue:   "http://azurite.local:10001/devstoreaccount1",
			blob:    "http://azurite.local:10000/devstoreaccount1",
			hasKey:  true,
		},
		{
			name:    "account key with default suffix",
			cs:      "DefaultEndpointsProtocol=https;AccountName=contoso;AccountKey=" + testKey,
			account: "contoso",
			table:   "https://contoso.table.core.windows.net",
			queue:   "https://contoso.queue.core.windows.net",
			blob:    "https://contoso.blob.core.windows.net",
			hasKey:  true,
		},
		{
			name:    "account key with sovereign-cloud suffix, trailing semicolon, odd case",
			cs:      "defaultendpointsprotocol=https; accountname=contoso ;ACCOUNTKEY=" + testKey + ";EndpointSuffix=core.chinacloudapi.cn;",
			account: "contoso",
			table:   "https://contoso.table.core.chinacloudapi.cn",
			queue:   "https://contoso.queue.core.chinacloudapi.cn",
			blob:    "https://contoso.blob.core.chinacloudapi.cn",
			hasKey:  true,
		},
		{
			name:    "explicit endpoints (Azurite style)",
			cs:      "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + testKey + ";BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;QueueEndpoint=http://127.0.0.1:2/devstoreaccount1;TableEndpoint=http://127.0.0.1:3/devstoreaccount1/;",
			account: "devstoreaccount1",
			table:   "http://127.0.0.1:3/devstoreaccount1",
			queue:   "http://127.0.0.1:2/devstoreaccount1",
			blob:    "http://127.0.0.1:1/devstoreaccount1",
			hasKey:  true,
		},
		{
			name:    "explicit table endpoint only, no protocol",
			cs:      "AccountName=contoso;AccountKey=" + testKey + ";TableEndpoint=https://contoso.table.cosmos.azure.com:443/",
			account: "contoso",
			table:   "https://contoso.table.cosmos.azure.com:443",
			hasKey:  true,
		},
		{
			name:    "SAS only",
			cs:      "TableEndpoint=https://contoso.table.core.windows.net/;SharedAccessSignature=sv=2019-02-02&tn=t&sig=abc%3D",
			account: "contoso",
			table:   "https://contoso.table.core.windows.net",
		},
		{
			name:    "SAS with every endpoint and a leading question mark",
			cs:      "BlobEndpoint=https://contoso.blob.core.windows.net;QueueEndpoint=https://contoso.queue.core.windows.net;TableEndpoint=https://contoso.table.core.windows.net;SharedAccessSignature=?sv=2019-02-02&sig=abc",
			account: "contoso",
			table:   "https://contoso.table.core.windows.net",
			queue:   "https://contoso.queue.core.windows.net",
			blob:    "https://contoso.blob.core.windows.net",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tablekit.Connect(tc.cs, nil)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			if a.Name() != tc.account {
				t.Errorf("Name = %q, want %q", a.Name(), tc.account)
			}
			if a.TableEndpoint() != tc.table || a.QueueEndpoint() != tc.queue || a.BlobEndpoint() != tc.blob {
				t.Errorf("endpoints = %q %q %q, want %q %q %q", a.TableEndpoint(), a.QueueEndpoint(), a.BlobEndpoint(), tc.table, tc.queue, tc.blob)
			}
			if (a.Tables() != nil) != (tc.table != "") || (a.Queues() != nil) != (tc.queue != "") || (a.Blobs() != nil) != (tc.blob != "") {
				t.Errorf("clients present = %v %v %v, want them exactly for the configured endpoints", a.Tables() != nil, a.Queues() != nil, a.Blobs() != nil)
			}
			if (a.SharedKey() != nil) != tc.hasKey {
				t.Errorf("SharedKey present = %v, want %v", a.SharedKey() != nil, tc.hasKey)
			}
		})
	}
}

func TestConnectRejectsMalformed(t *testing.T) {
	secret := "c2VjcmV0LWtleS1kby1ub3QtbGVhaw=="
	tests := []struct {
		name, cs, want string
	}{
		{"empty", "", "empty"},
		{"only semicolons", ";;", "empty"},
		{"segment without equals", "AccountName=contoso;" + secret, "not of the form"},
		{"unknown setting", "AccountName=contoso;AcountKey=" + secret, "unknown setting \"AcountKey\""},
		{"key without name", "AccountKey=" + secret, "AccountName is missing"},
		{"no credential", "AccountName=contoso", "neither AccountKey nor SharedAccessSignature"},
		{"key and sas", "AccountName=contoso;AccountKey=" + secret + ";SharedAccessSignature=sig=x", "both set"},
		{"key not base64", "AccountName=contoso;AccountKey=not*base64!" + secret, "not base64"},
		{"bad protocol", "DefaultEndpointsProtocol=ftp;AccountName=contoso;AccountKey=" + secret, "http or https"},
		{"relative endpoint", "TableEndpoint=contoso.table.core.windows.net;SharedAccessSignature=sig=" + secret, "TableEndpoint is not an absolute"},
		{"sas no endpoint", "SharedAccessSignature=sv=1&sig=" + secret, "no endpoint"},
		{"duplicate setting", "AccountName=a;AccountName=b;AccountKey=" + secret, "appears twice"},
		{"development storage false", "UseDevelopmentStorage=false", "must be true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tablekit.Connect(tc.cs, nil)
			if err == nil {
				t.Fatal("Connect succeeded, want an error")
			}
			if !errors.Is(err, tablekit.ErrInvalidConnectionString) {
				t.Errorf("error %v does not wrap ErrInvalidConnectionString", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("error %q echoes the secret", err)
			}
		})
	}
}

func TestConnectionStringFromEnv(t *testing.T) {
	t.Setenv(tablekit.EnvConnectionString, "")
	if got := tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString); got != "UseDevelopmentStorage=true" {
		t.Errorf("unset: got %q, want the fallback", got)
	}
	t.Setenv(tablekit.EnvConnectionString, "  AccountName=x;AccountKey=abc  ")
	if got := tablekit.ConnectionStringFromEnv("fallback"); got != "AccountName=x;AccountKey=abc" {
		t.Errorf("set: got %q", got)
	}
}

func TestAccountValidatesNames(t *testing.T) {
	a, err := tablekit.Connect(tablekit.DevelopmentConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Table("bad-name"); !errors.Is(err, tablekit.ErrInvalidName) {
		t.Errorf("Table(bad-name) = %v, want ErrInvalidName", err)
	}
	if _, err := a.Queue("Bad_Queue"); !errors.Is(err, tablekit.ErrInvalidName) {
		t.Errorf("Queue(Bad_Queue) = %v, want ErrInvalidName", err)
	}
	sasOnly, err := tablekit.Connect("TableEndpoint=https://x.table.core.windows.net;SharedAccessSignature=sv=1&sig=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sasOnly.Queue("jobs"); !errors.Is(err, tablekit.ErrNoEndpoint) {
		t.Errorf("Queue on a table-only account = %v, want ErrNoEndpoint", err)
	}
}

func TestNewAccountConstructors(t *testing.T) {
	if _, err := tablekit.NewAccountWithSharedKey("contoso", testKey, tablekit.AccountEndpoints("contoso"), nil); err != nil {
		t.Errorf("NewAccountWithSharedKey: %v", err)
	}
	if _, err := tablekit.NewAccountWithSharedKey("contoso", "%%%", tablekit.AccountEndpoints("contoso"), nil); !errors.Is(err, tablekit.ErrInvalidConnectionString) {
		t.Errorf("bad key: %v", err)
	}
	if _, err := tablekit.NewAccountWithSharedKey("contoso", testKey, tablekit.Endpoints{Table: "https://x/?sig=secret"}, nil); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("endpoint with query: %v", err)
	}
	if _, err := tablekit.NewAccountWithCredential(tablekit.AccountEndpoints("contoso"), nil, nil); err == nil {
		t.Error("nil credential accepted")
	}
}

func TestSASOnlyPathStyleAccountName(t *testing.T) {
	a, err := tablekit.Connect("TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=sv=2019-02-02&sig=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "devstoreaccount1" {
		t.Errorf("Name = %q, want devstoreaccount1 (the path segment of a path-style endpoint)", a.Name())
	}
}

// TestConnectRejectsSASThatIsNotAQuery: a SharedAccessSignature value must
// be a query string of key=value pairs holding a non-empty sig. Anything
// else (a bare signature, a SAS without sig, stray segments) used to be
// accepted and then sent after '?' in every request URL, where no
// redaction recognised it. Connect refuses it without echoing it.
func TestConnectRejectsSASThatIsNotAQuery(t *testing.T) {
	const value = "Zm9vYmFyLXNlY3JldC12YWx1ZQ" // base64, no padding
	for _, sas := range []string{
		"notaquery",
		value,
		"?" + value,
		"sv=2019-02-02&sp=r&se=2030-01-01T00%3A00%3A00Z&x=" + value,
		"sv=2019-02-02&sp=r&sig=",
		"sv=2019-02-02&" + value + "&sig=abc",
		"sv=2019-02-02&=" + value + "&sig=abc",
		"sv=2019-02-02&sig=abc&sig=" + value,
		"sv=2019-02-02&sig=abc#" + value,
		"sv=2019-02-02&sig=abc " + value,
	} {
		for _, cs := range []string{
			"TableEndpoint=https://contoso.table.core.windows.net;SharedAccessSignature=" + sas,
			"QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;SharedAccessSignature=" + sas,
		} {
			a, err := tablekit.Connect(cs, nil)
			if err == nil {
				t.Errorf("Connect accepted SharedAccessSignature=%s (queue endpoint %q)", sas, a.QueueEndpoint())
				continue
			}
			if !errors.Is(err, tablekit.ErrInvalidConnectionString) {
				t.Errorf("SharedAccessSignature=%s: error %v does not wrap ErrInvalidConnectionString", sas, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "SharedAccessSignature") || !strings.Contains(msg, "sig") {
				t.Errorf("SharedAccessSignature=%s: error %q does not say what is wrong", sas, msg)
			}
			if strings.Contains(msg, value) || strings.Contains(msg, value[:12]) || strings.Contains(msg, "notaquery") {
				t.Errorf("SharedAccessSignature=%s: error %q echoes the value", sas, msg)
			}
		}
	}
	// Real SAS query strings are still accepted, with or without '?'.
	for _, sas := range []string{
		"sv=2019-02-02&tn=t&sp=r&se=2030-01-01T00%3A00%3A00Z&sig=abc%3D",
		"?sv=2020-02-10&ss=q&srt=sco&sp=r&se=2030-01-01T00:00:00Z&sig=a%2Fb%2Bc%3D",
		"sig=abc",
	} {
		if _, err := tablekit.Connect("TableEndpoint=https://contoso.table.core.windows.net;SharedAccessSignature="+sas, nil); err != nil {
			t.Errorf("Connect refused SharedAccessSignature=%s: %v", sas, err)
		}
	}
}

package tablekit_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Azurite's development account (public, documented by Microsoft).
const (
	sasTestAccount = "devstoreaccount1"
	sasTestKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

func sasTestAccountOn(t *testing.T, endpoint string) *tablekit.Account {
	t.Helper()
	acct, err := tablekit.NewAccountWithSharedKey(sasTestAccount, sasTestKey, tablekit.Endpoints{Table: endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// TestTableSASStringToSignFollowsTheSpecification rebuilds the string to
// sign field by field as the REST specification ("Create a service SAS",
// Table service, version 2018-11-09 and later) lists them, checks the
// signature over it with the account key, and checks that every signed
// field travels in the query (aztables drops spk/srk/epk/erk).
func TestTableSASStringToSignFollowsTheSpecification(t *testing.T) {
	// A non-UTC zone: the signed times must be converted, not relabelled.
	zone := time.FixedZone("UTC+9", 9*3600)
	start := time.Date(2030, 1, 2, 12, 4, 5, 999_000_000, zone) // 03:04:05Z
	expiry := time.Date(2030, 1, 3, 9, 0, 0, 0, zone)           // 00:00:00Z
	acct := sasTestAccountOn(t, "http://127.0.0.1:10002/devstoreaccount1")
	opts := &tablekit.TableSASOptions{
		StartPartitionKey: "user 42", StartRowKey: "a+b",
		EndPartitionKey: "user 42", EndRowKey: "z&y=1",
		Protocol: "https,http", IPRange: "10.0.0.1-10.0.0.9",
	}
	sas, err := acct.TableSAS("Orders", tablekit.TableSASPermissions{Read: true, Update: true, Delete: true, Add: true}, start, expiry, opts)
	if err != nil {
		t.Fatal(err)
	}

	want := "raud" + "\n" + // signedpermissions, in the service's order
		"2030-01-02T03:04:05Z" + "\n" + // signedstart, UTC, to the second
		"2030-01-03T00:00:00Z" + "\n" + // signedexpiry
		"/table/devstoreaccount1/orders" + "\n" + // canonicalizedresource, table in lower case
		"" + "\n" + // signedidentifier
		"10.0.0.1-10.0.0.9" + "\n" + // signedIP
		"https,http" + "\n" + // signedProtocol
		"2019-02-02" + "\n" + // signedversion
		"user 42" + "\n" + // startingpartitionkey
		"a+b" + "\n" + // startingrowkey
		"user 42" + "\n" + // endingpartitionkey
		"z&y=1" // endingrowkey
	if sas.StringToSign != want {
		t.Fatalf("string to sign:\n got %q\nwant %q", sas.StringToSign, want)
	}

	q, err := url.ParseQuery(sas.Query())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(sasTestKey)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(want))
	if got, wantSig := q.Get("sig"), base64.StdEncoding.EncodeToString(m.Sum(nil)); got != wantSig {
		t.Errorf("sig = %q, want HMAC-SHA256 of the string to sign %q", got, wantSig)
	}
	for k, v := range map[string]string{
		"sv": "2019-02-02", "tn": "orders", "sp": "raud", "st": "2030-01-02T03:04:05Z", "se": "2030-01-03T00:00:00Z",
		"sip": "10.0.0.1-10.0.0.9", "spr": "https,http",
		"spk": "user 42", "srk": "a+b", "epk": "user 42", "erk": "z&y=1",
	} {
		if got := q.Get(k); got != v {
			t.Errorf("query %s = %q, want %q", k, got, v)
		}
	}
	if _, ok := q["si"]; ok {
		t.Errorf("query has si without an Identifier: %s", sas.Query())
	}
	if strings.Contains(sas.Query(), "+") && !strings.Contains(sas.Query(), "%2B") {
		t.Errorf("query encodes a space as '+': %s", sas.Query())
	}
	if strings.Contains(sas.Query(), "user+42") {
		t.Errorf("query encodes a space as '+' (read as a plus by some servers): %s", sas.Query())
	}
	if !sas.Start.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) || !sas.Expiry.Equal(time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Start, Expiry = %v, %v; want the signed times", sas.Start, sas.Expiry)
	}
}

// TestTableSASURLOnEndpoints checks the URL keeps the account segment of
// path-style endpoints (aztables' GetTableSASURL drops the '/' before the
// table name) and that the connection string round-trips through Connect.
func TestTableSASURLOnEndpoints(t *testing.T) {
	expiry := time.Now().Add(time.Hour)
	for _, tc := range []struct{ endpoint, wantPrefix string }{
		{"http://127.0.0.1:10002/devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1/mytable?"},
		{"http://127.0.0.1:10002/devstoreaccount1/", "http://127.0.0.1:10002/devstoreaccount1/mytable?"},
		{"https://myaccount.table.core.windows.net", "https://myaccount.table.core.windows.net/mytable?"},
		{"https://myaccount.table.core.windows.net/", "https://myaccount.table.core.windows.net/mytable?"},
	} {
		sas, err := sasTestAccountOn(t, tc.endpoint).TableSAS("mytable", tablekit.TableSASPermissions{Read: true}, time.Time{}, expiry, nil)
		if err != nil {
			t.Fatal(err)
		}
		u := sas.URL()
		if !strings.HasPrefix(u, tc.wantPrefix) || !strings.HasSuffix(u, "?"+sas.Query()) {
			t.Errorf("endpoint %s: URL %s, want %s<query>", tc.endpoint, u, tc.wantPrefix)
		}
		acct, err := tablekit.Connect(sas.ConnectionString(), nil)
		if err != nil {
			t.Fatalf("endpoint %s: Connect(ConnectionString()): %v", tc.endpoint, err)
		}
		if got, want := acct.TableEndpoint(), strings.TrimSuffix(tc.endpoint, "/"); got != want {
			t.Errorf("endpoint %s: connected to %s", tc.endpoint, got)
		}
	}
}

// TestTableSASRefusesBadParameters: every mistake is a typed error before
// anything is signed.
func TestTableSASRefusesBadParameters(t *testing.T) {
	acct := sasTestAccountOn(t, "http://127.0.0.1:10002/devstoreaccount1")
	now := time.Now()
	r := tablekit.TableSASPermissions{Read: true}
	for _, tc := range []struct {
		name          string
		table         string
		p             tablekit.TableSASPermissions
		start, expiry time.Time
		opts          *tablekit.TableSASOptions
		want          error
	}{
		{"no permission", "orders", tablekit.TableSASPermissions{}, time.Time{}, now.Add(time.Hour), nil, tablekit.ErrInvalidSAS},
		{"no expiry", "orders", r, time.Time{}, time.Time{}, nil, tablekit.ErrInvalidSAS},
		{"expiry before start", "orders", r, now, now.Add(-time.Minute), nil, tablekit.ErrInvalidSAS},
		{"bad table name", "my-table", r, time.Time{}, now.Add(time.Hour), nil, tablekit.ErrInvalidName},
		{"row key without partition key", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{StartRowKey: "a"}, tablekit.ErrInvalidSAS},
		{"end row key without partition key", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{EndRowKey: "a"}, tablekit.ErrInvalidSAS},
		{"empty partition range", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{StartPartitionKey: "b", EndPartitionKey: "a"}, tablekit.ErrInvalidSAS},
		{"newline in a bound", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{StartPartitionKey: "a\nb"}, tablekit.ErrInvalidKey},
		{"slash in a bound", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{EndPartitionKey: "a/b"}, tablekit.ErrInvalidKey},
		{"bad protocol", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{Protocol: "http"}, tablekit.ErrInvalidSAS},
		{"bad IP", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{IPRange: "10.0.0.300"}, tablekit.ErrInvalidSAS},
		{"reversed IP range", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{IPRange: "10.0.0.9-10.0.0.1"}, tablekit.ErrInvalidSAS},
		{"identifier on two lines", "orders", r, time.Time{}, now.Add(time.Hour), &tablekit.TableSASOptions{Identifier: "a\nb"}, tablekit.ErrInvalidSAS},
	} {
		_, err := acct.TableSAS(tc.table, tc.p, tc.start, tc.expiry, tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	// A stored access policy carries permissions and expiry itself.
	if _, err := acct.TableSAS("orders", tablekit.TableSASPermissions{}, time.Time{}, time.Time{}, &tablekit.TableSASOptions{Identifier: "readers"}); err != nil {
		t.Errorf("SAS on a stored access policy: %v", err)
	}
}

// TestTableSASNeedsTheAccountKey: an account authenticated by SAS cannot
// sign one; the error wraps ErrNoSharedKey.
func TestTableSASNeedsTheAccountKey(t *testing.T) {
	acct, err := tablekit.Connect("TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;SharedAccessSignature=sv=2019-02-02&sp=r&se=2030-01-01T00:00:00Z&sig=abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acct.TableSAS("orders", tablekit.TableSASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if !errors.Is(err, tablekit.ErrNoSharedKey) {
		t.Fatalf("err = %v, want ErrNoSharedKey", err)
	}
}

// TestTableSASFormatRedactsTheSignature: a TableSAS that reaches a log
// line does not hand out access.
func TestTableSASFormatRedactsTheSignature(t *testing.T) {
	sas, err := sasTestAccountOn(t, "http://127.0.0.1:10002/devstoreaccount1").TableSAS("orders", tablekit.TableSASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := url.ParseQuery(sas.Query())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, arg := range []any{sas, *sas} {
			out := fmt.Sprintf(verb, arg)
			if strings.Contains(out, sig.Get("sig")) || strings.Contains(out, url.QueryEscape(sig.Get("sig"))) {
				t.Errorf("fmt %s of %T shows the signature: %s", verb, arg, out)
			}
			if !strings.Contains(out, "REDACTED") {
				t.Errorf("fmt %s of %T: %s, want the signature REDACTED", verb, arg, out)
			}
		}
	}
}

// Note is the entity of the SAS tests: one partition per user.
type Note struct {
	PartitionKey string // the user
	RowKey       string
	ETag         string
	Text         string
}

// sasFixture creates a table with two users' notes through the account key
// and returns the key account and the table name.
func sasFixture(t *testing.T) (*tablekit.Account, string) {
	t.Helper()
	ctx := context.Background()
	acct := testenv.Account(t)
	name := testenv.TableName(t)
	tbl, err := patterns.NewTable[Note](acct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []Note{{PartitionKey: "alice", RowKey: "1", Text: "a1"}, {PartitionKey: "alice", RowKey: "2", Text: "a2"}, {PartitionKey: "bob", RowKey: "1", Text: "b1"}} {
		if err := tbl.Insert(ctx, &n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return acct, name
}

// sasTable connects with the SAS's connection string, as the SAS's holder
// would, and opens the table through it (fast path or SDK path).
func sasTable(t *testing.T, sas *tablekit.TableSAS, sdkPath bool) *patterns.Table[Note] {
	t.Helper()
	acct, err := tablekit.Connect(sas.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := patterns.NewTable[Note](acct, sas.Table, &patterns.TableOptions{SDKPath: sdkPath})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestTableSASOnAzurite: a SAS-authenticated Table[T] reads with an 'r'
// SAS and cannot write with it; a SAS with write permissions writes;
// expired and not-yet-valid SAS, and a SAS for another table, are refused
// with ErrAuthorization. Signing makes no request. Both Table[T] transports
// are checked (the fast path appends the SAS query to each request).
func TestTableSASOnAzurite(t *testing.T) {
	ctx := context.Background()
	keyAcct, name := sasFixture(t)
	counting, counter := testenv.CountingAccount(t)
	now := time.Now()
	r := tablekit.TableSASPermissions{Read: true}
	all := tablekit.TableSASPermissions{Read: true, Add: true, Update: true, Delete: true}
	sign := func(table string, p tablekit.TableSASPermissions, start, expiry time.Time) *tablekit.TableSAS {
		t.Helper()
		sas, err := counting.TableSAS(table, p, start, expiry, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sas
	}
	readOnly := sign(name, r, now.Add(-time.Minute), now.Add(time.Hour))
	readWrite := sign(name, all, time.Time{}, now.Add(time.Hour))
	expired := sign(name, all, now.Add(-2*time.Hour), now.Add(-time.Hour))
	notYet := sign(name, all, now.Add(time.Hour), now.Add(2*time.Hour))
	if n := counter.Count(); n != 0 {
		t.Fatalf("signing 4 SAS made %d requests, want 0", n)
	}
	// A SAS for another table, used on this one: the signed resource
	// differs from the requested one.
	other := sign(name+"x", all, time.Time{}, now.Add(time.Hour))
	other.Table = name

	for _, sdk := range []bool{false, true} {
		t.Run(fmt.Sprintf("SDKPath=%v", sdk), func(t *testing.T) {
			ro := sasTable(t, readOnly, sdk)
			got, err := ro.Get(ctx, "alice", "1", nil)
			if err != nil || got.Text != "a1" {
				t.Fatalf("Get with an r SAS: %+v, %v", got, err)
			}
			rows, err := patterns.Collect(ro.Query(ctx, keys.And(keys.PK().Eq("alice"), keys.RK().Between("1", "2")), nil))
			if err != nil || len(rows) != 2 {
				t.Fatalf("Query with an r SAS: %d rows, %v; want 2", len(rows), err)
			}
			n := Note{PartitionKey: "alice", RowKey: "ro", Text: "x"}
			if err := ro.Insert(ctx, &n, nil); !errors.Is(err, tablekit.ErrAuthorization) {
				t.Errorf("Insert with an r SAS: %v, want ErrAuthorization", err)
			}
			if _, err := ro.DeleteIfExists(ctx, "alice", "1", nil); !errors.Is(err, tablekit.ErrAuthorization) {
				t.Errorf("Delete with an r SAS: %v, want ErrAuthorization", err)
			}

			for what, sas := range map[string]*tablekit.TableSAS{"expired": expired, "not yet valid": notYet, "other table's": other} {
				if _, err := sasTable(t, sas, sdk).Get(ctx, "alice", "1", nil); !errors.Is(err, tablekit.ErrAuthorization) {
					t.Errorf("Get with an %s SAS: %v, want ErrAuthorization", what, err)
				}
			}

			rw := sasTable(t, readWrite, sdk)
			rk := fmt.Sprintf("rw-%v", sdk)
			n = Note{PartitionKey: "alice", RowKey: rk, Text: "new"}
			if err := rw.Insert(ctx, &n, nil); err != nil {
				t.Fatalf("Insert with an raud SAS: %v", err)
			}
			n.Text = "changed"
			if err := rw.Replace(ctx, &n, nil); err != nil {
				t.Fatalf("Replace with an raud SAS: %v", err)
			}
			if err := rw.Upsert(ctx, &Note{PartitionKey: "alice", RowKey: rk + "u", Text: "up"}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
				t.Fatalf("Upsert with an raud SAS: %v", err)
			}
			if err := rw.Delete(ctx, &n, nil); err != nil {
				t.Fatalf("Delete with an raud SAS: %v", err)
			}
		})
	}

	// What the key-authenticated account sees: exactly the SAS writes.
	keyTbl, err := patterns.NewTable[Note](keyAcct, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := patterns.Collect(keyTbl.Query(ctx, keys.PK().Eq("alice"), nil))
	if err != nil {
		t.Fatal(err)
	}
	var rks []string
	for _, n := range rows {
		rks = append(rks, n.RowKey)
	}
	if got, want := strings.Join(rks, ","), "1,2,rw-falseu,rw-trueu"; got != want {
		t.Errorf("alice's rows after the SAS writes: %s, want %s", got, want)
	}
}

// TestTableSASKeyRange issues the guide's per-user SAS ("each user's SAS
// token only allows them access to their own entities") and checks that
// the range travels: the service accepts the signature. Azure enforces
// the range (bob's entities are invisible and unwritable with alice's
// SAS); plain Azurite does not (strict mode does), and this test asserts
// what each does. It also
// shows why tablekit signs its own: the same SAS from aztables, which
// signs the range but does not send it, is refused.
func TestTableSASKeyRange(t *testing.T) {
	ctx := context.Background()
	keyAcct, name := sasFixture(t)
	alice := &tablekit.TableSASOptions{StartPartitionKey: "alice", EndPartitionKey: "alice"}
	expiry := time.Now().Add(time.Hour)
	sas, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true, Add: true, Update: true, Delete: true}, time.Time{}, expiry, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range []bool{false, true} {
		tbl := sasTable(t, sas, sdk)
		if got, err := tbl.Get(ctx, "alice", "2", nil); err != nil || got.Text != "a2" {
			t.Fatalf("SDKPath=%v: alice's Get with alice's SAS: %+v, %v", sdk, got, err)
		}
		_, errBob := tbl.Get(ctx, "bob", "1", nil)
		errWrite := tbl.Upsert(ctx, &Note{PartitionKey: "bob", RowKey: "2", Text: "from alice"}, nil)
		if testenv.Lenient() {
			// Plain Azurite checks signature, permissions and expiry only;
			// in strict mode (the default) the proxy enforces the range.
			if errBob != nil || errWrite != nil {
				t.Errorf("SDKPath=%v: Azurite refused an out-of-range request (%v, %v); it did not enforce ranges when this test was written", sdk, errBob, errWrite)
			}
		} else {
			if !errors.Is(errBob, tablekit.ErrAuthorization) && !errors.Is(errBob, tablekit.ErrNotFound) {
				t.Errorf("SDKPath=%v: bob's Get with alice's SAS: %v, want refused", sdk, errBob)
			}
			if !errors.Is(errWrite, tablekit.ErrAuthorization) {
				t.Errorf("SDKPath=%v: bob's Upsert with alice's SAS: %v, want ErrAuthorization", sdk, errWrite)
			}
		}
	}

	// Bounds with characters that URL encoding changes: the service reads
	// back what was signed.
	odd, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true}, time.Time{}, expiry,
		&tablekit.TableSASOptions{StartPartitionKey: "a b+c&d=e", StartRowKey: "é'1", EndPartitionKey: "alice;z", EndRowKey: "~"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range []bool{false, true} {
		if got, err := sasTable(t, odd, sdk).Get(ctx, "alice", "1", nil); err != nil || got.Text != "a1" {
			t.Errorf("SDKPath=%v: Get with bounds %q: %+v, %v", sdk, odd.StringToSign, got, err)
		}
	}
	if testenv.IsAzurite() {
		// Azurite URL-decodes SAS fields twice: a '%' in a bound that
		// decodes again ("%20") changes the string it signs and the
		// request is refused (a lone '%' makes it fail with 500). Azure
		// decodes once.
		pct, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true}, time.Time{}, expiry,
			&tablekit.TableSASOptions{StartPartitionKey: "a%20b", EndPartitionKey: "zzz"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sasTable(t, pct, false).Get(ctx, "alice", "1", nil); !errors.Is(err, tablekit.ErrAuthorization) {
			t.Errorf("Azurite with a %%20 in a range bound: %v; it refused it (403) when this test was written", err)
		}
	}

	// aztables' own SAS for the same range: signed with spk/epk, sent
	// without them, so the service computes another signature.
	sdkClient, err := aztables.NewClientWithSharedKey(keyAcct.TableEndpoint()+"/"+name, keyAcct.SharedKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sdkURL, err := sdkClient.GetTableSASURL(aztables.SASPermissions{Read: true, StartPartitionKey: "alice", EndPartitionKey: "alice"}, time.Time{}, expiry.UTC())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sdkURL, "spk=") {
		t.Logf("aztables now sends spk: %s", tablekitRedact(sdkURL))
	}
	_, query, _ := strings.Cut(sdkURL, "?")
	viaSDK, err := tablekit.Connect("TableEndpoint="+keyAcct.TableEndpoint()+";SharedAccessSignature="+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := patterns.NewTable[Note](viaSDK, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Get(ctx, "alice", "2", nil); !errors.Is(err, tablekit.ErrAuthorization) {
		t.Errorf("Get with aztables' range SAS: %v; want ErrAuthorization (the range is signed but not sent)", err)
	}
}

// TestTableSASBatches asserts what a SAS-authenticated transaction does:
// Azurite refuses SAS on $batch requests (403, nothing written), Azure
// accepts them with a SAS that grants the operations.
func TestTableSASBatches(t *testing.T) {
	ctx := context.Background()
	keyAcct, name := sasFixture(t)
	sas, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true, Add: true, Update: true, Delete: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range []bool{false, true} {
		tbl := sasTable(t, sas, sdk)
		rk := fmt.Sprintf("batch-%v", sdk)
		_, err := tbl.Transaction().
			Insert(&Note{PartitionKey: "alice", RowKey: rk + "1"}).
			Insert(&Note{PartitionKey: "alice", RowKey: rk + "2"}).
			Submit(ctx, nil)
		_, getErr := tbl.Get(ctx, "alice", rk+"1", nil)
		if testenv.IsAzurite() {
			if !errors.Is(err, tablekit.ErrAuthorization) {
				t.Errorf("SDKPath=%v: SAS batch on Azurite: %v; want ErrAuthorization (Azurite refused SAS on $batch when this test was written)", sdk, err)
			}
			if !errors.Is(getErr, tablekit.ErrNotFound) {
				t.Errorf("SDKPath=%v: refused batch wrote its first entity (Get: %v)", sdk, getErr)
			}
		} else if err != nil || getErr != nil {
			t.Errorf("SDKPath=%v: SAS batch on Azure: %v, then Get: %v", sdk, err, getErr)
		}
	}
}

// tablekitRedact hides a signature in test logs.
func tablekitRedact(u string) string {
	i := strings.Index(u, "sig=")
	if i < 0 {
		return u
	}
	return u[:i] + "sig=REDACTED"
}

// The guide's use case: "each user's SAS token only allows them access to
// their own entities". The server, which holds the account key, signs a SAS
// for alice's partition; alice's app connects with it and never sees the
// key. (Azure refuses alice's SAS on bob's partition; Azurite does not
// enforce key ranges.)
func ExampleAccount_TableSAS() {
	ctx := context.Background()
	check := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	// On the server.
	server, err := tablekit.Connect(testenv.MainConnectionString(), nil)
	check(err)
	notes, err := patterns.NewTable[Note](server, "notesexample", nil)
	check(err)
	check(notes.CreateIfNotExists(ctx, nil))
	defer func() { check(notes.Drop(ctx, nil)) }()
	check(notes.Upsert(ctx, &Note{PartitionKey: "alice", RowKey: "1", Text: "buy milk"}, nil))
	check(notes.Upsert(ctx, &Note{PartitionKey: "bob", RowKey: "1", Text: "bob's secret"}, nil))

	sas, err := server.TableSAS("notesexample",
		tablekit.TableSASPermissions{Read: true, Add: true, Update: true},
		time.Time{}, time.Now().Add(time.Hour),
		&tablekit.TableSASOptions{StartPartitionKey: "alice", EndPartitionKey: "alice"})
	check(err)
	handOut := sas.ConnectionString() // or sas.URL(), sent to alice's app

	// In alice's app.
	client, err := tablekit.Connect(handOut, nil)
	check(err)
	mine, err := patterns.NewTable[Note](client, "notesexample", nil)
	check(err)
	check(mine.Insert(ctx, &Note{PartitionKey: "alice", RowKey: "2", Text: "call bob"}, nil))
	for n, err := range mine.Query(ctx, keys.PK().Eq("alice"), nil) {
		check(err)
		fmt.Println(n.PartitionKey, n.RowKey, n.Text)
	}
	// Output:
	// alice 1 buy milk
	// alice 2 call bob
}

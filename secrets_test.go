package tablekit_test

// Secrets never leak: account keys and SAS signatures must not appear in
// error strings (from Connect, from failed requests, from MapError), in
// fmt output of an Account or a TableSAS, or in azcore's request logs.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azlog "github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	azqsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// secret is a credential the tests look for in output: the base64 text, its
// URL-escaped form, and the decoded bytes as fmt prints a []byte.
type secret struct {
	name  string
	forms []string
}

func keySecret(key string) secret {
	b, _ := base64.StdEncoding.DecodeString(key)
	dec := fmt.Sprint(b[:8]) // "[17 188 ...": a []byte field printed by %v
	return secret{"account key", []string{key, url.QueryEscape(key), strings.TrimSuffix(dec, "]")}}
}

func sigSecret(sasQuery string) secret {
	q, _ := url.ParseQuery(sasQuery)
	sig := q.Get("sig")
	return secret{"SAS signature", []string{sig, url.QueryEscape(sig)}}
}

// leak reports which secret s shows, in full or as any 12-character
// window (so that a truncated or wrapped echo is caught too).
func leak(s string, secrets ...secret) string {
	for _, sec := range secrets {
		for _, f := range sec.forms {
			const w = 12
			if len(f) <= w {
				if f != "" && strings.Contains(s, f) {
					return sec.name
				}
				continue
			}
			for i := 0; i+w <= len(f); i++ {
				if strings.Contains(s, f[i:i+w]) {
					return sec.name + " (" + f[i:i+w] + "...)"
				}
			}
		}
	}
	return ""
}

// renderings is every way a caller prints an error or value.
func renderings(v any) map[string]string {
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out[verb] = fmt.Sprintf(verb, v)
	}
	if err, ok := v.(error); ok && err != nil {
		out["Error()"] = err.Error()
		// Every error in the chain: callers print what errors.As gives them.
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			out["ResponseError"] = re.Error()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			out["url.Error"] = ue.Error()
		}
		// The request a ResponseError keeps: callers log its URL.
		if re != nil && re.RawResponse != nil && re.RawResponse.Request != nil && re.RawResponse.Request.URL != nil {
			out["ResponseError.RawResponse.Request.URL"] = re.RawResponse.Request.URL.String()
		}
	}
	return out
}

func assertNoLeak(t *testing.T, what string, v any, secrets ...secret) {
	t.Helper()
	for how, s := range renderings(v) {
		if l := leak(s, secrets...); l != "" {
			t.Errorf("%s, printed with %s, shows the %s:\n%s", what, how, l, s)
		}
	}
}

// unpaddedKey is random base64 without padding, so that nothing in it
// looks like a Key=Value separator.
func unpaddedKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func randomKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestSecretsNotInConnectErrors feeds Connect malformed strings that carry a
// key or a SAS, each wrong in another place, and checks that no error
// echoes the credential.
func TestSecretsNotInConnectErrors(t *testing.T) {
	key := randomKey(t)
	sas := "sv=2019-02-02&tn=orders&sp=r&se=2030-01-01T00%3A00%3A00Z&sig=" + url.QueryEscape(randomKey(t)[:44])
	bare := unpaddedKey(t) // base64 with no '=': a key or a signature pasted alone
	secrets := []secret{keySecret(key), sigSecret(sas), keySecret(bare)}
	ep := "http://127.0.0.1:1/devstoreaccount1"
	for _, cs := range []string{
		"AccountName=acct;AccountKey=" + key + ";NotASetting",
		"AccountName=acct;AccountKey=" + key + ";Bogus=1",
		"AccountName=acct;AccountKey=" + key + "!",
		"AccountName=acct;AccountKey=" + key + ";AccountKey=" + key,
		"AccountKey=" + key,
		"AccountKey" + key,
		key,
		key + ";AccountName=acct",
		"AccountName=acct;AccountKey=" + key + ";SharedAccessSignature=" + sas,
		"AccountName=acct;AccountKey=" + key + ";DefaultEndpointsProtocol=ftp",
		"AccountName=acct;AccountKey=" + key + ";TableEndpoint=" + ep + "?" + sas,
		"AccountName=acct;AccountKey=" + key + ";TableEndpoint=not a url " + key,
		"TableEndpoint=not a url?" + sas + ";SharedAccessSignature=" + sas,
		"SharedAccessSignature=" + sas,
		"TableEndpoint=" + ep + ";SharedAccessSignature=%zz" + sas,
		"TableEndpoint=" + ep + ";SharedAccessSignature=" + sas + ";SharedAccessSignature=" + sas,
		"UseDevelopmentStorage=false;AccountKey=" + key,
		// A bare segment names no credential, but it may be one.
		"AccountName=acct;" + bare,
		"AccountName=acct;AccountKey=" + key + ";" + bare,
		// SharedAccessSignature values that are not a SAS query string.
		"TableEndpoint=" + ep + ";SharedAccessSignature=" + bare,
		"TableEndpoint=" + ep + ";SharedAccessSignature=" + strings.TrimPrefix(strings.ReplaceAll(sas, "sig=", "sgn="), "?"),
		"TableEndpoint=" + ep + ";SharedAccessSignature=" + sas + "&" + bare,
	} {
		acct, err := tablekit.Connect(cs, nil)
		if err == nil {
			t.Errorf("Connect accepted a malformed string (%s)", leak(cs, secrets...))
			_ = acct
			continue
		}
		if !errors.Is(err, tablekit.ErrInvalidConnectionString) {
			t.Errorf("Connect error does not wrap ErrInvalidConnectionString: %v", err)
		}
		assertNoLeak(t, "a Connect error", err, secrets...)
	}
	// The constructors too.
	if _, err := tablekit.NewAccountWithSharedKey("acct", key+"#", tablekit.Endpoints{Table: ep}, nil); err == nil {
		t.Error("NewAccountWithSharedKey accepted a key that is not base64")
	} else {
		assertNoLeak(t, "a NewAccountWithSharedKey error", err, secrets...)
	}
	if _, err := tablekit.NewAccountWithSharedKey("acct", key, tablekit.Endpoints{Table: ep + "?" + sas}, nil); err == nil {
		t.Error("NewAccountWithSharedKey accepted an endpoint with a query")
	} else {
		assertNoLeak(t, "a NewAccountWithSharedKey error", err, secrets...)
	}
	// A malformed endpoint is not echoed: it may hold anything pasted.
	for _, bad := range []string{"not a url " + key, "ftp://host/" + bare, bare} {
		if _, err := tablekit.NewAccountWithSharedKey("acct", key, tablekit.Endpoints{Queue: bad}, nil); err == nil {
			t.Error("NewAccountWithSharedKey accepted a malformed endpoint")
		} else {
			if !errors.Is(err, tablekit.ErrInvalidConnectionString) || !strings.Contains(err.Error(), "Queue endpoint") {
				t.Errorf("NewAccountWithSharedKey(malformed Queue endpoint) = %v; want ErrInvalidConnectionString naming the Queue endpoint", err)
			}
			assertNoLeak(t, "a NewAccountWithSharedKey error", err, secrets...)
		}
	}
}

// TestSecretsNotInAccountFormatting prints Accounts built from a key and
// from a SAS with every verb.
func TestSecretsNotInAccountFormatting(t *testing.T) {
	key := randomKey(t)
	ep := "http://127.0.0.1:1/devstoreaccount1"
	keyAcct, err := tablekit.NewAccountWithSharedKey("acct", key, tablekit.Endpoints{Table: ep, Queue: ep, Blob: ep}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sas, err := keyAcct.TableSAS("orders", tablekit.TableSASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	sasAcct, err := tablekit.Connect(sas.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []secret{keySecret(key), sigSecret(sas.Query())}
	assertNoLeak(t, "a shared-key Account", keyAcct, secrets...)
	assertNoLeak(t, "a SAS Account", sasAcct, secrets...)
	assertNoLeak(t, "a TableSAS", sas, secrets...)
	assertNoLeak(t, "a TableSAS value", *sas, secrets...)
	// What a struct holding an Account prints.
	assertNoLeak(t, "a struct holding Accounts", struct{ A, B *tablekit.Account }{keyAcct, sasAcct}, secrets...)
	// The printed Account still says which account it is.
	if s := fmt.Sprint(keyAcct); !strings.Contains(s, "acct") || !strings.Contains(s, ep) {
		t.Errorf("fmt.Sprint(Account) = %s; want its name and endpoint", s)
	}
}

// TestSecretsNotInRequestErrors: requests refused by the service (a wrong
// account key; a tampered, an expired SAS) fail with ErrAuthorization, and
// neither the key nor the signature shows in the errors of Table[T] (both
// transports), of the SDK client, or of MapError.
func TestSecretsNotInRequestErrors(t *testing.T) {
	ctx := context.Background()
	keyAcct, name := sasFixture(t)
	ep := keyAcct.TableEndpoint()

	wrongKey := randomKey(t)
	wrongAcct, err := tablekit.NewAccountWithSharedKey(keyAcct.Name(), wrongKey, tablekit.Endpoints{Table: ep}, nil)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true, Add: true}, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	valid, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true, Add: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Tamper: sign another table, send it for this one.
	tampered, err := keyAcct.TableSAS(name+"x", tablekit.TableSASPermissions{Read: true, Add: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	tampered.Table = name

	accounts := map[string]*tablekit.Account{"wrong key": wrongAcct}
	secrets := []secret{keySecret(wrongKey), keySecret(testenvKey(t)), sigSecret(expired.Query()), sigSecret(tampered.Query()), sigSecret(valid.Query())}
	for what, sas := range map[string]*tablekit.TableSAS{"expired SAS": expired, "tampered SAS": tampered} {
		a, err := tablekit.Connect(sas.ConnectionString(), nil)
		if err != nil {
			t.Fatal(err)
		}
		accounts[what] = a
	}

	for what, acct := range accounts {
		for _, sdk := range []bool{false, true} {
			tbl, err := patterns.NewTable[Note](acct, name, &patterns.TableOptions{SDKPath: sdk})
			if err != nil {
				t.Fatal(err)
			}
			label := fmt.Sprintf("%s, SDKPath=%v", what, sdk)
			_, getErr := tbl.Get(ctx, "alice", "1", nil)
			insErr := tbl.Insert(ctx, &Note{PartitionKey: "alice", RowKey: "leak"}, nil)
			_, qErr := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("alice"), nil))
			for op, err := range map[string]error{"Get": getErr, "Insert": insErr, "Query": qErr} {
				if !errors.Is(err, tablekit.ErrAuthorization) {
					t.Errorf("%s: %s: %v, want ErrAuthorization", label, op, err)
				}
				assertNoLeak(t, label+": "+op+" error", err, secrets...)
			}
		}
		// The SDK client's raw error, and MapError over it.
		client, err := acct.Table(name)
		if err != nil {
			t.Fatal(err)
		}
		_, raw := client.GetEntity(ctx, "alice", "1", nil)
		assertNoLeak(t, what+": aztables GetEntity error", raw, secrets...)
		mapped := tablekit.MapError(raw, "get entity", name)
		if !errors.Is(mapped, tablekit.ErrAuthorization) {
			t.Errorf("%s: MapError(GetEntity error) = %v, want ErrAuthorization", what, mapped)
		}
		assertNoLeak(t, what+": MapError", mapped, secrets...)

		// A raw TableHTTP request, whose URL carries the SAS.
		h := tablehttp.Of(acct)
		req, err := h.NewRequest(ctx, "GET", "/"+name+"(PartitionKey='alice',RowKey='1')", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := h.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if !runtime.HasStatusCode(resp, 200) {
			assertNoLeak(t, what+": MapError(TableHTTP response)", tablekit.MapError(runtime.NewResponseError(resp), "get entity", name), secrets...)
		} else {
			t.Errorf("%s: TableHTTP GET succeeded", what)
		}
	}
}

// TestSecretsNotInTransportErrors: when the service cannot be reached, the
// error names the URL; with a SAS, the URL holds the signature, and it must
// not reach the error. net/http's *url.Error prints the full URL, query
// included, and azcore returns it as is; the fix is a pipeline policy that
// redacts sig= in a *url.Error's URL, installed in every client Connect
// builds and in TableHTTP's pipeline.
func TestSecretsNotInTransportErrors(t *testing.T) {
	ctx := context.Background()
	keyAcct := sasTestAccountOn(t, "http://127.0.0.1:1/devstoreaccount1") // nothing listens on port 1
	sas, err := keyAcct.TableSAS("orders", tablekit.TableSASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := tablekit.Connect(sas.ConnectionString(), &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1}, // fail at once
	}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []secret{sigSecret(sas.Query())}
	for _, sdk := range []bool{false, true} {
		tbl, err := patterns.NewTable[Note](acct, "orders", &patterns.TableOptions{SDKPath: sdk})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tbl.Get(ctx, "alice", "1", nil)
		if err == nil || !tablekit.IsTransient(err) {
			t.Errorf("SDKPath=%v: Get on a closed port: %v, want a transient error", sdk, err)
		}
		assertNoLeak(t, fmt.Sprintf("SDKPath=%v: a connection error", sdk), err, secrets...)
	}
}

// TestSecretsNotInLogs: azcore's request log (the one users turn on with
// azcore/log.SetListener) shows SAS requests with the signature redacted,
// on both Table[T] transports.
func TestSecretsNotInLogs(t *testing.T) {
	ctx := context.Background()
	keyAcct, name := sasFixture(t)
	sas, err := keyAcct.TableSAS(name, tablekit.TableSASPermissions{Read: true}, time.Time{}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	acct, err := tablekit.Connect(sas.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged strings.Builder
	azlog.SetListener(func(_ azlog.Event, msg string) {
		mu.Lock()
		logged.WriteString(msg)
		logged.WriteByte('\n')
		mu.Unlock()
	})
	t.Cleanup(func() { azlog.SetListener(nil) })
	for _, sdk := range []bool{false, true} {
		tbl, err := patterns.NewTable[Note](acct, name, &patterns.TableOptions{SDKPath: sdk})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Get(ctx, "alice", "1", nil); err != nil {
			t.Fatalf("SDKPath=%v: Get: %v", sdk, err)
		}
	}
	azlog.SetListener(nil)
	mu.Lock()
	out := logged.String()
	mu.Unlock()
	if !strings.Contains(out, name) {
		t.Fatalf("the request log does not mention the table; nothing was logged?\n%s", out)
	}
	if l := leak(out, sigSecret(sas.Query())); l != "" {
		t.Errorf("the azcore request log shows the %s:\n%s", l, out)
	}
}

// testenvKey is the test account's key (Azurite's public development key,
// or the key of the account TABLEKIT_TEST_TARGET names).
func testenvKey(t *testing.T) string {
	t.Helper()
	for _, part := range strings.Split(testenv.ConnectionString(t), ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "AccountKey") {
			return v
		}
	}
	return sasTestKey
}

// accountSAS signs an account SAS for the queue service of the test account
// (ss=q: blob and table requests with it are refused) with key and
// returns its query string.
func accountSAS(t *testing.T, key, permissions string) string {
	t.Helper()
	name := testenv.Account(t).Name()
	cred, err := azqueue.NewSharedKeyCredential(name, key)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := azqsas.AccountSignatureValues{
		ExpiryTime: time.Now().Add(time.Hour), Permissions: permissions, ResourceTypes: "sco",
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

// sasAccount connects to the test account's queue and blob endpoints with
// the SAS query.
func sasAccount(t *testing.T, query string, opts *tablekit.AccountOptions) *tablekit.Account {
	t.Helper()
	a := testenv.Account(t)
	acct, err := tablekit.Connect("QueueEndpoint="+a.QueueEndpoint()+";BlobEndpoint="+a.BlobEndpoint()+";SharedAccessSignature="+query, opts)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// TestSecretsNotInQueueAndBlobErrors: queue and blob requests refused with
// a read-only SAS, a SAS for another service and a SAS signed with the
// wrong key fail with ErrAuthorization, and the signature shows neither in
// the SDK's errors (the request a ResponseError keeps included) nor in
// MapError's, even when the caller labels the error with the client's URL,
// which holds the SAS.
func TestSecretsNotInQueueAndBlobErrors(t *testing.T) {
	ctx := context.Background()
	readOnly := accountSAS(t, testenvKey(t), "r")
	wrongKey := accountSAS(t, randomKey(t), "rwdlacup")
	secrets := []secret{sigSecret(readOnly), sigSecret(wrongKey)}
	for what, query := range map[string]string{"read-only SAS": readOnly, "SAS signed with a wrong key": wrongKey} {
		acct := sasAccount(t, query, nil)

		qc := acct.Queues().NewQueueClient(testenv.QueueName(t))
		_, err := qc.Create(ctx, nil)
		assertNoLeak(t, what+": azqueue Create error", err, secrets...)
		mapped := tablekit.MapError(err, "create queue", qc.URL())
		if !errors.Is(mapped, tablekit.ErrAuthorization) {
			t.Errorf("%s: create queue: %v, want ErrAuthorization", what, mapped)
		}
		assertNoLeak(t, what+": MapError(create queue, labelled with the queue URL)", mapped, secrets...)

		// Blob requests with a queue-service SAS are refused too.
		container := testenv.ContainerName(t)
		_, err = acct.Blobs().CreateContainer(ctx, container, nil)
		assertNoLeak(t, what+": azblob CreateContainer error", err, secrets...)
		mapped = tablekit.MapError(err, "create container", acct.Blobs().URL()+" "+container)
		if !errors.Is(mapped, tablekit.ErrAuthorization) {
			t.Errorf("%s: create container: %v, want ErrAuthorization", what, mapped)
		}
		assertNoLeak(t, what+": MapError(create container, labelled with the blob URL)", mapped, secrets...)
	}

	// Unreachable: the transport error names the URL.
	closed := "http://127.0.0.1:1/devstoreaccount1"
	acct, err := tablekit.Connect("QueueEndpoint="+closed+";BlobEndpoint="+closed+";SharedAccessSignature="+readOnly,
		&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	qc := acct.Queues().NewQueueClient("jobs")
	_, err = qc.Create(ctx, nil)
	if !tablekit.IsTransient(err) {
		t.Errorf("create queue on a closed port: %v, want a transient error", err)
	}
	assertNoLeak(t, "create queue on a closed port", tablekit.MapError(err, "create queue", qc.URL()), secrets...)
	_, err = acct.Blobs().CreateContainer(ctx, "jobs", nil)
	assertNoLeak(t, "create container on a closed port", tablekit.MapError(err, "create container", acct.Blobs().URL()), secrets...)
}

// TestRedact: the helper every error path and the worker's output go
// through removes signatures, keys and SAS settings wherever they appear
// and leaves the rest of the text alone.
func TestRedact(t *testing.T) {
	key := randomKey(t)
	bare := unpaddedKey(t)
	sig := url.QueryEscape(randomKey(t)[:44])
	secrets := []secret{keySecret(key), keySecret(bare), {"SAS signature", []string{sig}}}
	for _, s := range []string{
		"GET http://127.0.0.1:1/devstoreaccount1/jobs?sv=2020-02-10&sig=" + sig + "&sp=r: connection refused",
		"create queue https://a.queue.core.windows.net/jobs?SIG=" + sig,
		`{"msg":"failed","url":"https://a/jobs?se=1\u0026sig=` + sig + `\u0026sp=r"}`,
		"escaped in another URL: https://a/copy?src=https%3A%2F%2Fb%2Fc%3Fsig%3D" + sig,
		"AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
		"TableEndpoint=http://x;SharedAccessSignature=" + bare + ";QueueEndpoint=http://y",
		"sharedaccesssignature=" + bare,
	} {
		got := tablekit.Redact(s)
		if l := leak(got, secrets...); l != "" {
			t.Errorf("Redact(%q) = %q still shows the %s", s, got, l)
		}
		if !strings.Contains(got, "REDACTED") {
			t.Errorf("Redact(%q) = %q; want the secret replaced by REDACTED", s, got)
		}
	}
	if got := tablekit.Redact("create queue jobs: 403 AuthorizationPermissionMismatch"); got != "create queue jobs: 403 AuthorizationPermissionMismatch" {
		t.Errorf("Redact changed text without secrets: %q", got)
	}
	if got := tablekit.Redact("https://a/jobs?sv=1&sig=abc&sp=r"); got != "https://a/jobs?sv=1&sig=REDACTED&sp=r" {
		t.Errorf("Redact kept too little of a URL: %q", got)
	}
}

// TestSecretsNotInQueueAndBlobLogs: azcore's request log shows queue and
// blob requests of a SAS account with the signature redacted, and those of
// a shared-key account with the Authorization header redacted.
func TestSecretsNotInQueueAndBlobLogs(t *testing.T) {
	ctx := context.Background()
	query := accountSAS(t, testenvKey(t), "r")
	sasAcct := sasAccount(t, query, nil)
	keyAcct := testenv.Account(t)
	var mu sync.Mutex
	var logged strings.Builder
	azlog.SetListener(func(_ azlog.Event, msg string) {
		mu.Lock()
		logged.WriteString(msg)
		logged.WriteByte('\n')
		mu.Unlock()
	})
	t.Cleanup(func() { azlog.SetListener(nil) })
	name := testenv.QueueName(t)
	_, _ = sasAcct.Queues().NewQueueClient(name).Create(ctx, nil)
	_, _ = sasAcct.Blobs().CreateContainer(ctx, testenv.ContainerName(t), nil)
	_, _ = keyAcct.Queues().NewQueueClient(name).GetProperties(ctx, nil)
	azlog.SetListener(nil)
	mu.Lock()
	out := logged.String()
	mu.Unlock()
	if !strings.Contains(out, name) || !strings.Contains(out, "Authorization: REDACTED") {
		t.Fatalf("the request log does not show the queue's requests with a redacted Authorization header:\n%s", out)
	}
	if l := leak(out, sigSecret(query), keySecret(testenvKey(t))); l != "" {
		t.Errorf("the azcore request log shows the %s:\n%s", l, out)
	}
	if i := strings.Index(out, "SharedKey "); i >= 0 {
		t.Errorf("the azcore request log shows a Shared Key signature: %s", out[i:min(len(out), i+80)])
	}
}

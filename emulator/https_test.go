package emulator_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/emulator"
)

// jwtCredential is an azcore.TokenCredential that hands out unsigned
// JWTs with Microsoft Entra ID's claims: what the emulator's basic OAuth
// checks, as Azurite's does (not the signature). It is a credential, as
// azidentity's are; the services it is used against are the emulator's.
type jwtCredential struct {
	// aud is the token's audience; empty means the scope asked for
	// without its "/.default", as Entra ID issues it.
	aud string
	// nbf and exp are the token's lifetime relative to now.
	nbf, exp time.Duration
	// iss is the issuer; empty means Azure's public cloud's.
	iss string
}

func (c jwtCredential) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	aud := c.aud
	if aud == "" && len(opts.Scopes) > 0 {
		aud = strings.TrimSuffix(opts.Scopes[0], "/.default")
	}
	iss := c.iss
	if iss == "" {
		iss = "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/"
	}
	now := time.Now()
	payload, err := json.Marshal(map[string]any{
		"aud": aud, "iss": iss, "iat": now.Add(-time.Hour).Unix(),
		"nbf": now.Add(c.nbf).Unix(), "exp": now.Add(c.exp).Unix(),
		"oid": "11059fcc-5514-4800-b5f8-49808b9cfab6", "scp": "user_impersonation", "ver": "1.0",
	})
	if err != nil {
		return azcore.AccessToken{}, err
	}
	enc := base64.RawURLEncoding.EncodeToString
	tok := enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(payload) + "." + enc([]byte("not a signature"))
	// The policy's cache: an hour ahead, whatever the claims say.
	return azcore.AccessToken{Token: tok, ExpiresOn: now.Add(time.Hour)}, nil
}

var validToken = jwtCredential{nbf: -time.Minute, exp: time.Hour}

// clients are the three services' SDK clients, authorized one way.
type clients struct {
	table *aztables.ServiceClient
	queue *azqueue.ServiceClient
	blob  *azblob.Client
}

func sdkClients(t *testing.T, em *emulator.Instance, cred azcore.TokenCredential) clients {
	t.Helper()
	co := azcore.ClientOptions{Transport: em.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1}}
	var c clients
	var err error
	if cred == nil {
		tk, err1 := aztables.NewSharedKeyCredential(em.AccountName, em.AccountKey)
		qk, err2 := azqueue.NewSharedKeyCredential(em.AccountName, em.AccountKey)
		bk, err3 := azblob.NewSharedKeyCredential(em.AccountName, em.AccountKey)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		c.table, err1 = aztables.NewServiceClientWithSharedKey(em.TableURL, tk, &aztables.ClientOptions{ClientOptions: co})
		c.queue, err2 = azqueue.NewServiceClientWithSharedKeyCredential(em.QueueURL, qk, &azqueue.ClientOptions{ClientOptions: co})
		c.blob, err3 = azblob.NewClientWithSharedKeyCredential(em.BlobURL, bk, &azblob.ClientOptions{ClientOptions: co})
		err = errors.Join(err1, err2, err3)
	} else {
		var err1, err2, err3 error
		c.table, err1 = aztables.NewServiceClient(em.TableURL, cred, &aztables.ClientOptions{ClientOptions: co})
		c.queue, err2 = azqueue.NewServiceClient(em.QueueURL, cred, &azqueue.ClientOptions{ClientOptions: co})
		c.blob, err3 = azblob.NewClient(em.BlobURL, cred, &azblob.ClientOptions{ClientOptions: co})
		err = errors.Join(err1, err2, err3)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// use creates a table, a queue and a container named name, writes to and
// reads from each: one error per service that refused.
func (c clients) use(ctx context.Context, name string) (table, queue, blob error) {
	table = func() error {
		if _, err := c.table.CreateTable(ctx, name, nil); err != nil {
			return err
		}
		tc := c.table.NewClient(name)
		if _, err := tc.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), nil); err != nil {
			return err
		}
		_, err := tc.GetEntity(ctx, "p", "r", nil)
		return err
	}()
	queue = func() error {
		if _, err := c.queue.CreateQueue(ctx, name, nil); err != nil {
			return err
		}
		qc := c.queue.NewQueueClient(name)
		if _, err := qc.EnqueueMessage(ctx, "hello", nil); err != nil {
			return err
		}
		_, err := qc.DequeueMessage(ctx, nil)
		return err
	}()
	blob = func() error {
		if _, err := c.blob.CreateContainer(ctx, name, nil); err != nil {
			return err
		}
		if _, err := c.blob.UploadBuffer(ctx, name, "b", []byte("hello"), nil); err != nil {
			return err
		}
		_, err := c.blob.DownloadBuffer(ctx, name, "b", make([]byte, 5), nil)
		return err
	}()
	return table, queue, blob
}

// Over HTTPS with the emulator's own certificate, the three SDKs work
// with Shared Key and with a bearer token (Options.OAuth), and the
// endpoints say https.
func TestHTTPSSharedKeyAndBearer(t *testing.T) {
	em := emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic})
	for _, u := range []string{em.TableURL, em.QueueURL, em.BlobURL} {
		if !strings.HasPrefix(u, "https://127.0.0.1:") {
			t.Fatalf("endpoint %s: want https", u)
		}
	}
	if !strings.HasPrefix(em.ConnectionString, "DefaultEndpointsProtocol=https;") {
		t.Errorf("connection string %q: want DefaultEndpointsProtocol=https", em.ConnectionString)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cred azcore.TokenCredential
	}{{"sharedkey", nil}, {"bearer", validToken}} {
		te, qe, be := sdkClients(t, em, tc.cred).use(ctx, tc.name)
		if err := errors.Join(te, qe, be); err != nil {
			t.Errorf("%s over HTTPS: %v", tc.name, err)
		}
	}
	// A client that does not trust the emulator's authority is refused
	// by TLS itself.
	if _, err := http.Get(em.TableURL + "/Tables"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the emulator's CA: %v, want a certificate error", err)
	}
}

// A token that is expired, not yet valid, for another audience or from
// another issuer is refused on every service as Azure refuses it: 401
// InvalidAuthenticationInfo with the challenge, the detail naming the
// check (Blob and Queue), the code in the body (Table).
func TestBearerRefused(t *testing.T) {
	em := emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		cred   jwtCredential
		detail string
	}{
		{"expired", jwtCredential{nbf: -2 * time.Hour, exp: -time.Minute}, "Lifetime validation failed. The token is expired."},
		{"notyet", jwtCredential{nbf: time.Hour, exp: 2 * time.Hour}, "Lifetime validation failed. The token is not yet valid."},
		{"audience", jwtCredential{aud: "https://vault.azure.net", nbf: -time.Minute, exp: time.Hour}, "Audience validation failed. Audience did not match."},
		{"otheraccount", jwtCredential{aud: "https://someoneelse.blob.core.windows.net", nbf: -time.Minute, exp: time.Hour}, "Audience validation failed. Audience did not match."},
		{"issuer", jwtCredential{iss: "https://evil.example/tenant/", nbf: -time.Minute, exp: time.Hour}, "Issuer validation failed. Issuer did not match."},
	} {
		errs := make([]error, 3)
		errs[0], errs[1], errs[2] = sdkClients(t, em, tc.cred).use(ctx, tc.name)
		for i, svc := range []string{"table", "queue", "blob"} {
			var re *azcore.ResponseError
			if !errors.As(errs[i], &re) {
				t.Errorf("%s token on %s: %v, want a refusal", tc.name, svc, errs[i])
				continue
			}
			if re.StatusCode != http.StatusUnauthorized || re.ErrorCode != "InvalidAuthenticationInfo" {
				t.Errorf("%s token on %s: %d %s, want 401 InvalidAuthenticationInfo", tc.name, svc, re.StatusCode, re.ErrorCode)
			}
			if h := re.RawResponse.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer authorization_uri=") {
				t.Errorf("%s token on %s: WWW-Authenticate %q", tc.name, svc, h)
			}
			if svc != "table" && !strings.Contains(errs[i].Error(), tc.detail) {
				t.Errorf("%s token on %s: %v, want the detail %q", tc.name, svc, errs[i], tc.detail)
			}
			if strings.Contains(errs[i].Error(), "eyJ") {
				t.Errorf("%s token on %s: the answer quotes the token: %v", tc.name, svc, errs[i])
			}
		}
	}
}

// Without OAuth a bearer token is not a credential the emulator knows
// (400 InvalidAuthenticationInfo, as before); OAuth without HTTPS, or an
// unknown level, does not start.
func TestOAuthNeedsHTTPS(t *testing.T) {
	for _, o := range []emulator.Options{{OAuth: emulator.OAuthBasic}, {HTTPS: true, OAuth: "strict"}, {KeyFile: "key.pem"}} {
		if em, err := emulator.Start(context.Background(), &o); err == nil {
			em.Stop()
			t.Errorf("Start(%+v) succeeded", o)
		}
	}
	em := emulator.StartTB(t, &emulator.Options{HTTPS: true})
	_, _, be := sdkClients(t, em, validToken).use(context.Background(), "nooauth")
	var re *azcore.ResponseError
	if !errors.As(be, &re) || re.StatusCode != http.StatusBadRequest || re.ErrorCode != "InvalidAuthenticationInfo" {
		t.Errorf("a bearer token without OAuth: %v, want 400 InvalidAuthenticationInfo", be)
	}
}

// The files NewCertificate writes serve the emulator (Options.CertFile,
// KeyFile) to a client that trusts only ca.pem, on localhost and both
// loopback addresses.
func TestCertificateFiles(t *testing.T) {
	c, err := emulator.NewCertificate()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := c.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	em := emulator.StartTB(t, &emulator.Options{CertFile: dir + "/" + emulator.CertFile, KeyFile: dir + "/" + emulator.KeyFile})
	if em.RootCAs != nil {
		t.Error("RootCAs is set for a certificate the emulator did not make")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.CertPool()}}}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		u := strings.Replace(em.TableURL, "127.0.0.1", host, 1) + "/Tables"
		resp, err := client.Get(u)
		if err != nil {
			t.Errorf("GET %s trusting ca.pem: %v", u, err)
			continue
		}
		resp.Body.Close()
		// No credentials: the service answered, over TLS.
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", u, resp.StatusCode)
		}
	}
}

// A PFX certificate (Azurite's --cert with --pwd) serves when it uses the
// legacy encryption, and is refused with a hint when it uses OpenSSL 3's
// default. The files hold a throwaway self-signed certificate for
// localhost and 127.0.0.1 (password "tablekit"), made with
// `openssl req -x509 -newkey ec ...` and `openssl pkcs12 -export [-legacy]`.
func TestPFXCertificate(t *testing.T) {
	em := emulator.StartTB(t, &emulator.Options{CertFile: "testdata/pfx/legacy.pfx", CertPassword: "tablekit"})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(em.QueueURL + "?comp=list")
	if err != nil {
		t.Fatalf("GET over the PFX certificate: %v", err)
	}
	resp.Body.Close()
	if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "localhost" {
		t.Errorf("served certificate %q, want the PFX's (localhost)", cn)
	}
	for _, o := range []emulator.Options{
		{CertFile: "testdata/pfx/legacy.pfx", CertPassword: "wrong"},
		{CertFile: "testdata/pfx/modern.pfx", CertPassword: "tablekit"},
	} {
		em, err := emulator.Start(context.Background(), &o)
		if err == nil {
			em.Stop()
			t.Errorf("Start with %s and password %q succeeded", o.CertFile, o.CertPassword)
		} else if strings.Contains(err.Error(), o.CertPassword) {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
}

// BenchmarkPointReadTLS measures what HTTPS and a bearer token cost a
// point read through aztables, one client, connections kept alive:
// plain HTTP with Shared Key, HTTPS with Shared Key, HTTPS with a token.
func BenchmarkPointReadTLS(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts emulator.Options
		cred azcore.TokenCredential
	}{
		{"http-sharedkey", emulator.Options{}, nil},
		{"https-sharedkey", emulator.Options{HTTPS: true}, nil},
		{"https-bearer", emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic}, validToken},
	} {
		b.Run(bc.name, func(b *testing.B) {
			em := emulator.StartTB(b, &bc.opts)
			co := azcore.ClientOptions{Transport: em.HTTPClient()}
			var tc *aztables.Client
			if bc.cred == nil {
				k, err := aztables.NewSharedKeyCredential(em.AccountName, em.AccountKey)
				if err != nil {
					b.Fatal(err)
				}
				sc, err := aztables.NewServiceClientWithSharedKey(em.TableURL, k, &aztables.ClientOptions{ClientOptions: co})
				if err != nil {
					b.Fatal(err)
				}
				tc = sc.NewClient("bench")
			} else {
				sc, err := aztables.NewServiceClient(em.TableURL, bc.cred, &aztables.ClientOptions{ClientOptions: co})
				if err != nil {
					b.Fatal(err)
				}
				tc = sc.NewClient("bench")
			}
			ctx := context.Background()
			if _, err := tc.CreateTable(ctx, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := tc.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tc.GetEntity(ctx, "p", "r", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

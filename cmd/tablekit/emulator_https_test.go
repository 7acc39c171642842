package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// entraToken is an azcore.TokenCredential handing out unsigned JWTs with
// Microsoft Entra ID's claims for the scope asked: what --oauth basic
// checks (not the signature).
type entraToken struct{ exp time.Duration }

func (c entraToken) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	now := time.Now()
	p, _ := json.Marshal(map[string]any{"aud": strings.TrimSuffix(o.Scopes[0], "/.default"),
		"iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
		"iat": now.Add(-time.Hour).Unix(), "nbf": now.Add(-time.Hour).Unix(), "exp": now.Add(c.exp).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	return azcore.AccessToken{Token: enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(p) + ".", ExpiresOn: now.Add(time.Hour)}, nil
}

// "emulator cert --out DIR" writes a CA and a certificate that "emulator
// --cert --key --oauth basic" serves: a client trusting only ca.pem
// reaches the https endpoints with a bearer token, and an expired token
// is refused 401.
func TestEmulatorCertAndOAuth(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cert")
	var out, errOut bytes.Buffer
	if code := realMain(context.Background(), []string{"emulator", "cert", "--out", dir}, nil, &out, &errOut); code != 0 {
		t.Fatalf("emulator cert: exit %d, %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "SSL_CERT_FILE="+filepath.Join(dir, "ca.pem")) {
		t.Errorf("emulator cert printed %q, want how to trust ca.pem", out.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key.pem: %v, %v; want mode 0600", fi, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"emulator", "--table-port", "0", "--queue-port", "0", "--blob-port", "0", "--json",
			"--cert", filepath.Join(dir, "cert.pem"), "--key", filepath.Join(dir, "key.pem"), "--oauth", "basic"}, nil, &stdout, &stderr)
	}()
	var s emulatorSummary
	for deadline := time.Now().Add(10 * time.Second); ; {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("emulator --json printed %q: %v", line, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing on stdout within 10 s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasPrefix(s.Table, "https://") || !strings.HasPrefix(s.ConnectionString, "DefaultEndpointsProtocol=https;") {
		t.Fatalf("emulator --cert: %+v, want https", s)
	}
	co := azcore.ClientOptions{Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
		Retry: policy.RetryOptions{MaxRetries: -1}}
	// localhost, as a user would write it, is in the certificate too.
	url := strings.Replace(s.Table, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		exp    time.Duration
		status int
	}{{time.Hour, 0}, {-time.Minute, http.StatusUnauthorized}} {
		c, err := aztables.NewServiceClient(url, entraToken{tc.exp}, &aztables.ClientOptions{ClientOptions: co})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateTable(ctx, "oauthcmd", nil)
		var re *azcore.ResponseError
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("a valid token over HTTPS: %v", err)
		case tc.status != 0 && (!errors.As(err, &re) || re.StatusCode != tc.status):
			t.Errorf("an expired token: %v, want %d", err, tc.status)
		}
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("exit %d; stderr %s", code, stderr.String())
	}
}

// Azurite's rules for the TLS and OAuth flags are usage errors (exit 2)
// before anything listens.
func TestEmulatorTLSUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--oauth", "basic"},
		{"--cert", "c.pem", "--key", "k.pem", "--oauth", "strict"},
		{"--key", "k.pem"},
		{"--pwd", "secret"},
		{"--cert", "c.pem", "--key", "k.pem", "--pwd", "secret"},
		{"cert"},
	} {
		var out, errOut bytes.Buffer
		if code := realMain(context.Background(), append([]string{"emulator"}, args...), nil, &out, &errOut); code != 2 || strings.Contains(errOut.String(), "secret") {
			t.Errorf("emulator %s: exit %d, stderr %q; want 2 without the password", strings.Join(args, " "), code, errOut.String())
		}
	}
}

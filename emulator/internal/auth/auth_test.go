package auth_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/integration/azurite"
)

const account = azurite.AccountName

// otherKey is a well-formed key that is not the account's.
const otherKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="

func devKey(t testing.TB) []byte {
	t.Helper()
	k := devKeyBytes()
	if len(k) == 0 {
		t.Fatal("azurite.AccountKey is not base64")
	}
	return k
}

// devKeyBytes is the development account's key, decoded (nil if it were
// not base64).
func devKeyBytes() []byte {
	k, _ := base64.StdEncoding.DecodeString(azurite.AccountKey)
	return k
}

// captured is one request as it reached the test service, kept to replay
// it byte for byte (to Azurite, or to Authorize in the allocation test).
type captured struct {
	method, uri string
	header      http.Header
	body        []byte
}

func (c captured) request(base string) (*http.Request, error) {
	r, err := http.NewRequest(c.method, base+c.uri, bytes.NewReader(c.body))
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		if k == "Content-Length" || k == "Host" || k == "Accept-Encoding" {
			continue
		}
		r.Header[k] = append([]string(nil), v...)
	}
	return r, nil
}

type outcome struct {
	grant *auth.Grant
	err   *answer.Error
	req   captured
}

// service is the test's storage service: every request is checked by
// Authorize for the operation the test has set, recorded, and answered
// with Azure's error or a bare success.
type service struct {
	srv   *httptest.Server
	authn *auth.Authenticator
	svc   auth.Service

	mu  sync.Mutex
	op  auth.Operation
	got []outcome
}

// newService starts a test service; setup configures its Authenticator
// before it serves. The account's key is its second: any key signs.
func newService(t testing.TB, svc auth.Service, tls bool, setup ...func(*auth.Authenticator)) *service {
	t.Helper()
	s := &service{svc: svc, authn: auth.New(auth.Account{Name: account, Keys: [][]byte{[]byte("a primary key the clients do not use"), devKey(t)}})}
	for _, f := range setup {
		f(s.authn)
	}
	h := http.HandlerFunc(s.serve)
	if tls {
		s.srv = httptest.NewTLSServer(h)
	} else {
		s.srv = httptest.NewServer(h)
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *service) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	op := s.op
	s.mu.Unlock()
	g, e := s.authn.Authorize(r, op)
	s.mu.Lock()
	s.got = append(s.got, outcome{g, e, captured{r.Method, r.RequestURI, r.Header.Clone(), body}})
	s.mu.Unlock()
	if e != nil {
		if e.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", auth.WWWAuthenticate)
		}
		if s.svc == auth.Table {
			answer.WriteTable(w, r, e)
		} else {
			answer.WriteXML(w, r, e)
		}
		return
	}
	switch {
	case r.Method == http.MethodGet && s.svc == auth.Table:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"value":[]}`))
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// base is the service's account URL, path-style as the emulator serves it.
func (s *service) base() string { return s.srv.URL + "/" + account }

// call sets op, runs do (one or more SDK requests) and returns what the
// service decided for the last request.
func (s *service) call(t testing.TB, op auth.Operation, do func() error) (outcome, error) {
	t.Helper()
	s.mu.Lock()
	s.op, s.got = op, nil
	s.mu.Unlock()
	err := do()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		t.Fatalf("no request reached the service (client error: %v)", err)
	}
	return s.got[len(s.got)-1], err
}

// expect runs do for op and checks the service's decision: accepted when
// code is "", else refused with code, and the SDK's error carries the
// same status and code (the answer is well formed) and no secret.
func (s *service) expect(t testing.TB, op auth.Operation, code string, do func() error) outcome {
	t.Helper()
	out, err := s.call(t, op, do)
	if code == "" {
		if out.err != nil {
			t.Fatalf("%s %s refused with %d %s, want accepted", out.req.method, out.req.uri, out.err.Status, out.err.Code)
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == 401 || re.StatusCode == 403) {
			t.Fatalf("client saw %d after the service accepted: %v", re.StatusCode, err)
		}
		return out
	}
	if out.err == nil {
		t.Fatalf("%s %s accepted, want %s", out.req.method, out.req.uri, code)
	}
	if out.err.Code != code {
		t.Fatalf("%s %s refused with %s, want %s", out.req.method, out.req.uri, out.err.Code, code)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("client error %v (%T), want *azcore.ResponseError", err, err)
	}
	if re.StatusCode != out.err.Status || re.ErrorCode != code {
		t.Fatalf("client saw %d %s, want %d %s", re.StatusCode, re.ErrorCode, out.err.Status, code)
	}
	noSecrets(t, err.Error(), out.req)
	noSecrets(t, out.err.Message, out.req)
	return out
}

// noSecrets fails when text holds the account key or the request's
// signature.
func noSecrets(t testing.TB, text string, req captured) {
	t.Helper()
	secrets := []string{azurite.AccountKey, otherKey}
	if a := req.header.Get("Authorization"); a != "" {
		if _, sig, ok := strings.Cut(a, ":"); ok {
			secrets = append(secrets, sig)
		}
	}
	if _, q, ok := strings.Cut(req.uri, "sig="); ok {
		q, _, _ = strings.Cut(q, "&")
		secrets = append(secrets, q)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Fatalf("answer reveals a secret: %q", text)
		}
	}
}

// opts are the clients' options: no retries, and an optional transport
// that alters each request after it is signed.
func opts(alter func(*http.Request)) azcore.ClientOptions {
	o := azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}
	if alter != nil {
		o.Transport = alterTransport{alter}
	}
	return o
}

type alterTransport struct{ alter func(*http.Request) }

func (a alterTransport) Do(r *http.Request) (*http.Response, error) {
	a.alter(r)
	return http.DefaultClient.Do(r)
}

// datePolicy is a per-call policy that dates requests at d from now;
// the SDKs sign the x-ms-date they find.
type datePolicy struct{ d time.Duration }

func (p datePolicy) Do(req *policy.Request) (*http.Response, error) {
	// The blob and queue signers look the header up by its lowercase
	// name, as they set it.
	req.Raw().Header["x-ms-date"] = []string{time.Now().Add(p.d).UTC().Format(http.TimeFormat)}
	return req.Next()
}

// sign is the REST reference's Shared Key signature of stringToSign, for
// the schemes no Go SDK sends (Table Shared Key, Blob and Queue Shared Key
// Lite); TestAgainstAzurite checks these requests against Azurite too.
func sign(t testing.TB, key []byte, stringToSign string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestNoCredentials(t *testing.T) {
	for _, svc := range []auth.Service{auth.Table, auth.Queue, auth.Blob} {
		s := newService(t, svc, false)
		s.mu.Lock()
		s.op = auth.Operation{Service: svc, ResourceType: 'c', Permission: 'r', Name: "x"}
		s.mu.Unlock()
		resp, err := http.Get(s.base() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The Table service gives the code in its JSON body only, as
		// Azure's does; the Blob and Queue services in x-ms-error-code.
		code := resp.Header.Get("x-ms-error-code")
		if svc == auth.Table {
			var e struct {
				OData struct {
					Code string `json:"code"`
				} `json:"odata.error"`
			}
			json.Unmarshal(body, &e)
			code = e.OData.Code
		}
		if resp.StatusCode != http.StatusUnauthorized || code != "NoAuthenticationInformation" || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("service %d: %d %s, want 401 NoAuthenticationInformation with WWW-Authenticate", svc, resp.StatusCode, code)
		}
	}
}

func TestMalformedAuthorization(t *testing.T) {
	s := newService(t, auth.Blob, false)
	for _, h := range []string{"Bearer abc", "SharedKey", "SharedKey devstoreaccount1", "Basic Zm9vOmJhcg=="} {
		req, _ := http.NewRequest(http.MethodGet, s.base()+"/c?restype=container", nil)
		req.Header.Set("Authorization", h)
		req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 || resp.Header.Get("x-ms-error-code") != "InvalidAuthenticationInfo" {
			t.Errorf("Authorization %q: %d %s, want 400 InvalidAuthenticationInfo", h, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
	// A well-formed header with a signature that is not base64 of 32 bytes
	// is a failed authentication.
	req, _ := http.NewRequest(http.MethodGet, s.base()+"/c?restype=container", nil)
	req.Header.Set("Authorization", "SharedKey devstoreaccount1:bm90IGEgc2lnbmF0dXJl")
	req.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("x-ms-error-code") != "AuthenticationFailed" {
		t.Errorf("short signature: %d %s, want 403 AuthenticationFailed", resp.StatusCode, resp.Header.Get("x-ms-error-code"))
	}
}

package consistency

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/internal/queuehttp"
	"github.com/tablekit/tablekit/tools/testenv"
)

// requestIDPolicy sets an x-ms- header on every try, as a caller's
// per-retry policy may: Shared Key signs every x-ms- header, so the
// worker's signature must cover it.
type requestIDPolicy struct{}

func (requestIDPolicy) Do(req *policy.Request) (*http.Response, error) {
	req.Raw().Header.Set("x-ms-client-request-id", "tablekit-test")
	return req.Next()
}

// jwtToken is a bearer token the emulator's OAuth basic mode accepts: a
// JWT for the scope asked for, valid for an hour, unsigned (as Azurite's
// basic mode, the emulator checks no signature).
type jwtToken struct{}

func (jwtToken) GetToken(_ context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	now := time.Now()
	payload, err := json.Marshal(map[string]any{
		"aud": strings.TrimSuffix(opts.Scopes[0], "/.default"), "iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
		"iat": now.Add(-time.Hour).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		"oid": "11059fcc-5514-4800-b5f8-49808b9cfab6", "scp": "user_impersonation", "ver": "1.0",
	})
	if err != nil {
		return azcore.AccessToken{}, err
	}
	enc := base64.RawURLEncoding.EncodeToString
	return azcore.AccessToken{Token: enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(payload) + "." + enc([]byte("unsigned")), ExpiresOn: now.Add(time.Hour)}, nil
}

// TestWorkerAuthenticatesEveryWay: the worker receives, releases (a
// step that fails once) and deletes messages authenticated every way an
// Account is: Shared Key with a caller's policy adding an x-ms- header, an
// account SAS, a bearer token (on an emulator of its own with HTTPS and
// OAuth). With a SAS that may not process messages, the receives fail
// and the worker's log names the failure without the signature.
func TestWorkerAuthenticatesEveryWay(t *testing.T) {
	base := testenv.Account(t)
	query, _ := queueSAS(t, "", "rwdlacup")
	sasAcct, err := tablekit.Connect("TableEndpoint="+base.TableEndpoint()+";QueueEndpoint="+base.QueueEndpoint()+
		";BlobEndpoint="+base.BlobEndpoint()+";SharedAccessSignature="+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	em := emulator.StartTB(t, &emulator.Options{HTTPS: true, OAuth: emulator.OAuthBasic})
	tokAcct, err := tablekit.NewAccountWithCredential(tablekit.Endpoints{Table: em.TableURL, Queue: em.QueueURL, Blob: em.BlobURL}, jwtToken{},
		&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient()}})
	if err != nil {
		t.Fatal(err)
	}
	tokKeyed, err := tablekit.Connect(em.ConnectionString, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{Transport: em.HTTPClient()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		acct, make *tablekit.Account // the worker's, and the one that creates the queue
	}{
		{"shared key, x-ms- header added", testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requestIDPolicy{}}}}), base},
		{"account SAS", sasAcct, base},
		{"bearer token", tokAcct, tokKeyed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			q := newQueue(t, tc.make)
			const n = 3
			for range n {
				if err := q.Enqueue(ctx, NewTransaction(NewStep("once", nil)), nil); err != nil {
					t.Fatal(err)
				}
			}
			w := newWorker(t, tc.acct, q, WorkerOptions{Concurrency: 2, DepthInterval: -1})
			var mu sync.Mutex
			tries := map[string]int{}
			w.Handle("once", func(ctx context.Context, c *Call) error {
				mu.Lock()
				defer mu.Unlock()
				tries[c.TxID]++
				if tries[c.TxID] == 1 {
					return errors.New("not yet")
				}
				return nil
			})
			stop := startWorker(t, w)
			testenv.WaitFor(t, 20*time.Second, "every transaction", func() bool { return w.Metrics().Processed() == n })
			stop()
			if r := w.Metrics().Retried(); r != n {
				t.Errorf("%d releases for a retry, want %d", r, n)
			}
			if c := messageCount(t, q.qc); c != 0 {
				t.Errorf("%d messages left in the queue, want every one deleted", c)
			}
		})
	}
	// Refused receives: by the service (a SAS that may not process
	// messages), and by the network (nothing listens at the endpoint:
	// the transport's error quotes the request's URL, SAS included).
	for _, tc := range []struct{ name, queueEndpoint, want string }{
		{"SAS without process permission", base.QueueEndpoint(), "403 AuthorizationPermissionMismatch"},
		{"SAS to a closed port", "http://127.0.0.1:1/" + base.Name(), "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query, sig := queueSAS(t, "", "rl")
			acct, err := tablekit.Connect("TableEndpoint="+base.TableEndpoint()+";QueueEndpoint="+tc.queueEndpoint+
				";BlobEndpoint="+base.BlobEndpoint()+";SharedAccessSignature="+query,
				&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
			if err != nil {
				t.Fatal(err)
			}
			q := newQueue(t, base)
			var logs syncBuffer
			w := newWorker(t, acct, q, WorkerOptions{DepthInterval: -1, PollInterval: 20 * time.Millisecond,
				Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			stop := startWorker(t, w)
			testenv.WaitFor(t, 20*time.Second, "a failed receive", func() bool { return w.Metrics().receiveErrors.Load() > 0 })
			stop()
			out := logs.String()
			if !strings.Contains(out, "receive failed") || !strings.Contains(out, tc.want) {
				t.Errorf("the log does not name the refused receive (%s):\n%s", tc.want, out)
			}
			for _, form := range []string{sig, sig[:12], url.QueryEscape(sig)[:12]} {
				if strings.Contains(out, form) {
					t.Fatalf("the log shows the SAS signature:\n%s", out)
				}
			}
			// The transport's own error, before the worker maps it.
			_, err = queuehttp.Of(acct).Receive(context.Background(), q.Name(), 1, 1)
			assertNoSig(t, "Receive's error", err, sig)
			var ue *url.Error
			if errors.As(err, &ue) && strings.Contains(ue.URL, url.QueryEscape(sig)[:12]) {
				t.Errorf("Receive's *url.Error shows the SAS signature: %s", ue.URL)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

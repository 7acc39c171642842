package blobs_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/blobs"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

// shared is the Azurite the tests that compare with it share, started
// on first use and stopped in TestMain.
var shared struct {
	once sync.Once
	inst *azurite.Instance
	err  error
}

// TestMain runs the tests with the flushes to disk off (disk.SetSync):
// what the tests read comes from the page cache either way, and
// TestOnDisk's commits and content files waited 5.2 s for the disk in
// all, 2.7 s without (go test -run TestOnDisk, this 2-core machine at
// load 7 to 8). It stops the shared Azurite at the end.
func TestMain(m *testing.M) {
	disk.SetSync(false)
	code := m.Run()
	if shared.inst != nil {
		shared.inst.Stop()
	}
	os.Exit(code)
}

// startAzurite returns the shared Azurite: the azurite tier's tests use
// it (tier.Require), and fail when it cannot start.
func startAzurite(t *testing.T) *azurite.Instance {
	t.Helper()
	tier.Require(t, tier.Azurite)
	shared.once.Do(func() { shared.inst, shared.err = azurite.Start(context.Background(), nil) })
	if shared.err != nil {
		t.Fatalf("azurite: %v", shared.err)
	}
	return shared.inst
}

// startEmulator serves a new Blob service on a loopback port and returns
// its endpoint (http://127.0.0.1:PORT/devstoreaccount1).
func startEmulator(t testing.TB) string {
	_, endpoint := startService(t)
	return endpoint
}

// startEmulatorClock is startEmulator on a clock the test moves: pass
// moves it forward by d at once, so that leases expire and finish
// breaking without a real wait.
func startEmulatorClock(t testing.TB) (endpoint string, pass func(d time.Duration)) {
	var offset atomic.Int64 // nanoseconds
	_, endpoint = startServiceNow(t, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	return endpoint, func(d time.Duration) { offset.Add(int64(d)) }
}

// startService is startEmulator, also returning the service, for tests
// that send some of their requests straight to its ServeHTTP.
func startService(t testing.TB) (*blobs.Service, string) {
	t.Helper()
	return startServiceNow(t, nil)
}

// startServiceNow is startService with now as the service's clock (nil:
// time.Now).
func startServiceNow(t testing.TB, now func() time.Time) (*blobs.Service, string) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := blobs.Config{
		Account: azurite.AccountName,
		Auth:    auth.New(auth.Account{Name: azurite.AccountName, Keys: [][]byte{key}}),
		Now:     now,
	}
	if onDisk {
		cfg.Location = t.TempDir()
	}
	svc, err := blobs.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(func() {
		srv.Close()
		if cfg.Location != "" {
			reopened(t, svc, cfg)
		}
	})
	return svc, srv.URL + "/" + azurite.AccountName
}

// onDisk makes startService keep the service in a location (TestOnDisk).
var onDisk bool

// reopened closes svc, opens its location again and fails t unless the
// service loaded back holds what svc held (State): whatever a test did,
// every change it was answered for was written to the location.
func reopened(t testing.TB, svc *blobs.Service, cfg blobs.Config) {
	t.Helper()
	want := svc.State()
	if err := svc.Close(); err != nil {
		t.Fatalf("closing the location: %v", err)
	}
	again, err := blobs.Open(cfg)
	if err != nil {
		t.Fatalf("opening the location again: %v", err)
	}
	defer again.Close()
	if got := again.State(); got != want {
		t.Errorf("the location loaded back differs from what the service held:\n%s", lineDiff(want, got))
	}
}

// lineDiff lists the lines of want missing from got (-) and those of got
// missing from want (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// rawAccount is the account of the services a test opens itself
// (blobs.New, blobs.Open) to send requests straight to (serve).
const rawAccount = "acct"

// serve sends a request straight to s's ServeHTTP: method on path below
// the account (rawAccount), such as "box/b?comp=tags", with the headers h
// and body. It returns the answer.
func serve(s *blobs.Service, method, path string, h map[string]string, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/"+rawAccount+"/"+path, strings.NewReader(body))
	for k, v := range h {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// mustServe is serve, failing t unless the answer is a success.
func mustServe(t testing.TB, s *blobs.Service, method, path string, h map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := serve(s, method, path, h, body)
	if w.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	return w
}

// newContainer creates the container name with cl and returns its client.
func newContainer(t testing.TB, cl *azblob.Client, name string) *container.Client {
	t.Helper()
	cc := cl.ServiceClient().NewContainerClient(name)
	if _, err := cc.Create(context.Background(), nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return cc
}

// emulatorContainer starts an emulator and returns a client of a new
// container of it, named name.
func emulatorContainer(t testing.TB, name string) *container.Client {
	return newContainer(t, emulatorClient(t), name)
}

// newClient returns the real azblob client, signing with the development
// key, for the endpoint; it does not retry, so every answer is the
// service's first.
func newClient(t testing.TB, endpoint string) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(endpoint, cred, &azblob.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// emulatorClient starts an emulator and returns a client of it.
func emulatorClient(t testing.TB) *azblob.Client {
	return newClient(t, startEmulator(t))
}

// failure is the status and error code of a failed call.
func failure(err error) (int, string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.ErrorCode
	}
	return 0, err.Error()
}

// wantFailure fails the test unless err is the service's answer status
// with code.
func wantFailure(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %d %s", what, status, code)
	}
	gotStatus, gotCode := failure(err)
	if gotStatus != status || gotCode != code {
		t.Fatalf("%s: got %d %q, want %d %s (%v)", what, gotStatus, gotCode, status, code, err)
	}
}

// must fails the test on err.
func must[T any](t *testing.T, what string) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

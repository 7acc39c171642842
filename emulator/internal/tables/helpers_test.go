package tables_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/tables"
	"github.com/tablekit/tablekit/integration/azurite"
)

// TestMain runs the tests with the database's flushes off (disk.SetSync):
// what the tests read comes from the page cache either way, and
// TestOnDisk's commits waited 4.2 s for the disk in all, 1.4 s without
// (go test -run TestOnDisk, this 2-core machine at load 7 to 8).
func TestMain(m *testing.M) {
	disk.SetSync(false)
	os.Exit(m.Run())
}

// onDisk makes start keep the service's tables in a database in a
// temporary directory (tables.Open) instead of memory: TestOnDisk runs
// the package's tests so.
var onDisk bool

// server is one emulator Table service on a loopback port.
type server struct {
	url string // http://127.0.0.1:PORT/devstoreaccount1
	svc *tables.Service
}

func start(t testing.TB, cfg tables.Config) *server {
	t.Helper()
	cfg.Account = azurite.AccountName
	if cfg.Auth == nil {
		key, err := decodeKey()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Auth = auth.New(auth.Account{Name: azurite.AccountName, Keys: [][]byte{key}})
	}
	svc := tables.New(cfg)
	if onDisk {
		db, err := disk.Open(t.TempDir(), disk.TablesFile)
		if err != nil {
			t.Fatal(err)
		}
		if svc, err = tables.Open(cfg, db); err != nil {
			db.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := svc.Close(); err != nil {
				t.Errorf("closing the database: %v", err)
			}
		})
	}
	ts := httptest.NewServer(svc)
	t.Cleanup(ts.Close)
	return &server{url: ts.URL + "/" + azurite.AccountName, svc: svc}
}

func (s *server) service(t testing.TB) *aztables.ServiceClient {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := aztables.NewServiceClientWithSharedKey(s.url, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *server) table(t testing.TB, name string) *aztables.Client {
	t.Helper()
	c := s.service(t).NewClient(name)
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	return c
}

func (s *server) account(t testing.TB) *tablekit.Account {
	t.Helper()
	a, err := tablekit.Connect("DefaultEndpointsProtocol=http;AccountName="+azurite.AccountName+";AccountKey="+azurite.AccountKey+";TableEndpoint="+s.url+";", nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// code returns err's HTTP status and error code (azcore.ResponseError).
func code(t testing.TB, err error) (int, string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not an *azcore.ResponseError", err)
	}
	return re.StatusCode, re.ErrorCode
}

func wantCode(t testing.TB, err error, status int, errCode string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d %s", status, errCode)
	}
	if st, c := code(t, err); st != status || c != errCode {
		t.Fatalf("got %d %s (%v), want %d %s", st, c, err, status, errCode)
	}
}

func decodeKey() ([]byte, error) { return base64.StdEncoding.DecodeString(azurite.AccountKey) }

// raw sends a request signed with an account SAS (every permission) and
// returns the response with its body read.
func (s *server) raw(t testing.TB, method, path string, hdr map[string]string, body []byte) (*http.Response, []byte) {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(azurite.AccountName, azurite.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := aztables.AccountSASSignatureValues{
		Version:       aztables.SASVersion,
		Protocol:      aztables.SASProtocolHTTPSandHTTP,
		Permissions:   aztables.AccountSASPermissions{Read: true, Write: true, Delete: true, List: true, Add: true, Create: true, Update: true, Process: true}.String(),
		Services:      "t",
		ResourceTypes: aztables.AccountSASResourceTypes{Service: true, Container: true, Object: true}.String(),
		StartTime:     time.Now().Add(-time.Hour).UTC(),
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
	}.Sign(cred)
	if err != nil {
		t.Fatal(err)
	}
	u := s.url + "/" + path
	if strings.Contains(u, "?") {
		u += "&" + qp.Encode()
	} else {
		u += "?" + qp.Encode()
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-ms-version", "2019-02-02")
	req.Header.Set("Accept", "application/json;odata=minimalmetadata")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// errCode returns the odata.error code of an error body; the Table
// service sends it there only, with no x-ms-error-code header. "" when
// body is no error.
func errCode(body []byte) string {
	var e struct {
		OData struct {
			Code string `json:"code"`
		} `json:"odata.error"`
	}
	json.Unmarshal(body, &e)
	return e.OData.Code
}

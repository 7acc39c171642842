package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"
)

// WaitFor polls cond every 20 ms until it holds, and fails the test when
// timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HTTPGet sends a GET to url and returns the status code and body; a
// request that fails fails the test.
func HTTPGet(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// QueueSAS signs an account SAS (resource types "sco") for the queue
// service of the test account with key (the account's own key when key is
// "") and permissions, valid for an hour.
func QueueSAS(t testing.TB, key, permissions string) sas.QueryParameters {
	t.Helper()
	if key == "" {
		for _, part := range strings.Split(ConnectionString(t), ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "AccountKey") {
				key = v
			}
		}
	}
	cred, err := azqueue.NewSharedKeyCredential(Account(t).Name(), key)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.AccountSignatureValues{
		ExpiryTime: time.Now().Add(time.Hour), Permissions: permissions, ResourceTypes: "sco",
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp
}

package consistency

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// queueSAS signs an account SAS for the queue service (ss=q) of the test
// account with key (the account's own key when key is "") and returns its
// query string and signature.
func queueSAS(t *testing.T, key, permissions string) (query, sig string) {
	t.Helper()
	qp := testenv.QueueSAS(t, key, permissions)
	return qp.Encode(), qp.Signature()
}

// assertNoSig checks every way a caller prints err, and the request the
// SDK error keeps, for the signature in any form.
func assertNoSig(t *testing.T, what string, err error, sig string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	out := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), fmt.Sprintf("%q", err)}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		out = append(out, re.Error())
		if re.RawResponse != nil && re.RawResponse.Request != nil {
			out = append(out, re.RawResponse.Request.URL.String())
		}
	}
	var se *tablekit.ServiceError
	if errors.As(err, &se) {
		out = append(out, se.Resource, se.Op, se.Message)
	}
	for _, s := range out {
		for _, form := range []string{sig, url.QueryEscape(sig), sig[:12], url.QueryEscape(sig)[:12]} {
			if strings.Contains(s, form) {
				t.Errorf("%s shows the SAS signature:\n%s", what, s)
				return
			}
		}
	}
}

// TestQueueErrorsRedactSAS: Queue.Create and Queue.Delete with a SAS that
// may not create or delete (read-only), with one signed by the wrong key,
// and with one for the queue service only (so that the blob container
// cannot be created) fail with ErrAuthorization, and no error shows the
// signature. Create and Delete used to label their errors with the queue
// client's URL, SAS included.
func TestQueueErrorsRedactSAS(t *testing.T) {
	ctx := context.Background()
	a := testenv.Account(t)
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	wrongKey := base64.StdEncoding.EncodeToString(b)
	cases := []struct {
		what, key, perms string
		create, del      bool // whether Create and Delete fail
	}{
		{"read-only SAS", "", "rl", true, true},
		{"SAS signed with a wrong key", wrongKey, "rwdlacup", true, true},
		// Queues may be created and deleted; the blob container may not.
		{"queue-service SAS", "", "rwdlacup", true, false},
	}
	for _, tc := range cases {
		query, sig := queueSAS(t, tc.key, tc.perms)
		acct, err := tablekit.Connect("QueueEndpoint="+a.QueueEndpoint()+";BlobEndpoint="+a.BlobEndpoint()+";SharedAccessSignature="+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := testenv.QueueName(t)
		t.Cleanup(func() {
			_, _ = a.Queues().DeleteQueue(context.Background(), PoisonQueueName(name), nil)
		})
		q, err := NewQueue(acct, name, &QueueOptions{BlobContainer: testenv.ContainerName(t)})
		if err != nil {
			t.Fatal(err)
		}
		err = q.Create(ctx, nil)
		if !errors.Is(err, tablekit.ErrAuthorization) {
			t.Errorf("%s: Create = %v, want ErrAuthorization", tc.what, err)
		}
		assertNoSig(t, tc.what+": Create error", err, sig)
		err = q.Delete(ctx, nil)
		if tc.del {
			if !errors.Is(err, tablekit.ErrAuthorization) {
				t.Errorf("%s: Delete = %v, want ErrAuthorization", tc.what, err)
			}
			assertNoSig(t, tc.what+": Delete error", err, sig)
		} else if err != nil {
			t.Errorf("%s: Delete: %v", tc.what, err)
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("%s: the error does not name the queue: %v", tc.what, err)
		}
	}
}

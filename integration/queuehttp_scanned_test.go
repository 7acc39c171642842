package integration_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/queuehttp"
	"github.com/tablekit/tablekit/tools/testenv"
)

// bodies keeps the body of every answer to a receive.
type bodies struct {
	mu  sync.Mutex
	got [][]byte
}

func (b *bodies) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil && req.Raw().Method == http.MethodGet && strings.HasSuffix(req.Raw().URL.Path, "/messages") {
		body, rerr := io.ReadAll(resp.Body)
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		b.mu.Lock()
		b.got = append(b.got, body)
		b.mu.Unlock()
	}
	return resp, err
}

// TestServiceAnswersAreScanned: the test service's answers to a receive
// (the emulator's, Azurite's) are read by the scanner, not by
// encoding/xml, texts that need escaping included; an update returns the
// receipt that a delete then takes, and the old receipt no longer
// deletes.
func TestServiceAnswersAreScanned(t *testing.T) {
	rec := &bodies{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{rec}}})
	ctx := context.Background()
	name := testenv.QueueName(t)
	qc, err := acct.Queue(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
	texts := []string{`{"v":1,"id":"a"}`, `<&>'"` + "\n\ttab é 漢字 😀", ""}
	for _, s := range texts {
		if _, err := qc.EnqueueMessage(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := queuehttp.Of(acct)
	msgs, err := c.Receive(ctx, name, 32, 30)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(texts) {
		t.Fatalf("received %d messages, want %d", len(msgs), len(texts))
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		seen[m.Text] = true
		if m.ID == "" || m.PopReceipt == "" || m.DequeueCount != 1 || m.InsertionTime.IsZero() || m.TimeNextVisible.IsZero() {
			t.Errorf("message %+v: want an id, a receipt, dequeue count 1 and its times", m)
		}
	}
	for _, s := range texts {
		if !seen[s] {
			t.Errorf("no message reads %q", s)
		}
	}
	if len(rec.got) != 1 || !queuehttp.Scanned(rec.got[0]) {
		t.Fatalf("the service's answer was not read by the scanner: %q", rec.got)
	}
	m := msgs[0]
	pop, err := c.Update(ctx, name, m.ID, m.PopReceipt, m.Text, 30)
	if err != nil || pop == "" || pop == m.PopReceipt {
		t.Fatalf("Update = %q, %v; want a new receipt", pop, err)
	}
	err = c.Delete(ctx, name, m.ID, m.PopReceipt)
	if re, ok := err.(*azcore.ResponseError); !ok || re.StatusCode != http.StatusBadRequest && re.StatusCode != http.StatusNotFound {
		t.Errorf("Delete with the old receipt = %v, want the service's refusal", err)
	}
	if err := c.Delete(ctx, name, m.ID, pop); err != nil {
		t.Errorf("Delete with the new receipt: %v", err)
	}
}

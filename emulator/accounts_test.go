package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/patterns"
)

func TestParseAccounts(t *testing.T) {
	good := []struct {
		in   string
		want []emulator.Account
	}{
		{"account1:a2V5MQ==", []emulator.Account{{Name: "account1", Keys: []string{"a2V5MQ=="}}}},
		{"account1:a2V5MQ==:a2V5Mg==;account2:a2V5Mw==;", []emulator.Account{
			{Name: "account1", Keys: []string{"a2V5MQ==", "a2V5Mg=="}},
			{Name: "account2", Keys: []string{"a2V5Mw=="}},
		}},
	}
	for _, c := range good {
		got, err := emulator.ParseAccounts(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseAccounts(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", ";", "account1", "account1:k1:k2:k3"} {
		if got, err := emulator.ParseAccounts(in); err == nil {
			t.Errorf("ParseAccounts(%q) = %+v, want an error", in, got)
		}
	}
	// A key never appears in an error.
	if _, err := emulator.ParseAccounts("account1:c2VjcmV0:a:b"); err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("ParseAccounts with four fields: %v; want an error without the key", err)
	}
}

func TestStartRefusesBadAccountLists(t *testing.T) {
	for _, o := range []emulator.Options{
		{Accounts: []emulator.Account{{Name: "ab", Keys: []string{emulator.DevAccountKey}}}},
		{Accounts: []emulator.Account{{Name: "account1"}}},
		{Accounts: []emulator.Account{{Name: "account1", Keys: []string{"not base64!"}}}},
		{Accounts: []emulator.Account{{Name: "account1", Keys: []string{"a2V5MQ=="}}, {Name: "account1", Keys: []string{"a2V5Mg=="}}}},
		{AccountName: "account2", Accounts: []emulator.Account{{Name: "account1", Keys: []string{"a2V5MQ=="}}}},
	} {
		if em, err := emulator.Start(context.Background(), &o); err == nil {
			em.Stop()
			t.Errorf("Start(%+v) succeeded", o)
		}
	}
}

// Several accounts on the same ports: each has its own tables, queues and
// containers, answers to its own keys (either of two), and the
// development account is not served unless listed.
func TestSeveralAccounts(t *testing.T) {
	const (
		key1a = "YWNjb3VudDEta2V5MS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkw"
		key1b = "YWNjb3VudDEta2V5Mi1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkw"
		key2  = "YWNjb3VudDIta2V5MS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkw"
	)
	em := emulator.StartTB(t, &emulator.Options{Accounts: []emulator.Account{
		{Name: "account1", Keys: []string{key1a, key1b}},
		{Name: "account2", Keys: []string{key2}},
	}})
	if em.AccountName != "account1" || !strings.HasSuffix(em.TableURL, "/account1") {
		t.Fatalf("the Instance is %q at %s; want the first account's", em.AccountName, em.TableURL)
	}
	if got := em.Accounts(); !reflect.DeepEqual(got, []string{"account1", "account2"}) {
		t.Errorf("Accounts() = %v", got)
	}
	cs2, err := em.ConnectionStringFor("account2")
	if err != nil || !strings.Contains(cs2, "AccountName=account2;") || !strings.Contains(cs2, "TableEndpoint="+strings.TrimSuffix(em.TableURL, "account1")+"account2;") {
		t.Fatalf("ConnectionStringFor(account2) = %q, %v", cs2, err)
	}
	if _, err := em.ConnectionStringFor(emulator.DevAccountName); err == nil {
		t.Errorf("ConnectionStringFor(%s) succeeded; the development account is not served", emulator.DevAccountName)
	}
	ctx := context.Background()

	// Tables: the same name in both accounts holds different entities.
	t1, t2 := openTable(t, em.ConnectionString, nil), openTable(t, cs2, nil)
	if err := t1.Insert(ctx, &row{PartitionKey: "p", RowKey: "r", N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.Get(ctx, "p", "r", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("account2 sees account1's entity: %v", err)
	}
	// account1's second key opens account1.
	byKey2 := openTable(t, strings.Replace(em.ConnectionString, key1a, key1b, 1), nil)
	if got, err := byKey2.Get(ctx, "p", "r", nil); err != nil || got.N != 1 {
		t.Errorf("Get signed with account1's second key: %+v, %v", got, err)
	}

	// Queues and containers are the account's own too.
	a1, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := tablekit.Connect(cs2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a1.Queues().CreateQueue(ctx, "jobs", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Queues().CreateQueue(ctx, "jobs", nil); err != nil {
		t.Errorf("account2 cannot create a queue named as account1's: %v", err)
	}
	q1, _ := a1.Queue("jobs")
	if _, err := q1.EnqueueMessage(ctx, "hello", nil); err != nil {
		t.Fatal(err)
	}
	q2, _ := a2.Queue("jobs")
	if p, err := q2.PeekMessages(ctx, &azqueue.PeekMessagesOptions{}); err != nil || len(p.Messages) != 0 {
		t.Errorf("account2's queue holds %d messages, %v; want none", len(p.Messages), err)
	}
	if _, err := a1.Blobs().CreateContainer(ctx, "files", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Blobs().CreateContainer(ctx, "files", nil); err != nil {
		t.Errorf("account2 cannot create a container named as account1's: %v", err)
	}

	// The router: account2's secondary endpoint reaches account2's
	// service (401 without credentials); an account not served is the
	// single-account answer, 400 InvalidUri.
	base := strings.TrimSuffix(em.QueueURL, "/account1")
	for path, want := range map[string]int{"/account2-secondary/?comp=list": 401, "/nosuchaccount/?comp=list": 400} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// account2's key does not open account1, and the development account
	// is not served.
	openTableErr := func(cs string) *patterns.Table[row] {
		acct, err := tablekit.Connect(cs, nil)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := patterns.NewTable[row](acct, "rows", nil)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	wrong := strings.Replace(em.ConnectionString, key1a, key2, 1)
	if _, err := openTableErr(wrong).Get(ctx, "p", "r", nil); err == nil || !strings.Contains(fmt.Sprint(err), "AuthenticationFailed") {
		t.Errorf("account1 read with account2's key: %v; want 403 AuthenticationFailed", err)
	}
	dev := strings.NewReplacer("account1", emulator.DevAccountName, key1a, emulator.DevAccountKey).Replace(em.ConnectionString)
	if _, err := openTableErr(dev).Get(ctx, "p", "r", nil); err == nil {
		t.Errorf("the development account is served although Accounts does not list it")
	}
}

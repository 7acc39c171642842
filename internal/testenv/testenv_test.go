package testenv_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestNamesAreUniqueAndValid(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		tn, qn, cn := testenv.TableName(t), testenv.QueueName(t), testenv.ContainerName(t)
		if err := keys.ValidateTableName(tn); err != nil {
			t.Fatal(err)
		}
		if err := keys.ValidateQueueName(qn); err != nil {
			t.Fatal(err)
		}
		if err := keys.ValidateContainerName(cn); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{tn, qn, cn} {
			if seen[n] {
				t.Fatalf("name %q handed out twice", n)
			}
			seen[n] = true
		}
	}
}

func TestTableIsDeletedAtCleanup(t *testing.T) {
	acct := testenv.Account(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		name = testenv.TableName(t)
		c := acct.Tables().NewClient(name)
		if _, err := c.CreateTable(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddEntity(context.Background(), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
			t.Fatal(err)
		}
	})
	_, err := acct.Tables().NewClient(name).GetEntity(context.Background(), "p", "r", nil)
	if !errors.Is(tablekit.MapError(err, "", ""), tablekit.ErrNotFound) {
		t.Fatalf("table %s still readable after its test ended: %v", name, err)
	}
}

func TestCountingAccountCountsEveryRequest(t *testing.T) {
	acct, counter := testenv.CountingAccount(t)
	c := testenv.Table(t, acct)
	counter.Reset()
	ctx := context.Background()
	if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetEntity(ctx, "p", "r", nil); err != nil {
		t.Fatal(err)
	}
	if n := counter.Count(); n != 2 {
		t.Fatalf("counted %d requests for an insert and a get, want 2:\n%s", n, counter.Requests())
	}
}

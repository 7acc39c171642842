package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func rawEntity(pk, rk string) []byte {
	return []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"N":1}`, pk, rk))
}

// TestMapErrorOnAzurite drives each service error the issue lists through
// the SDK and checks that MapError classifies it, keeps the SDK error, and
// labels it.
func TestMapErrorOnAzurite(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
	tc := testenv.Table(t, acct)
	if _, err := tc.AddEntity(ctx, rawEntity("p", "r"), nil); err != nil {
		t.Fatal(err)
	}
	missing := acct.Tables().NewClient(testenv.TableName(t))

	cases := []struct {
		name     string
		call     func() error
		sentinel error
		status   int
		code     string
	}{
		{"entity not found", func() error { _, err := tc.GetEntity(ctx, "p", "nope", nil); return err }, tablekit.ErrNotFound, 404, "ResourceNotFound"},
		{"table not found", func() error { _, err := missing.GetEntity(ctx, "p", "r", nil); return err }, tablekit.ErrNotFound, 404, "TableNotFound"},
		{"entity already exists", func() error { _, err := tc.AddEntity(ctx, rawEntity("p", "r"), nil); return err }, tablekit.ErrAlreadyExists, 409, "EntityAlreadyExists"},
		{"table already exists", func() error { _, err := tc.CreateTable(ctx, nil); return err }, tablekit.ErrAlreadyExists, 409, "TableAlreadyExists"},
		{"stale etag", func() error {
			etag := azcore.ETag(`W/"datetime'2000-01-01T00%3A00%3A00.0000000Z'"`)
			_, err := tc.UpdateEntity(ctx, rawEntity("p", "r"), &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: aztables.UpdateModeReplace})
			return err
		}, tablekit.ErrPreconditionFailed, 412, "UpdateConditionNotSatisfied"},
		{"invalid input", func() error {
			_, err := tc.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"bad#key"}`), nil)
			return err
		}, tablekit.ErrBadRequest, 400, "InvalidInput"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.call()
			if raw == nil {
				t.Fatal("the SDK call succeeded; want a service error")
			}
			err := tablekit.MapError(raw, "test op", "res")
			if !errors.Is(err, c.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, c.sentinel)
			}
			if errors.Is(err, tablekit.ErrInvalidArgument) {
				t.Errorf("a service error %v unwraps to ErrInvalidArgument, which is for local refusals", err)
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != c.status {
				t.Errorf("errors.As *azcore.ResponseError: %v (status %v), want status %d", err, re, c.status)
			}
			var se *tablekit.ServiceError
			if !errors.As(err, &se) {
				t.Fatalf("%T is not a *ServiceError", err)
			}
			if c.code != "" && se.Code != c.code {
				t.Errorf("Code = %q, want %q", se.Code, c.code)
			}
			if se.Op != "test op" || se.Resource != "res" || se.StatusCode != c.status {
				t.Errorf("ServiceError = %+v", se)
			}
			if want := "tablekit: test op res: "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
		})
	}
}

// TestTransactionErrorIndex is the raw 100-operation transaction
// whose 6th action inserts an existing entity.
func TestTransactionErrorIndex(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t)
	tc := testenv.Table(t, acct)
	if _, err := tc.AddEntity(ctx, rawEntity("p", "r005"), nil); err != nil {
		t.Fatal(err)
	}
	actions := make([]aztables.TransactionAction, 100)
	for i := range actions {
		actions[i] = aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: rawEntity("p", fmt.Sprintf("r%03d", i))}
	}
	_, raw := tc.SubmitTransaction(ctx, actions, nil)
	if raw == nil {
		t.Fatal("transaction succeeded; want a failure at index 5")
	}
	err := tablekit.MapError(raw, "transaction", "")
	var te *tablekit.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("MapError = %T %v, want *TransactionError", err, err)
	}
	if te.Index != 5 || te.StatusCode != http.StatusConflict || te.Code != "EntityAlreadyExists" {
		t.Errorf("TransactionError = %+v, want Index 5, 409 EntityAlreadyExists", te)
	}
	if !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("errors.Is(err, ErrAlreadyExists) = false for %v", err)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Error("TransactionError does not unwrap to *azcore.ResponseError")
	}
	// Nothing of the batch was applied.
	pager := tc.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	if n != 1 {
		t.Errorf("%d entities in the partition after the failed batch, want 1", n)
	}
}

func TestIsTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&azcore.ResponseError{StatusCode: 503}, true},
		{&azcore.ResponseError{StatusCode: 429}, true},
		{&azcore.ResponseError{StatusCode: 408}, true},
		{&azcore.ResponseError{StatusCode: 500}, true},
		{&azcore.ResponseError{StatusCode: 400}, false},
		{&azcore.ResponseError{StatusCode: 409}, false},
		{context.Canceled, false},
		{errors.New("some bug"), false},
	}
	for _, c := range cases {
		if got := tablekit.IsTransient(c.err); got != c.want {
			t.Errorf("IsTransient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestInvalidArgumentFamily: every sentinel of a locally refused argument
// unwraps to ErrInvalidArgument and keeps its own identity; the service's
// ErrBadRequest and ErrInvalidEntity (which also reports stored rows that
// do not decode) do not.
func TestInvalidArgumentFamily(t *testing.T) {
	family := map[string]error{
		"ErrInvalidKey":              tablekit.ErrInvalidKey,
		"ErrInvalidName":             tablekit.ErrInvalidName,
		"ErrInvalidFilter":           tablekit.ErrInvalidFilter,
		"ErrInvalidTransaction":      tablekit.ErrInvalidTransaction,
		"ErrInvalidToken":            tablekit.ErrInvalidToken,
		"ErrInvalidConnectionString": tablekit.ErrInvalidConnectionString,
		"ErrInvalidSAS":              tablekit.ErrInvalidSAS,
	}
	for name, sentinel := range family {
		wrapped := fmt.Errorf("tablekit: somewhere: %w: detail", sentinel)
		if !errors.Is(wrapped, tablekit.ErrInvalidArgument) || !errors.Is(wrapped, sentinel) {
			t.Errorf("%s: errors.Is(ErrInvalidArgument) = %v, errors.Is(itself) = %v; want both", name,
				errors.Is(wrapped, tablekit.ErrInvalidArgument), errors.Is(wrapped, sentinel))
		}
		for other, o := range family {
			if other != name && errors.Is(wrapped, o) {
				t.Errorf("%s matches %s", name, other)
			}
		}
	}
	for name, sentinel := range map[string]error{"ErrBadRequest": tablekit.ErrBadRequest, "ErrInvalidEntity": tablekit.ErrInvalidEntity} {
		if errors.Is(sentinel, tablekit.ErrInvalidArgument) {
			t.Errorf("%s unwraps to ErrInvalidArgument", name)
		}
	}
	// Errors as returned, not only the sentinels.
	if _, err := tablekit.Connect("AccountName=contoso", nil); !errors.Is(err, tablekit.ErrInvalidArgument) {
		t.Errorf("a malformed connection string: %v, want ErrInvalidArgument", err)
	}
}

// A request that got no answer after azcore's retries (a reset, refused
// or timed-out connection, a truncated response) is ErrUnavailable, like
// a 503, and still unwraps to its cause; the caller's own cancellation is
// not.
func TestMapErrorUnreachableIsUnavailable(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, cause := range []error{reset, io.ErrUnexpectedEOF, fmt.Errorf("send: %w", syscall.ECONNREFUSED)} {
		err := tablekit.MapError(cause, "get", "employees")
		if !errors.Is(err, tablekit.ErrUnavailable) || !errors.Is(err, cause) || !tablekit.IsTransient(err) {
			t.Errorf("MapError(%v) = %v: want ErrUnavailable, transient, wrapping its cause", cause, err)
		}
		if !strings.Contains(err.Error(), "get employees") || !strings.Contains(err.Error(), cause.Error()) {
			t.Errorf("MapError(%v) says %q: want the operation, the resource and the cause", cause, err)
		}
	}
	var ne *net.OpError
	if !errors.As(tablekit.MapError(reset, "get", "t"), &ne) {
		t.Error("the mapped reset does not unwrap to its *net.OpError")
	}
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded, errors.New("something else")} {
		if err := tablekit.MapError(cause, "get", "t"); errors.Is(err, tablekit.ErrUnavailable) || !errors.Is(err, cause) {
			t.Errorf("MapError(%v) = %v: want it unchanged, not ErrUnavailable", cause, err)
		}
	}
}

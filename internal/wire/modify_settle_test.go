package wire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// settleRetry retries within milliseconds, so that a Modify that goes
// round its loop again after a transient failure does so at once.
var settleRetry = policy.RetryOptions{MaxRetries: 3, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}

// settleTable opens a fresh table on an account with pol among its
// per-retry policies, and inserts ("p", "r") with N = 1: with the write-id
// log when logged (a Modify wrote it), without when not (a plain insert,
// as a caller's Table.Insert leaves it).
func settleTable(t *testing.T, pol policy.Policy, logged bool) *wire.Table {
	t.Helper()
	ctx := context.Background()
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		Retry: settleRetry, PerRetryPolicies: []policy.Policy{pol},
	}})
	tbl, err := wire.Open(acct, testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Create(ctx); err != nil {
		t.Fatal(err)
	}
	if logged {
		if _, err := tbl.Modify(ctx, "p", "r", func([]byte) (wire.Op, error) {
			return wire.Op{Type: wire.OpInsert, PartitionKey: "p", RowKey: "r", Entity: row("p", "r")}, nil
		}, nil); err != nil {
			t.Fatal(err)
		}
	} else if _, err := tbl.Write(ctx, "insert", wire.Op{Type: wire.OpInsert, PartitionKey: "p", RowKey: "r", Entity: row("p", "r")}); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// increment is a ModifyFunc that adds 1 to N.
func increment(stored []byte) (wire.Op, error) {
	var e struct{ N int }
	if err := json.Unmarshal(stored, &e); err != nil {
		return wire.Op{}, err
	}
	body := fmt.Appendf(nil, `{"PartitionKey":"p","RowKey":"r","N":%d}`, e.N+1)
	return wire.Op{Type: wire.OpReplace, PartitionKey: "p", RowKey: "r", Entity: body}, nil
}

// storedN reads ("p", "r")'s N.
func storedN(t *testing.T, tbl *wire.Table) int {
	t.Helper()
	raw, _, err := tbl.Stored(context.Background(), "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ N int }
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e.N
}

// isEntityWrite is true for a single-entity update (Modify's replace).
func isEntityWrite(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "(PartitionKey=")
}

// A Modify whose conditional write failed without reaching the service
// finds the entity read back at the version the write was conditional on:
// a write that lands always changes the ETag, so it did not land, and
// Modify writes again, log or none (an entity only a plain insert wrote
// has none: that read-back used to end in ErrOutcomeUnknown). One whose
// write did land and lost its answer finds its id in the log. Either way
// the increment is applied once and Modify says so.
func TestModifySettlesALostWriteByTheStoredState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		kind   faults.Kind
		after  bool
		logged bool
	}{
		{faults.Timeout, false, false},
		{faults.ConnReset, false, false},
		{faults.Status503, false, false},
		{faults.Timeout, false, true},
		{faults.Timeout, true, false},
		{faults.ConnReset, true, true},
	} {
		name := fmt.Sprintf("%v/after=%v/logged=%v", c.kind, c.after, c.logged)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fp, err := faults.New(1, faults.Rule{Kind: c.kind, Rate: 1, After: c.after, Match: faults.Once(isEntityWrite)})
			if err != nil {
				t.Fatal(err)
			}
			tbl := settleTable(t, fp, c.logged)
			if _, err := tbl.Modify(context.Background(), "p", "r", increment, nil); err != nil {
				t.Errorf("Modify after a lost write: %v; want nil (the stored state settles it)", err)
			}
			if fp.Injected() != 1 {
				t.Fatalf("%d faults injected, want 1", fp.Injected())
			}
			if n := storedN(t, tbl); n != 2 {
				t.Errorf("N = %d after one increment of 1, want 2", n)
			}
		})
	}
}

// lateWrite is a policy that holds back the first entity write: the
// client sees an i/o timeout at once, and the write reaches the service
// only once the read-back has passed, just before the request after it,
// as a request queued in the network would.
type lateWrite struct {
	mu    sync.Mutex
	held  *http.Request
	reads int // requests seen since the write was held
	sent  bool
}

func (l *lateWrite) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.held == nil && isEntityWrite(raw):
		body, err := io.ReadAll(raw.Body)
		if err != nil {
			return nil, err
		}
		l.held = raw.Clone(context.Background())
		l.held.Body = io.NopCloser(bytes.NewReader(body))
		l.held.ContentLength = int64(len(body))
		return nil, lateTimeout{}
	case l.held != nil && !l.sent:
		if l.reads++; l.reads == 2 {
			l.sent = true
			resp, err := http.DefaultTransport.RoundTrip(l.held)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				return nil, fmt.Errorf("the held write landed with %s", resp.Status)
			}
		}
	}
	return req.Next()
}

type lateTimeout struct{}

func (lateTimeout) Error() string   { return "i/o timeout (held back)" }
func (lateTimeout) Timeout() bool   { return true }
func (lateTimeout) Temporary() bool { return true }

// A write settled as not landed (the read-back found the version it was
// conditional on) may still reach the service after the read-back: the
// next read shows its id in the log, and Modify stops there with the
// change applied once instead of applying it again to the state it left.
func TestModifyAppliesALateWriteOnce(t *testing.T) {
	t.Parallel()
	for _, logged := range []bool{false, true} {
		t.Run(fmt.Sprintf("logged=%v", logged), func(t *testing.T) {
			t.Parallel()
			l := &lateWrite{}
			tbl := settleTable(t, l, logged)
			m, err := tbl.Modify(context.Background(), "p", "r", increment, nil)
			if err != nil {
				t.Fatalf("Modify whose write landed late: %v", err)
			}
			if !l.sent {
				t.Fatal("the held write was never sent")
			}
			if n := storedN(t, tbl); n != 2 {
				t.Errorf("N = %d after one increment of 1, want 2 (the late write and the retry both applied)", n)
			}
			if !m.Written {
				t.Error("Modified.Written = false, want true: the late write is the change")
			}
		})
	}
}

package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// connStr is the test account's connection string, for the Example
// functions, which cannot take a *testing.T.
var connStr string

func TestMain(m *testing.M) {
	connStr = testenv.MainConnectionString()
	testenv.Main(m)
}

// tableOpts returns a copy of o (nil: defaults) with the transport t
// runs on: the aztables client under TestSDKPath (onSDKPath), the fast
// path elsewhere.
func tableOpts(t testing.TB, o *patterns.TableOptions) *patterns.TableOptions {
	var c patterns.TableOptions
	if o != nil {
		c = *o
	}
	c.SDKPath = onSDKPath(t)
	return &c
}

// sdkPathTest is the name of the test that runs the Table[T] suite
// through the aztables client.
const sdkPathTest = "TestSDKPath"

// onSDKPath reports whether t runs under TestSDKPath: its tables then use
// the aztables client instead of the fast path. The choice goes by the
// test's name, not a variable of the package, so TestSDKPath and the
// tests it runs run in parallel with everything else.
func onSDKPath(t testing.TB) bool { return strings.HasPrefix(t.Name(), sdkPathTest+"/") }

// TestSDKPath runs the Table[T] suite through the aztables client: both
// paths must behave the same.
func TestSDKPath(t *testing.T) {
	t.Parallel()
	if t.Name() != sdkPathTest {
		t.Fatalf("onSDKPath looks for the tests under %s; this is %s", sdkPathTest, t.Name())
	}
	for name, test := range map[string]func(*testing.T){
		"CRUDWithETags":                           TestCRUDWithETags,
		"CreateIfNotExistsAndDrop":                TestCreateIfNotExistsAndDrop,
		"BadInputFailsBeforeAnyRequest":           TestBadInputFailsBeforeAnyRequest,
		"UpdateLosesNoConcurrentIncrement":        TestUpdateLosesNoConcurrentIncrement,
		"QueryClassesProjectionAndLimits":         TestQueryClassesProjectionAndLimits,
		"PagingResumesFromSerializedTokens":       TestPagingResumesFromSerializedTokens,
		"TransactionRulesCheckedBeforeSending":    TestTransactionRulesCheckedBeforeSending,
		"TransactionAtomicAndReportsFailingIndex": TestTransactionAtomicAndReportsFailingIndex,
		"BulkWriteSplitsAt4MiB":                   TestBulkWriteSplitsAt4MiB,
		"BulkWriteReportsFailuresAndKeepsTheRest": TestBulkWriteReportsFailuresAndKeepsTheRest,
		"BulkWriteThrottleSettlesLostAnswers":     TestBulkWriteThrottleSettlesLostAnswers,
		"ScanReadsEveryRowOnce":                   TestScanReadsEveryRowOnce,
		"ScanResumesFromItsToken":                 TestScanResumesFromItsToken,
	} {
		t.Run(name, test) // each calls t.Parallel
	}
	t.Run("TablesUseTheSDK", func(t *testing.T) {
		if !tableOpts(t, nil).SDKPath {
			t.Errorf("tableOpts under %s leaves SDKPath false: the suite above ran on the fast path", t.Name())
		}
	})
}

// Employee is the guide's employee entity: department as PartitionKey,
// employee id as RowKey.
type Employee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Timestamp    time.Time
	FirstName    string
	LastName     string
	Age          int
	Email        string
	Salary       float64
}

func newTable[T any](t *testing.T) (*patterns.Table[T], *tablekit.RequestCounter) {
	t.Helper()
	acct, counter := testenv.CountingAccount(t)
	tbl, err := patterns.NewTable[T](acct, testenv.TableName(t), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	return tbl, counter
}

func requests(t *testing.T, c *tablekit.RequestCounter, want int64, what string) {
	t.Helper()
	if got := c.Count(); got != want {
		t.Errorf("%s took %d requests, want %d:\n%s", what, got, want, c.Requests())
	}
	c.Reset()
}

func TestCRUDWithETags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)

	e := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Age: 31, Email: "junc@contoso.com", Salary: 3.0}
	if err := tbl.Insert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Insert")
	if e.ETag == "" || e.Timestamp.IsZero() {
		t.Fatalf("Insert did not write back ETag/Timestamp: %q %v", e.ETag, e.Timestamp)
	}
	if time.Since(e.Timestamp) > time.Minute || time.Since(e.Timestamp) < -time.Minute {
		t.Errorf("Timestamp %v is not now", e.Timestamp)
	}

	dup := e
	dup.ETag = ""
	if err := tbl.Insert(ctx, &dup, nil); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("second Insert = %v, want ErrAlreadyExists", err)
	}
	c.Reset()

	got, err := tbl.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Get")
	if got.FirstName != "Jun" || got.Age != 31 || got.Salary != 3.0 || got.ETag != e.ETag || !got.Timestamp.Equal(e.Timestamp) {
		t.Errorf("Get = %+v, want what was inserted (%+v)", got, e)
	}

	// Replace with the current ETag succeeds and moves the ETag on.
	stale := got
	got.Age = 32
	if err := tbl.Replace(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Replace")
	if got.ETag == stale.ETag {
		t.Error("Replace did not write back a new ETag")
	}
	// The stale copy is refused: optimistic concurrency by default.
	stale.Age = 99
	if err := tbl.Replace(ctx, &stale, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Replace with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if err := tbl.Merge(ctx, &stale, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Merge with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if err := tbl.Delete(ctx, &stale, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("Delete with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	c.Reset()
	// An empty ETag is a bug unless the write is explicitly unconditional.
	blind := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Blind"}
	if err := tbl.Replace(ctx, &blind, nil); !errors.Is(err, patterns.ErrNoETag) {
		t.Errorf("Replace with no ETag = %v, want ErrNoETag", err)
	}
	requests(t, c, 0, "a refused Replace")

	// Merge keeps the properties it does not send... a struct sends all of
	// its fields, so merge a narrower type.
	type nameOnly struct {
		PartitionKey, RowKey string
		LastName             string
	}
	nt, err := patterns.NewTable[nameOnly](tbl.Account(), tbl.Name(), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := nt.Merge(ctx, &nameOnly{"Sales", "000123", "Jones"}, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Merge")
	got, err = tbl.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastName != "Jones" || got.FirstName != "Jun" || got.Age != 32 {
		t.Errorf("after merge: %+v, want LastName Jones and the rest kept", got)
	}
	c.Reset()

	up := Employee{PartitionKey: "Sales", RowKey: "000124", FirstName: "Up"}
	if err := tbl.Upsert(ctx, &up, nil); err != nil {
		t.Fatal(err)
	}
	up.FirstName = "Upper"
	up.ETag = "W/\"datetime'2000-01-01T00%3A00%3A00Z'\"" // ignored: upserts are unconditional
	if err := tbl.Upsert(ctx, &up, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "two Upserts")

	if err := tbl.Delete(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Delete")
	if _, err := tbl.Get(ctx, "Sales", "000123", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := tbl.Delete(ctx, &got, &patterns.WriteOptions{Unconditional: true}); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Delete of a missing entity = %v, want ErrNotFound", err)
	}
	c.Reset()
	existed, err := tbl.DeleteIfExists(ctx, "Sales", "000124", nil)
	if err != nil || !existed {
		t.Errorf("DeleteIfExists(existing) = %v, %v", existed, err)
	}
	existed, err = tbl.DeleteIfExists(ctx, "Sales", "000124", nil)
	if err != nil || existed {
		t.Errorf("DeleteIfExists(missing) = %v, %v; want false, nil", existed, err)
	}
	requests(t, c, 2, "two DeleteIfExists")
}

func TestBadInputFailsBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"key with #", func() error { return tbl.Insert(ctx, &Employee{PartitionKey: "a#b", RowKey: "1"}, nil) }, tablekit.ErrInvalidKey},
		{"Get with /", func() error { _, err := tbl.Get(ctx, "a/b", "1", nil); return err }, tablekit.ErrInvalidKey},
		{"oversize key", func() error { _, err := tbl.Get(ctx, strings.Repeat("k", 513), "1", nil); return err }, tablekit.ErrInvalidKey},
		{"nil value", func() error { return tbl.Insert(ctx, nil, nil) }, tablekit.ErrInvalidEntity},
		{"string over 32K units", func() error {
			return tbl.Insert(ctx, &Employee{PartitionKey: "p", RowKey: "r", FirstName: strings.Repeat("x", 32769)}, nil)
		}, tablekit.ErrInvalidEntity},
		{"table scan", func() error {
			_, err := patterns.Collect(tbl.Query(ctx, keys.Prop("Age").Gt(30), nil))
			return err
		}, tablekit.ErrTableScan},
		{"Top over 1000", func() error {
			_, err := tbl.Page(ctx, keys.PK().Eq("p"), "", &patterns.QueryOptions{Top: 1001})
			return err
		}, tablekit.ErrInvalidArgument},
		{"malformed token", func() error {
			_, err := tbl.Page(ctx, keys.PK().Eq("p"), "not a token!", nil)
			return err
		}, tablekit.ErrInvalidToken},
		{"DeleteIfExists with control character", func() error { _, err := tbl.DeleteIfExists(ctx, "p", "r\x01", nil); return err }, tablekit.ErrInvalidKey},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.Reset()
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			requests(t, c, 0, tc.name)
		})
	}
	if _, err := patterns.NewTable[Employee](tbl.Account(), "no_underscores", nil); !errors.Is(err, tablekit.ErrInvalidName) {
		t.Errorf("NewTable with an invalid name = %v, want ErrInvalidName", err)
	}
	type badTag struct {
		PartitionKey, RowKey string
		X                    int `table:"X,bogus"`
	}
	if _, err := patterns.NewTable[badTag](tbl.Account(), "goodname", nil); !errors.Is(err, tablekit.ErrInvalidEntity) {
		t.Errorf("NewTable with an unknown tag option = %v, want ErrInvalidEntity", err)
	}
}

// Counter is incremented concurrently through Update.
type Counter struct {
	PartitionKey, RowKey string
	N                    int64
}

func TestUpdateLosesNoConcurrentIncrement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	tbl, err := patterns.NewTable[Counter](acct, testenv.TableName(t), tableOpts(t, &patterns.TableOptions{MaxAttempts: 200}))
	must(t, err)
	must(t, tbl.CreateIfNotExists(ctx, nil))
	must(t, tbl.Insert(ctx, &Counter{PartitionKey: "c", RowKey: "hits"}, nil))
	const workers, each = 16, 10
	if !concurrently(t, workers, func(int) error {
		for range each {
			if _, err := tbl.Update(ctx, "c", "hits", func(c *Counter) error { c.N++; return nil }, nil); err != nil {
				return err
			}
		}
		return nil
	}) {
		t.FailNow()
	}
	got, err := tbl.Get(ctx, "c", "hits", nil)
	must(t, err)
	if got.N != workers*each {
		t.Fatalf("counter = %d after %d concurrent increments", got.N, workers*each)
	}
	if _, err := tbl.Update(ctx, "c", "missing", func(*Counter) error { return nil }, nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Update of a missing entity = %v, want ErrNotFound", err)
	}
	sentinel := errors.New("stop")
	if _, err := tbl.Update(ctx, "c", "hits", func(*Counter) error { return sentinel }, nil); err != sentinel {
		t.Errorf("Update whose fn fails = %v, want fn's error", err)
	}
}

func TestQueryClassesProjectionAndLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	var batch []Employee
	for i := 0; i < 30; i++ {
		dept := []string{"Sales", "HR"}[i%2]
		batch = append(batch, Employee{PartitionKey: dept, RowKey: fmt.Sprintf("%06d", i), FirstName: fmt.Sprint("F", i), LastName: "L", Age: 20 + i, Email: fmt.Sprintf("e%d@contoso.com", i)})
	}
	if _, err := tbl.BulkWrite(ctx, batch, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()

	// Range query: PartitionKey eq + RowKey bounds.
	rng := keys.And(keys.PK().Eq("Sales"), keys.RK().Ge("000010"), keys.RK().Lt("000020"))
	p, err := tbl.Page(ctx, rng, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "one page")
	if p.Class != keys.Range || len(p.Items) != 5 || p.Token != "" {
		t.Errorf("range page: class %v, %d items, token %q; want Range, 5, none", p.Class, len(p.Items), p.Token)
	}

	// Limit is a total, separate from the page size.
	got, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("HR"), &patterns.QueryOptions{Top: 4, Limit: 6}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Errorf("Limit 6 returned %d", len(got))
	}
	requests(t, c, 2, "6 entities in pages of 4")

	// Projection: only the selected properties come back.
	got, err = patterns.Collect(tbl.Query(ctx, keys.And(keys.PK().Eq("Sales"), keys.RK().Eq("000004")), &patterns.QueryOptions{Select: []string{"FirstName"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].FirstName != "F4" || got[0].Email != "" || got[0].Age != 0 || got[0].RowKey != "" && got[0].RowKey != "000004" {
		t.Errorf("projected row = %+v; want FirstName only", got)
	}

	// A table scan is refused without opt-in and runs with it.
	scan := keys.Prop("Age").Ge(45)
	if _, err := patterns.Collect(tbl.Query(ctx, scan, nil)); !errors.Is(err, tablekit.ErrTableScan) {
		t.Errorf("table scan without opt-in: %v", err)
	}
	got, err = patterns.Collect(tbl.Query(ctx, scan, &patterns.QueryOptions{AllowTableScan: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Errorf("table scan for Age >= 45 returned %d rows, want 5", len(got))
	}
	// Stopping the loop early stops fetching.
	c.Reset()
	for range tbl.Query(ctx, keys.PK().Eq("HR"), &patterns.QueryOptions{Top: 2}) {
		break
	}
	requests(t, c, 1, "a query abandoned after its first row")
}

func TestPagingResumesFromSerializedTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	const n = 2500
	items := make([]Employee, n)
	for i := range items {
		items[i] = Employee{PartitionKey: "p", RowKey: fmt.Sprintf("%06d", i), Age: i}
	}
	res, err := tbl.BulkWrite(ctx, items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != n || res.Requests != 25 {
		t.Errorf("bulk write of %d in one partition: %+v, want 25 requests", n, res)
	}
	requests(t, c, 25, "bulk write of 2,500 entities in one partition")

	f := keys.PK().Eq("p")
	opts := &patterns.QueryOptions{Top: 1000}
	token, seen, pages := "", 0, 0
	for {
		// A new Table value each time: the token alone carries the position,
		// as it would across a process restart. (On tbl's account, whose
		// pages never end early: the test counts them.)
		fresh, err := patterns.NewTable[Employee](tbl.Account(), tbl.Name(), tableOpts(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		p, err := fresh.Page(ctx, f, token, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range p.Items {
			if e.Age != seen {
				t.Fatalf("entity %d out of order: got Age %d", seen, e.Age)
			}
			seen++
		}
		if p.Token == "" {
			break
		}
		if strings.ContainsAny(p.Token, "+/=?&# ") {
			t.Fatalf("token %q is not URL-safe", p.Token)
		}
		token = p.Token
		// The token is refused by another query.
		if _, err := fresh.Page(ctx, keys.PK().Eq("q"), token, opts); !errors.Is(err, tablekit.ErrInvalidToken) {
			t.Errorf("token replayed on another filter: %v, want ErrInvalidToken", err)
		}
		if _, err := fresh.Page(ctx, f, token, &patterns.QueryOptions{Top: 10}); !errors.Is(err, tablekit.ErrInvalidToken) {
			t.Errorf("token replayed with another page size: %v, want ErrInvalidToken", err)
		}
	}
	if seen != n || pages != 3 {
		t.Errorf("paged through %d entities in %d pages, want %d in 3", seen, pages, n)
	}
}

func TestCreateIfNotExistsAndDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	tbl, err := patterns.NewTable[Employee](acct, testenv.TableName(t), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
			t.Fatalf("CreateIfNotExists #%d: %v", i+1, err)
		}
	}
	if err := tbl.Insert(ctx, &Employee{PartitionKey: "p", RowKey: "r"}, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	if err := tbl.Drop(ctx, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "Drop")
	if _, err := tbl.Get(ctx, "p", "r", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get after Drop = %v, want ErrNotFound", err)
	}
	if err := tbl.Drop(ctx, nil); err != nil {
		t.Errorf("Drop of a missing table = %v, want nil", err)
	}
}

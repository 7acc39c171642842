package patterns_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestTransactionRulesCheckedBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	many := tbl.Transaction()
	for i := 0; i < 101; i++ {
		many.Insert(&Employee{PartitionKey: "p", RowKey: fmt.Sprint(i)})
	}
	cases := []struct {
		name string
		tx   *patterns.Transaction[Employee]
		want string
	}{
		{"empty", tbl.Transaction(), "no operations"},
		{"101 operations", many, "101 operations"},
		{"two partitions", tbl.Transaction().Insert(&Employee{PartitionKey: "a", RowKey: "1"}).Insert(&Employee{PartitionKey: "b", RowKey: "1"}), "one partition"},
		{"same entity twice", tbl.Transaction().Insert(&Employee{PartitionKey: "a", RowKey: "1"}).Upsert(&Employee{PartitionKey: "a", RowKey: "1"}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}), "one operation per entity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.Reset()
			_, err := tc.tx.Submit(ctx, nil)
			if !errors.Is(err, tablekit.ErrInvalidTransaction) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Submit = %v, want ErrInvalidTransaction saying %q", err, tc.want)
			}
			requests(t, c, 0, "an invalid transaction")
		})
	}
	t.Run("over 4 MiB", func(t *testing.T) {
		// Strings are counted in UTF-16 by the service but sent as UTF-8;
		// build a body over 4 MiB with 5 entities just under 1 MiB.
		tx := tbl.Transaction()
		for i := 0; i < 5; i++ {
			tx.Add(patterns.Op{Type: patterns.OpInsert, PartitionKey: "p", RowKey: fmt.Sprint(i), Entity: []byte(`{"PartitionKey":"p","RowKey":"` + fmt.Sprint(i) + `","B":"` + strings.Repeat("z", 900_000) + `"}`)})
		}
		c.Reset()
		if _, err := tx.Submit(ctx, nil); !errors.Is(err, tablekit.ErrInvalidTransaction) || !strings.Contains(err.Error(), "4 MiB") {
			t.Errorf("Submit = %v, want ErrInvalidTransaction naming 4 MiB", err)
		}
		requests(t, c, 0, "an oversize transaction")
	})
}

func TestTransactionAtomicAndReportsFailingIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	existing := Employee{PartitionKey: "Sales", RowKey: "000005", FirstName: "Old"}
	if err := tbl.Insert(ctx, &existing, nil); err != nil {
		t.Fatal(err)
	}
	tx := tbl.Transaction()
	for i := 0; i < 100; i++ {
		tx.Insert(&Employee{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i)})
	}
	c.Reset()
	_, err := tx.Submit(ctx, nil)
	requests(t, c, 1, "a 100-operation transaction")
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 5 || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("Submit = %v, want *TransactionError at index 5 wrapping ErrAlreadyExists", err)
	}
	all, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("Sales"), nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].FirstName != "Old" {
		t.Fatalf("after the failed transaction the partition holds %d entities, want only the old one", len(all))
	}

	// A successful mixed transaction writes ETags back into each value.
	a := Employee{PartitionKey: "Sales", RowKey: "a"}
	b := existing
	b.FirstName = "New"
	res, err := tbl.Transaction().Insert(&a).Replace(&b, nil).Submit(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].StatusCode != 201 && res[0].StatusCode != 204 || a.ETag == "" || b.ETag == "" || b.ETag == existing.ETag {
		t.Errorf("results %+v; ETags a=%q b=%q (old %q)", res, a.ETag, b.ETag, existing.ETag)
	}
	// Replace without ETag inside a batch must not insert (If-Match: *).
	ghost := Employee{PartitionKey: "Sales", RowKey: "ghost"}
	_, err = tbl.Transaction().Replace(&ghost, &patterns.WriteOptions{Unconditional: true}).Submit(ctx, nil)
	if !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("unconditional Replace of a missing entity in a batch = %v, want ErrNotFound", err)
	}
	// A stale ETag fails the whole batch.
	_, err = tbl.Transaction().Insert(&Employee{PartitionKey: "Sales", RowKey: "b"}).Delete(&existing, nil).Submit(ctx, nil)
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Errorf("batch with a stale delete = %v, want index 1 ErrPreconditionFailed", err)
	}
	if _, err := tbl.Get(ctx, "Sales", "b", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("the batch's insert was applied although the batch failed: %v", err)
	}
}

func TestBulkWrite20000Over50Partitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	const parts, per = 50, 400
	seq := func(yield func(Employee) bool) {
		// Interleaved partitions: the writer must group them itself.
		for i := 0; i < per; i++ {
			for p := 0; p < parts; p++ {
				if !yield(Employee{PartitionKey: fmt.Sprintf("dept%02d", p), RowKey: fmt.Sprintf("%06d", i), Age: p*per + i}) {
					return
				}
			}
		}
	}
	res, err := tbl.BulkWriteSeq(ctx, seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != parts*per || len(res.Failed) != 0 {
		t.Fatalf("BulkWrite = %+v", res)
	}
	if res.Requests != parts*per/100 {
		t.Errorf("%d requests for %d entities in %d partitions, want %d", res.Requests, parts*per, parts, parts*per/100)
	}
	c.Reset()
	total := 0
	for p := 0; p < parts; p++ {
		rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq(fmt.Sprintf("dept%02d", p)), nil))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if r.Age != p*per+i {
				t.Fatalf("partition %d row %d: Age %d, want %d", p, i, r.Age, p*per+i)
			}
		}
		total += len(rows)
	}
	if total != parts*per {
		t.Fatalf("read back %d entities, want %d", total, parts*per)
	}
}

func TestBulkWriteSplitsAt4MiB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[Employee](t)
	// 30 entities of 720 KB on the wire: 8 strings of 30,000 three-byte
	// characters (480 KB in the service's UTF-16 accounting, under 1 MiB).
	// At most 5 fit in one 4 MB body, so at least 6 requests.
	type wide struct {
		PartitionKey, RowKey   string
		A, B, C, D, E, F, G, H string
	}
	wt, err := patterns.NewTable[wide](tbl.Account(), tbl.Name(), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("€", 30000)
	items := make([]wide, 30)
	for i := range items {
		items[i] = wide{"photos", fmt.Sprintf("%03d", i), big, big, big, big, big, big, big, big}
	}
	c.Reset()
	res, err := wt.BulkWrite(ctx, items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 30 || res.Requests < 6 || res.Requests > 8 {
		t.Errorf("BulkWrite of 30 x 720 KB = %+v, want all written in 6 to 8 requests", res)
	}
	requests(t, c, int64(res.Requests), "the bulk write")
	n := 0
	for e, err := range wt.Query(ctx, keys.PK().Eq("photos"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.A != big || e.H != big {
			t.Fatal("a large entity did not round-trip")
		}
		n++
	}
	if n != 30 {
		t.Errorf("read back %d, want 30", n)
	}
}

func TestBulkWriteReportsFailuresAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, _ := newTable[Employee](t)
	for _, rk := range []string{"000010", "000077"} {
		if err := tbl.Insert(ctx, &Employee{PartitionKey: "p", RowKey: rk, FirstName: "existing"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	items := make([]Employee, 150)
	for i := range items {
		items[i] = Employee{PartitionKey: "p", RowKey: fmt.Sprintf("%06d", i), FirstName: "new"}
	}
	items[120].RowKey = "bad#key" // fails encoding, before any request
	res, err := tbl.BulkWrite(ctx, items, &patterns.BulkOptions{Insert: true})
	var be *patterns.BulkError
	if !errors.As(err, &be) || !errors.Is(err, tablekit.ErrAlreadyExists) || !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Fatalf("BulkWrite = %v, want a *BulkError with ErrAlreadyExists and ErrInvalidKey", err)
	}
	var failed []int
	for _, f := range res.Failed {
		failed = append(failed, f.Index)
	}
	if fmt.Sprint(failed) != "[10 77 120]" || res.Written != 147 {
		t.Fatalf("failed inputs %v, written %d; want [10 77 120] and 147", failed, res.Written)
	}
	rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("p"), nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 149 {
		t.Errorf("%d rows stored, want 149 (147 new + 2 existing)", len(rows))
	}
	for _, r := range rows {
		if (r.RowKey == "000010" || r.RowKey == "000077") != (r.FirstName == "existing") {
			t.Errorf("row %s has FirstName %q", r.RowKey, r.FirstName)
		}
	}
}

// encodeCount counts the values of this type the codec has encoded.
var encodeCount atomic.Int64

type countedString string

func (s countedString) MarshalProperty() (entity.Value, error) {
	encodeCount.Add(1)
	return entity.String(string(s)), nil
}

func (s *countedString) UnmarshalProperty(v entity.Value) error {
	s2, _ := v.V.(string)
	*s = countedString(s2)
	return nil
}

type countedRow struct {
	PartitionKey, RowKey string
	Name                 countedString
}

// firstRequestAt records encodeCount when the first request of a try is
// sent.
type firstRequestAt struct{ encoded atomic.Int64 }

func (p *firstRequestAt) Do(req *policy.Request) (*http.Response, error) {
	p.encoded.CompareAndSwap(-1, encodeCount.Load())
	return req.Next()
}

// BulkWrite encodes a partition's entities when a transaction of them is
// about to go, so the first request leaves after its own 100 entities are
// encoded, not after all of the input: with one transaction in flight
// (Concurrency 1) and 1,000 entities round-robin over 10 partitions,
// exactly 100 are encoded when the first request is sent.
func TestBulkWriteSendsBeforeEncodingAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := &firstRequestAt{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerRetryPolicies: []policy.Policy{first},
	}})
	tbl, err := patterns.NewTable[countedRow](acct, testenv.TableName(t), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	items := make([]countedRow, 1000)
	for i := range items {
		items[i] = countedRow{PartitionKey: fmt.Sprintf("p%d", i%10), RowKey: fmt.Sprintf("%04d", i), Name: "n"}
	}
	encodeCount.Store(0)
	first.encoded.Store(-1)
	res, err := tbl.BulkWrite(ctx, items, &patterns.BulkOptions{Concurrency: 1})
	if err != nil || res.Written != 1000 || res.Requests != 10 {
		t.Fatalf("BulkWrite = %+v, %v; want 1,000 written in 10 requests", res, err)
	}
	if got := first.encoded.Load(); got != 100 {
		t.Errorf("%d entities were encoded when the first transaction was sent, want 100 (its own)", got)
	}
	if got := encodeCount.Load(); got != 1000 {
		t.Errorf("%d entities encoded in all, want 1,000 (each once)", got)
	}
}

// wholeRow writes itself through the whole-entity hook, whose size
// BulkWrite can only learn by encoding it first.
type wholeRow struct {
	pk, rk string
	n      int
}

func (w wholeRow) MarshalEntity() (entity.Entity, error) {
	return entity.Entity{PartitionKey: w.pk, RowKey: w.rk, Properties: map[string]entity.Value{"N": entity.Int32(int32(w.n))}}, nil
}

// An EntityMarshaler is encoded as it is read from the input: a bulk
// write of them groups, sends and reports as for any other type.
func TestBulkWriteEntityMarshaler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, c := newTable[wholeRow](t)
	var items []wholeRow
	for i := range 250 {
		items = append(items, wholeRow{pk: fmt.Sprintf("p%d", i%2), rk: fmt.Sprintf("%04d", i), n: i})
	}
	items[7].rk = "bad/key"
	res, err := tbl.BulkWrite(ctx, items, nil)
	var be *patterns.BulkError
	if !errors.As(err, &be) || len(be.Failed) != 1 || be.Failed[0].Index != 7 || !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Fatalf("BulkWrite = %v, want a *BulkError naming input 7 as an invalid key", err)
	}
	// 125 and 124 entities in the two partitions: 2 + 2 transactions.
	if res.Written != 249 || res.Requests != 4 {
		t.Errorf("BulkWrite = %+v, want 249 written in 4 requests", res)
	}
	requests(t, c, 4, "the bulk write")
	e, err := patterns.NewTable[entity.Entity](tbl.Account(), tbl.Name(), tableOpts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Get(ctx, "p1", "0249", nil)
	if err != nil || got.Properties["N"] != entity.Int32(249) {
		t.Errorf("Get(p1, 0249) = %+v, %v; want N = 249", got, err)
	}
}

// Key-ordered input past the 10,000 entities BulkWriteSeq holds: 12,000
// entities in partitions of 10, then 2,000 in one partition, as an export
// of a skewed table gives them. The small partitions go as they are left
// behind, and the big one in full transactions: 1,200 + 20 requests. Sent
// the fullest group first, the big partition went a few entities at a
// time once 10,000 small ones waited.
func TestBulkWriteSeqKeyOrderedPastTheCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, _ := newTable[Employee](t)
	const small, big = 12000, 2000
	seq := func(yield func(Employee) bool) {
		for i := range small {
			if !yield(Employee{PartitionKey: fmt.Sprintf("a%05d", i/10), RowKey: fmt.Sprintf("%02d", i%10)}) {
				return
			}
		}
		for i := range big {
			if !yield(Employee{PartitionKey: "hot", RowKey: fmt.Sprintf("%06d", i)}) {
				return
			}
		}
	}
	res, err := tbl.BulkWriteSeq(ctx, seq, nil)
	if err != nil || res.Written != small+big {
		t.Fatalf("BulkWriteSeq = %+v, %v", res, err)
	}
	if want := small/10 + big/100; res.Requests != want {
		t.Errorf("%d requests, want %d", res.Requests, want)
	}
}

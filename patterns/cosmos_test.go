package patterns_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/cosmostest"
)

// These tests run tablekit's repositories against the Azure Cosmos DB Table
// API's own recorded answers (tools/cosmostest): the profile is chosen
// from the endpoint, its rules refuse before any request, Cosmos DB's
// answers decode, and the patterns that need sorted results refuse or sort.

// cosmosBasic is the entity of the SDK's TestAddBasicEntity recording.
type cosmosBasic struct {
	PartitionKey string
	RowKey       string
	Bool         bool
	Integer      int32
	String       string
	ETag         string
	Timestamp    time.Time
}

// cosmosRow is the entity of the SDK's TestContinuationTokens recording
// (and of unsorted.json, derived from it).
type cosmosRow struct {
	PartitionKey string
	RowKey       string
	Value        int32
	ETag         string
	Timestamp    time.Time
}

// cosmosTable opens table cosmostest.Table of a Cosmos DB account whose
// answers are the recordings files.
func cosmosTable[T any](t *testing.T, files ...string) (*patterns.Table[T], *cosmostest.Replay) {
	t.Helper()
	r := cosmostest.New(t, files...)
	tbl, err := patterns.NewTable[T](r.Account(t), cosmostest.Table, nil)
	must(t, err)
	return tbl, r
}

func cosmosETag(ts string) string {
	return `W/"datetime'` + strings.ReplaceAll(ts, ":", "%3A") + `'"`
}

func TestCosmosInsertGetQueryDecodeRecordedAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, r := cosmosTable[cosmosBasic](t, "add_get_query.json")
	must(t, tbl.CreateIfNotExists(ctx, nil))
	v := cosmosBasic{PartitionKey: "pk001", RowKey: "rk001", Bool: true, Integer: 10, String: "abcdef"}
	must(t, tbl.Insert(ctx, &v, nil))
	const stamp = "2024-02-26T20:24:11.6654087Z"
	wantTS, _ := time.Parse(time.RFC3339Nano, stamp)
	if v.ETag != cosmosETag(stamp) || !v.Timestamp.Equal(wantTS) {
		t.Errorf("after Insert: ETag %q, Timestamp %v; want Cosmos DB's %q, %v", v.ETag, v.Timestamp, cosmosETag(stamp), wantTS)
	}
	got, err := tbl.Get(ctx, "pk001", "rk001", nil)
	must(t, err)
	want := cosmosBasic{PartitionKey: "pk001", RowKey: "rk001", Bool: true, Integer: 10, String: "abcdef", ETag: cosmosETag(stamp), Timestamp: wantTS}
	if got != want {
		t.Errorf("Get = %+v, want %+v", got, want)
	}
	rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("pk001"), nil))
	must(t, err)
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("Query = %+v, want [%+v]", rows, want)
	}
	sent := r.Sent()
	if len(sent) != 4 {
		t.Fatalf("%d requests, want 4 (create, insert, get, query)", len(sent))
	}
	if f := sent[3].URL.Query().Get("$filter"); f != "PartitionKey eq 'pk001'" {
		t.Errorf("the query sent $filter %q", f)
	}
	if body := string(sent[1].Body); !strings.Contains(body, `"Integer":10`) || !strings.Contains(body, `"String":"abcdef"`) {
		t.Errorf("the insert sent %s", body)
	}
}

// Keys with quotes are escaped in the request path as Cosmos DB recorded
// them, and a 204 upsert's ETag is kept.
func TestCosmosUpsertAndGetKeysWithQuotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, _ := cosmosTable[cosmosBasic](t, "upsert_get.json")
	v := cosmosBasic{PartitionKey: "parti'tion", RowKey: "one'", Bool: true, Integer: 1, String: "some string 1"}
	must(t, tbl.Upsert(ctx, &v, nil))
	const stamp = "2024-02-26T20:23:57.7394183Z"
	if v.ETag != cosmosETag(stamp) {
		t.Errorf("after Upsert: ETag %q, want %q", v.ETag, cosmosETag(stamp))
	}
	got, err := tbl.Get(ctx, "parti'tion", "one'", nil)
	must(t, err)
	if got.PartitionKey != "parti'tion" || got.RowKey != "one'" || got.String != "some string 1" || got.ETag != cosmosETag(stamp) {
		t.Errorf("Get = %+v", got)
	}
}

// Cosmos DB's continuation is JSON in x-ms-continuation-NextPartitionKey
// and "NA" as NextRowKey: it must come back unchanged, through Query's
// paging and through a Page token.
func TestCosmosContinuationRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	scan := &patterns.QueryOptions{Top: 1, AllowTableScan: true}
	t.Run("Query", func(t *testing.T) {
		tbl, r := cosmosTable[cosmosRow](t, "pages.json")
		rows, err := patterns.Collect(tbl.Query(ctx, keys.Filter{}, scan))
		must(t, err)
		if len(rows) != 10 || r.Requests() != 2 {
			t.Fatalf("Query read %d rows in %d requests, want 10 in 2", len(rows), r.Requests())
		}
		for i, v := range rows {
			if v.RowKey != strconv.Itoa(i) || v.Value != int32(i+1) || !strings.HasPrefix(v.ETag, `W/"datetime'2024-02-26T20%3A24%3A07.`) {
				t.Errorf("row %d = %+v", i, v)
			}
		}
	})
	// Cosmos DB's results are unsorted, so a scan is one sequential
	// range there: no probes, the same requests as Query; its token
	// carries Cosmos DB's continuation.
	t.Run("Scan", func(t *testing.T) {
		tbl, r := cosmosTable[cosmosRow](t, "pages.json")
		var got []string
		token := ""
		stop := errors.New("stop")
		opts := &patterns.ScanOptions{QueryOptions: *scan, Parallel: 8, Progress: func(p patterns.ScanProgress) { token = p.Token }}
		_, err := tbl.Scan(ctx, keys.Filter{}, func(_ context.Context, items []cosmosRow) error {
			if len(got) > 0 {
				return stop // as a crash after the first page
			}
			for _, v := range items {
				got = append(got, v.RowKey)
			}
			return nil
		}, opts)
		if !errors.Is(err, stop) || len(got) != 1 || r.Requests() != 2 {
			t.Fatalf("Scan: %v after %d rows and %d requests; want the stop after 1 row and 2 requests", err, len(got), r.Requests())
		}
		tbl, r = cosmosTable[cosmosRow](t, "pages.json")
		opts.Resume = token
		res, err := tbl.Scan(ctx, keys.Filter{}, func(_ context.Context, items []cosmosRow) error {
			for _, v := range items {
				got = append(got, v.RowKey)
			}
			return nil
		}, opts)
		must(t, err)
		if len(got) != 10 || res.Ranges != 1 || r.Requests() != 1 {
			t.Fatalf("resumed Scan: %d rows in all, %d ranges, %d requests; want 10, 1, 1", len(got), res.Ranges, r.Requests())
		}
		if q := r.Sent()[0].URL.Query(); q.Get("NextRowKey") != "NA" {
			t.Errorf("the resumed scan sent NextRowKey %q, want Cosmos DB's NA", q.Get("NextRowKey"))
		}
	})
	t.Run("Page", func(t *testing.T) {
		tbl, r := cosmosTable[cosmosRow](t, "pages.json")
		first, err := tbl.Page(ctx, keys.Filter{}, "", scan)
		must(t, err)
		if len(first.Items) != 1 || first.Token == "" {
			t.Fatalf("first page: %d items, token %q", len(first.Items), first.Token)
		}
		second, err := tbl.Page(ctx, keys.Filter{}, first.Token, scan)
		must(t, err)
		if len(second.Items) != 9 || second.Token != "" {
			t.Fatalf("second page: %d items, token %q; want 9 and none", len(second.Items), second.Token)
		}
		q := r.Sent()[1].URL.Query()
		if q.Get("NextPartitionKey") != `{"token":"hr8WAINACUIBAAAAAAAAAA==","range":{"min":"","max":"FF"}}` || q.Get("NextRowKey") != "NA" {
			t.Errorf("the second page sent NextPartitionKey %q, NextRowKey %q", q.Get("NextPartitionKey"), q.Get("NextRowKey"))
		}
	})
}

// Cosmos DB's error answers map to tablekit's sentinels: a 404 on a merge,
// and inside a transaction's 202 a 409 naming the failing operation.
func TestCosmosErrorsMap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, _ := cosmosTable[cosmosBasic](t, "merge_missing.json", "batch_error.json")
	err := tbl.Merge(ctx, &cosmosBasic{PartitionKey: "partition", RowKey: "1", Integer: 1}, &patterns.WriteOptions{Unconditional: true})
	if !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Merge of a missing entity = %v, want ErrNotFound", err)
	}
	tx := tbl.Transaction()
	for i := 1; i <= 3; i++ {
		tx.Insert(&cosmosBasic{PartitionKey: "partition", RowKey: strconv.Itoa(i), Integer: int32(i)})
	}
	_, err = tx.Submit(ctx, nil)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 2 || te.StatusCode != 409 || !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("a transaction whose third insert conflicts = %v (%+v), want a TransactionError at index 2, 409, ErrAlreadyExists", err, te)
	}
}

func TestCosmosTransactionSetsRecordedETags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl, r := cosmosTable[cosmosBasic](t, "batch_add.json")
	vs := make([]cosmosBasic, 10)
	tx := tbl.Transaction()
	for i := range vs {
		vs[i] = cosmosBasic{PartitionKey: "partition", RowKey: strconv.Itoa(i + 1), Integer: int32(i + 1), String: "someString"}
		tx.Insert(&vs[i])
	}
	res, err := tx.Submit(ctx, nil)
	must(t, err)
	stamps := []string{"41.1811335", "41.1818503", "41.1825671", "41.1830791", "41.1835911", "41.1841031", "41.1846151", "41.1851271", "41.1857415", "41.1862535"}
	if len(res) != 10 || r.Requests() != 1 {
		t.Fatalf("%d results in %d requests, want 10 in 1", len(res), r.Requests())
	}
	for i, v := range vs {
		if want := cosmosETag("2024-02-26T20:27:" + stamps[i] + "Z"); v.ETag != want || res[i].ETag != want {
			t.Errorf("operation %d: ETag %q (result %q), want %q", i, v.ETag, res[i].ETag, want)
		}
	}
}

// What Cosmos DB refuses and Azure Table storage accepts is refused before
// any request: the profile comes from the endpoint alone.
func TestCosmosProfileRefusesBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type payload struct {
		PartitionKey string
		RowKey       string
		Data         string
	}
	tbl, r := cosmosTable[payload](t)
	long := strings.Repeat("r", 256) // 256 bytes: within Azure's 1 KiB, over Cosmos DB's 255
	if err := tbl.Insert(ctx, &payload{PartitionKey: "p", RowKey: long}, nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Insert with a 256-byte RowKey = %v, want ErrInvalidKey", err)
	}
	if err := tbl.Upsert(ctx, &payload{PartitionKey: "p", RowKey: long}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Upsert with a 256-byte RowKey = %v, want ErrInvalidKey", err)
	}
	if _, err := tbl.Get(ctx, "p", long, nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Get with a 256-byte RowKey = %v, want ErrInvalidKey", err)
	}
	// 80 entities of 30,000 characters: about 2.4 MB, within Azure's
	// 4 MiB, over Cosmos DB's 2 MB.
	tx := tbl.Transaction()
	for i := range 80 {
		tx.Insert(&payload{PartitionKey: "p", RowKey: strconv.Itoa(i), Data: strings.Repeat("x", 30000)})
	}
	if _, err := tx.Submit(ctx, nil); !errors.Is(err, tablekit.ErrInvalidTransaction) {
		t.Errorf("a 2.4 MB transaction = %v, want ErrInvalidTransaction", err)
	}
	// Cosmos DB reserves the property names ID, rid, etag and ResourceId.
	type withID struct {
		PartitionKey string
		RowKey       string
		ID           int64
	}
	ids, err := patterns.NewTable[withID](r.Account(t), cosmostest.Table, nil)
	must(t, err)
	if err := ids.Insert(ctx, &withID{PartitionKey: "p", RowKey: "r", ID: 7}, nil); !errors.Is(err, tablekit.ErrInvalidEntity) || !strings.Contains(err.Error(), `"ID"`) {
		t.Errorf("Insert of an entity with a property ID = %v, want ErrInvalidEntity naming it", err)
	}
	if _, err := patterns.NewTable[payload](r.Account(t), "cosmos-table", nil); !errors.Is(err, tablekit.ErrInvalidName) {
		t.Errorf("NewTable(\"cosmos-table\") = %v, want ErrInvalidName", err)
	}
	if n := r.Requests(); n != 0 {
		t.Errorf("the refusals sent %d requests", n)
	}
}

// The patterns whose answer is the first rows by key refuse on Cosmos DB,
// before any request, with ErrUnsortedResults (not ErrInvalidArgument: the
// same call works on Azure Table storage).
func TestCosmosSortDependentPatternsRefuse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := cosmostest.New(t)
	acct := r.Account(t)
	logs, err := patterns.NewLogTail[cosmosRow](acct, cosmostest.Table, nil)
	must(t, err)
	bucketed, err := patterns.NewBucketed[cosmosRow](acct, cosmostest.Table, 7, nil)
	must(t, err)
	indexed, err := patterns.NewIndexedTable[cosmosRow](acct, cosmostest.Table, []patterns.Index[cosmosRow]{
		{Name: "rk", Unique: true, Key: func(r *cosmosRow) string { return r.RowKey }},
	}, nil)
	must(t, err)
	now := time.Now()
	for name, call := range map[string]func() error{
		"LogTail.Latest": func() error { _, err := logs.Latest(ctx, "p", 10, nil); return err },
		"LogTail.Range": func() error {
			_, err := patterns.Collect(logs.Range(ctx, "p", now.Add(-time.Hour), now, nil))
			return err
		},
		"IndexedTable's Find, Prefix or Between with a Limit": func() error {
			_, err := patterns.Collect(indexed.Prefix(ctx, "rk", "p", "a", &patterns.QueryOptions{Limit: 3}))
			return err
		},
		"Bucketed.Query": func() error {
			_, err := patterns.Collect(bucketed.Query(ctx, "sales", keys.Filter{}, nil))
			return err
		},
	} {
		err := call()
		if !errors.Is(err, tablekit.ErrUnsortedResults) || errors.Is(err, tablekit.ErrInvalidArgument) {
			t.Errorf("%s on Cosmos DB = %v, want ErrUnsortedResults (and not ErrInvalidArgument)", name, err)
		} else if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), cosmostest.Table) {
			t.Errorf("%s: the error %q does not name the call and the table", name, err)
		}
	}
	if n := r.Requests(); n != 0 {
		t.Errorf("the refusals sent %d requests", n)
	}
}

type cosmosReviewKey struct {
	ID   int
	Year int
}

// CompoundKeys.Related answers in RowKey order on Cosmos DB too: it reads
// the related rows, which Cosmos DB served out of order, and sorts them;
// a Limit keeps the first rows by key, not the first served.
func TestCosmosCompoundRelatedSortsUnsortedAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, limit := range []int{0, 3} {
		tbl, r := cosmosTable[cosmosRow](t, "unsorted.json")
		ck, err := patterns.NewCompoundKeys[cosmosReviewKey, cosmosRow](tbl.Account(), tbl.Name(), "emp_{ID:6}_{Year}", nil)
		must(t, err)
		rows, err := patterns.Collect(ck.Related(ctx, "emp", cosmosReviewKey{ID: 123}, 2, &patterns.RelatedOptions{Query: &patterns.QueryOptions{Limit: limit}}))
		must(t, err)
		want := 10
		if limit > 0 {
			want = limit
		}
		if len(rows) != want || r.Requests() != 1 {
			t.Fatalf("Limit %d: %d rows in %d requests, want %d in 1", limit, len(rows), r.Requests(), want)
		}
		for i, v := range rows {
			// unsorted.json gives emp_000123_(2010+i) the recorded row i,
			// whose Value is i+1.
			if v.RowKey != "emp_000123_"+strconv.Itoa(2010+i) || v.Value != int32(i+1) {
				t.Errorf("Limit %d: row %d = %s (Value %d), want emp_000123_%d (Value %d)", limit, i, v.RowKey, v.Value, 2010+i, i+1)
			}
		}
	}
	// Sorting needs the keys: a projection without RowKey is refused.
	tbl, r := cosmosTable[cosmosRow](t)
	ck, err := patterns.NewCompoundKeys[cosmosReviewKey, cosmosRow](tbl.Account(), tbl.Name(), "emp_{ID:6}_{Year}", nil)
	must(t, err)
	_, err = patterns.Collect(ck.Related(ctx, "emp", cosmosReviewKey{ID: 123}, 2, &patterns.RelatedOptions{Query: &patterns.QueryOptions{Select: []string{"Value"}}}))
	if !errors.Is(err, tablekit.ErrUnsortedResults) || r.Requests() != 0 {
		t.Errorf("Related with Select [Value] on Cosmos DB = %v after %d requests, want ErrUnsortedResults before any", err, r.Requests())
	}
}

// Queries whose answer is a set work on Cosmos DB and return every row
// served, in the service's order: Table.Query, and PeriodTables.Query,
// whose own order (oldest period first) is the order of its tables.
func TestCosmosSetQueriesReturnEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := make([]string, 10)
	for i := range want {
		want[i] = "emp_000123_" + strconv.Itoa(2010+i)
	}
	check := func(name string, rows []cosmosRow, err error) {
		t.Helper()
		must(t, err)
		var got []string
		for _, v := range rows {
			got = append(got, v.RowKey)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s returned %v, want the rows %v", name, got, want)
		}
	}
	tbl, _ := cosmosTable[cosmosRow](t, "unsorted.json")
	rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("emp"), nil))
	check("Table.Query", rows, err)

	day := time.Date(2024, 2, 26, 0, 0, 0, 0, time.UTC)
	name, err := keys.PeriodTable("signins", keys.Day, day)
	must(t, err)
	r := cosmostest.New(t, "unsorted.json").ForTable(name)
	pt, err := patterns.NewPeriodTables[cosmosRow](r.Account(t), "signins", nil)
	must(t, err)
	rows, err = patterns.Collect(pt.Query(ctx, day, day.Add(time.Hour), keys.PK().Eq("emp"), nil))
	check("PeriodTables.Query", rows, err)
}

// Cosmos DB takes mixed-case table names (the recording's own name was
// tableName4275288239) and compares them case-sensitively: a user's
// existing table named as the recording named it opens, and its entities
// are read and written under that exact name.
func TestCosmosMixedCaseTableName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "tableName4275288239"
	r := cosmostest.New(t, "add_get_query.json").ForTable(name)
	tbl, err := patterns.NewTable[cosmosBasic](r.Account(t), name, nil)
	must(t, err)
	must(t, tbl.CreateIfNotExists(ctx, nil))
	v := cosmosBasic{PartitionKey: "pk001", RowKey: "rk001", Bool: true, Integer: 10, String: "abcdef"}
	must(t, tbl.Insert(ctx, &v, nil))
	got, err := tbl.Get(ctx, "pk001", "rk001", nil)
	must(t, err)
	if got.String != "abcdef" || got.Integer != 10 {
		t.Errorf("Get = %+v", got)
	}
	for _, req := range r.Sent()[1:] {
		if !strings.HasPrefix(req.URL.Path, "/"+name) {
			t.Errorf("a request went to %s, not to table %s as named", req.URL.Path, name)
		}
	}
	if _, err := patterns.NewTable[cosmosBasic](r.Account(t), "Orders", nil); err != nil {
		t.Errorf("an existing Cosmos DB table named Orders cannot be opened: %v", err)
	}
}

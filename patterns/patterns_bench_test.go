package patterns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/benchutil"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Each pattern's main operation, with the request count it costs, against
// what a developer would write over aztables for the same result.

func reportRequests(b *testing.B, c *tablekit.RequestCounter) {
	b.ReportMetric(float64(c.Count())/float64(b.N), "requests/op")
}

// benchClaim is the guide's log-tail row.
type benchClaim struct {
	PartitionKey, RowKey string
	Amount               float64
	Description          string
}

func BenchmarkLogTailLatest10(b *testing.B) {
	ctx := context.Background()
	acct, c := testenv.CountingAccount(b)
	lt, err := patterns.NewLogTail[benchClaim](acct, testenv.TableName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := lt.Table().CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	start := time.Date(2014, 8, 22, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 200; i++ {
		if _, err := lt.Append(ctx, &benchClaim{PartitionKey: "emp000123", Amount: float64(i), Description: "claim " + strconv.Itoa(i)}, start.Add(time.Duration(i)*time.Minute), nil); err != nil {
			b.Fatal(err)
		}
	}
	raw := lt.Table().Client()
	warmUp(b, warmTime,
		func() error { _, err := lt.Latest(ctx, "emp000123", 10, nil); return err },
		func() error {
			_, err := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'emp000123'"), Top: to.Ptr(int32(10))}).NextPage(ctx)
			return err
		})
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				got, err := lt.Latest(ctx, "emp000123", 10, nil)
				if err != nil || len(got) != 10 {
					b.Fatal(len(got), err)
				}
			}
			reportRequests(b, c)
		}),
		benchutil.S("raw", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'emp000123'"), Top: to.Ptr(int32(10))})
				page, err := pager.NextPage(ctx)
				if err != nil || len(page.Entities) != 10 {
					b.Fatal(err)
				}
				for _, body := range page.Entities {
					var e struct {
						RowKey      string
						Amount      float64
						Description string
					}
					if err := json.Unmarshal(body, &e); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportRequests(b, c)
		}),
	)
}

func BenchmarkDataSeriesAdd(b *testing.B) {
	ctx := context.Background()
	acct, c := testenv.CountingAccount(b)
	ds, err := patterns.NewDataSeries[int64](acct, testenv.TableName(b), 24, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := ds.Table().CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := ds.Add(ctx, "im", "2014-08-22", 0, 1, nil); err != nil {
		b.Fatal(err)
	}
	raw := ds.Table().Client()
	warmUp(b, warmTime,
		func() error { _, err := ds.Add(ctx, "im", "2014-08-22", 1, 1, nil); return err },
		func() error { _, err := raw.GetEntity(ctx, "im", "2014-08-22", nil); return err })
	hour := 0
	// The raw side: read, add, merge one property with If-Match, retry on
	// 412: the same guarantee by hand.
	prop := ds.Property(0)
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				hour = (hour + 1) % 24
				if _, err := ds.Add(ctx, "im", "2014-08-22", hour, 1, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportRequests(b, c)
		}),
		benchutil.S("raw", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				for {
					resp, err := raw.GetEntity(ctx, "im", "2014-08-22", nil)
					if err != nil {
						b.Fatal(err)
					}
					var m map[string]any
					if err := json.Unmarshal(resp.Value, &m); err != nil {
						b.Fatal(err)
					}
					n, _ := strconv.ParseInt(fmt.Sprint(m[prop]), 10, 64)
					body, _ := json.Marshal(map[string]any{"PartitionKey": "im", "RowKey": "2014-08-22", prop: strconv.FormatInt(n+1, 10), prop + "@odata.type": "Edm.Int64"})
					etag := resp.ETag
					if _, err := raw.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: &etag, UpdateMode: aztables.UpdateModeMerge}); err == nil {
						break
					}
				}
			}
			reportRequests(b, c)
		}),
	)
}

func BenchmarkWideEntityGet365(b *testing.B) {
	ctx := context.Background()
	acct, c := testenv.CountingAccount(b)
	w, err := patterns.NewWideEntities(acct, testenv.TableName(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Table().CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	e := &patterns.WideEntity{PartitionKey: "im", RowKey: "2014", Properties: map[string]entity.Value{}}
	for d := 0; d < 365; d++ {
		e.Properties[fmt.Sprintf("Day%03d", d)] = entity.Int32(int32(d))
	}
	if err := widePut(w, ctx, e); err != nil {
		b.Fatal(err)
	}
	chunks := e.Chunks()
	raw := w.Table().Client()
	warmUp(b, warmTime,
		func() error { _, err := w.Get(ctx, "im", "2014", nil); return err },
		func() error { _, err := raw.GetEntity(ctx, "im", chunks[0], nil); return err })
	// The guide's way: one point query per physical entity.
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				got, err := w.Get(ctx, "im", "2014", nil)
				if err != nil || len(got.Properties) != 365 {
					b.Fatal(err)
				}
			}
			reportRequests(b, c)
		}),
		benchutil.S("raw", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				n := 0
				for _, rk := range chunks {
					resp, err := raw.GetEntity(ctx, "im", rk, nil)
					if err != nil {
						b.Fatal(err)
					}
					var m map[string]any
					if err := json.Unmarshal(resp.Value, &m); err != nil {
						b.Fatal(err)
					}
					n += len(m)
				}
			}
			reportRequests(b, c)
		}),
	)
}

func BenchmarkIndexLookupByEmail(b *testing.B) {
	ctx := context.Background()
	acct, c := testenv.CountingAccount(b)
	x, err := patterns.NewIndexedTable(acct, testenv.TableName(b), []patterns.Index[Employee]{{Name: "email", Unique: true, Key: func(e *Employee) string { return e.Email }}}, &patterns.IndexedTableOptions{Primary: "empid"})
	if err != nil {
		b.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx, nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		e := Employee{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i), Email: fmt.Sprintf("e%d@contoso.com", i), LastName: "Jones"}
		if err := x.Insert(ctx, &e, nil); err != nil {
			b.Fatal(err)
		}
	}
	raw := x.Table().Client()
	f := keys.And(keys.PK().Eq("Sales"), keys.Prop("Email").Eq("e42@contoso.com")).String()
	warmUp(b, warmTime,
		func() error { _, err := x.Lookup(ctx, "email", "Sales", "e42@contoso.com", nil); return err },
		func() error {
			_, err := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f}).NextPage(ctx)
			return err
		})
	// Without the index: a partition scan filtered on Email.
	benchutil.RunSides(b,
		benchutil.S("tablekit", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				if _, err := x.Lookup(ctx, "email", "Sales", "e42@contoso.com", nil); err != nil {
					b.Fatal(err)
				}
			}
			reportRequests(b, c)
		}),
		benchutil.S("raw-scan", func(b *testing.B) {
			c.Reset()
			for b.Loop() {
				pager := raw.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
				found := 0
				for pager.More() {
					page, err := pager.NextPage(ctx)
					if err != nil {
						b.Fatal(err)
					}
					found += len(page.Entities)
				}
				if found == 0 {
					b.Fatal("not found")
				}
			}
			reportRequests(b, c)
		}),
	)
}

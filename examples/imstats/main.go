// Command imstats stores how many IM messages an employee sent, as the
// design guide does in two sections:
//
//   - "Data series pattern": the counts of the last 24 hours in one entity,
//     one property per hour (H00 to H23), so a chart needs one request and
//     an hour's count is one merge (patterns.DataSeries).
//   - "Wide entities pattern": the counts of 365 days, more than an
//     entity's 252 properties, as one logical entity over two physical
//     ones written in one entity group transaction and read with one range
//     query (patterns.WideEntities).
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to
// Azurite's development storage when the variable is unset, so it runs on
// Azure unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "imstats"); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// run keeps the statistics of employee 000123 in the tables name+"Hourly"
// and name+"Daily".
func run(ctx context.Context, connStr, name string) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	hourly, err := patterns.NewDataSeries[int32](acct, name+"Hourly", 24, &patterns.DataSeriesOptions{Prefix: "H"})
	if err != nil {
		return err
	}
	daily, err := patterns.NewWideEntities(acct, name+"Daily", nil)
	if err != nil {
		return err
	}
	if err := hourly.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, hourly.Table().Drop(ctx, nil)) }()
	if err := daily.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, daily.Table().Drop(ctx, nil)) }()
	requests.Take()

	const emp = "000123"
	fmt.Println("== data series: 24 hourly counts in one entity")
	counts := map[int]int32{}
	for h := 8; h < 18; h++ {
		counts[h] = int32(3 + (h*7)%11)
	}
	if err := hourly.Upsert(ctx, emp, "today", counts, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
		return err
	}
	fmt.Printf("wrote   hours 08 to 17 with one insert-or-merge: %s\n", plural(requests.Take()))
	n, err := hourly.Add(ctx, emp, "today", 14, 5, nil)
	if err != nil {
		return err
	}
	fmt.Printf("add     5 messages at 14:00 -> %d (read, then a merge on its ETag): %s\n", n, plural(requests.Take()))
	series, err := hourly.Get(ctx, emp, "today", nil)
	if err != nil {
		return err
	}
	fmt.Printf("read    the whole day for a chart: %s\n", plural(requests.Take()))
	for h, v := range series.Values {
		if v > 0 {
			fmt.Printf("        %s %2d %s\n", hourly.Property(h), v, strings.Repeat("#", int(v)))
		}
	}

	fmt.Println("\n== wide entity: 365 daily counts in one logical entity")
	year := &patterns.WideEntity{PartitionKey: emp, RowKey: "2024", Properties: map[string]entity.Value{}}
	for d := 1; d <= 365; d++ {
		year.Properties["D"+keys.PadInt(int64(d), 3)] = entity.Int32(int32(d % 17))
	}
	if err := daily.Insert(ctx, year, nil); err != nil {
		return err
	}
	fmt.Printf("wrote   365 properties over %d physical entities in one transaction: %s\n", len(year.Chunks()), plural(requests.Take()))
	got, err := daily.Get(ctx, emp, "2024", nil)
	if err != nil {
		return err
	}
	fmt.Printf("read    the whole year with one range query: %s\n", plural(requests.Take()))
	fmt.Printf("        physical entities: %s\n", strings.Join(got.Chunks(), ", "))
	var total int64
	busiest, most := "", int32(-1)
	for d := 1; d <= 365; d++ {
		p := "D" + keys.PadInt(int64(d), 3)
		v, ok := got.Properties[p].V.(int32)
		if !ok {
			return fmt.Errorf("property %s is %v, want an Int32", p, got.Properties[p])
		}
		total += int64(v)
		if v > most {
			busiest, most = p, v
		}
	}
	fmt.Printf("        %d properties, %d messages in all, busiest day %s with %d\n", len(got.Properties), total, busiest, most)

	// An update of one day rewrites the logical entity conditionally on
	// the ETag read, so a concurrent writer's change is never lost.
	got.Properties["D200"] = entity.Int32(99)
	if err := daily.Replace(ctx, got, nil); err != nil {
		return err
	}
	fmt.Printf("update  D200 = 99 on the ETag read: %s\n", plural(requests.Take()))
	return nil
}

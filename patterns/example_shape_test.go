package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
)

// The guide's data series pattern: the number of IM messages an employee
// sent in each of the last 24 hours, one property per hour (H00 to H23)
// of one entity, so the chart needs one request.
func ExampleDataSeries() {
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	messages, err := patterns.NewDataSeries[int32](acct, "exmessagestats", 24, &patterns.DataSeriesOptions{Prefix: "H"})
	if err != nil {
		log.Fatal(err)
	}
	if err := messages.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	// The guide's merge of one hour's count: the other hours keep theirs.
	for hour, n := range map[int]int32{9: 12, 10: 30, 14: 7} {
		if err := messages.Upsert(ctx, "Sales", "000123", map[int]int32{hour: n}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}); err != nil {
			log.Fatal(err)
		}
	}
	// A counter: Add merges conditionally on the ETag and loses no
	// concurrent increment.
	for range 3 {
		if _, err := messages.Add(ctx, "Sales", "000123", 14, 1, nil); err != nil {
			log.Fatal(err)
		}
	}

	series, err := messages.Get(ctx, "Sales", "000123", nil) // one request
	if err != nil {
		log.Fatal(err)
	}
	for hour, n := range series.Values {
		if n != 0 {
			fmt.Println(messages.Property(hour), n)
		}
	}
	// Output:
	// H09 12
	// H10 30
	// H14 10
}

// The guide's wide entities pattern: the number of IM messages an
// employee sent on each of the last 365 days, more properties than one
// entity holds (252), stored as several physical entities written in one
// transaction and read back with one query.
func ExampleWideEntities() {
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	stats, err := patterns.NewWideEntities(acct, "exdailystats", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := stats.CreateIfNotExists(ctx, nil); err != nil {
		log.Fatal(err)
	}
	year := &patterns.WideEntity{PartitionKey: "Sales", RowKey: "000123", Properties: map[string]entity.Value{}}
	for day := 1; day <= 365; day++ {
		year.Properties[fmt.Sprintf("D%03d", day)] = entity.Int32(int32(day % 7))
	}
	if err := stats.Insert(ctx, year, nil); err != nil { // one transaction
		log.Fatal(err)
	}

	got, err := stats.Get(ctx, "Sales", "000123", nil) // one range query
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(got.Properties), "properties in", len(got.Chunks()), "physical entities:", got.Chunks())

	// Replace is conditional on the ETag that Get returned.
	got.Properties["D365"] = entity.Int32(99)
	if err := stats.Replace(ctx, got, nil); err != nil {
		log.Fatal(err)
	}
	err = stats.Replace(ctx, year, nil) // year's ETag is the one Insert returned, now stale
	fmt.Println("stale replace:", errors.Is(err, tablekit.ErrPreconditionFailed))
	if err := stats.Delete(ctx, got, nil); err != nil {
		log.Fatal(err)
	}
	_, err = stats.Get(ctx, "Sales", "000123", nil)
	fmt.Println("after delete:", errors.Is(err, tablekit.ErrNotFound))
	// Output:
	// 365 properties in 2 physical entities: [000123_00 000123_01]
	// stale replace: true
	// after delete: true
}

// The guide's large entities pattern: the employee's photo lives in Blob
// storage, and the entity keeps its name, size, type and hash. An entity
// holds at most 1 MiB; the photo here is larger.
func ExampleLargeEntities() {
	type Employee struct {
		PartitionKey string
		RowKey       string
		ETag         string
		FirstName    string
		Photo        []byte `table:"Photo,blob"`
	}
	ctx := context.Background()
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		log.Fatal(err)
	}
	employees, err := patterns.NewLargeEntities[Employee](acct, "exphotos", "exphotos", nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil { // the table and the container
		log.Fatal(err)
	}
	photo := append([]byte("\xff\xd8\xff\xe0"), bytes.Repeat([]byte{7}, 1536*1024)...) // a JPEG, 1.5 MiB
	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", Photo: photo}
	if err := employees.Insert(ctx, &jun, nil); err != nil { // the blob, then the entity
		log.Fatal(err)
	}

	// GetLazy reads the entity alone; Open streams the blob when needed.
	e, blobs, err := employees.GetLazy(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.FirstName, "photo:", blobs[0].Field, blobs[0].Size, "bytes,", blobs[0].ContentType)
	r, err := employees.Open(ctx, blobs[0], nil)
	if err != nil {
		log.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r) // checks the size and SHA-256 at the end
	if err != nil {
		log.Fatal(err)
	}
	if err := r.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("streamed", n, "bytes")

	// Get fills the blob fields too: one request for the entity, one per blob.
	full, err := employees.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same photo:", bytes.Equal(full.Photo, photo))
	// Delete removes the entity, then its blob (with
	// LargeEntitiesOptions.Queue set, through the consistency worker, as
	// the guide advises).
	if err := employees.Delete(ctx, &full, nil); err != nil {
		log.Fatal(err)
	}
	// Output:
	// Jun photo: Photo 1572868 bytes, image/jpeg
	// streamed 1572868 bytes
	// same photo: true
}

// Command applogs is the design guide's "Log data anti-pattern": an
// application's log lives in Blob storage, not in a table, the way
// Storage Analytics stores its own logs (patterns.BlobLog). Records are
// buffered and written in batches to blobs named by source and hour
// ("app/2024/05/01/1500/000001.log"), each blob's metadata holding the
// times of its first and last records, so "all the messages logged
// between 15:04 and 15:06" lists one hour's prefix and downloads only the
// blobs that overlap, with no hot partition on writes and no scan of every
// partition on reads.
//
// The records carry fixed times so the output is the same on every run.
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
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/patterns"
)

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "applogs"); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// run logs 40 minutes of an application's records into container and
// reads back the errors of 15:04 to 15:06.
func run(ctx context.Context, connStr, container string) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	// Flushes happen when the program asks (a long interval and a large
	// size keep the background flusher out of the way), so the blobs are
	// the same on every run.
	logs, err := patterns.NewBlobLog(acct, container, "app", &patterns.BlobLogOptions{FlushInterval: time.Hour, FlushSize: 64 << 20})
	if err != nil {
		return err
	}
	if err := logs.CreateIfNotExists(ctx, nil); err != nil { // the container
		return errors.Join(err, logs.Close(ctx, nil))
	}
	// Deferred calls run last-in first-out: the log is closed (and
	// flushed) before its container is deleted.
	defer func() {
		if _, derr := acct.Blobs().DeleteContainer(ctx, container, nil); derr != nil {
			err = errors.Join(err, tablekit.MapError(derr, "delete container", container))
		}
	}()
	defer func() { err = errors.Join(err, logs.Close(ctx, nil)) }()
	requests.Take()

	levels := []string{"INFO", "INFO", "WARNING", "INFO", "ERROR", "INFO", "CRITICAL"}
	start := time.Date(2024, 5, 1, 14, 40, 0, 0, time.UTC)
	n := 0
	for t := start; t.Before(start.Add(40 * time.Minute)); t = t.Add(20 * time.Second) {
		lvl := levels[n%len(levels)]
		if err := logs.Append(t, fmt.Sprintf("%s request %d served", lvl, n)); err != nil {
			return err
		}
		n++
	}
	fmt.Printf("append  %d records from 14:40 to 15:20, buffered in memory: %s\n", n, plural(requests.Take()))
	if err := logs.Flush(ctx, nil); err != nil {
		return err
	}
	fmt.Printf("flush   one blob per hour touched (and a listing the first time an hour is seen): %s\n", plural(requests.Take()))
	pager := acct.Blobs().NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return tablekit.MapError(err, "list blobs", container)
		}
		for _, b := range page.Segment.BlobItems {
			fmt.Printf("        %s\n", *b.Name)
		}
	}
	requests.Take()

	from, to := time.Date(2024, 5, 1, 15, 4, 0, 0, time.UTC), time.Date(2024, 5, 1, 15, 6, 0, 0, time.UTC)
	fmt.Printf("read    errors and critical messages from 15:04 to 15:06:\n")
	for r, err := range logs.Read(ctx, from, to, nil) {
		if err != nil {
			return err
		}
		if strings.HasPrefix(r.Text, "ERROR") || strings.HasPrefix(r.Text, "CRITICAL") {
			fmt.Printf("        %s %s\n", r.Time.Format("15:04:05"), r.Text)
		}
	}
	fmt.Printf("        cost: %s (list the hour's prefix, download the blob that overlaps)\n", plural(requests.Take()))
	return nil
}

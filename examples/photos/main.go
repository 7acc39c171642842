// Command photos is the design guide's "Large entities pattern": an
// employee's photo, larger than the 1 MiB an entity may hold, is stored in
// Blob storage and the employee entity keeps a link to it in its Photo
// property (patterns.LargeEntities with a `table:"Photo,blob"` field).
//
// Each write uploads the photo under a new blob name before writing the
// entity, so an entity never points at a missing or half-written blob.
// The blob a replaced or deleted photo leaves behind is removed through
// the guide's eventually consistent transactions: a blob-cleanup step on a
// queue, applied by a worker. With -external-worker (`make demo`
// sets it, and runs tablekit-worker with --queue photos) the program
// relies on that process; otherwise it runs a consistency.Worker
// in-process on a separate Account, so its requests are not counted with
// the program's own.
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to
// Azurite's development storage when the variable is unset, so it runs on
// Azure unchanged.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
)

// Employee keeps its photo in a blob: the entity stores the blob's name in
// Photo, and its size, content type and SHA-256 in PhotoSize,
// PhotoContentType and PhotoSHA256.
type Employee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	LastName     string
	Photo        []byte `table:"Photo,blob"`
}

func main() {
	connStr := tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString)
	external := flag.Bool("external-worker", false, "a tablekit-worker process applies the transactions: run no worker in this one")
	flag.Parse()
	inProcess := !*external
	if err := run(context.Background(), connStr, "photos", inProcess); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// photo returns a deterministic fake JPEG of n bytes.
func photo(n int, seed byte) []byte {
	b := make([]byte, n)
	copy(b, "\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	for i := 11; i < n; i++ {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// run stores the photo of employee 000123. name names the table, the blob
// container and the cleanup queue; inProcess runs a worker inside the
// program.
func run(ctx context.Context, connStr, name string, inProcess bool) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	queue, err := consistency.NewQueue(acct, name, nil)
	if err != nil {
		return err
	}
	staff, err := patterns.NewLargeEntities[Employee](acct, name, name, &patterns.LargeEntitiesOptions{Queue: queue})
	if err != nil {
		return err
	}
	// The table, the container and the cleanup queue.
	if err := staff.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() {
		if _, derr := acct.Blobs().DeleteContainer(ctx, name, nil); derr != nil {
			err = errors.Join(err, tablekit.MapError(derr, "delete container", name))
		}
		if _, derr := acct.Tables().DeleteTable(ctx, name, nil); derr != nil {
			err = errors.Join(err, tablekit.MapError(derr, "delete table", name))
		}
	}()
	if inProcess {
		stop, err := startWorker(connStr, name)
		if err != nil {
			return err
		}
		defer func() {
			for _, q := range []string{name, consistency.PoisonQueueName(name)} {
				if _, derr := acct.Queues().DeleteQueue(ctx, q, nil); derr != nil {
					err = errors.Join(err, tablekit.MapError(derr, "delete queue", q))
				}
			}
		}()
		defer func() { err = errors.Join(err, stop()) }()
	}
	requests.Take()

	jun := Employee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", LastName: "Cao", Photo: photo(1536<<10, 1)}
	if err := staff.Insert(ctx, &jun, nil); err != nil {
		return err
	}
	fmt.Printf("insert  Sales/000123 with a %d KiB photo (upload the blob, then the entity): %s\n", len(jun.Photo)>>10, plural(requests.Take()))

	lazy, blobs, err := staff.GetLazy(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	if len(blobs) != 1 {
		return fmt.Errorf("GetLazy returned %d blobs, want 1", len(blobs))
	}
	first := blobs[0]
	fmt.Printf("lazy    %s %s, Photo: %d bytes of %s, sha256 %s...: %s (the entity only)\n",
		lazy.FirstName, lazy.LastName, first.Size, first.ContentType, first.SHA256[:12], plural(requests.Take()))

	rc, err := staff.Open(ctx, first, nil)
	if err != nil {
		return err
	}
	streamed, err := io.Copy(io.Discard, rc) // checks size and SHA-256 at EOF
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Printf("open    streamed %d bytes, checked against the entity's hash: %s\n", streamed, plural(requests.Take()))

	full, err := staff.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	fmt.Printf("get     entity and photo together, photo intact: %v: %s\n", bytes.Equal(full.Photo, jun.Photo), plural(requests.Take()))

	full.Photo = photo(1<<20, 2)
	if err := staff.Upsert(ctx, &full, nil); err != nil {
		return err
	}
	fmt.Printf("replace the photo (read, upload, replace, enqueue the old blob's cleanup): %s\n", plural(requests.Take()))
	if err := waitBlobGone(ctx, acct, first); err != nil {
		return err
	}
	requests.Take() // the polling is not part of the story
	fmt.Println("worker  removed the old photo's blob")

	current, blobs, err := staff.GetLazy(ctx, "Sales", "000123", nil)
	if err != nil {
		return err
	}
	if len(blobs) != 1 {
		return fmt.Errorf("GetLazy returned %d blobs, want 1", len(blobs))
	}
	fmt.Printf("lazy    Photo is now %d bytes: %s\n", blobs[0].Size, plural(requests.Take()))

	// Delete is conditional on the ETag of the version read.
	if err := staff.Delete(ctx, &current, nil); err != nil {
		return err
	}
	fmt.Printf("delete  the employee (read, delete, enqueue the blob's cleanup): %s\n", plural(requests.Take()))
	if err := waitBlobGone(ctx, acct, blobs[0]); err != nil {
		return err
	}
	fmt.Println("worker  removed the last photo's blob")
	return nil
}

// waitBlobGone polls until the blob no longer exists, or gives up after a
// minute.
func waitBlobGone(ctx context.Context, acct *tablekit.Account, b patterns.BlobInfo) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	blob := acct.Blobs().ServiceClient().NewContainerClient(b.Container).NewBlobClient(b.Name)
	for {
		_, err := blob.GetProperties(ctx, nil)
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil
		}
		if err != nil {
			return tablekit.MapError(err, "get blob properties", b.Container+"/"+b.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("blob %s/%s still exists: is a worker reading the queue? %w", b.Container, b.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startWorker runs a consistency worker on queue in the background, on an
// account of its own, and returns the function that stops it.
func startWorker(connStr, queue string) (stop func() error, err error) {
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil {
		return nil, err
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues:       []string{queue},
		PollInterval: 200 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, nil) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

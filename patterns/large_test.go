package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// LargeEmployee is the guide's large entity example: an employee whose
// photo lives in Blob storage, linked from the Photo property.
type LargeEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Photo        []byte `table:"Photo,blob"`
}

func largePhoto(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, "\xff\xd8\xff") // a JPEG signature, for content type sniffing
	return b
}

func largeBlobExists(t *testing.T, ctx context.Context, acct *tablekit.Account, container, name string) bool {
	t.Helper()
	_, err := acct.Blobs().ServiceClient().NewContainerClient(container).NewBlobClient(name).GetProperties(ctx, nil)
	if err == nil {
		return true
	}
	if tablekit.IsNotFound(tablekit.MapError(err, "get blob properties", name)) {
		return false
	}
	t.Fatal(err)
	return false
}

func TestLargeEntityPhotoRoundTripAndCleanupThroughWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	plain := testenv.Account(t)
	q, txContainer := testQueue(t, acct)
	container := testenv.ContainerName(t)
	l, err := patterns.NewLargeEntities[LargeEmployee](acct, testenv.TableName(t), container, &patterns.LargeEntitiesOptions{Queue: q})
	must(t, err)
	must(t, l.CreateIfNotExists(ctx, nil))
	c.Reset()

	photo := largePhoto(1, 5<<20)
	e := LargeEmployee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun", Photo: photo}
	if err := l.Insert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "Insert of an entity with a 5 MiB photo")
	if e.ETag == "" {
		t.Error("Insert did not set the ETag")
	}
	got, err := l.Get(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "eager Get")
	if got.FirstName != "Jun" || !bytes.Equal(got.Photo, photo) || got.ETag != e.ETag {
		t.Fatalf("Get: FirstName %q, photo equal %v (%d bytes), ETag %q", got.FirstName, bytes.Equal(got.Photo, photo), len(got.Photo), got.ETag)
	}
	lazy, refs, err := l.GetLazy(ctx, "Sales", "000123", nil)
	if err != nil {
		t.Fatal(err)
	}
	requests(t, c, 1, "lazy Get")
	if lazy.Photo != nil || len(refs) != 1 || refs[0].Size != 5<<20 || refs[0].ContentType != "image/jpeg" || refs[0].Property != "Photo" {
		t.Fatalf("lazy: photo %d bytes, refs %+v", len(lazy.Photo), refs)
	}
	r, err := l.Open(ctx, refs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	streamed, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(streamed, photo) {
		t.Fatalf("Open: %d bytes, %v", len(streamed), err)
	}
	// The entity itself holds the link, as the guide draws it.
	raw, err := patterns.NewTable[struct {
		PartitionKey, RowKey, Photo, PhotoSHA256 string
		PhotoSize                                int64
	}](acct, l.Name(), nil)
	if err != nil {
		t.Fatal(err)
	}
	row, err := raw.Get(ctx, "Sales", "000123", nil)
	if err != nil || row.Photo != refs[0].Name || row.PhotoSize != 5<<20 || len(row.PhotoSHA256) != 64 {
		t.Fatalf("stored row %+v, %v", row, err)
	}

	// Replacing the photo: the old blob disappears through the worker.
	oldBlob := refs[0].Name
	newPhoto := largePhoto(2, 1<<20)
	e.Photo = newPhoto
	c.Reset()
	if err := l.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 4, "Put of an existing entity (read, upload, replace, enqueue)")
	if !largeBlobExists(t, ctx, plain, container, oldBlob) {
		t.Fatal("the old blob went before the worker ran: cleanup must go through the queue")
	}
	w, err := consistency.NewWorker(plain, &consistency.WorkerOptions{
		Queues: []string{q.Name()}, BlobContainer: txContainer, PollInterval: 100 * time.Millisecond,
		VisibilityTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler),
	})
	must(t, err)
	defer runWorker(t, w)()
	deadline := time.Now().Add(20 * time.Second)
	for largeBlobExists(t, ctx, plain, container, oldBlob) {
		if time.Now().After(deadline) {
			t.Fatal("the old blob is still there 20 s after the replace")
		}
		time.Sleep(100 * time.Millisecond)
	}
	got, err = l.Get(ctx, "Sales", "000123", nil)
	if err != nil || !bytes.Equal(got.Photo, newPhoto) {
		t.Fatalf("after the replace: %d bytes, %v", len(got.Photo), err)
	}
	_, refs, _ = l.GetLazy(ctx, "Sales", "000123", nil)

	// Delete: the entity goes, and its blob after it.
	if err := l.Delete(ctx, &LargeEmployee{PartitionKey: "Sales", RowKey: "000123"}, &patterns.WriteOptions{Unconditional: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "Sales", "000123", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("Get after Delete = %v", err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for largeBlobExists(t, ctx, plain, container, refs[0].Name) {
		if time.Now().After(deadline) {
			t.Fatal("the deleted entity's blob is still there after 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w.Metrics().Poisoned() != 0 {
		t.Errorf("%d transactions poisoned", w.Metrics().Poisoned())
	}
}

// largeTooBig has 17 strings of up to 64 KiB: over 1 MiB when full, with
// nothing tagged for Blob storage.
type largeTooBig struct {
	PartitionKey, RowKey                              string
	A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q string
	Photo                                             []byte `table:"Photo,blob"`
}

// newLargeErr is the error of NewLargeEntities[T].
func newLargeErr[T any](acct *tablekit.Account, container string) error {
	_, err := patterns.NewLargeEntities[T](acct, "goodname", container, nil)
	return err
}

func TestLargeEntityLimitsAndTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, c := testenv.CountingAccount(t)
	container := testenv.ContainerName(t)
	l, err := patterns.NewLargeEntities[LargeEmployee](acct, testenv.TableName(t), container, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	c.Reset()
	// Untagged properties keep the 1 MiB limit: refused before any request.
	lb, err := patterns.NewLargeEntities[largeTooBig](acct, l.Name(), container, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("x", 32*1024) // 64 KiB each as UTF-16
	huge := largeTooBig{PartitionKey: "p", RowKey: "r", A: s, B: s, C: s, D: s, E: s, F: s, G: s, H: s, I: s, J: s, K: s, L: s, M: s, N: s, O: s, P: s, Q: s}
	if err := lb.Insert(ctx, &huge, nil); !errors.Is(err, tablekit.ErrInvalidEntity) {
		t.Errorf("Insert of an entity over 1 MiB = %v, want ErrInvalidEntity", err)
	}
	if err := lb.Insert(ctx, &largeTooBig{PartitionKey: "p", RowKey: "r#"}, nil); !errors.Is(err, tablekit.ErrInvalidKey) {
		t.Errorf("Insert with an invalid key = %v, want ErrInvalidKey", err)
	}
	requests(t, c, 0, "refused Inserts")

	// A nil photo stores no blob; Put of a new entity inserts it.
	e := LargeEmployee{PartitionKey: "p", RowKey: "nophoto", FirstName: "N"}
	if err := l.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	requests(t, c, 2, "Put of a new entity without a photo (read, insert)")
	got, refs, err := l.GetLazy(ctx, "p", "nophoto", nil)
	if err != nil || len(refs) != 0 || got.FirstName != "N" {
		t.Errorf("GetLazy = %+v, %v, %v", got, refs, err)
	}
	// A direct delete (no queue) removes the old blob at once.
	e.Photo = []byte("first")
	if err := l.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	_, refs, _ = l.GetLazy(ctx, "p", "nophoto", nil)
	e.Photo = []byte("second")
	if err := l.Upsert(ctx, &e, nil); err != nil {
		t.Fatal(err)
	}
	if largeBlobExists(t, ctx, acct, container, refs[0].Name) {
		t.Error("without a queue the old blob should be deleted right after the write")
	}
	if err := l.Insert(ctx, &LargeEmployee{PartitionKey: "p", RowKey: "nophoto", Photo: []byte("dup")}, nil); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Errorf("Insert of an existing entity = %v, want ErrAlreadyExists", err)
	}

	bad := []struct {
		name string
		make func(acct *tablekit.Account, container string) error
	}{
		{"blob on a string", newLargeErr[struct {
			PartitionKey, RowKey string
			P                    string `table:"P,blob"`
		}]},
		{"blob with another option", newLargeErr[struct {
			PartitionKey, RowKey string
			P                    []byte `table:"P,blob,omitempty"`
		}]},
		{"no blob field", newLargeErr[Employee]},
		{"reference property taken", newLargeErr[struct {
			PartitionKey, RowKey string
			Photo                []byte `table:"Photo,blob"`
			PhotoSize            int
		}]},
	}
	for _, tc := range bad {
		if err := tc.make(acct, container); !errors.Is(err, tablekit.ErrInvalidEntity) {
			t.Errorf("%s: %v, want ErrInvalidEntity", tc.name, err)
		}
	}
}

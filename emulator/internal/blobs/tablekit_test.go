package blobs_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
)

// mixedAccount is a tablekit Account whose Blob endpoint is a new
// emulator and whose Table and Queue endpoints are the shared Azurite's:
// tablekit's patterns that keep data in both run their blob side here.
func mixedAccount(t *testing.T) *tablekit.Account {
	t.Helper()
	az := startAzurite(t)
	acct, err := tablekit.NewAccountWithSharedKey(azurite.AccountName, azurite.AccountKey, tablekit.Endpoints{
		Blob: startEmulator(t), Table: az.TableURL, Queue: az.QueueURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// uniq is a name unique to this run, for the shared Azurite's tables.
func uniq(base string) string {
	return base + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
}

// TestBlobLogOnEmulator runs patterns.BlobLog, which keeps everything in
// blobs: buffered records flushed into one blob per hour (Put Blob with
// If-None-Match: * and metadata), listed by prefix with their metadata,
// read back; a second writer of the same hour takes the next blob.
func TestBlobLogOnEmulator(t *testing.T) {
	ctx := context.Background()
	acct, err := tablekit.NewAccountWithSharedKey(azurite.AccountName, azurite.AccountKey, tablekit.Endpoints{Blob: startEmulator(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acct.Blobs().CreateContainer(ctx, "logs", nil); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2014, 7, 31, 0, 0, 0, 0, time.UTC)
	write := func(from, n int) {
		t.Helper()
		l, err := patterns.NewBlobLog(acct, "logs", "queue", &patterns.BlobLogOptions{FlushInterval: time.Hour, FlushSize: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < from+n; i++ {
			if err := l.Append(day.Add(15*time.Hour+time.Duration(i)*30*time.Second), fmt.Sprintf("record %d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 150) // 15:00 to 16:14:30
	write(10, 20) // a second writer in hour 15: blob 000002
	var names []string
	pager := acct.Blobs().NewListBlobsFlatPager("logs", nil)
	for pager.More() {
		p, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range p.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	if got := strings.Join(names, " "); got != "queue/2014/07/31/1500/000001.log queue/2014/07/31/1500/000002.log queue/2014/07/31/1600/000001.log" {
		t.Fatalf("blobs: %s", got)
	}
	l, err := patterns.NewBlobLog(acct, "logs", "queue", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx, nil)
	var got []string
	for r, err := range l.Read(ctx, day.Add(15*time.Hour+5*time.Minute), day.Add(15*time.Hour+6*time.Minute), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Time.Format("15:04:05")+" "+r.Text)
	}
	if s := strings.Join(got, "|"); s != "15:05:00 record 10|15:05:00 record 10|15:05:30 record 11|15:05:30 record 11" {
		t.Fatalf("15:05 to 15:06: %s", s)
	}
}

// largeEmployee is the guide's large entity: the photo lives in a blob.
type largeEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Photo        []byte `table:"Photo,blob"`
}

// TestLargeEntitiesOnEmulator keeps patterns.LargeEntities' entities in
// Azurite's Table service and their photos in the emulator: insert,
// read back, read the blob alone, replace, delete.
func TestLargeEntitiesOnEmulator(t *testing.T) {
	ctx := context.Background()
	acct := mixedAccount(t)
	l, err := patterns.NewLargeEntities[largeEmployee](acct, uniq("large"), "photos", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	photo := bytes.Repeat([]byte("\xff\xd8\xffphoto"), 40000)
	e := &largeEmployee{PartitionKey: "sales", RowKey: "0001", FirstName: "Ann", Photo: photo}
	if err := l.Insert(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, "sales", "0001", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.FirstName != "Ann" || !bytes.Equal(got.Photo, photo) {
		t.Fatalf("read back %q with a %d-byte photo", got.FirstName, len(got.Photo))
	}
	_, refs, err := l.GetLazy(ctx, "sales", "0001", nil)
	if err != nil || len(refs) != 1 {
		t.Fatalf("lazy read: %d references, %v", len(refs), err)
	}
	rc, err := l.Open(ctx, refs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(b, photo) {
		t.Fatalf("blob %s: %d bytes, %v", refs[0].Name, len(b), err)
	}
	got.Photo = []byte("\xff\xd8\xffsmaller")
	if err := l.Upsert(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, &got, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "sales", "0001", nil); !tablekit.IsNotFound(err) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestTablecopyBackupOnEmulator backs up an Azurite table into the
// emulator (append blobs at positions, block blobs, ranged reads), checks
// the backup and restores it into another table.
func TestTablecopyBackupOnEmulator(t *testing.T) {
	ctx := context.Background()
	acct := mixedAccount(t)
	src, err := patterns.NewTable[entity.Entity](acct, uniq("src"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		e := entity.Entity{PartitionKey: "p" + strconv.Itoa(i%7), RowKey: fmt.Sprintf("%05d", i)}
		e.Set("Text", entity.String(strings.Repeat("x", i)))
		if err := src.Insert(ctx, &e, nil); err != nil {
			t.Fatal(err)
		}
	}
	loc := tablecopy.Blob(acct.Blobs(), "backups", "b1")
	res, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entities != n {
		t.Fatalf("backed up %d entities, want %d", res.Entities, n)
	}
	again, err := tablecopy.Backup(ctx, acct, []string{src.Name()}, loc, nil)
	if err != nil || !again.AlreadyComplete {
		t.Fatalf("the same backup again: %+v, %v", again, err)
	}
	checks, err := tablecopy.VerifyBackup(ctx, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Fatalf("backup check: %+v", c)
		}
	}
	to := uniq("restored")
	rr, err := tablecopy.Restore(ctx, loc, acct, &tablecopy.RestoreOptions{ToTable: to})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Written != n {
		t.Fatalf("restored %d entities, want %d", rr.Written, n)
	}
	checks, err = tablecopy.VerifyBackup(ctx, loc, &tablecopy.VerifyOptions{Account: acct, ToTable: to})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Fatalf("restored table check: %+v", c)
		}
	}
}

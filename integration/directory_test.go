package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Employee is the guide's employee: department as PartitionKey, id as
// RowKey.
type Employee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	LastName     string
	Email        string
}

// Badge is an employee's photo, stored in Blob storage.
type Badge struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Photo        []byte `table:"Photo,blob"`
}

// directory is the employee directory as several services see it: each
// service writes through its own pattern, and one tablekit-worker process
// keeps the eventually consistent parts.
type directory struct {
	hr      *patterns.IndexedTable[Employee]             // intra-partition email index, unique
	org     *patterns.EventualIndexedTable[Employee]     // organisation-wide email index (inter-partition)
	names   *patterns.EventualListIndexedTable[Employee] // last-name index entities (option 3)
	photos  *patterns.LargeEntities[Badge]
	archive *patterns.Table[Employee]
	queue   *consistency.Queue
}

func newDirectory(t *testing.T, acct *tablekit.Account) *directory {
	t.Helper()
	ctx := context.Background()
	q, err := consistency.NewQueue(acct, testenv.QueueName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	email := func(e *Employee) string { return e.Email }
	d := &directory{queue: q}
	if d.hr, err = patterns.NewIndexedTable(acct, testenv.TableName(t), []patterns.Index[Employee]{{Name: "email", Unique: true, Key: email}}, &patterns.IndexedTableOptions{Primary: "empid"}); err != nil {
		t.Fatal(err)
	}
	if d.org, err = patterns.NewEventualIndexedTable(acct, testenv.TableName(t), q, []patterns.Index[Employee]{{Name: "email", Unique: true, Key: email, Partition: func(*Employee) string { return "all" }}}, nil); err != nil {
		t.Fatal(err)
	}
	if d.names, err = patterns.NewEventualListIndexedTable(acct, testenv.TableName(t), q, patterns.ListIndex[Employee]{Name: "lastname", Key: func(e *Employee) string { return e.LastName }}, nil); err != nil {
		t.Fatal(err)
	}
	if d.photos, err = patterns.NewLargeEntities[Badge](acct, testenv.TableName(t), testenv.ContainerName(t), &patterns.LargeEntitiesOptions{Queue: q}); err != nil {
		t.Fatal(err)
	}
	if d.archive, err = patterns.NewTable[Employee](acct, testenv.TableName(t), nil); err != nil {
		t.Fatal(err)
	}
	for _, create := range []func(context.Context, *patterns.CreateOptions) error{d.hr.CreateIfNotExists, d.org.CreateIfNotExists, d.names.CreateIfNotExists, d.photos.CreateIfNotExists, d.archive.CreateIfNotExists} {
		if err := create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// workerCommand is where tablekit-worker's package is, from here.
const workerCommand = "../cmd/tablekit-worker"

// startWorker runs tablekit-worker (testenv.Command: built once, from the
// start of the tests, TestMain) on the queue of the account of connStr
// as a separate process, stopped with SIGTERM when the test ends.
func startWorker(t *testing.T, connStr, queue string) {
	t.Helper()
	bin := testenv.Command(t, workerCommand)
	var logs bytes.Buffer
	cmd := exec.Command(bin, "run", "--queue", queue, "--concurrency", "8", "--visibility", "10s", "--poll", "100ms", "--metrics-addr", "")
	cmd.Env = append(os.Environ(), tablekit.EnvConnectionString+"="+connStr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tablekit-worker exited with %v after SIGTERM; log:\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("tablekit-worker did not drain within 30 s; log:\n%s", logs.String())
		}
		if t.Failed() {
			t.Logf("tablekit-worker log:\n%s", logs.String())
		}
	})
}

func employee(dept string, i int, last string) Employee {
	id := fmt.Sprintf("%06d", i)
	first := fmt.Sprintf("F%d", i)
	return Employee{PartitionKey: dept, RowKey: "empid_" + id, FirstName: first, LastName: last,
		Email: strings.ToLower(first+"."+last) + "@contoso.com"}
}

func photo(e Employee, version int) []byte {
	return bytes.Repeat([]byte(e.RowKey+fmt.Sprint(version)), 20000) // ~260 KB
}

// TestEmployeeDirectoryConverges is the end-to-end suite: services write an
// employee through four patterns at once, then rename and archive
// employees and replace photos, while a real tablekit-worker process keeps
// the eventually consistent parts. Every index, list and blob must end
// exactly as the primary entities say.
//
// The service's clock is the test's: once everything is written, it moves
// on by the intents' delay (1 s), which the worker would otherwise wait
// out. The test is Parallel so that it starts after the others, by when
// the worker's build (TestMain) has had their time.
func TestEmployeeDirectoryConverges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, cs, nil)
	d := newDirectory(t, acct)
	startWorker(t, cs, d.queue.Name())

	depts := []string{"Sales", "HR", "Dev"}
	lasts := []string{"Jones", "Smith", "Cao", "Hall"}
	var staff []Employee
	for i := 0; i < 18; i++ {
		e := employee(depts[i%3], 100+i, lasts[i%4])
		hire(t, ctx, d, e)
		staff = append(staff, e)
	}

	// Renames: a new last name and email, through every service.
	renamed := map[string]bool{}
	for _, i := range []int{0, 5, 7, 12} {
		e := &staff[i]
		newLast := "Renamed" + lasts[(i+1)%4]
		rename := func(x *Employee) error {
			x.LastName = newLast
			x.Email = strings.ToLower(x.FirstName+"."+newLast) + "@contoso.com"
			return nil
		}
		var err error
		if _, err = d.hr.Update(ctx, e.PartitionKey, e.RowKey, rename, nil); err != nil {
			t.Fatalf("hr rename: %v", err)
		}
		if _, err = d.org.Update(ctx, e.PartitionKey, e.RowKey, rename, nil); err != nil {
			t.Fatalf("org rename: %v", err)
		}
		if _, err = d.names.Update(ctx, e.PartitionKey, e.RowKey, rename, nil); err != nil {
			t.Fatalf("names rename: %v", err)
		}
		_ = rename(e)
		renamed[e.RowKey] = true
	}

	// New photos for some: the old blobs must go.
	for _, i := range []int{1, 5, 9} {
		b := Badge{PartitionKey: staff[i].PartitionKey, RowKey: staff[i].RowKey, Photo: photo(staff[i], 2)}
		if err := d.photos.Upsert(ctx, &b, nil); err != nil {
			t.Fatalf("replace photo: %v", err)
		}
	}

	// Archive: copy to the Archive table through the worker, remove from
	// every live service.
	archived := map[string]bool{}
	for _, i := range []int{2, 5, 11} {
		e := staff[i]
		body, err := entity.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.queue.Enqueue(ctx, consistency.NewTransaction(consistency.UpsertEntity(d.archive.Name(), body, tablekit.UpsertReplace)), nil); err != nil {
			t.Fatal(err)
		}
		if err := d.hr.Delete(ctx, &Employee{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, &patterns.WriteOptions{Unconditional: true}); err != nil {
			t.Fatalf("hr delete: %v", err)
		}
		if err := d.org.Delete(ctx, &Employee{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, &patterns.WriteOptions{Unconditional: true}); err != nil {
			t.Fatalf("org delete: %v", err)
		}
		if err := d.names.Delete(ctx, &Employee{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, &patterns.WriteOptions{Unconditional: true}); err != nil {
			t.Fatalf("names delete: %v", err)
		}
		if err := d.photos.Delete(ctx, &Badge{PartitionKey: e.PartitionKey, RowKey: e.RowKey}, &patterns.WriteOptions{Unconditional: true}); err != nil {
			t.Fatalf("photos delete: %v", err)
		}
		archived[e.RowKey] = true
	}
	var live []Employee
	for _, e := range staff {
		if !archived[e.RowKey] {
			live = append(live, e)
		}
	}

	// The intra-partition index is consistent at once (one EGT).
	for _, e := range staff {
		got, err := d.hr.Lookup(ctx, "email", e.PartitionKey, e.Email, nil)
		switch {
		case archived[e.RowKey]:
			if !errors.Is(err, tablekit.ErrNotFound) {
				t.Errorf("archived %s still found by email: %v", e.RowKey, err)
			}
		case err != nil || got.RowKey != e.RowKey:
			t.Errorf("hr lookup of %s by %s = %+v, %v", e.RowKey, e.Email, got, err)
		}
	}
	for _, i := range []int{0, 7, 12} {
		old := employee(depts[i%3], 100+i, lasts[i%4])
		if _, err := d.hr.Lookup(ctx, "email", old.PartitionKey, old.Email, nil); !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("old email %s still resolves after the rename: %v", old.Email, err)
		}
	}

	// The rest converges once the worker has run, the intents' delay
	// passed.
	clock.Advance(time.Second)
	eventually(t, 60*time.Second, func() error {
		rep, err := d.org.Verify(ctx, nil)
		if err != nil {
			return err
		}
		if !rep.OK() || rep.Primaries != len(live) {
			return fmt.Errorf("org index: %d primaries, missing %v, orphans %v", rep.Primaries, rep.Missing, rep.Orphans)
		}
		for _, e := range live {
			got, err := d.org.Lookup(ctx, "email", "all", e.Email, nil)
			if err != nil || got.RowKey != e.RowKey || got.LastName != e.LastName {
				return fmt.Errorf("org lookup %s = %+v, %v", e.Email, got, err)
			}
		}
		want := map[string][]string{}
		for _, e := range live {
			want[e.LastName] = append(want[e.LastName], keys.Join(e.PartitionKey, e.RowKey))
		}
		for _, last := range append(slices.Clone(lasts), "RenamedSmith", "RenamedCao", "RenamedHall", "RenamedJones") {
			members, err := d.names.Members(ctx, last, nil)
			if err != nil && !errors.Is(err, tablekit.ErrNotFound) {
				return err
			}
			var got []string
			for _, m := range members {
				got = append(got, keys.Join(m.PartitionKey, m.RowKey))
			}
			sort.Strings(got)
			w := want[last]
			sort.Strings(w)
			if !slices.Equal(got, w) {
				return fmt.Errorf("last name %s lists %v, want %v", last, got, w)
			}
		}
		blobs, err := countBlobs(ctx, acct.Blobs(), d.photos.Container())
		if err != nil {
			return err
		}
		if blobs != len(live) {
			return fmt.Errorf("%d photo blobs, want %d (one per live employee)", blobs, len(live))
		}
		arch, err := patterns.Collect(d.archive.Query(ctx, keys.Prop("LastName").Ne(""), &patterns.QueryOptions{AllowTableScan: true}))
		if err != nil {
			return err
		}
		if len(arch) != len(archived) {
			return fmt.Errorf("%d archived employees, want %d", len(arch), len(archived))
		}
		return nil
	})
	for _, e := range live {
		b, err := d.photos.Get(ctx, e.PartitionKey, e.RowKey, nil)
		if err != nil {
			t.Fatalf("photo of %s: %v", e.RowKey, err)
		}
		version := 1
		if e.RowKey == staff[1].RowKey || e.RowKey == staff[9].RowKey {
			version = 2
		}
		if !bytes.Equal(b.Photo, photoOf(staff, e.RowKey, version)) {
			t.Errorf("photo of %s is not version %d", e.RowKey, version)
		}
	}
	// The queue and its poison queue are empty: nothing lost, nothing stuck.
	if poisoned, err := d.queue.Poisoned(ctx, 32, nil); err != nil || len(poisoned) != 0 {
		t.Errorf("poisoned transactions: %v, %v", poisoned, err)
	}
}

func hire(t *testing.T, ctx context.Context, d *directory, e Employee) {
	t.Helper()
	for _, insert := range []func() error{
		func() error { x := e; return d.hr.Insert(ctx, &x, nil) },
		func() error { x := e; return d.org.Insert(ctx, &x, nil) },
		func() error { x := e; return d.names.Insert(ctx, &x, nil) },
		func() error {
			return d.photos.Insert(ctx, &Badge{PartitionKey: e.PartitionKey, RowKey: e.RowKey, Photo: photo(e, 1)}, nil)
		},
	} {
		if err := insert(); err != nil {
			t.Fatalf("hire %s: %v", e.RowKey, err)
		}
	}
}

func photoOf(staff []Employee, rk string, version int) []byte {
	for _, e := range staff {
		if e.RowKey == rk {
			return photo(e, version)
		}
	}
	return nil
}

func countBlobs(ctx context.Context, c *azblob.Client, container string) (int, error) {
	n := 0
	pager := c.NewListBlobsFlatPager(container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, tablekit.MapError(err, "list blobs", container)
		}
		n += len(page.Segment.BlobItems)
	}
	return n, nil
}

// eventually retries check until it succeeds or the time is up.
func eventually(t *testing.T, limit time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("did not converge within %v: %v", limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

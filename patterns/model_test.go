package patterns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// mdOrder is the order store's entity: a customer's orders, found by
// number in the customer's partition, by status across customers, and
// newest first.
type mdOrder struct {
	PartitionKey string // customer
	RowKey       string // order id
	ETag         string
	Timestamp    time.Time
	Number       string
	Status       string
	Placed       time.Time
	Total        float64
	Note         string
	Items        []byte `table:"Items,blob"`
}

// mdFixture is a Model of mdOrder with every kind of view: a unique
// index in the order's partition, a tail, and a status index in a table
// of its own kept by the worker.
type mdFixture struct {
	m       *patterns.Model[mdOrder]
	q       *consistency.Queue
	counter *tablekit.RequestCounter
	worker  *tablekit.Account
	clock   *testenv.Clock // the service's (testenv.ClockConnectionString)
	status  string
	archive string
	contanr string
	blobs   string // the Model's blob container
}

func mdViews(statusTable string) patterns.Views[mdOrder] {
	return patterns.Views[mdOrder]{
		Indexes: []patterns.Index[mdOrder]{{Name: "number", Unique: true, Key: func(o *mdOrder) string { return o.Number }, Props: []string{"Number", "Status"}}},
		EventualIndexes: []patterns.Index[mdOrder]{{Name: "status", Key: func(o *mdOrder) string { return o.Status },
			Partition: func(o *mdOrder) string { return o.Status }, Table: statusTable, Props: []string{"Number", "Status", "Total"}}},
		Tails: []patterns.Tail[mdOrder]{{Name: "recent", Time: func(o *mdOrder) time.Time { return o.Placed }, Props: []string{"Number", "Placed", "Total"}}},
	}
}

func newMdFixture(t *testing.T) *mdFixture {
	t.Helper()
	cs, clock := testenv.ClockConnectionString(t)
	acct, counter := testenv.CountingAccountOn(t, cs)
	f := &mdFixture{counter: counter, worker: testenv.AccountOn(t, cs, nil), clock: clock, status: testenv.TableName(t), archive: testenv.TableName(t)}
	f.q, f.contanr = testQueue(t, acct)
	var err error
	f.blobs = testenv.ContainerName(t)
	f.m, err = patterns.NewModel(acct, testenv.TableName(t), mdViews(f.status), &patterns.ModelOptions{Queue: f.q, Container: f.blobs})
	must(t, err)
	must(t, f.m.CreateIfNotExists(context.Background(), nil))
	arch, err := patterns.NewModel(f.worker, f.archive, patterns.Views[mdOrder]{}, &patterns.ModelOptions{Container: f.blobs})
	must(t, err)
	must(t, arch.CreateIfNotExists(context.Background(), nil))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = f.m.Table().Drop(ctx, nil)
		_ = arch.Table().Drop(ctx, nil)
		_, _ = f.worker.Blobs().DeleteContainer(ctx, f.blobs, nil)
		if st, err := patterns.NewTable[entity.Entity](f.worker, f.status, nil); err == nil {
			_ = st.Drop(ctx, nil)
		}
	})
	counter.Reset()
	return f
}

// drain applies every transaction of the fixture's queue.
func (f *mdFixture) drain(t *testing.T) {
	t.Helper()
	drainModel(t, f.worker, f.clock, f.q, f.contanr)
}

// drainModel applies every transaction of q with a worker on acct, as
// the deployed worker would, and fails the test if one is poisoned or
// any is left. Where clock moves, the intents' Delay (1 s) passes on it
// and Worker.Drain applies what is then visible, retrying at once an
// intent that waits for its writer's write (ExpectDeliveries) instead of
// after a backoff; where it does not (Azurite, an account), Drain waits
// for the delayed intents in real time.
func drainModel(t *testing.T, acct *tablekit.Account, clock *testenv.Clock, q *consistency.Queue, container string) {
	t.Helper()
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: []string{q.Name()}, PollInterval: 50 * time.Millisecond, BlobContainer: container, Logger: testLogger(),
	})
	must(t, err)
	opts := &consistency.DrainOptions{Wait: 30 * time.Second}
	if clock.Advance(time.Second) {
		opts = nil
	}
	if err := w.Drain(context.Background(), opts); err != nil {
		t.Fatalf("drain: %v", err)
	}
	resp, err := acct.Queues().NewQueueClient(q.Name()).GetProperties(context.Background(), nil)
	must(t, err)
	if n := *resp.ApproximateMessagesCount; n != 0 {
		t.Fatalf("the worker left %d messages", n)
	}
}

// messages counts the Put Message requests the counter saw.
func messages(c *tablekit.RequestCounter) int {
	return strings.Count(c.Requests(), "/messages")
}

func mdOrd(cust, id, num, status string, placed time.Time, total float64) mdOrder {
	return mdOrder{PartitionKey: cust, RowKey: id, Number: num, Status: status, Placed: placed, Total: total}
}

func numbers(t *testing.T, seq func(func(mdOrder, error) bool)) string {
	t.Helper()
	var out []string
	for o, err := range seq {
		must(t, err)
		out = append(out, o.Number)
	}
	return strings.Join(out, ",")
}

// TestModelOrderStore is the order store of a new user, on one Model and
// no Tk name: orders by number in the customer's partition, by status
// across customers, a customer's recent orders, and an archive through
// the worker that takes every view with the order. Each operation's
// requests and queue messages are the ones docs/PATTERNS.md states.
func TestModelOrderStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	c := f.counter
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

	o1 := mdOrd("c1", "o0001", "N1", "open", t0, 10)
	must(t, f.m.Insert(ctx, &o1, nil))
	if messages(c) != 1 {
		t.Errorf("Insert sent %d messages, want 1", messages(c))
	}
	requests(t, c, 2, "Insert (enqueue, transaction)")
	if o1.ETag == "" {
		t.Error("Insert left the ETag empty")
	}
	for _, o := range []mdOrder{
		mdOrd("c1", "o0002", "N2", "open", t0.Add(time.Hour), 20),
		mdOrd("c1", "o0003", "N3", "shipped", t0.Add(2*time.Hour), 30),
		mdOrd("c2", "o0004", "N4", "shipped", t0.Add(3*time.Hour), 40),
	} {
		must(t, f.m.Insert(ctx, &o, nil))
	}
	dup := mdOrd("c1", "o0009", "N2", "open", t0, 1)
	var ce *patterns.IndexConflictError
	if err := f.m.Insert(ctx, &dup, nil); !errors.As(err, &ce) || ce.Index != "number" {
		t.Errorf("Insert of a taken number: %v, want an *IndexConflictError on number", err)
	}
	f.drain(t)
	c.Reset()

	if got, err := f.m.Lookup(ctx, "number", "c1", "N2", nil); err != nil || got.RowKey != "o0002" || got.Status != "open" {
		t.Errorf("Lookup number N2 = %+v, %v", got, err)
	}
	requests(t, c, 1, "Lookup in the order's partition")
	if got := numbers(t, f.m.Find(ctx, "status", "shipped", "", nil)); got != "" {
		t.Errorf("Find status '' = %s", got)
	}
	c.Reset()
	if got := numbers(t, f.m.Prefix(ctx, "status", "shipped", "", nil)); got != "N3,N4" {
		t.Errorf("shipped orders = %s, want N3,N4", got)
	}
	requests(t, c, 1, "orders by status, across customers")
	latest, err := f.m.Latest(ctx, "recent", "c1", 2, nil)
	must(t, err)
	requests(t, c, 1, "Latest")
	if len(latest) != 2 || latest[0].Number != "N3" || latest[1].Number != "N2" || latest[0].RowKey != "o0003" {
		t.Errorf("c1's 2 latest = %+v, want N3, N2", latest)
	}

	// An update of nothing any view carries: no intent.
	_, err = f.m.Update(ctx, "c1", "o0001", func(o *mdOrder) error { o.Note = "gift"; return nil }, nil)
	must(t, err)
	if messages(c) != 0 {
		t.Errorf("an update of nothing indexed sent %d messages", messages(c))
	}
	requests(t, c, 2, "Update of nothing an eventual view carries (read, transaction)")
	// An update of an eventual index's value: the intent, then the write.
	_, err = f.m.Update(ctx, "c1", "o0001", func(o *mdOrder) error { o.Status = "shipped"; return nil }, nil)
	must(t, err)
	requests(t, c, 3, "Update of an indexed value (read, enqueue, transaction)")
	// Replace with a stale ETag is refused, with the views untouched.
	o1.Status = "cancelled"
	if err := f.m.Replace(ctx, &o1, nil); !tablekit.IsPreconditionFailed(err) {
		t.Errorf("Replace with a stale ETag: %v", err)
	}
	c.Reset()
	f.drain(t)
	if got := numbers(t, f.m.Prefix(ctx, "status", "shipped", "", nil)); got != "N1,N3,N4" {
		t.Errorf("shipped orders after the update = %s, want N1,N3,N4", got)
	}

	// Archive the shipped orders of c1 through the worker.
	c.Reset()
	must(t, f.m.Archive(ctx, "c1", "o0001", f.archive, nil))
	requests(t, c, 1, "Archive (enqueue)")
	must(t, f.m.Archive(ctx, "c1", "o0003", f.archive, nil))
	f.drain(t)
	if got := numbers(t, f.m.Prefix(ctx, "status", "shipped", "", nil)); got != "N4" {
		t.Errorf("shipped orders after the archive = %s, want N4", got)
	}
	if latest, err := f.m.Latest(ctx, "recent", "c1", 10, nil); err != nil || len(latest) != 1 || latest[0].Number != "N2" {
		t.Errorf("c1's latest after the archive = %+v, %v; want N2 alone", latest, err)
	}
	if _, err := f.m.Lookup(ctx, "number", "c1", "N1", nil); !tablekit.IsNotFound(err) {
		t.Errorf("Lookup of an archived order: %v, want not found", err)
	}
	raw, err := patterns.NewTable[entity.Entity](f.worker, f.archive, nil)
	must(t, err)
	n := 0
	for e, err := range raw.Query(ctx, keys.PK().Eq("c1"), &patterns.QueryOptions{SelectAll: true}) {
		must(t, err)
		n++
		for p := range e.Properties {
			if strings.HasPrefix(p, patterns.ReservedPrefix) && p != patterns.UpdateLogProperty {
				t.Errorf("archived %s carries %s", e.RowKey, p)
			}
		}
		if e.RowKey == "o0001" && e.Properties["Note"].V != "gift" {
			t.Errorf("archived o0001 = %v", e.Properties)
		}
	}
	if n != 2 {
		t.Errorf("%d archived orders, want 2", n)
	}
	rep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 2 {
		t.Errorf("Verify after the archive: %+v", rep)
	}

	// Delete: the intent, then the order and its partition's views at once.
	o2, err := f.m.Get(ctx, "c1", "o0002", nil)
	must(t, err)
	c.Reset()
	must(t, f.m.Delete(ctx, &o2, nil))
	requests(t, c, 3, "Delete (read, enqueue, transaction)")
	f.drain(t)
	rep, err = f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 1 {
		t.Errorf("Verify after the delete: %+v", rep)
	}
}

// TestModelContendedUpdatesConverge: concurrent updates of one order that
// lose races read and write again, each attempt with its own intent (the
// message of an attempt that lost may be applied before the next attempt
// lands), and the views end as the last write left the order.
func TestModelContendedUpdatesConverge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	o := mdOrd("c1", "o0001", "N1", "open", time.Now(), 0)
	must(t, f.m.Insert(ctx, &o, nil))
	f.counter.Reset()
	const writers = 8
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.m.Update(ctx, "c1", "o0001", func(o *mdOrder) error { o.Total++; return nil }, nil)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	writes := strings.Count(f.counter.Requests(), "$batch")
	if got := messages(f.counter); got != writes || got < writers {
		t.Errorf("%d contended updates sent %d intents for %d write attempts; want one per attempt:\n%s", writers, got, writes, f.counter.Requests())
	}
	t.Logf("%d contended updates: %d requests, %d write attempts, as many intents", writers, f.counter.Count(), writes)
	f.drain(t)
	got, err := f.m.Get(ctx, "c1", "o0001", nil)
	must(t, err)
	if got.Total != writers {
		t.Errorf("Total = %v, want %d", got.Total, writers)
	}
	rep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep)
	}
}

// TestModelVerifyRepair damages every kind of view by writing around the
// Model, and checks that Verify names each and Repair mends them.
func TestModelVerifyRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i := range 5 {
		o := mdOrd("c1", fmt.Sprintf("o%04d", i), fmt.Sprintf("N%d", i), "open", t0.Add(time.Duration(i)*time.Hour), float64(i))
		must(t, f.m.Insert(ctx, &o, nil))
	}
	f.drain(t)
	rep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 5 {
		t.Fatalf("Verify of a kept Model: %+v", rep)
	}
	raw, err := patterns.NewTable[entity.Entity](f.worker, f.m.Table().Name(), nil)
	must(t, err)
	status, err := patterns.NewTable[entity.Entity](f.worker, f.status, nil)
	must(t, err)
	// A lost index row, a lost tail row, a primary written around the
	// Model (stale views), a primary deleted alone (orphans everywhere).
	must(t, raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: "number_N0"}, &patterns.WriteOptions{Unconditional: true}))
	var tailRK string
	for e, err := range raw.Query(ctx, keys.And(keys.PK().Eq("c1"), keys.RK().Prefix("recent_")), nil) {
		must(t, err)
		tailRK = e.RowKey
		break
	}
	must(t, raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: tailRK}, &patterns.WriteOptions{Unconditional: true}))
	o2 := entity.Entity{PartitionKey: "c1", RowKey: "o0002", Properties: map[string]entity.Value{"Number": entity.String("N2x"), "Status": entity.String("closed")}}
	must(t, raw.Upsert(ctx, &o2, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}))
	must(t, raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: "o0003"}, &patterns.WriteOptions{Unconditional: true}))
	rep, err = f.m.Verify(ctx, nil)
	must(t, err)
	if len(rep.Missing) < 2 || len(rep.Stale) == 0 || len(rep.Orphans) < 3 {
		t.Errorf("Verify of damaged views: %d missing, %d stale, %d orphans, want at least 2, 1, 3:\n%+v", len(rep.Missing), len(rep.Stale), len(rep.Orphans), rep)
	}
	if _, err := f.m.Repair(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rep, err = f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 4 {
		t.Errorf("Verify after Repair: %+v", rep)
	}
	if got := numbers(t, f.m.Prefix(ctx, "status", "closed", "", nil)); got != "N2x" {
		t.Errorf("closed orders after Repair = %s, want N2x", got)
	}
	n := 0
	for _, err := range status.Query(ctx, keys.PK().Ge("status_"), &patterns.QueryOptions{AllowTableScan: true}) {
		must(t, err)
		n++
	}
	if n != 4 {
		t.Errorf("%d status copies after Repair, want 4", n)
	}
}

// TestModelBlobFields: a Model keeps a field tagged blob in Blob storage,
// with any view beside it: a write that keeps its content keeps its blob,
// a new content gets a new blob and the old one goes through the worker,
// the archive keeps naming it, and a delete has it go.
func TestModelBlobFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	c := f.counter
	items := bytes.Repeat([]byte("sku-0001 x 2;"), 10_000) // 130,000 bytes: past a String property's 64 KiB
	o := mdOrd("c1", "o0001", "N1", "open", time.Now(), 10)
	o.Items = items
	must(t, f.m.Insert(ctx, &o, nil))
	requests(t, c, 3, "Insert with a blob field (upload, enqueue, transaction)")
	got, err := f.m.Get(ctx, "c1", "o0001", nil)
	must(t, err)
	requests(t, c, 2, "Get with a blob field (entity, blob)")
	if !bytes.Equal(got.Items, items) {
		t.Fatalf("Get: %d bytes of items, want %d", len(got.Items), len(items))
	}
	if len(f.blobNames(t)) != 1 {
		t.Errorf("blobs after Insert: %v", f.blobNames(t))
	}
	// An update that leaves the items as they are keeps their blob: fn sees
	// them (one download), nothing is uploaded.
	_, err = f.m.Update(ctx, "c1", "o0001", func(o *mdOrder) error {
		if !bytes.Equal(o.Items, items) {
			return fmt.Errorf("fn sees %d bytes of items, want %d", len(o.Items), len(items))
		}
		o.Status = "paid"
		return nil
	}, nil)
	must(t, err)
	requests(t, c, 4, "Update keeping the items (read, download, enqueue, transaction)")
	// New items: a new blob, the old one removed by the worker.
	_, err = f.m.Update(ctx, "c1", "o0001", func(o *mdOrder) error { o.Items = append(o.Items, "sku-0002 x 1;"...); return nil }, nil)
	must(t, err)
	f.drain(t)
	names := f.blobNames(t)
	got, err = f.m.Get(ctx, "c1", "o0001", nil)
	must(t, err)
	if len(names) != 1 || len(got.Items) != len(items)+13 {
		t.Errorf("after new items: blobs %v, %d bytes of items", names, len(got.Items))
	}
	rep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify: %+v", rep)
	}
	// The archive keeps naming the blob.
	must(t, f.m.Archive(ctx, "c1", "o0001", f.archive, nil))
	f.drain(t)
	arch, err := patterns.NewModel(f.worker, f.archive, patterns.Views[mdOrder]{}, &patterns.ModelOptions{Container: f.blobs})
	must(t, err)
	a, err := arch.Get(ctx, "c1", "o0001", nil)
	must(t, err)
	if len(a.Items) != len(items)+13 || a.Status != "paid" {
		t.Errorf("archived order: %d bytes of items, status %q", len(a.Items), a.Status)
	}
	// A delete has the blob go.
	must(t, arch.Delete(ctx, &a, nil))
	if n := f.blobNames(t); len(n) != 0 {
		t.Errorf("blobs after the delete: %v", n)
	}
	// A plain Table would drop the field: refused.
	if _, err := patterns.NewTable[mdOrder](f.worker, f.archive, nil); !errors.Is(err, tablekit.ErrInvalidEntity) {
		t.Errorf("NewTable of a type with a blob field: %v, want ErrInvalidEntity", err)
	}
}

func (f *mdFixture) blobNames(t *testing.T) []string {
	t.Helper()
	var out []string
	pager := f.worker.Blobs().NewListBlobsFlatPager(f.blobs, nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		must(t, err)
		for _, b := range page.Segment.BlobItems {
			out = append(out, *b.Name)
		}
	}
	return out
}

// TestModelBulkWriteAndDeleteWhere: the bulk paths keep every view too.
func TestModelBulkWriteAndDeleteWhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var items []mdOrder
	for i := range 20 {
		items = append(items, mdOrd(fmt.Sprintf("c%d", i%2), fmt.Sprintf("o%04d", i), fmt.Sprintf("N%d", i), []string{"open", "shipped"}[i%3%2], t0.Add(time.Duration(i)*time.Minute), float64(i)))
	}
	items[3].Items = []byte("sku-3")
	res, err := f.m.BulkWrite(ctx, items, &patterns.BulkOptions{Insert: true})
	must(t, err)
	if res.Written != 20 {
		t.Errorf("BulkWrite wrote %d, want 20", res.Written)
	}
	dup := []mdOrder{items[0]}
	if _, err := f.m.BulkWrite(ctx, dup, &patterns.BulkOptions{Insert: true}); !tablekit.IsAlreadyExists(err) {
		t.Errorf("BulkWrite with Insert of an existing order: %v", err)
	}
	items[5].Status = "cancelled"
	_, err = f.m.BulkWrite(ctx, items[4:6], nil) // upserts: replace
	must(t, err)
	f.drain(t)
	rep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 20 {
		t.Errorf("Verify after BulkWrite: %+v", rep)
	}
	if got := numbers(t, f.m.Prefix(ctx, "status", "cancelled", "", nil)); got != "N5" {
		t.Errorf("cancelled = %s, want N5", got)
	}
	if _, err := f.m.DeleteWhere(ctx, keys.PK().Ge(""), nil); !errors.Is(err, tablekit.ErrTableScan) {
		t.Errorf("DeleteWhere of a table scan without AllowTableScan: %v", err)
	}
	wr, err := f.m.DeleteWhere(ctx, keys.PK().Eq("c1"), nil)
	must(t, err)
	if wr.Matched != 10 || wr.Deleted != 10 {
		t.Errorf("DeleteWhere c1: %+v, want 10 matched and deleted", wr)
	}
	f.drain(t)
	rep, err = f.m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 10 {
		t.Errorf("Verify after DeleteWhere: %+v", rep)
	}
	if l, err := f.m.Latest(ctx, "recent", "c1", 10, nil); err != nil || len(l) != 0 {
		t.Errorf("c1's tail after DeleteWhere: %d rows, %v", len(l), err)
	}
	if n := f.blobNames(t); len(n) != 0 {
		t.Errorf("blobs after deleting the order that had items: %v", n)
	}
}

// TestVerifyViewsWithoutTheType: what the entities list is enough to find
// and mend their views, without their Go type (tablekit views).
func TestVerifyViewsWithoutTheType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newMdFixture(t)
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i := range 4 {
		o := mdOrd("c1", fmt.Sprintf("o%04d", i), fmt.Sprintf("N%d", i), "open", t0.Add(time.Duration(i)*time.Hour), float64(i))
		must(t, f.m.Insert(ctx, &o, nil))
	}
	f.drain(t)
	table := f.m.Table().Name()
	rep, err := patterns.VerifyViews(ctx, f.worker, table, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 4 {
		t.Fatalf("VerifyViews of a kept Model: %+v", rep)
	}
	raw, err := patterns.NewTable[entity.Entity](f.worker, table, nil)
	must(t, err)
	status, err := patterns.NewTable[entity.Entity](f.worker, f.status, nil)
	must(t, err)
	// A lost number row, a stale status copy, a status copy of no order,
	// an order deleted alone.
	must(t, raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: "number_N0"}, &patterns.WriteOptions{Unconditional: true}))
	must(t, status.Upsert(ctx, &entity.Entity{PartitionKey: "status_open", RowKey: "open_c1_o0001", Properties: map[string]entity.Value{
		"Number": entity.String("N1"), "Status": entity.String("open"), "Total": entity.Double(99),
		patterns.PropPrimaryPartitionKey: entity.String("c1"), patterns.PropPrimaryRowKey: entity.String("o0001")}}, nil))
	must(t, status.Upsert(ctx, &entity.Entity{PartitionKey: "status_open", RowKey: "open_c1_o0777", Properties: map[string]entity.Value{
		patterns.PropPrimaryPartitionKey: entity.String("c1"), patterns.PropPrimaryRowKey: entity.String("o0777")}}, nil))
	must(t, raw.Delete(ctx, &entity.Entity{PartitionKey: "c1", RowKey: "o0003"}, &patterns.WriteOptions{Unconditional: true}))
	rep, err = patterns.VerifyViews(ctx, f.worker, table, nil)
	must(t, err)
	if len(rep.Missing) != 1 || len(rep.Stale) != 1 || len(rep.Orphans) != 4 {
		t.Errorf("VerifyViews of damaged views: missing %v, stale %v, orphans %v; want 1, 1 and 4 (o0777's copy, o0003's number, tail and status rows)", rep.Missing, rep.Stale, rep.Orphans)
	}
	_, err = patterns.RepairViews(ctx, f.worker, table, nil)
	must(t, err)
	rep, err = patterns.VerifyViews(ctx, f.worker, table, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 3 {
		t.Errorf("VerifyViews after RepairViews: %+v", rep)
	}
	mrep, err := f.m.Verify(ctx, nil)
	must(t, err)
	if !mrep.OK() {
		t.Errorf("the Model's Verify after RepairViews: %+v", mrep)
	}
}

// TestModelCostsNoMoreThanItsParts: a Model with one view costs what the
// pattern's own repository costs, and views combined cost no more than
// the dearest of them.
func TestModelCostsNoMoreThanItsParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	number := patterns.Index[mdOrder]{Name: "number", Unique: true, Key: func(o *mdOrder) string { return o.Number }}
	status := patterns.Index[mdOrder]{Name: "status", Key: func(o *mdOrder) string { return o.Status }, Partition: func(o *mdOrder) string { return o.Status }}
	recent := patterns.Tail[mdOrder]{Name: "recent", Time: func(o *mdOrder) time.Time { return o.Placed }}
	for _, c := range []struct {
		name                          string
		views                         patterns.Views[mdOrder]
		insert, update, upd0, delete_ int64 // upd0: an update of nothing an eventual view carries
	}{
		{"nothing (Table)", patterns.Views[mdOrder]{}, 1, 2, 2, 2},
		{"an index in the partition (IndexedTable)", patterns.Views[mdOrder]{Indexes: []patterns.Index[mdOrder]{number}}, 1, 2, 2, 2},
		{"a tail", patterns.Views[mdOrder]{Tails: []patterns.Tail[mdOrder]{recent}}, 1, 2, 2, 2},
		{"an index elsewhere (EventualIndexedTable)", patterns.Views[mdOrder]{EventualIndexes: []patterns.Index[mdOrder]{status}}, 2, 3, 3, 3},
		{"all three", patterns.Views[mdOrder]{Indexes: []patterns.Index[mdOrder]{number}, Tails: []patterns.Tail[mdOrder]{recent}, EventualIndexes: []patterns.Index[mdOrder]{status}}, 2, 3, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			acct, counter := testenv.CountingAccount(t)
			q, _ := testQueue(t, acct)
			m, err := patterns.NewModel(acct, testenv.TableName(t), c.views, &patterns.ModelOptions{Queue: q, Container: testenv.ContainerName(t)})
			must(t, err)
			must(t, m.CreateIfNotExists(ctx, nil))
			t.Cleanup(func() { _ = m.Table().Drop(context.Background(), nil) })
			counter.Reset()
			o := mdOrd("c1", "o1", "N1", "open", time.Now(), 1)
			must(t, m.Insert(ctx, &o, nil))
			requests(t, counter, c.insert, "Insert")
			_, err = m.Update(ctx, "c1", "o1", func(o *mdOrder) error { o.Status = "paid"; return nil }, nil)
			must(t, err)
			requests(t, counter, c.update, "Update of an indexed value")
			_, err = m.Update(ctx, "c1", "o1", func(o *mdOrder) error { o.Total++; return nil }, nil)
			must(t, err)
			requests(t, counter, c.upd0, "Update of the total (which the status copy carries: Props nil)")
			must(t, m.Delete(ctx, &o, &patterns.WriteOptions{Unconditional: true}))
			requests(t, counter, c.delete_, "Delete")
		})
	}
}

// TestModelLists: index entities across partitions (the guide's option 3)
// as a Model's view: listed by the worker from one message per write, with
// the other views; moved out of the list by an archive; verified and
// repaired with the rest.
func TestModelLists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs, clock := testenv.ClockConnectionString(t)
	acct, counter := testenv.CountingAccountOn(t, cs)
	worker := testenv.AccountOn(t, cs, nil)
	q, container := testQueue(t, acct)
	lists := testenv.TableName(t)
	views := mdViews(testenv.TableName(t))
	views.Lists = []patterns.ListIndex[mdOrder]{{Name: "bystatus", Key: func(o *mdOrder) string { return o.Status }, Table: lists, Property: "Orders"}}
	m, err := patterns.NewModel(acct, testenv.TableName(t), views, &patterns.ModelOptions{Queue: q, Container: testenv.ContainerName(t)})
	must(t, err)
	must(t, m.CreateIfNotExists(ctx, nil))
	archive, err := patterns.NewTable[entity.Entity](worker, testenv.TableName(t), nil)
	must(t, err)
	must(t, archive.CreateIfNotExists(ctx, nil))
	t.Cleanup(func() {
		for _, n := range []string{m.Table().Name(), lists, archive.Name(), views.EventualIndexes[0].Table} {
			_, _ = worker.Tables().DeleteTable(context.Background(), n, nil)
		}
	})
	drain := func() { drainModel(t, worker, clock, q, container) }
	listed := func(status string) string {
		var out []string
		for o, err := range m.Listed(ctx, "bystatus", status, nil) {
			must(t, err)
			out = append(out, o.PartitionKey+"/"+o.RowKey)
		}
		return strings.Join(out, ",")
	}
	counter.Reset()
	o := mdOrd("c1", "o1", "N1", "open", time.Now(), 1)
	must(t, m.Insert(ctx, &o, nil))
	if n := messages(counter); n != 1 {
		t.Errorf("Insert with an eventual index and a list sent %d messages, want 1", n)
	}
	requests(t, counter, 2, "Insert (enqueue, transaction)")
	for _, o := range []mdOrder{mdOrd("c2", "o2", "N2", "open", time.Now(), 2), mdOrd("c2", "o3", "N3", "shipped", time.Now(), 3)} {
		must(t, m.Insert(ctx, &o, nil))
	}
	drain()
	if got := listed("open"); got != "c1/o1,c2/o2" {
		t.Errorf("listed open = %s", got)
	}
	_, err = m.Update(ctx, "c2", "o2", func(o *mdOrder) error { o.Status = "shipped"; return nil }, nil)
	must(t, err)
	drain()
	if got, got2 := listed("open"), listed("shipped"); got != "c1/o1" || got2 != "c2/o2,c2/o3" {
		t.Errorf("after the update: open = %s, shipped = %s", got, got2)
	}
	must(t, m.Archive(ctx, "c2", "o3", archive.Name(), nil))
	drain()
	if members, err := m.ListMembers(ctx, "bystatus", "shipped", nil); err != nil || len(members) != 1 || members[0].RowKey != "o2" {
		t.Errorf("shipped members after archiving o3: %v, %v", members, err)
	}
	rep, err := m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() || rep.Primaries != 2 {
		t.Errorf("Verify: %+v", rep)
	}
	// A member lost, and one of no order: Verify names them, Repair mends.
	raw, err := patterns.NewTable[entity.Entity](worker, lists, nil)
	must(t, err)
	must(t, raw.Upsert(ctx, &entity.Entity{PartitionKey: "bystatus", RowKey: "open", Properties: map[string]entity.Value{"Orders": entity.String(`["c9_o9"]`)}}, nil))
	rep, err = m.Verify(ctx, nil)
	must(t, err)
	if len(rep.Missing) != 1 || len(rep.Orphans) != 1 {
		t.Errorf("Verify of a damaged list: missing %v, orphans %v", rep.Missing, rep.Orphans)
	}
	_, err = m.Repair(ctx, nil)
	must(t, err)
	rep, err = m.Verify(ctx, nil)
	must(t, err)
	if !rep.OK() {
		t.Errorf("Verify after Repair: %+v", rep)
	}
	if got := listed("open"); got != "c1/o1" {
		t.Errorf("listed open after Repair = %s", got)
	}
}

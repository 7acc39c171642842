package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// applyUntilDone applies tx as the worker would: again after a retryable
// failure.
func applyUntilDone(t testing.TB, acct *tablekit.Account, tx *Transaction) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		err := Apply(context.Background(), acct, tx, nil, nil)
		if err == nil {
			return
		}
		if IsPermanent(err) || attempt == 20 {
			t.Errorf("apply %s: %v", tx.ID, err)
			return
		}
	}
}

// listAll returns every entity of a table, keyed "PK/RK", as the worker
// reads them.
func listAll(t testing.TB, acct *tablekit.Account, table string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	pager := acct.Tables().NewClient(table).NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr("PartitionKey,RowKey")})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entities {
			var k struct{ PartitionKey, RowKey string }
			_ = json.Unmarshal(e, &k)
			out[k.PartitionKey+"/"+k.RowKey] = getProps(t, acct, EntityRef{table, k.PartitionKey, k.RowKey})
		}
	}
	return out
}

func TestMoveEntityIdempotent(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	from, to := createTable(t, acct), createTable(t, acct)
	if _, err := acct.Tables().NewClient(from).AddEntity(ctx, mustJSON(t, employee("p", "r")), nil); err != nil {
		t.Fatal(err)
	}
	want := getProps(t, acct, EntityRef{from, "p", "r"})
	move := NewTransaction(MoveEntity(EntityRef{from, "p", "r"}, EntityRef{to, "archived", ""}))
	for i := range 3 { // the first applies, the duplicates are no-ops
		if err := Apply(ctx, acct, move, nil, nil); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	got := getProps(t, acct, EntityRef{to, "archived", "r"})
	want["PartitionKey"] = "archived"
	if !reflect.DeepEqual(got, want) || getProps(t, acct, EntityRef{from, "p", "r"}) != nil {
		t.Fatalf("moved entity %v, want %v", got, want)
	}
	ghost := NewTransaction(MoveEntity(EntityRef{from, "p", "nobody"}, EntityRef{Table: to}))
	err := Apply(ctx, acct, ghost, nil, nil)
	if !errors.Is(err, tablekit.ErrNotFound) || !IsPermanent(err) {
		t.Fatalf("moving a missing entity: %v, want a permanent ErrNotFound", err)
	}
	ok := NewTransaction(NewStep(KindMoveEntity, MoveEntityArgs{From: EntityRef{from, "p", "nobody"}, To: EntityRef{Table: to}, MissingOK: true}))
	if err := Apply(ctx, acct, ok, nil, nil); err != nil {
		t.Fatalf("MissingOK: %v", err)
	}
}

func TestUpsertAndDeleteEntity(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	table := createTable(t, acct)
	tx := NewTransaction(
		UpsertEntity(table, []byte(`{"PartitionKey":"p","RowKey":"r","A":1,"B":"x"}`), tablekit.UpsertReplace),
		UpsertEntity(table, []byte(`{"PartitionKey":"p","RowKey":"r","C":2.5}`), tablekit.UpsertMerge),
		UpsertEntity(table, []byte(`{"PartitionKey":"p","RowKey":"gone","A":1}`), tablekit.UpsertReplace),
		DeleteEntity(EntityRef{table, "p", "gone"}),
		DeleteEntity(EntityRef{table, "p", "never-existed"}),
	)
	for range 2 {
		if err := Apply(ctx, acct, tx, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := listAll(t, acct, table)
	want := map[string]map[string]any{"p/r": {"PartitionKey": "p", "RowKey": "r", "A": 1.0, "B": "x", "C": 2.5, "C@odata.type": "Edm.Double"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("table = %v, want %v", got, want)
	}
}

// version is one state of a source entity in the sync-copies test.
type version struct {
	deleted bool
	name    string
	score   float64
	copies  []CopySpec
}

func TestSyncCopiesConvergesUnderReordering(t *testing.T) {
	acct := testenv.Account(t)
	src, c1, c2 := createTable(t, acct), createTable(t, acct), createTable(t, acct)
	locations := []CopySpec{
		{Table: c1, PartitionKey: "byName", RowKey: "x"},
		{Table: c1, PartitionKey: "byScore", RowKey: "y"},
		{Table: c2, PartitionKey: "z", RowKey: "z"},
		{Table: c2, PartitionKey: "w", RowKey: "w"},
	}
	const sources = 6
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	var finals []version
	var wg sync.WaitGroup
	pending := make(chan *Transaction, 1000)
	// Appliers: take messages in arrival order, but sleep a random time
	// first (reordering), and apply some twice, the second time late.
	var late []*Transaction
	var lateMu sync.Mutex
	for i := range 4 {
		wg.Add(1)
		seed := rng.Uint64() + uint64(i)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 0))
			for tx := range pending {
				time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
				applyUntilDone(t, acct, tx)
				if r.IntN(3) == 0 {
					lateMu.Lock()
					late = append(late, tx)
					lateMu.Unlock()
				}
			}
		}()
	}
	client := acct.Tables().NewClient(src)
	for s := range sources {
		ref := EntityRef{src, "p", "s" + strconv.Itoa(s)}
		var prev []CopySpec
		var v version
		for i := range 6 {
			v = version{name: "n" + strconv.Itoa(s) + "-" + strconv.Itoa(i), score: float64(i) + 0.5}
			if i == 5 && s%2 == 1 {
				v.deleted = true
			} else {
				for j, loc := range locations {
					if rng.IntN(2) == 0 {
						loc.RowKey = loc.RowKey + strconv.Itoa(s)
						if j%2 == 0 {
							loc.Props = []string{"Name"}
						}
						v.copies = append(v.copies, loc)
					}
				}
			}
			// The writer writes the source, then enqueues the sync.
			if v.deleted {
				if _, err := client.DeleteEntity(ctx, ref.PartitionKey, ref.RowKey, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				enc, _ := EncodeCopies(v.copies...)
				e := map[string]any{"PartitionKey": ref.PartitionKey, "RowKey": ref.RowKey, "Name": v.name, "Score": v.score, "Score@odata.type": "Edm.Double", "Copies": enc}
				if _, err := client.UpsertEntity(ctx, mustJSON(t, e), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
					t.Fatal(err)
				}
			}
			var prevRefs []EntityRef
			for _, p := range prev {
				prevRefs = append(prevRefs, p.Ref())
			}
			pending <- NewTransaction(SyncCopies(ref, "Copies", prevRefs...))
			prev = v.copies
		}
		finals = append(finals, v)
	}
	close(pending)
	wg.Wait()
	rng.Shuffle(len(late), func(i, j int) { late[i], late[j] = late[j], late[i] })
	for _, tx := range late { // late duplicates, after everything else
		applyUntilDone(t, acct, tx)
	}

	want := map[string]map[string]map[string]any{c1: {}, c2: {}}
	for s, v := range finals {
		if v.deleted {
			continue
		}
		enc, _ := EncodeCopies(v.copies...)
		for _, c := range v.copies {
			e := map[string]any{"PartitionKey": c.PartitionKey, "RowKey": c.RowKey, "Name": v.name}
			if len(c.Props) == 0 {
				e["Score"], e["Score@odata.type"], e["Copies"] = v.score, "Edm.Double", enc
			}
			want[c.Table][c.PartitionKey+"/"+c.RowKey] = e
		}
		_ = s
	}
	for _, table := range []string{c1, c2} {
		got := listAll(t, acct, table)
		if !reflect.DeepEqual(got, want[table]) {
			t.Errorf("copies in %s:\n got  %v\n want %v", table, got, want[table])
		}
	}
}

func TestIndexListConverges(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	emps, idx := createTable(t, acct), createTable(t, acct)
	depts := []string{"Sales", "HR", "IT"}
	rng := rand.New(rand.NewPCG(3, 4))
	client := acct.Tables().NewClient(emps)
	final := map[string]string{} // employee -> dept ("" = deleted)
	var txs []*Transaction
	for e := range 20 {
		id := "e" + strconv.Itoa(e)
		old := ""
		for range 4 {
			dept := depts[rng.IntN(len(depts))]
			if rng.IntN(5) == 0 {
				dept = ""
			}
			if dept == "" {
				_, _ = client.DeleteEntity(ctx, "emp", id, nil)
			} else if _, err := client.UpsertEntity(ctx, mustJSON(t, map[string]any{"PartitionKey": "emp", "RowKey": id, "Dept": dept}), nil); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{old, dept} {
				if d == "" {
					continue
				}
				txs = append(txs, NewTransaction(IndexList(IndexListArgs{
					Index: EntityRef{idx, "dept", d}, Property: "Members", Member: id,
					Source: EntityRef{emps, "emp", id}, Where: "Dept", Equals: json.RawMessage(strconv.Quote(d)),
				})))
			}
			old = dept
		}
		final[id] = old
	}
	// Duplicate a third, shuffle, and apply with 8 concurrent appliers
	// contending for the same index entities (412 loops).
	txs = append(txs, txs[:len(txs)/3]...)
	rng.Shuffle(len(txs), func(i, j int) { txs[i], txs[j] = txs[j], txs[i] })
	work := make(chan *Transaction)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tx := range work {
				applyUntilDone(t, acct, tx)
			}
		}()
	}
	for _, tx := range txs {
		work <- tx
	}
	close(work)
	wg.Wait()

	for _, d := range depts {
		var want []string
		for id, fd := range final {
			if fd == d {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		p := getProps(t, acct, EntityRef{idx, "dept", d})
		var got []string
		if p != nil {
			got, _ = DecodeMembers(p["Members"].(string))
		}
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("index %s = %v, want %v", d, got, want)
		}
	}
}

func TestBlobCleanup(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	table := createTable(t, acct)
	cont := testenv.ContainerName(t)
	if _, err := acct.Blobs().CreateContainer(ctx, cont, nil); err != nil {
		t.Fatal(err)
	}
	client := acct.Tables().NewClient(table)
	_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"one","Body":"v2"}`), nil)
	_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"many","Parts":"[\"a\",\"b\"]"}`), nil)
	put := NewTransaction()
	for _, n := range []string{"v1", "v2", "a", "b", "c", "orphan"} {
		put.Add(PutBlob(cont, n, []byte("data "+n), "text/plain"))
	}
	if err := Apply(ctx, acct, put, nil, nil); err != nil {
		t.Fatal(err)
	}
	cleanup := NewTransaction(
		BlobCleanup(cont, "v1", EntityRef{table, "p", "one"}, "Body"),      // replaced: deleted
		BlobCleanup(cont, "v2", EntityRef{table, "p", "one"}, "Body"),      // current: kept
		BlobCleanup(cont, "a", EntityRef{table, "p", "many"}, "Parts"),     // in the list: kept
		BlobCleanup(cont, "c", EntityRef{table, "p", "many"}, "Parts"),     // not in the list: deleted
		BlobCleanup(cont, "orphan", EntityRef{table, "p", "gone"}, "Body"), // source gone: deleted
		BlobCleanup(cont, "never", EntityRef{table, "p", "gone"}, "Body"),  // missing blob: fine
	)
	for range 2 {
		if err := Apply(ctx, acct, cleanup, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	left := blobNames(t, acct, cont, "")
	if want := []string{"a", "b", "v2"}; !reflect.DeepEqual(left, want) {
		t.Fatalf("blobs left %v, want %v", left, want)
	}
}

package consistency

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestRandomizedConvergence enqueues 200 transactions of every built-in
// table step, duplicates a third of them, shuffles the lot, and runs a
// worker whose every request may fail (500, 503, 408, 429, timeout, reset;
// before or after reaching the service). The tables must end in exactly
// the expected state, with nothing poisoned and nothing left in the queue.
// It runs with azcore's default retry options (the first retry after about
// 0.8 s, as a deployed worker has them) and with fast ones; the default
// variant enqueues 60 transactions, not 200, and gives the worker a 5 s
// visibility timeout, since one request may then take seconds. The
// service is an emulator of the test's own: when the worker holds nothing
// and all that is left waits out a backoff or a visibility timeout, the
// test moves its clock rather than wait (1 to 2 s of the fast variant's
// 1.2 to 2.4 s).
func TestRandomizedConvergence(t *testing.T) {
	t.Parallel()
	fast := policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}
	// Each mode has its tables and queue; the default one spends its time
	// in azcore's retry delays, not on a CPU, so the two run side by side.
	g := testenv.NewSideBySide(t, 0)
	for _, mode := range faults.RetryModes(fast) {
		g.Run(mode.Name, func(t *testing.T) {
			if mode.Default() {
				randomizedConvergence(t, mode, 12, 5*time.Second)
			} else {
				randomizedConvergence(t, mode, 40, 2*time.Second)
			}
		})
	}
	g.Wait()
}

// randomizedConvergence runs the test with n sources (5n transactions).
func randomizedConvergence(t *testing.T, mode faults.RetryMode, n int, visibility time.Duration) {
	const seed = 20240601
	rng := rand.New(rand.NewPCG(seed, 1))
	cs, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, cs, nil)
	ctx := context.Background()
	src, cp, idx, up, mvFrom, mvTo := createTable(t, acct), createTable(t, acct), createTable(t, acct), createTable(t, acct), createTable(t, acct), createTable(t, acct)
	q := newQueue(t, acct)
	write := func(table string, e map[string]any) {
		t.Helper()
		if _, err := acct.Tables().NewClient(table).UpsertEntity(ctx, mustJSON(t, e), &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	depts := []string{"Sales", "HR", "IT", "Ops"}
	var txs []*Transaction
	wantCopies := map[string]map[string]any{}
	wantIndex := map[string][]string{}
	wantMoved := map[string]map[string]any{}
	wantUp := map[string]map[string]any{}
	stale := map[string][]string{} // index memberships that must be removed

	for i := range n {
		id := "s" + strconv.Itoa(i)
		ref := EntityRef{src, "p", id}
		dept := depts[rng.IntN(len(depts))]
		// Desired copies: some of four locations; previous copies: others,
		// pre-created as stale junk the step must delete.
		var copies []CopySpec
		var prev []EntityRef
		for j := range 4 {
			loc := CopySpec{Table: cp, PartitionKey: "k" + strconv.Itoa(j), RowKey: id}
			switch rng.IntN(3) {
			case 0:
				if j%2 == 0 {
					loc.Props = []string{"Dept"}
				}
				copies = append(copies, loc)
			case 1:
				prev = append(prev, loc.Ref())
				write(cp, map[string]any{"PartitionKey": loc.PartitionKey, "RowKey": id, "Stale": true})
			}
		}
		enc, _ := EncodeCopies(copies...)
		big := "9007199254740993" // Int64 above 2^53
		write(src, map[string]any{"PartitionKey": "p", "RowKey": id, "Dept": dept, "Copies": enc, "N": big, "N@odata.type": "Edm.Int64", "F": 2.0, "F@odata.type": "Edm.Double"})
		for _, c := range copies {
			e := map[string]any{"PartitionKey": c.PartitionKey, "RowKey": c.RowKey, "Dept": dept}
			if len(c.Props) == 0 {
				e["Copies"], e["N"], e["N@odata.type"], e["F"], e["F@odata.type"] = enc, big, "Edm.Int64", 2.0, "Edm.Double"
			}
			wantCopies[c.PartitionKey+"/"+c.RowKey] = e
		}
		txs = append(txs, NewTransaction(SyncCopies(ref, "Copies", prev...)))

		// Index entities: the own department's (member) and another one's
		// (not a member: removed if an earlier state had put it there).
		other := depts[(slices.Index(depts, dept)+1+rng.IntN(len(depts)-1))%len(depts)]
		wantIndex[dept] = append(wantIndex[dept], id)
		for _, d := range []string{dept, other} {
			txs = append(txs, NewTransaction(IndexList(IndexListArgs{
				Index: EntityRef{idx, "dept", d}, Property: "Members", Member: id,
				Source: ref, Where: "Dept", Equals: json.RawMessage(strconv.Quote(d)),
			})))
		}
		if rng.IntN(2) == 0 { // a stale membership to remove
			stale[other] = append(stale[other], id)
		}

		// Move: the guide's archive.
		emp := employee("emp", id)
		emp["Seq"] = i
		write(mvFrom, emp)
		e := getProps(t, acct, EntityRef{mvFrom, "emp", id})
		e["PartitionKey"] = "archived"
		wantMoved["archived/"+id] = e
		txs = append(txs, NewTransaction(MoveEntity(EntityRef{mvFrom, "emp", id}, EntityRef{Table: mvTo, PartitionKey: "archived"})))

		// A multi-step transaction: upsert, merge, delete a junk entity.
		write(up, map[string]any{"PartitionKey": "junk", "RowKey": id})
		txs = append(txs, NewTransaction(
			UpsertEntity(up, mustJSON(t, map[string]any{"PartitionKey": "u", "RowKey": id, "A": i}), tablekit.UpsertReplace),
			UpsertEntity(up, mustJSON(t, map[string]any{"PartitionKey": "u", "RowKey": id, "B": 0.5}), tablekit.UpsertMerge),
			DeleteEntity(EntityRef{up, "junk", id}),
		))
		wantUp["u/"+id] = map[string]any{"PartitionKey": "u", "RowKey": id, "A": float64(i), "B": 0.5, "B@odata.type": "Edm.Double"}
	}
	for d, ids := range stale {
		slices.Sort(ids)
		write(idx, map[string]any{"PartitionKey": "dept", "RowKey": d, "Members": string(mustJSON(t, ids))})
	}
	if len(txs) != 5*n {
		t.Fatalf("%d transactions, want %d", len(txs), 5*n)
	}
	// Duplicates and reordering.
	all := append(slices.Clone(txs), txs[:len(txs)/3]...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, tx := range all {
		if err := q.Enqueue(ctx, tx, nil); err != nil {
			t.Fatal(err)
		}
	}

	fp, err := faults.New(seed, faults.Transient(0.1)...)
	if err != nil {
		t.Fatal(err)
	}
	faulty := testenv.AccountOn(t, cs, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerRetryPolicies: []policy.Policy{fp},
		Retry:            mode.Retry,
	}})
	// With azcore's default retry options a transaction spends most of
	// its time asleep in a retry's delay (0.8 s, then 2.4 s, then 5.6 s):
	// all of them run at once, so that none waits for a slot behind the
	// sleepers (at 8 at once, the subtest took 6.3 to 11.1 s; at once, 5.0
	// to 6.6 s, one run of eight 10.9 s).
	concurrency := 8
	if mode.Default() {
		concurrency = len(all)
	}
	w := newWorker(t, faulty, q, WorkerOptions{Concurrency: concurrency, MaxDequeueCount: 20, VisibilityTimeout: visibility, PollInterval: 50 * time.Millisecond})
	stop := startWorker(t, w)
	holds := func() bool { return w.Metrics().InFlight()+w.Metrics().Waiting() > 0 }
	testenv.WaitFor(t, 60*time.Second, "the queue to drain", func() bool {
		if w.Metrics().Processed() >= int64(len(all)) && messageCount(t, q.qc) == 0 && !holds() {
			return true
		}
		// The worker holds nothing, and what is left is invisible: a
		// transaction waiting out its retry's backoff, or one whose delete
		// failed, until its visibility timeout ends. Their time passes on
		// the service's clock. (A receive under way may yet hold a message
		// that the move makes visible again: it is delivered twice, as the
		// duplicates above are.)
		if !holds() && messageCount(t, q.qc) > 0 && !visibleMessages(t, q) && !holds() {
			clock.Advance(visibility)
		}
		return false
	})
	stop()
	t.Logf("%d messages, %d faults injected, %d worker-level retries", len(all), fp.Injected(), w.Metrics().Retried())
	if fp.Injected() < int64(5*n)/4 {
		t.Fatalf("only %d faults injected", fp.Injected())
	}
	if w.Metrics().Poisoned() != 0 {
		recs, _ := q.Poisoned(ctx, 5, nil)
		t.Fatalf("%d poisoned: %+v", w.Metrics().Poisoned(), recs)
	}

	if got := listAll(t, acct, cp); !reflect.DeepEqual(got, wantCopies) {
		t.Errorf("copies:\n got  %v\n want %v", got, wantCopies)
	}
	for _, d := range depts {
		slices.Sort(wantIndex[d])
		var got []string
		if p := getProps(t, acct, EntityRef{idx, "dept", d}); p != nil {
			got, _ = DecodeMembers(p["Members"].(string))
		}
		if len(got) != 0 || len(wantIndex[d]) != 0 {
			if !reflect.DeepEqual(got, wantIndex[d]) {
				t.Errorf("index %s = %v, want %v", d, got, wantIndex[d])
			}
		}
	}
	if got := listAll(t, acct, mvFrom); len(got) != 0 {
		t.Errorf("%d entities left in the move source", len(got))
	}
	if got := listAll(t, acct, mvTo); !reflect.DeepEqual(got, wantMoved) {
		t.Errorf("moved:\n got  %v\n want %v", got, wantMoved)
	}
	if got := listAll(t, acct, up); !reflect.DeepEqual(got, wantUp) {
		t.Errorf("upserts:\n got  %v\n want %v", got, wantUp)
	}
}

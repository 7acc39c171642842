package patterns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/faults"
	"github.com/tablekit/tablekit/tools/testenv"
)

// mfRepos are the index repositories whose Rebuild, Verify and Repair
// TestRebuildVerifyRepairUnderFaults runs (a new one is one line), with
// the primaries each indexes: rows, or defRows in azcore's default retry
// mode, where every fault costs a second or more. The list indexes fix a
// member with more requests, one after another (option 2 reads each
// member in turn within a partition, option 3 takes four requests per
// member), so they get fewer there.
var mfRepos = []mfCase{
	{"IndexedTable", mfIndexedTable, 2000, 1000},
	{"EventualIndexedTable", mfEventualIndexedTable, 2000, 500},
	{"ListIndexedTable", mfListIndexedTable, 2000, 200},
	{"BlobIndexedTable", mfBlobIndexedTable, 2000, 500},
	{"EventualListIndexedTable", mfEventualListIndexedTable, 2000, 200},
}

// mfCase is one line of mfRepos: a repository's name, how to open it on
// an account over a table (created, with whatever else it uses), and how
// many primaries it indexes in each retry mode.
type mfCase struct {
	name          string
	open          func(t *testing.T, acct *tablekit.Account, table string) mfRepo
	rows, defRows int
}

// Under 10% injected faults (half of them after the service answered: a
// page, a transaction, a blob write or a step whose answer is lost), with
// azcore's default retry options and fast ones, every index repository's
// whole-table maintenance is exact. Rebuild, reading the primaries in 8
// parallel ranges, indexes every primary once and writes no stray entry;
// Verify finds nothing wrong with a right index and exactly the damage
// planted behind the index's back (an index entity deleted, an entry
// naming a primary that does not exist); Repair fixes exactly that. A user
// runs them over a live table whose requests fail now and then and relies
// on the index being right when they return. With the default retry
// options, the variant indexes fewer primaries (mfCase.defRows) and runs
// the repositories side by side (each on its own tables and faults), as it
// mostly waits.
func TestRebuildVerifyRepairUnderFaults(t *testing.T) {
	t.Parallel()
	inRetryModes(t, func(t *testing.T, mode faults.RetryMode, rows func(mfCase) int) {
		limit := 1 // the fast mode's runs keep a CPU busy: one after the other
		if mode.Default() {
			limit = 0 // the default one's wait in azcore's retry delays: all at once
		}
		g := testenv.NewSideBySide(t, limit)
		for i, c := range mfRepos {
			g.Run(c.name, func(t *testing.T) { rebuildVerifyRepairUnderFaults(t, mode, rows(c), c.open, uint64(i)) })
		}
		g.Wait()
	}, func(c mfCase) int { return c.rows }, func(c mfCase) int { return c.defRows })
}

// mfRepo is an index repository under the maintenance fault tests, with
// what they need to read and damage its index behind its back.
type mfRepo struct {
	maintainable
	// entries reads every index entry stored, raw (not through the
	// repository), as the lines want gives.
	entries func(t *testing.T) []string
	// want is the entries primary e should have.
	want func(e ixEmployee) []string
	// lose deletes the index entity (a copy, an index entity, a blob)
	// holding primary e's entry and returns what Verify then finds, as
	// mtEntries renders it; all are the primaries.
	lose func(t *testing.T, e ixEmployee, all []ixEmployee) []string
	// stray lists or copies, next to primary e's entry, a primary that does
	// not exist (RowKey mfGhost in e's partition) and returns what Verify
	// then finds.
	stray func(t *testing.T, e ixEmployee) []string
}

// mfGhost is the RowKey of the primary that stray entries name: no
// primary has it.
const mfGhost = "empid_999999"

// mfOptions are the maintenance options under test: the primaries read in
// 8 key ranges at once.
var mfOptions = &patterns.MaintenanceOptions{ScanParallel: 8}

// mfRows returns n primaries, half in partition "hot", the rest in
// partitions of 10, over 37 last names.
func mfRows(n int) []ixEmployee {
	rows := make([]ixEmployee, n)
	for i := range rows {
		pk := "hot"
		if i%2 == 1 {
			pk = fmt.Sprintf("p%04d", i%(n/10))
		}
		id := fmt.Sprintf("%06d", i)
		rows[i] = ixEmp(pk, id, "F", fmt.Sprintf("L%02d", i%37), "e"+id+"@contoso.com", 30)
	}
	return rows
}

// mfRun runs op once or, in azcore's default retry mode, again while it
// fails with tablekit.ErrUnavailable, at most three times in all: there a
// request gives up after four attempts (one in 10,000 at 10% faults), and
// a maintenance operation that gave up is meant to be run again. It
// returns op's last error and the number of runs.
func mfRun(t *testing.T, mode faults.RetryMode, what string, op func() error) (int, error) {
	t.Helper()
	for run := 1; ; run++ {
		err := op()
		if err == nil || !mode.Default() || run == 3 || !errors.Is(err, tablekit.ErrUnavailable) {
			return run, err
		}
		t.Logf("%s gave up (run %d), run again: %v", what, run, err)
	}
}

// rebuildVerifyRepairUnderFaults runs Rebuild, Verify and Repair under
// faults on the repository open builds, over n primaries, faults drawn
// from faultSeed + seed.
func rebuildVerifyRepairUnderFaults(t *testing.T, mode faults.RetryMode, n int, open func(*testing.T, *tablekit.Account, string) mfRepo, seed uint64) {
	ctx := context.Background()
	start := time.Now()
	tbl, fp := faultyTable[ixEmployee](t, mode, 0.10, faultSeed(t, 31)+seed)
	fp.SetEnabled(false)
	x := open(t, tbl.Account(), tbl.Name())
	rows := mfRows(n)
	if _, err := x.Table().BulkWrite(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range rows {
		want = append(want, x.want(e)...)
	}
	slices.Sort(want)

	var phases []string
	var total int64
	// underFaults runs op, the maintenance operation what, with faults on
	// (as mfRun runs it), fails the test on its error, and returns the
	// runs it took and the faults it met.
	underFaults := func(what string, op func() error) (int, int64) {
		t.Helper()
		before, began := fp.Injected(), time.Now()
		fp.SetEnabled(true)
		runs, err := mfRun(t, mode, what, op)
		fp.SetEnabled(false)
		k := fp.Injected() - before
		total += k
		phases = append(phases, fmt.Sprintf("%s %d faults, %d runs, %v", what, k, runs, time.Since(began).Round(time.Millisecond)))
		if err != nil {
			t.Fatalf("%s under faults: %v", what, err)
		}
		return runs, k
	}
	// indexed checks, with faults off and reading the index raw, that
	// every primary is indexed once and nothing else is.
	indexed := func(after string) {
		t.Helper()
		got := x.entries(t)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("after %s under faults the index holds %d entries, want %d: %s", after, len(got), len(want), mfDiff(got, want))
		}
	}
	var rep *patterns.IndexReport
	verify := func() (err error) {
		rep, err = x.Verify(ctx, mfOptions)
		return err
	}

	// Rebuild over primaries written without the index.
	_, rebuildFaults := underFaults("Rebuild", func() error { return x.Rebuild(ctx, mfOptions) })
	indexed("Rebuild")

	// Verify of a right index.
	underFaults("Verify", verify)
	if rep.Primaries != n || !rep.OK() {
		t.Fatalf("Verify of a right index under faults counted %d primaries, want %d, and found:\n%s", rep.Primaries, n, mtEntries(rep.Entries))
	}

	// Damage behind the index's back, in the hot partition and in a small
	// one: an index entity deleted, and an entry naming a primary that
	// does not exist.
	var planted []string
	planted = append(planted, x.lose(t, rows[0], rows)...)
	planted = append(planted, x.lose(t, rows[1], rows)...)
	planted = append(planted, x.stray(t, rows[2])...)
	planted = append(planted, x.stray(t, rows[5])...)
	underFaults("Verify of the damage", verify)
	if rep.Primaries != n {
		t.Errorf("Verify of the damage under faults counted %d primaries, want %d", rep.Primaries, n)
	}
	mtWant(t, "Verify of the damage under faults", mtEntries(rep.Entries), planted...)

	// Repair of the damage, and Verify without faults after it.
	runs, _ := underFaults("Repair", func() (err error) {
		rep, err = x.Repair(ctx, mfOptions)
		return err
	})
	if runs == 1 { // a run after one that gave up finds only what that one left
		mtWant(t, "Repair under faults", mtEntries(rep.Entries), planted...)
	}
	if len(rep.Skipped) > 0 {
		t.Errorf("Repair under faults skipped:\n%s", mtEntries(rep.Skipped))
	}
	indexed("Repair")
	if err := verify(); err != nil {
		t.Fatalf("Verify after Repair: %v", err)
	}
	if rep.Primaries != n || !rep.OK() {
		t.Fatalf("Verify after Repair counted %d primaries, want %d, and found:\n%s", rep.Primaries, n, mtEntries(rep.Entries))
	}

	t.Logf("%d primaries, %d index entries, %d planted problems; %s; %v in all",
		n, len(want), len(planted), strings.Join(phases, "; "), time.Since(start).Round(time.Millisecond))
	if rebuildFaults < 1 || total < 5 {
		t.Errorf("only %d faults injected (%d in Rebuild): the test proves nothing", total, rebuildFaults)
	}
}

// mfDiff describes how the sorted lines got differ from want: the first
// few missing and extra.
func mfDiff(got, want []string) string {
	count := func(l []string) map[string]int {
		m := map[string]int{}
		for _, s := range l {
			m[s]++
		}
		return m
	}
	g, w := count(got), count(want)
	var missing, extra []string
	for s, k := range w {
		for range k - g[s] {
			missing = append(missing, s)
		}
	}
	for s, k := range g {
		for range k - w[s] {
			extra = append(extra, s)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Sprintf("%d missing %q, %d extra %q", len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
}

// mfRaw lists every entity of table c, raw, as its properties.
func mfRaw(t *testing.T, c *aztables.Client) []map[string]any {
	t.Helper()
	var out []map[string]any
	pager := c.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		must(t, err)
		for _, b := range page.Entities {
			var m map[string]any
			must(t, json.Unmarshal(b, &m))
			out = append(out, m)
		}
	}
	return out
}

// mfStr returns property name of a raw entity, "" when it has none.
func mfStr(m map[string]any, name string) string {
	s, _ := m[name].(string)
	return s
}

// mfAdd inserts a raw entity into table c.
func mfAdd(t *testing.T, c *aztables.Client, props map[string]any) {
	t.Helper()
	b, err := json.Marshal(props)
	must(t, err)
	_, err = c.AddEntity(context.Background(), b, nil)
	must(t, err)
}

// mfDelete deletes entity (pk, rk) of table c.
func mfDelete(t *testing.T, c *aztables.Client, pk, rk string) {
	t.Helper()
	_, err := c.DeleteEntity(context.Background(), pk, rk, nil)
	must(t, err)
}

// mfAppend adds member to the JSON list in property prop of index entity
// (pk, rk) of table c, keeping it sorted, with a merge of that property.
func mfAppend(t *testing.T, c *aztables.Client, pk, rk, prop, member string) {
	t.Helper()
	ctx := context.Background()
	resp, err := c.GetEntity(ctx, pk, rk, nil)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(resp.Value, &m))
	var list []string
	must(t, json.Unmarshal([]byte(mfStr(m, prop)), &list))
	list = append(list, member)
	slices.Sort(list)
	l, err := json.Marshal(list)
	must(t, err)
	b, err := json.Marshal(map[string]any{"PartitionKey": pk, "RowKey": rk, prop: string(l)})
	must(t, err)
	_, err = c.UpdateEntity(ctx, b, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &resp.ETag})
	must(t, err)
}

// mfMembers returns the members of a raw index entity's JSON list in
// property prop, duplicates kept.
func mfMembers(t *testing.T, m map[string]any, prop string) []string {
	t.Helper()
	var list []string
	must(t, json.Unmarshal([]byte(mfStr(m, prop)), &list))
	return list
}

// mfLost renders what Verify finds when the entries of the primaries of
// all that match have gone: each missing from index under its last name.
func mfLost(all []ixEmployee, match func(e ixEmployee) bool) []string {
	var out []string
	for _, e := range all {
		if match(e) {
			out = append(out, fmt.Sprintf("missing lastname %s %s/%s", e.LastName, e.PartitionKey, e.RowKey))
		}
	}
	return out
}

// mfTableOpts are the table options of every repository under faults, as
// faultyTable's.
func mfTableOpts(t testing.TB) *patterns.TableOptions {
	return tableOpts(t, &patterns.TableOptions{MaxAttempts: 100})
}

// mfIndexedTable: copies of the unique email index and the last name
// index in the primaries' partitions.
func mfIndexedTable(t *testing.T, acct *tablekit.Account, table string) mfRepo {
	x, err := patterns.NewIndexedTable(acct, table, []patterns.Index[ixEmployee]{ixEmailIndex(), ixLastNameIndex()},
		&patterns.IndexedTableOptions{Primary: "empid", Table: mfTableOpts(t)})
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	c := x.Table().Client()
	return mfRepo{
		maintainable: x,
		entries: func(t *testing.T) []string {
			var out []string
			for _, m := range mfRaw(t, c) {
				pk, rk, prk := mfStr(m, "PartitionKey"), mfStr(m, "RowKey"), mfStr(m, patterns.PropPrimaryRowKey)
				if prk != "" && prk != rk {
					out = append(out, rk+" "+pk+"/"+prk)
				}
			}
			return out
		},
		want: func(e ixEmployee) []string {
			at := " " + e.PartitionKey + "/" + e.RowKey
			return []string{"email_" + e.Email + at, "lastname_" + keys.Join(e.LastName, e.RowKey) + at}
		},
		lose: func(t *testing.T, e ixEmployee, _ []ixEmployee) []string {
			mfDelete(t, c, e.PartitionKey, "email_"+e.Email)
			return []string{fmt.Sprintf("missing email %s %s/%s", e.Email, e.PartitionKey, e.RowKey)}
		},
		stray: func(t *testing.T, e ixEmployee) []string {
			mfAdd(t, c, map[string]any{"PartitionKey": e.PartitionKey, "RowKey": "lastname_" + keys.Join(e.LastName, mfGhost),
				patterns.PropPrimaryRowKey: mfGhost, "LastName": e.LastName})
			return []string{fmt.Sprintf("orphan lastname %s %s/%s", e.LastName, e.PartitionKey, mfGhost)}
		},
	}
}

// mfEventualIndexedTable: copies of the unique email index in partitions
// "email_" + department of the primaries' table, and of the unique
// employee id index in another table.
func mfEventualIndexedTable(t *testing.T, acct *tablekit.Account, table string) mfRepo {
	q, _ := testQueue(t, acct)
	idTable := testenv.TableName(t)
	x, err := patterns.NewEventualIndexedTable(acct, table, q, []patterns.Index[ixEmployee]{
		{Name: "email", Unique: true, Key: func(e *ixEmployee) string { return e.Email }, Props: []string{"EmployeeID", "FirstName", "LastName", "Email"}},
		{Name: "empid", Unique: true, Key: func(e *ixEmployee) string { return e.EmployeeID }, Table: idTable},
	}, &patterns.EventualIndexedTableOptions{Table: mfTableOpts(t)})
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	c, ids := x.Table().Client(), acct.Tables().NewClient(idTable)
	return mfRepo{
		maintainable: x,
		entries: func(t *testing.T) []string {
			var out []string
			for _, m := range append(mfRaw(t, c), mfRaw(t, ids)...) {
				pk, rk := mfStr(m, "PartitionKey"), mfStr(m, "RowKey")
				ppk, prk := mfStr(m, patterns.PropPrimaryPartitionKey), mfStr(m, patterns.PropPrimaryRowKey)
				if prk != "" && (ppk != pk || prk != rk) {
					out = append(out, pk+" "+rk+" "+ppk+"/"+prk)
				}
			}
			return out
		},
		want: func(e ixEmployee) []string {
			at := " " + e.PartitionKey + "/" + e.RowKey
			return []string{"email_" + e.PartitionKey + " " + e.Email + at, "empid_" + e.PartitionKey + " " + e.EmployeeID + at}
		},
		lose: func(t *testing.T, e ixEmployee, _ []ixEmployee) []string {
			mfDelete(t, c, "email_"+e.PartitionKey, e.Email)
			return []string{fmt.Sprintf("missing email %s %s/%s", e.Email, e.PartitionKey, e.RowKey)}
		},
		stray: func(t *testing.T, e ixEmployee) []string {
			email := "ghost@" + e.PartitionKey + ".contoso.com"
			mfAdd(t, c, map[string]any{"PartitionKey": "email_" + e.PartitionKey, "RowKey": email, "Email": email,
				patterns.PropPrimaryPartitionKey: e.PartitionKey, patterns.PropPrimaryRowKey: mfGhost})
			return []string{fmt.Sprintf("orphan email %s %s/%s", email, e.PartitionKey, mfGhost)}
		},
	}
}

// mfListIndexedTable: an index entity per department and last name, in
// the department's partition.
func mfListIndexedTable(t *testing.T, acct *tablekit.Account, table string) mfRepo {
	ix := lastNameList()
	x, err := patterns.NewListIndexedTable(acct, table, ix, &patterns.ListIndexedTableOptions{Table: mfTableOpts(t)})
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	c := x.Table().Client()
	return mfRepo{
		maintainable: x,
		entries: func(t *testing.T) []string {
			var out []string
			for _, m := range mfRaw(t, c) {
				if _, ok := m[ix.Property]; !ok {
					continue
				}
				for _, member := range mfMembers(t, m, ix.Property) {
					out = append(out, mfStr(m, "RowKey")+" "+mfStr(m, "PartitionKey")+"/"+member)
				}
			}
			return out
		},
		want: func(e ixEmployee) []string { return []string{e.LastName + " " + e.PartitionKey + "/" + e.RowKey} },
		lose: func(t *testing.T, e ixEmployee, all []ixEmployee) []string {
			mfDelete(t, c, e.PartitionKey, e.LastName)
			return mfLost(all, func(o ixEmployee) bool { return o.PartitionKey == e.PartitionKey && o.LastName == e.LastName })
		},
		stray: func(t *testing.T, e ixEmployee) []string {
			mfAppend(t, c, e.PartitionKey, e.LastName, ix.Property, mfGhost)
			return []string{fmt.Sprintf("orphan lastname %s %s/%s", e.LastName, e.PartitionKey, mfGhost)}
		},
	}
}

// mfBlobIndexedTable: a blob per last name, across departments.
func mfBlobIndexedTable(t *testing.T, acct *tablekit.Account, table string) mfRepo {
	container := testenv.ContainerName(t)
	x, err := patterns.NewBlobIndexedTable(acct, table, container, lastNameList(), &patterns.BlobIndexedTableOptions{Table: mfTableOpts(t)})
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	blobs := acct.Blobs()
	read := func(t *testing.T, name string) []patterns.Member {
		t.Helper()
		resp, err := blobs.DownloadStream(context.Background(), container, name, nil)
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		var list []patterns.Member
		must(t, json.Unmarshal(b, &list))
		return list
	}
	return mfRepo{
		maintainable: x,
		entries: func(t *testing.T) []string {
			var out []string
			prefix := x.BlobName("")
			pager := blobs.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Prefix: &prefix})
			for pager.More() {
				page, err := pager.NextPage(context.Background())
				must(t, err)
				for _, b := range page.Segment.BlobItems {
					for _, m := range read(t, *b.Name) {
						out = append(out, strings.TrimPrefix(*b.Name, prefix)+" "+m.PartitionKey+"/"+m.RowKey)
					}
				}
			}
			return out
		},
		want: func(e ixEmployee) []string { return []string{e.LastName + " " + e.PartitionKey + "/" + e.RowKey} },
		lose: func(t *testing.T, e ixEmployee, all []ixEmployee) []string {
			_, err := blobs.DeleteBlob(context.Background(), container, x.BlobName(e.LastName), nil)
			must(t, err)
			return mfLost(all, func(o ixEmployee) bool { return o.LastName == e.LastName })
		},
		stray: func(t *testing.T, e ixEmployee) []string {
			list := append(read(t, x.BlobName(e.LastName)), patterns.Member{PartitionKey: e.PartitionKey, RowKey: mfGhost})
			slices.SortFunc(list, func(a, b patterns.Member) int {
				return strings.Compare(a.PartitionKey+"\x00"+a.RowKey, b.PartitionKey+"\x00"+b.RowKey)
			})
			body, err := json.Marshal(list)
			must(t, err)
			_, err = blobs.UploadBuffer(context.Background(), container, x.BlobName(e.LastName), body, nil)
			must(t, err)
			return []string{fmt.Sprintf("orphan lastname %s %s/%s", e.LastName, e.PartitionKey, mfGhost)}
		},
	}
}

// mfEventualListIndexedTable: an index entity per last name, across
// departments, in partition "lastname" of another table.
func mfEventualListIndexedTable(t *testing.T, acct *tablekit.Account, table string) mfRepo {
	q, _ := testQueue(t, acct)
	ix := lastNameList()
	ix.Table = testenv.TableName(t)
	x, err := patterns.NewEventualListIndexedTable(acct, table, q, ix, &patterns.EventualIndexedTableOptions{Table: mfTableOpts(t)})
	must(t, err)
	must(t, x.CreateIfNotExists(context.Background(), nil))
	c := acct.Tables().NewClient(ix.Table)
	return mfRepo{
		maintainable: x,
		entries: func(t *testing.T) []string {
			var out []string
			for _, m := range mfRaw(t, c) {
				for _, member := range mfMembers(t, m, ix.Property) {
					parts, err := keys.Split(member)
					if err != nil || len(parts) != 2 {
						t.Fatalf("index entity %s lists %q, not a joined PartitionKey and RowKey", mfStr(m, "RowKey"), member)
					}
					out = append(out, mfStr(m, "RowKey")+" "+parts[0]+"/"+parts[1])
				}
			}
			return out
		},
		want: func(e ixEmployee) []string { return []string{e.LastName + " " + e.PartitionKey + "/" + e.RowKey} },
		lose: func(t *testing.T, e ixEmployee, all []ixEmployee) []string {
			mfDelete(t, c, ix.Name, e.LastName)
			return mfLost(all, func(o ixEmployee) bool { return o.LastName == e.LastName })
		},
		stray: func(t *testing.T, e ixEmployee) []string {
			mfAppend(t, c, ix.Name, e.LastName, ix.Property, keys.Join(e.PartitionKey, mfGhost))
			return []string{fmt.Sprintf("orphan lastname %s %s/%s", e.LastName, e.PartitionKey, mfGhost)}
		},
	}
}

// A maintenance write whose answer is lost and that the transport cannot
// settle on its own (a transaction or merge conditional on a primary's
// ETag as scanned, which the write itself changed) is settled by reading
// its entities back: Rebuild returns nil and the index is right, where it
// used to fail with tablekit.ErrOutcomeUnknown. Each case loses the answer
// of one chosen request; Parallelism 1 fixes the order of the requests.
func TestMaintenanceSettlesALostAnswer(t *testing.T) {
	t.Parallel()
	batch := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/$batch")
	}
	for _, c := range []struct {
		name string
		open func(*testing.T, *tablekit.Account, string) mfRepo
		lose func(table string) func(*http.Request) bool // the request whose answer is lost
	}{
		// The first partition's transaction: its primaries' merges,
		// conditional on their ETags, and their copies.
		{"IndexedTable", mfIndexedTable, func(string) func(*http.Request) bool { return mfNth(1, batch) }},
		// The first partition's primaries' merges, conditional on their
		// ETags, after the transactions writing their copies to the two
		// index partitions.
		{"EventualIndexedTable", mfEventualIndexedTable, func(string) func(*http.Request) bool { return mfNth(3, batch) }},
		// The merge, conditional on its ETag, recording the first
		// entity's value.
		{"EventualListIndexedTable", mfEventualListIndexedTable, func(table string) func(*http.Request) bool {
			return mfNth(1, func(r *http.Request) bool { return r.Method == "MERGE" && strings.Contains(r.URL.Path, "/"+table+"(") })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			table := testenv.TableName(t)
			fp, err := faults.New(1, faults.Rule{Kind: faults.Status500, Rate: 1, After: true, Match: c.lose(table)})
			must(t, err)
			acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
				Retry: fastFaultRetry, PerRetryPolicies: []policy.Policy{fp},
			}})
			fp.SetEnabled(false)
			x := c.open(t, acct, table)
			rows := mfRows(40)
			_, err = x.Table().BulkWrite(ctx, rows, nil)
			must(t, err)
			fp.SetEnabled(true)
			if err := x.Rebuild(ctx, &patterns.MaintenanceOptions{ScanParallel: 1, Parallelism: 1}); err != nil {
				t.Fatalf("Rebuild with a lost answer: %v", err)
			}
			if fp.Injected() != 1 {
				t.Fatalf("%d answers lost, want 1", fp.Injected())
			}
			var want []string
			for _, e := range rows {
				want = append(want, x.want(e)...)
			}
			slices.Sort(want)
			got := x.entries(t)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("after Rebuild the index holds %d entries, want %d: %s", len(got), len(want), mfDiff(got, want))
			}
			rep, err := x.Verify(ctx, nil)
			must(t, err)
			if !rep.OK() {
				t.Errorf("Verify after Rebuild found:\n%s", mtEntries(rep.Entries))
			}
		})
	}
}

// mfNth returns a fault rule's Match that is true for the n-th request
// (1-based) match accepts, and only for it.
func mfNth(n int, match func(*http.Request) bool) func(*http.Request) bool {
	var seen atomic.Int64
	return func(r *http.Request) bool {
		return match(r) && seen.Add(1) == int64(n)
	}
}

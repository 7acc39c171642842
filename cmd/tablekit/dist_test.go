package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tablecopy"
	"github.com/tablekit/tablekit/tools/testenv"
)

// workerBinary builds tablekit-worker once per test binary (with the race
// detector under go test -race).
func workerBinary(t *testing.T) string {
	t.Helper()
	return testenv.Command(t, "../tablekit-worker")
}

// workerProc is a running tablekit-worker, with what its log says.
type workerProc struct {
	cmd    *exec.Cmd
	done   chan error
	mu     sync.Mutex
	log    strings.Builder
	open   int           // ranges started and not yet done, by its log
	opened chan struct{} // closed and replaced at each "range started"
}

// startWorker starts a tablekit-worker on queue, with more flags.
func startWorker(t *testing.T, queue string, more ...string) *workerProc {
	t.Helper()
	return startWorkerOn(t, testenv.ConnectionString(t), queue, more...)
}

// startWorkerOn starts a tablekit-worker on queue in the account of
// conn, with more flags (a flag given again wins).
func startWorkerOn(t *testing.T, conn, queue string, more ...string) *workerProc {
	t.Helper()
	args := append([]string{"run", "--queue", queue, "--concurrency", "3", "--visibility", "2s", "--poll", "50ms",
		"--until-empty", "--metrics-addr", "", "--depth-interval", "0", "--log-format", "json"}, more...)
	cmd := exec.Command(workerBinary(t), args...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProc{cmd: cmd, done: make(chan error, 1), opened: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			switch {
			case strings.Contains(line, `"range started"`):
				p.open++
				close(p.opened)
				p.opened = make(chan struct{})
			case p.open > 0 && (strings.Contains(line, `"range done"`) || strings.Contains(line, `"transaction failed`) ||
				strings.Contains(line, `"transaction poisoned"`)):
				p.open--
			}
			p.mu.Unlock()
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	return p
}

func (p *workerProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// A distributed copy (--insert) and a distributed backup of 3,000
// entities, drained by three tablekit-worker processes, one of them
// SIGKILLed while it holds ranges: the job still completes, the copy
// holds every entity exactly once (an entity written twice with --insert
// would fail its range) and verifies, the backup's manifest covers every
// range with each entity once and verifies, and a killed range was taken
// again from its checkpoint. A third job, whose --insert meets an entity
// that differs in the target, fails: job status and watch exit 1 naming
// the range.
func TestDistributedJobsSurviveAKilledWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// An emulator of the test's own, whose clock the test moves past the
	// killed worker's visibility timeout.
	conn, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, conn, nil)
	src := rowsNamed(t, acct, testenv.TableName(t))
	if err := src.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	es := fillRows(t, src, 3000, 30)
	dst := rowsNamed(t, acct, src.Name()+"c")
	bad := rowsNamed(t, acct, src.Name()+"x")
	ck := src.Name() + "ck"
	rowsNamed(t, acct, ck)
	queue := testenv.QueueName(t)
	to := "blob://" + testenv.ContainerName(t) + "/dist"

	// The target of the failing job holds one of the entities, changed.
	changed := es[1234]
	changed.Properties = map[string]entity.Value{"Other": entity.String("not the source's")}
	if err := bad.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := bad.Insert(ctx, &changed, nil); err != nil {
		t.Fatal(err)
	}

	r := mustRunOn(t, conn, "copy", src.Name(), dst.Name(), "--distributed", "--queue", queue, "--ranges", "8", "--parallel", "2", "--insert", "--checkpoint-table", ck, "--json")
	cref, _ := jsonSummary(t, r)["job"].(string)
	r = mustRunOn(t, conn, "backup", src.Name(), "--to", to, "--distributed", "--queue", queue, "--ranges", "8", "--parallel", "2", "--segment-size", "16KiB", "--json")
	bref, _ := jsonSummary(t, r)["job"].(string)
	r = mustRunOn(t, conn, "copy", src.Name(), bad.Name(), "--distributed", "--queue", queue, "--ranges", "4", "--insert", "--checkpoint-table", ck)
	xref := strings.Fields(r.stdout)[3]
	if !strings.HasPrefix(cref, "table://"+ck+"/") || bref != to || !strings.HasPrefix(xref, "table://") {
		t.Fatalf("job references %q, %q, %q", cref, bref, xref)
	}
	if r := runOn(t, conn, "", "job", "status", cref); r.code != 3 || !strings.Contains(r.stdout, "running, 0/") {
		t.Fatalf("job status before any worker: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	start := time.Now()
	// Within 30 ms of its first range: a worker that receives a batch now
	// runs its ranges back to back, and one make test ran both ranges it
	// had started to the end within the old 10 to 80 ms.
	killed, others := killOneOf(t, conn, clock.Pass, queue, 3, 0, 30*time.Millisecond)
	workers := append([]*workerProc{killed}, others...)
	for i, w := range others {
		select {
		case err := <-w.done:
			if err != nil {
				t.Fatalf("worker %d: %v\n%s", i+1, err, w.output())
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("worker %d did not drain the queue:\n%s", i+1, w.output())
		}
	}
	t.Logf("3 workers, one killed, drained 3 jobs in %v", time.Since(start).Round(time.Millisecond))

	r = mustRunOn(t, conn, "job", "watch", cref, "--verify", "--interval", "200ms")
	if !strings.Contains(r.stdout, "complete, ") || !strings.Contains(r.stdout, "verified "+src.Name()) {
		t.Fatalf("job watch --verify of the copy:\n%s%s", r.stdout, r.stderr)
	}
	sameAs(t, dst, es)

	r = mustRunOn(t, conn, "job", "watch", bref, "--verify", "--json")
	if s := jsonSummary(t, r); s["ok"] != true || s["state"] != "complete" {
		t.Fatalf("job watch --verify of the backup: %s\n%s", r.stdout, r.stderr)
	}
	l, err := tablecopy.ParseLocation(to, acct)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tablecopy.ReadManifest(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if tb := m.Tables[0]; tb.Entities != int64(len(es)) || tb.Keys.Count != int64(len(es)) {
		t.Fatalf("the backup holds %d entities and %d keys, want %d", tb.Entities, tb.Keys.Count, len(es))
	}
	mustRunOn(t, conn, "verify", "--from", to, src.Name())

	// The killed worker's ranges were taken again, from their checkpoints.
	retaken := 0
	for _, ref := range []string{cref, bref} {
		s, err := tablecopy.ReadJob(ctx, ref, acct, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rg := range s.Ranges {
			if rg.Attempts > 1 {
				retaken++
			}
		}
	}
	if retaken == 0 {
		t.Errorf("no range was taken again after the kill:\n%s", killed.output())
	}

	r = runOn(t, conn, "", "job", "status", xref)
	if r.code != 1 || !strings.Contains(r.stderr, "range ") || !strings.Contains(r.stderr, "exists in the target") {
		t.Fatalf("job status of the failing job: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = runOn(t, conn, "", "job", "watch", xref, "--interval", "100ms"); r.code != 1 {
		t.Fatalf("job watch of the failing job: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range workers {
		if out := w.output(); strings.Contains(out, "Eby8vdM02x") || strings.Contains(out, "AccountKey") {
			t.Errorf("a worker's log shows the account key")
		}
	}
}

// drain waits for the workers to empty their queue and exit 0.
func drain(t *testing.T, workers ...*workerProc) {
	t.Helper()
	for i, w := range workers {
		select {
		case err := <-w.done:
			if err != nil {
				t.Fatalf("worker %d: %v\n%s", i, err, w.output())
			}
		case <-time.After(120 * time.Second):
			t.Fatalf("worker %d did not drain the queue:\n%s", i, w.output())
		}
	}
}

// A distributed full backup into a local directory, then a distributed
// incremental one on it, each drained by two tablekit-worker processes
// sharing the directory: the chain restores the table as it is after
// the changes (3 keys deleted, 2 changed, 1 added), and verifies. A
// worker that was not given the directory (--job-dir) refuses its job.
// A distributed copy with --filter copies exactly the entities the
// filter matches, as the same copy on one machine does.
func TestDistributedIncrementalBackupToADirectoryAndAFilteredCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	src := newRows(t)
	es := fillRows(t, src, 1200, 12)
	queue := testenv.QueueName(t)
	dir := t.TempDir()
	full, inc, refused := filepath.Join(dir, "full"), filepath.Join(dir, "inc"), filepath.Join(dir, "refused")
	ck := src.Name() + "ck"
	rowsNamed(t, acct, ck)
	dst := rowsNamed(t, acct, src.Name()+"f")
	local := rowsNamed(t, acct, src.Name()+"l")
	restored := rowsNamed(t, acct, src.Name()+"r")
	const filter = "PartitionKey ge 'p06' and TkChunks eq 1"
	var want []entity.Entity
	for i, e := range es {
		if e.PartitionKey >= "p06" && i%4 == 1 {
			want = append(want, e)
		}
	}

	// A worker without --job-dir refuses a job into a directory.
	r := mustRun(t, "", "backup", src.Name(), "--to", refused, "--distributed", "--queue", queue+"x", "--ranges", "1", "--json")
	if ref, _ := jsonSummary(t, r)["job"].(string); ref != refused {
		t.Fatalf("job reference %q, want %q", ref, refused)
	}
	drain(t, startWorker(t, queue+"x", "--max-dequeue", "1"))
	if r := run(t, "", "job", "status", refused); r.code != 1 || !strings.Contains(r.stderr, "does not allow") {
		t.Fatalf("job status of a refused directory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	mustRun(t, "", "backup", src.Name(), "--to", full, "--distributed", "--queue", queue, "--ranges", "4", "--parallel", "2", "--segment-size", "16KiB")
	r = mustRun(t, "", "copy", src.Name(), dst.Name(), "--filter", filter, "--distributed", "--queue", queue, "--ranges", "4", "--insert", "--checkpoint-table", ck, "--json")
	cref, _ := jsonSummary(t, r)["job"].(string)
	drain(t, startWorker(t, queue, "--job-dir", dir), startWorker(t, queue, "--job-dir", dir))
	r = mustRun(t, "", "job", "watch", full, "--verify", "--json")
	if s := jsonSummary(t, r); s["state"] != "complete" || s["ok"] != true {
		t.Fatalf("job watch --verify of the full backup: %s\n%s", r.stdout, r.stderr)
	}
	fm, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(full))
	if err != nil {
		t.Fatal(err)
	}
	if rs := fm.Tables[0].Ranges; len(rs) < 2 || len(rs) > 4 || rs[0].From != (tablecopy.Key{}) || rs[len(rs)-1].To != nil {
		t.Fatalf("the full backup's ranges: %+v; want one per job range (2 to 4), from the table's start to its end", rs)
	}
	r = mustRun(t, "", "job", "watch", cref, "--verify")
	if !strings.Contains(r.stdout, "verified "+src.Name()) {
		t.Fatalf("job watch --verify of the filtered copy:\n%s%s", r.stdout, r.stderr)
	}
	sameAs(t, dst, want)
	r = mustRun(t, "", "copy", src.Name(), local.Name(), "--filter", filter, "--verify", "--checkpoint-table", ck, "--json")
	if s := jsonSummary(t, r); s["written"] != float64(len(want)) {
		t.Fatalf("copy --filter on one machine: %s", r.stdout)
	}
	sameAs(t, local, want)

	// The changes the incremental backup holds.
	final := slices.Clone(es[3:])
	for _, e := range es[:3] {
		if _, err := src.DeleteIfExists(ctx, e.PartitionKey, e.RowKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		final[i] = withTk(final[i].PartitionKey, final[i].RowKey, 5000+i)
	}
	final = append(final, withTk("p99", "new", 6000))
	if _, err := src.BulkWrite(ctx, append(final[:2:2], final[len(final)-1]), nil); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", "backup", src.Name(), "--to", inc, "--base", full, "--distributed", "--queue", queue, "--ranges", "4", "--json")
	if ref, _ := jsonSummary(t, r)["job"].(string); ref != inc {
		t.Fatalf("job reference %q, want %q", ref, inc)
	}
	drain(t, startWorker(t, queue, "--job-dir", dir), startWorker(t, queue, "--job-dir", dir))
	mustRun(t, "", "job", "watch", inc, "--verify")
	m, err := tablecopy.ReadManifest(ctx, tablecopy.Dir(inc))
	if err != nil {
		t.Fatal(err)
	}
	if tb := m.Tables[0]; m.Kind != tablecopy.KindIncremental || m.Base != "../full" || tb.Deleted == nil || tb.Deleted.Count != 3 || tb.Keys.Count != int64(len(final)) {
		t.Fatalf("incremental manifest: kind %s, base %q, table %+v", m.Kind, m.Base, tb)
	}
	mustRun(t, "", "restore", "--from", inc, "--to-table", restored.Name(), "--verify")
	sameAs(t, restored, final)
}

// On the emulator's scale model (Azure's targets and partition servers,
// at a fifth of Azure's rates), a distributed copy (--insert) of 4,000
// entities over 40 partitions, in 8 ranges of 200 to 800 (a reader of
// the model takes 400 entities a second: 0.5 to 2 s each; with 16, a
// range could end before the kill, now that a copy reads on while it
// writes), is taken by four tablekit-worker processes, one of them
// SIGKILLed in the middle of its range: the job completes, the target
// holds every entity exactly once (with --insert, an entity written twice
// fails its range, unless the resumed range found it identical first), it
// verifies, and the killed range was taken again from its checkpoint.
//
// The table is written and read back past the model (DirectTableURL):
// the copy on the model is what the test is about. Its partition keys
// spread over the key space ("00" to "ea"): the job's split found 2,000
// entities for its first range and 1,000 for its second among keys that
// share a prefix ("p00" to "p39"), and their serial reads held the test
// for 10 s.
func TestDistributedCopyOnTheScaleModelSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	em := emulator.StartTB(t, &emulator.Options{Scale: &emulator.ScaleOptions{Scale: 0.2}})
	acct, err := tablekit.Connect(em.ConnectionString, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := tablekit.NewAccountWithSharedKey(em.AccountName, em.AccountKey, tablekit.Endpoints{Table: em.DirectTableURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	directConn := strings.Replace(em.ConnectionString, "TableEndpoint="+em.TableURL+";", "TableEndpoint="+em.DirectTableURL+";", 1)
	if directConn == em.ConnectionString {
		t.Fatalf("no TableEndpoint=%s; in %q", em.TableURL, em.ConnectionString)
	}
	src := rowsNamed(t, direct, "ModelSource")
	if err := src.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	es := make([]entity.Entity, 4000)
	for i := range es {
		es[i] = withTk(fmt.Sprintf("%02x", i%40*6), fmt.Sprintf("r%05d", i), i)
	}
	if _, err := src.BulkWrite(ctx, es, &patterns.BulkOptions{Concurrency: 16}); err != nil {
		t.Fatal(err)
	}
	dst := rowsNamed(t, acct, "ModelTarget")
	queue := "model-copy"
	r := runOn(t, em.ConnectionString, "", "copy", src.Name(), dst.Name(), "--distributed", "--queue", queue, "--ranges", "8", "--parallel", "1", "--insert", "--json")
	if r.code != 0 {
		t.Fatalf("copy --distributed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ref, _ := jsonSummary(t, r)["job"].(string)

	start := time.Now()
	killed, others := killOneOf(t, em.ConnectionString, em.Advance, queue, 4, 10*time.Millisecond, 70*time.Millisecond, "--concurrency", "1")
	drain(t, others...)
	t.Logf("4 workers, one killed, copied %d entities in %v on the model; %+v", len(es), time.Since(start).Round(time.Millisecond), em.Stats())

	r = runOn(t, directConn, "", "job", "watch", ref, "--verify", "--parallel", "1", "--interval", "200ms")
	if r.code != 0 || !strings.Contains(r.stdout, "verified "+src.Name()) {
		t.Fatalf("job watch --verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sameAs(t, rowsNamed(t, direct, dst.Name()), es)
	s, err := tablecopy.ReadJob(ctx, ref, acct, nil)
	if err != nil {
		t.Fatal(err)
	}
	retaken := 0
	for _, rg := range s.Ranges {
		if rg.Attempts > 1 {
			retaken++
			if rg.Skipped+rg.Entities < 1 {
				t.Errorf("range %d, taken again, counts nothing written", rg.Index)
			}
		}
	}
	if retaken == 0 {
		t.Errorf("no range was taken again after the kill:\n%s", killed.output())
	}
}

// victimVisibility is the visibility timeout of the worker a test kills.
// Once it is killed, the test lets that much go by on the service's clock
// (killOneOf), so that the messages it held are delivered to the others
// at once; the others hold theirs for 30 s, which that leaves with them.
const victimVisibility = time.Second

// killOneOf starts n tablekit-worker processes on queue in the account of
// conn (with more flags) and SIGKILLs one of them inside a range. The
// victim starts first, alone, with victimVisibility; once its log shows
// a range started the others start, with a visibility timeout of 30 s,
// and the victim is killed after at least after and up to spread more
// (killInRange), and must have died of it. Then pass lets
// victimVisibility (and a margin) go by on the service's clock
// (testenv.Clock.Pass, or emulator.Instance.Advance), so that the
// messages the victim held are visible again at once instead of after a
// real wait. It returns the victim and the others.
func killOneOf(t *testing.T, conn string, pass func(time.Duration), queue string, n int, after, spread time.Duration, more ...string) (*workerProc, []*workerProc) {
	t.Helper()
	victim := startWorkerOn(t, conn, queue, append(slices.Clone(more), "--visibility", victimVisibility.String())...)
	firstToOpen(t, []*workerProc{victim}, 60*time.Second)
	var others []*workerProc
	for range n - 1 {
		others = append(others, startWorkerOn(t, conn, queue, append(slices.Clone(more), "--visibility", "30s")...))
	}
	killInRange(t, victim, after, spread)
	// Moving the clock would hand a live victim's ranges to the others
	// too: the test is of a killed one.
	select {
	case <-victim.done:
		if ps := victim.cmd.ProcessState; ps == nil || ps.Exited() {
			t.Fatalf("the victim was not killed: it exited (%v)\n%s", ps, victim.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the victim still runs 30 s after its SIGKILL:\n%s", victim.output())
	}
	pass(victimVisibility + 100*time.Millisecond)
	return victim, others
}

// firstToOpen returns the first of workers whose log shows a range
// started, and the others: a worker that receives a batch of messages may
// take every range before the others receive any, so the one to kill is
// one that has work.
func firstToOpen(t *testing.T, workers []*workerProc, timeout time.Duration) (*workerProc, []*workerProc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, w := range workers {
			w.mu.Lock()
			open := w.open
			w.mu.Unlock()
			if open > 0 {
				others := append(append([]*workerProc(nil), workers[:i]...), workers[i+1:]...)
				return w, others
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	var logs strings.Builder
	for i, w := range workers {
		fmt.Fprintf(&logs, "worker %d:\n%s\n", i, w.output())
	}
	t.Fatalf("no worker started a range in %v:\n%s", timeout, logs.String())
	return nil, nil
}

// killInRange SIGKILLs w once it has started a range, after at least
// after and up to spread more (at random), while its log shows a range
// open: a range that ended, its state written as done, before its "range
// done" line is not taken again. A quiet machine ran the first test's
// ranges in 180 to 230 ms, so the tests kill in the first 80 ms; should
// every range the log shows have ended even so, the kill waits for the
// worker's next range.
func killInRange(t *testing.T, w *workerProc, after, spread time.Duration) {
	t.Helper()
	waitOpen := func(timeout time.Duration, what string) {
		for {
			w.mu.Lock()
			open, opened := w.open, w.opened
			w.mu.Unlock()
			if open > 0 {
				return
			}
			select {
			case <-opened:
			case <-time.After(timeout):
				t.Fatalf("%s:\n%s", what, w.output())
			}
		}
	}
	waitOpen(60*time.Second, "the worker started no range in 60 s")
	time.Sleep(after + rand.N(spread))
	waitOpen(30*time.Second, "the worker held no range for 30 s after its first")
	_ = w.cmd.Process.Kill()
}

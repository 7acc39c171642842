package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestMain is tablekit-worker when the tests run it (binary); else it
// starts the one build of the command the tests need (TestVersion's) in
// the background, and runs them.
func TestMain(m *testing.M) {
	if testenv.RunsAs("tablekit-worker") {
		main()
	}
	testenv.Prebuild(".")
	testenv.Main(m)
}

// binary is tablekit-worker: this test binary, which is the command when
// run under that name (testenv.Self), race-built under go test -race.
// Built, the command took 1.5 to 4 s of the package's 3 to 4.4 before its
// first test could start it; TestVersion, which reads the build
// information of the command go build makes, builds it (builtBinary).
func binary(t *testing.T) string {
	t.Helper()
	return testenv.Self(t, "tablekit-worker")
}

// builtBinary is the command as go build makes it (with the race
// detector under go test -race), built once per test binary, in the
// background from the start (TestMain).
func builtBinary(t *testing.T) string {
	t.Helper()
	return testenv.Command(t, ".")
}

// proc is a running tablekit-worker whose JSON log lines are collected.
type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []map[string]any
	seen  chan struct{} // signalled on each line
	done  chan struct{} // closed when stderr ends
}

func workerEnv(t *testing.T) []string {
	return append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+testenv.ConnectionString(t))
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, workerEnv(t), args...)
}

// startEnv is start with the given environment.
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, seen: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": sc.Text()}
			}
			p.mu.Lock()
			p.lines = append(p.lines, m)
			p.mu.Unlock()
			select {
			case p.seen <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
			_ = cmd.Wait()
		}
	})
	return p
}

// waitLine waits for a log line satisfying match.
func (p *proc) waitLine(t *testing.T, timeout time.Duration, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if match(l) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-p.seen:
		case <-p.done:
			t.Fatalf("worker exited before %s; log:\n%s", what, p.log())
		case <-deadline:
			t.Fatalf("timed out waiting for %s; log:\n%s", what, p.log())
		}
	}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// stop sends SIGTERM and expects a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("worker exit after SIGTERM: %v; log:\n%s", err, p.log())
	}
}

// runCLI runs a short command and returns its stdout.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = workerEnv(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	out := runCLI(t, "--help")
	for _, cmd := range commands(&config{}) {
		if !strings.Contains(out, "tablekit-worker "+cmd.name) {
			t.Errorf("--help does not show the command %q", cmd.name)
		}
		cmd.fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "  --"+f.Name+" ") && !strings.Contains(out, "  --"+f.Name+"\n") {
				t.Errorf("--help does not document --%s of %q", f.Name, cmd.name)
			}
			if !strings.Contains(out, f.Usage) {
				t.Errorf("--help lacks the description of --%s", f.Name)
			}
		})
	}
	for _, s := range []string{"AZURE_STORAGE_CONNECTION_STRING", "DefaultAzureCredential", "SIGTERM", "/metrics", "/healthz", "/livez", "/readyz", "--until-empty", "-poison"} {
		if !strings.Contains(out, s) {
			t.Errorf("--help does not mention %s", s)
		}
	}
	// Each command's --help is its own: its usage line, its flags and
	// those every command takes, not another command's.
	for _, cmd := range commands(&config{}) {
		sub := runCLI(t, append(strings.Fields(cmd.name), "--help")...)
		if !strings.HasPrefix(sub, "Usage: tablekit-worker "+cmd.name+" --queue NAME") {
			t.Errorf("%s --help begins %.80q", cmd.name, sub)
		}
		cmd.fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(sub, "  --"+f.Name) {
				t.Errorf("%s --help does not document --%s", cmd.name, f.Name)
			}
		})
		if cmd.name != "run" && strings.Contains(sub, "--until-empty") {
			t.Errorf("%s --help documents run's --until-empty", cmd.name)
		}
		if via := runCLI(t, append([]string{"help"}, strings.Fields(cmd.name)...)...); via != sub {
			t.Errorf("help %s differs from %s --help", cmd.name, cmd.name)
		}
	}
	if sub := runCLI(t, "poison", "--help"); !strings.Contains(sub, "tablekit-worker poison list\n") || !strings.Contains(sub, "tablekit-worker poison requeue\n") {
		t.Errorf("poison --help: %q; want the group's two commands", sub)
	}
	// Settings are flags; the only TABLEKIT_ variable is a secret's.
	if names := regexp.MustCompile(`TABLEKIT_[A-Z_]+`).FindAllString(out, -1); len(slices.Compact(slices.Sorted(slices.Values(names)))) != 1 || names[0] != envDestConnectionString {
		t.Errorf("--help names the variables %v, want only %s", names, envDestConnectionString)
	}
	for _, bad := range [][]string{{"frobnicate"}, {"help", "frobnicate"}, {"run"}, {"run", "--queue", "q1", "--no-such-flag"}, {"run", "-queue", "q1", "-concurrency", "x"}, {"enqueue", "--queue", "q1"}} {
		cmd := exec.Command(binary(t), bad...)
		cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true")
		msg, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("%v: exit %v, want usage error 2", bad, err)
		}
		if len(bad) == 1 && bad[0] == "run" && !strings.Contains(string(msg), "--queue is required") {
			t.Errorf("run without --queue: %q, want --queue is required", msg)
		}
		// Flags are written with two dashes, as --help writes them, however
		// they were given.
		for _, flagName := range []string{"no-such-flag", "concurrency"} {
			if slices.Contains(bad, "--"+flagName) || slices.Contains(bad, "-"+flagName) {
				if !strings.Contains(string(msg), " --"+flagName+":") && !strings.Contains(string(msg), " --"+flagName+";") {
					t.Errorf("%v: %q does not name --%s with two dashes", bad, msg, flagName)
				}
			}
		}
	}
}

func createTable(t *testing.T, acct *tablekit.Account) string {
	t.Helper()
	name := testenv.TableName(t)
	if _, err := acct.Tables().CreateTable(context.Background(), name, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

func queueName(t *testing.T) string {
	name := testenv.QueueName(t)
	t.Cleanup(func() {
		_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(name), nil)
	})
	return name
}

func count(t *testing.T, acct *tablekit.Account, table string) int {
	t.Helper()
	n := 0
	pager := acct.Tables().NewClient(table).NewListEntitiesPager(&aztables.ListEntitiesOptions{Select: to.Ptr("RowKey")})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	return n
}

// entityJSON reads an entity with full metadata, without the service's
// metadata; nil when it does not exist.
func entityJSON(t *testing.T, acct *tablekit.Account, table, pk, rk string) map[string]any {
	t.Helper()
	resp, err := acct.Tables().NewClient(table).GetEntity(context.Background(), pk, rk, &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatFull)})
	if err != nil {
		if tablekit.IsNotFound(tablekit.MapError(err, "", "")) {
			return nil
		}
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(resp.Value, &m)
	for k := range m {
		if strings.HasPrefix(k, "odata.") || strings.HasPrefix(k, "Timestamp") {
			delete(m, k)
		}
	}
	return m
}

// TestCrashBetweenStepsAndRestart kills a worker with SIGKILL in the middle
// of a 60-step archive transaction; a restarted worker finishes it, the
// message is not lost, and every employee ends in Archive exactly as it
// was in Current. The killed worker's visibility timeout passes on the
// test's clock (real time on Azurite or an account).
func TestCrashBetweenStepsAndRestart(t *testing.T) {
	cs, clock := testenv.ClockConnectionString(t)
	acct := testenv.AccountOn(t, cs, nil)
	env := append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+cs)
	ctx := context.Background()
	current, archive := createTable(t, acct), createTable(t, acct)
	qname := queueName(t)
	const n = 60
	want := map[string]map[string]any{}
	tx := consistency.NewTransaction()
	for i := range n {
		rk := "emp" + strconv.Itoa(1000+i)
		e := map[string]any{"PartitionKey": "Sales", "RowKey": rk, "Name": "E" + strconv.Itoa(i), "Salary": 1000.5, "Salary@odata.type": "Edm.Double",
			"Badge": "9007199254740993", "Badge@odata.type": "Edm.Int64"}
		b, _ := json.Marshal(e)
		if _, err := acct.Tables().NewClient(current).AddEntity(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
		want[rk] = entityJSON(t, acct, current, "Sales", rk)
		tx.Add(consistency.MoveEntity(consistency.EntityRef{Table: current, PartitionKey: "Sales", RowKey: rk}, consistency.EntityRef{Table: archive}))
	}
	q, err := consistency.NewQueue(acct, qname, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--queue", qname, "--visibility", "2s", "--poll", "100ms", "--backoff", "0s", "--log-level", "debug", "--metrics-addr", ""}
	w1 := startEnv(t, env, args...)
	w1.waitLine(t, 30*time.Second, "step 2 applied", func(l map[string]any) bool {
		return l["msg"] == "step applied" && l["step"] == 2.0
	})
	if err := w1.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-w1.done
	_ = w1.cmd.Wait()

	moved := count(t, acct, archive)
	if moved == 0 || moved == n {
		t.Fatalf("killed with %d of %d employees archived; want a crash between steps", moved, n)
	}
	if left := count(t, acct, current); left+moved < n {
		t.Fatalf("after the crash %d in Current + %d in Archive < %d: an employee vanished", left, moved, n)
	}

	// The message comes back once the killed worker's hold on it, 2 s
	// at most, runs out.
	clock.Pass(2 * time.Second)
	w2 := startEnv(t, env, args...)
	done := w2.waitLine(t, 30*time.Second, "the transaction applied", func(l map[string]any) bool {
		return l["msg"] == "transaction applied"
	})
	if done["tx"] != tx.ID || done["dequeue_count"] != 2.0 {
		t.Errorf("applied %v on delivery %v; want %s on the 2nd", done["tx"], done["dequeue_count"], tx.ID)
	}
	w2.stop(t)

	if c := count(t, acct, current); c != 0 {
		t.Fatalf("%d employees left in Current", c)
	}
	if c := count(t, acct, archive); c != n {
		t.Fatalf("%d employees in Archive, want %d", c, n)
	}
	for rk, e := range want {
		if got := entityJSON(t, acct, archive, "Sales", rk); !reflect.DeepEqual(got, e) {
			t.Fatalf("archived %s = %v, want %v", rk, got, e)
		}
	}
	props, err := acct.Queues().NewQueueClient(qname).GetProperties(ctx, nil)
	if err != nil || *props.ApproximateMessagesCount != 0 {
		t.Fatalf("queue after recovery: %v %v", props.ApproximateMessagesCount, err)
	}
	if recs, _ := q.Poisoned(ctx, 10, nil); len(recs) != 0 {
		t.Fatalf("poisoned: %+v", recs)
	}
}

// TestPoisonListAndRequeueCLI: a transaction enqueued from a file fails
// permanently (its table does not exist), "poison list" shows it with its
// error, and after the table is created "poison requeue" brings it back
// and the worker applies it. The worker also serves /metrics and /healthz,
// and exits 0 on SIGTERM.
func TestPoisonListAndRequeueCLI(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	qname := queueName(t)
	table := testenv.TableName(t) // created later
	file := filepath.Join(t.TempDir(), "tx.json")
	body := `{"v":1,"id":"cli-tx-1","steps":[{"kind":"upsert-entity","args":{"table":"` + table + `","entity":{"PartitionKey":"p","RowKey":"r","N":"12345678901234","N@odata.type":"Edm.Int64"}}}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	w := start(t, "run", "--queue", qname, "--visibility", "2s", "--poll", "100ms", "--log-level", "debug", "--metrics-addr", "127.0.0.1:0")
	addr := w.waitLine(t, 30*time.Second, "the metrics address", func(l map[string]any) bool { return l["msg"] == "metrics listening" })["addr"].(string)
	w.waitLine(t, 30*time.Second, "the worker to start", func(l map[string]any) bool { return l["msg"] == "worker started" })
	var enq enqueueSummary
	if out := runCLI(t, "enqueue", "--queue", qname, "--json", file); json.Unmarshal([]byte(out), &enq) != nil || enq != (enqueueSummary{Command: "enqueue", OK: true, Queue: qname, ID: "cli-tx-1"}) {
		t.Fatalf("enqueue --json printed %q", out)
	}
	w.waitLine(t, 30*time.Second, "the poisoned transaction", func(l map[string]any) bool { return l["msg"] == "transaction poisoned" })

	out := runCLI(t, "poison", "list", "--queue", qname)
	if !strings.Contains(out, "tx=cli-tx-1") || !strings.Contains(out, "TableNotFound") || !strings.Contains(out, "permanent=true") || !strings.Contains(out, "1 poisoned message shown") {
		t.Fatalf("poison list:\n%s", out)
	}
	var rec consistency.PoisonRecord
	jsonOut := runCLI(t, "poison", "list", "--queue", qname, "--json")
	if err := json.Unmarshal([]byte(strings.TrimSpace(jsonOut)), &rec); err != nil || rec.TxID != "cli-tx-1" || rec.Message != body {
		t.Fatalf("poison list --json: %v %+v", err, rec)
	}

	if m := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(m, "tablekit_worker_poisoned_total 1\n") {
		t.Fatalf("/metrics:\n%s", m)
	}
	if h := httpGet(t, "http://"+addr+"/healthz"); h != "ok\n" {
		t.Fatalf("/healthz = %q", h)
	}

	if _, err := acct.Tables().CreateTable(ctx, table, nil); err != nil {
		t.Fatal(err)
	}
	var rq cliconn.RequeueSummary
	if out := runCLI(t, "poison", "requeue", "--queue", qname, "--id", "cli-tx-1", "--json"); json.Unmarshal([]byte(out), &rq) != nil || rq != (cliconn.RequeueSummary{Command: "poison requeue", OK: true, Queue: qname, Requeued: 1}) || strings.Count(out, "\n") != 1 {
		t.Fatalf("poison requeue --json: %s", out)
	}
	w.waitLine(t, 30*time.Second, "the requeued transaction", func(l map[string]any) bool { return l["msg"] == "transaction applied" })
	got := entityJSON(t, acct, table, "p", "r")
	if got["N"] != "12345678901234" || got["N@odata.type"] != "Edm.Int64" {
		t.Fatalf("entity %v", got)
	}
	if out := runCLI(t, "poison", "list", "--queue", qname); !strings.Contains(out, "0 poisoned messages") {
		t.Fatalf("poison list after requeue:\n%s", out)
	}
	w.stop(t)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	_, body := testenv.HTTPGet(t, url)
	return body
}

// queueSAS signs an account SAS for the queue service of the test account
// with key (the account's own key when key is "") and returns a connection
// string using it, and its signature.
func queueSAS(t *testing.T, key, permissions string) (connString, sig string) {
	t.Helper()
	acct := testenv.Account(t)
	qp := testenv.QueueSAS(t, key, permissions)
	return "QueueEndpoint=" + acct.QueueEndpoint() + ";BlobEndpoint=" + acct.BlobEndpoint() + ";TableEndpoint=" + acct.TableEndpoint() +
		";SharedAccessSignature=" + qp.Encode(), qp.Signature()
}

// showsSig reports whether out holds the signature, plain, URL-escaped or
// in part.
func showsSig(out, sig string) bool {
	for _, form := range []string{sig, url.QueryEscape(sig), sig[:12], url.QueryEscape(sig)[:12]} {
		if strings.Contains(out, form) {
			return true
		}
	}
	return false
}

// TestRunDoesNotPrintSAS: "run" with a read-only SAS or one signed with the
// wrong key fails to create its queues and exits 1, and with --create=false
// it logs every failed receive; stderr names the failure but never shows
// the signature.
func TestRunDoesNotPrintSAS(t *testing.T) {
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	wrongKey := base64.StdEncoding.EncodeToString(b)
	for _, tc := range []struct{ what, key, perms, want string }{
		{"read-only SAS", "", "rl", "AuthorizationPermissionMismatch"},
		{"SAS signed with a wrong key", wrongKey, "rwdlacup", "AuthenticationFailed"},
	} {
		cs, sig := queueSAS(t, tc.key, tc.perms)
		env := append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+cs)
		for _, format := range []string{"json", "text"} {
			cmd := exec.Command(binary(t), "run", "--queue", queueName(t), "--metrics-addr", "", "--log-format", format)
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("%s, --log-format %s: exit %v, want 1; stderr:\n%s", tc.what, format, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%s, --log-format %s: stderr does not say %s:\n%s", tc.what, format, tc.want, stderr.String())
			}
			if showsSig(stderr.String(), sig) {
				t.Errorf("%s, --log-format %s: stderr shows the SAS signature:\n%s", tc.what, format, stderr.String())
			}
		}
	}

	// Without --create the worker starts and logs its failed receives.
	cs, sig := queueSAS(t, wrongKey, "rwdlacup")
	p := startEnv(t, append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+cs),
		"run", "--queue", queueName(t), "--create=false", "--metrics-addr", "", "--poll", "100ms")
	l := p.waitLine(t, 30*time.Second, "a failed receive", func(l map[string]any) bool { return l["msg"] == "receive failed" })
	if e, _ := l["error"].(string); !strings.Contains(e, "AuthenticationFailed") {
		t.Errorf("receive failed with %q, want AuthenticationFailed", e)
	}
	p.stop(t)
	if out := p.log(); showsSig(out, sig) {
		t.Errorf("the worker's log shows the SAS signature:\n%s", out)
	}
}

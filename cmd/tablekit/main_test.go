package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// binary builds tablekit once per test binary (with the race detector
// under go test -race).
func binary(t *testing.T) string {
	t.Helper()
	return testenv.Command(t, ".")
}

// result is one run of the command.
type result struct {
	stdout, stderr string
	code           int
}

// run runs tablekit as a process on the test account, with stdin.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runOn(t, testenv.ConnectionString(t), stdin, args...)
}

// runOn runs tablekit as a process on the account of conn, with stdin.
func runOn(t *testing.T, conn, stdin string, args ...string) result {
	t.Helper()
	// Built before the command's two minutes start: the first build
	// compiles every dependency with -race, minutes on a loaded machine
	// with a cold cache, and was killed with the command.
	bin := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+conn)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("tablekit %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustRun runs tablekit and fails the test unless it exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("tablekit %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// mustRunOn runs tablekit on the account of conn, without stdin, and
// fails the test unless it exits 0.
func mustRunOn(t *testing.T, conn string, args ...string) result {
	t.Helper()
	r := runOn(t, conn, "", args...)
	if r.code != 0 {
		t.Fatalf("tablekit %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

func newRows(t *testing.T) *rows {
	t.Helper()
	tbl, err := patterns.NewTable[entity.Entity](testenv.Account(t), testenv.TableName(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// all reads every entity of tbl, in key order.
func all(t *testing.T, tbl *rows) []entity.Entity {
	t.Helper()
	es, err := patterns.Collect(tbl.Query(context.Background(), keys.Filter{}, &patterns.QueryOptions{SelectAll: true, AllowTableScan: true}))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestHelpShowsAnExampleForEveryCommand(t *testing.T) {
	a := &app{}
	var top bytes.Buffer
	if code := realMain(context.Background(), []string{"--help"}, nil, &top, &top); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, cmd := range a.commands() {
		if !strings.Contains(top.String(), "  "+cmd.name+" ") {
			t.Errorf("tablekit --help does not list %q:\n%s", cmd.name, top.String())
		}
		var out, errOut bytes.Buffer
		args := append(strings.Fields(cmd.name), "--help")
		if code := realMain(context.Background(), args, nil, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		help := out.String()
		if !strings.Contains(help, "Usage: tablekit "+cmd.name) || !strings.Contains(help, "Example:\n  tablekit "+cmd.name) {
			t.Errorf("%s shows no usage line or example:\n%s", strings.Join(args, " "), help)
		}
		// A command that connects lists the connection flags; one that
		// serves (emulator) takes none.
		if cmd.needConn != strings.Contains(help, "--connection-string") {
			t.Errorf("%s: connects %v, but its help lists the connection flags %v:\n%s", strings.Join(args, " "), cmd.needConn, !cmd.needConn, help)
		}
	}
}

// Mistakes on the command line exit 2 with a message, before any request
// (the connection string points at a closed port: a request would fail
// with exit 1).
func TestUsageErrorsExit2(t *testing.T) {
	conn := "--connection-string=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:1/devstoreaccount1"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, "unknown command"},
		{[]string{"query", "Tbl"}, "want arguments TABLE FILTER"},
		{[]string{"query", "Tbl", "PartitionKey eq 'a"}, "invalid filter"},
		{[]string{"query", "Tbl", "PartitionKey eq RowKey"}, "501 NotImplemented"},
		{[]string{"count", "Tbl", "PartitionKey eq 'a' and Age eq 5LL"}, "invalid filter"},
		{[]string{"query", "Tbl", "Age gt 3"}, "--allow-scan"},
		{[]string{"query", "Tbl", "PartitionKey eq 'a'", "--format", "xml"}, "want json or table"},
		{[]string{"count", "Tbl", "not (PartitionKey eq 'a')"}, "--allow-scan"},
		{[]string{"export", "Tbl", "RowKey eq 'a'"}, "--allow-scan"},
		{[]string{"delete", "Tbl"}, "--partition"},
		{[]string{"delete", "Tbl", "PartitionKey eq 'a'"}, "--yes"},
		{[]string{"delete", "Tbl", "Age gt 3", "--yes"}, "--allow-scan"},
		{[]string{"poison", "list"}, "--queue is required"},
		{[]string{"count", "no_such-table!"}, "table"},
		{[]string{"copy", "Tbl"}, "want arguments SRC DST"},
		{[]string{"copy", "Tbl", "Tbl2", "--parallel", "0"}, "--parallel 0"},
		{[]string{"copy", "Tbl", "no_such-table!"}, "table"},
		{[]string{"backup", "Tbl"}, "--to is required"},
		{[]string{"backup", "Tbl", "--to", "dir", "--since", "yesterday"}, "RFC 3339"},
		{[]string{"backup", "Tbl", "--to", "dir", "--since", "2024-06-01T00:00:00Z", "--base", "old"}, "not both"},
		{[]string{"backup", "Tbl", "--to", "dir", "--segment-size", "big"}, "--segment-size"},
		{[]string{"backup", "Tbl", "--to", "blob://Bad_Container/x"}, "container name"},
		{[]string{"backup", "Tbl", "Tbl", "--to", "dir"}, "given twice"},
		{[]string{"restore"}, "--from is required"},
		{[]string{"restore", "--from", "dir", "A", "B", "--to-table", "C"}, "--to-table"},
		{[]string{"verify"}, "--from is required"},
		{[]string{"verify", "--from", "dir", "--to-table", "C"}, "--to-table"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := realMain(context.Background(), append(c.args, conn), nil, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("tablekit %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errOut.String(), c.want)
		}
	}
}

func TestExportImportGivesIdenticalEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := newRows(t)
	var es []entity.Entity
	for i := 0; i < 1050; i++ { // more than a page
		es = append(es, testenv.EveryType(fmt.Sprintf("p%d", i%3), fmt.Sprintf("r%04d", i), i))
	}
	if _, err := src.BulkWrite(ctx, es, nil); err != nil {
		t.Fatal(err)
	}

	exp := mustRun(t, "", "export", src.Name())
	lines := strings.Split(strings.TrimSuffix(exp.stdout, "\n"), "\n")
	if len(lines) != len(es) || !strings.Contains(exp.stderr, fmt.Sprintf("exported %d entities", len(es))) {
		t.Fatalf("export wrote %d lines, stderr %q; want %d", len(lines), exp.stderr, len(es))
	}
	for _, ann := range []string{`"Int64@odata.type":"Edm.Int64","Int64":"9007199254740993"`, `"Whole@odata.type":"Edm.Double","Whole":3.0`, `"When@odata.type":"Edm.DateTime","When":"2024-02-29T23:59:59.1234567Z"`, `"Bin@odata.type":"Edm.Binary"`, `"ID@odata.type":"Edm.Guid"`} {
		if !strings.Contains(exp.stdout, ann) {
			t.Errorf("export does not write %s; first line:\n%s", ann, lines[0])
		}
	}

	dst := testenv.TableName(t) + "copy"
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, []byte(exp.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	imp := mustRun(t, "", "import", dst, file)
	if !strings.Contains(imp.stdout, fmt.Sprintf("imported %d entities into %s", len(es), dst)) || !strings.Contains(imp.stdout, "0 lines failed") {
		t.Fatalf("import: %q", imp.stdout)
	}
	dstTbl, err := patterns.NewTable[entity.Entity](testenv.Account(t), dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dstTbl.Drop(context.Background(), nil) })

	got, want := all(t, dstTbl), all(t, src)
	if len(got) != len(want) {
		t.Fatalf("copy holds %d entities, source %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.PartitionKey != g.PartitionKey || w.RowKey != g.RowKey || len(w.Properties) != len(g.Properties) {
			t.Fatalf("entity %d: copy (%q, %q) with %d properties, source (%q, %q) with %d", i, g.PartitionKey, g.RowKey, len(g.Properties), w.PartitionKey, w.RowKey, len(w.Properties))
		}
		for name, wv := range w.Properties {
			if gv := g.Properties[name]; !wv.Equal(gv) {
				t.Fatalf("entity (%q, %q) property %s: copy %v %#v, source %v %#v", w.PartitionKey, w.RowKey, name, gv.Type, gv.V, wv.Type, wv.V)
			}
		}
	}
	// And the copy equals what was written, so the source did not lose
	// anything either.
	if !want[0].Properties["Whole"].Equal(entity.Double(3)) || !want[0].Properties["Int64Max"].Equal(entity.Int64(math.MaxInt64)) {
		t.Fatalf("source entity 0: %+v", want[0].Properties)
	}
}

func TestImportReportsBadLinesAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	tbl := newRows(t)
	input := strings.Join([]string{
		`{"PartitionKey":"p","RowKey":"1","N":1}`,
		`{"PartitionKey":"p","RowKey":"2",`, // not JSON
		``,
		`{"PartitionKey":"p","N":3}`, // no RowKey
		`{"PartitionKey":"p","RowKey":"5","N@odata.type":"Edm.Int64","N":"5"}`,
		`{"PartitionKey":"p","RowKey":"1","N":6}`, // duplicate: insert fails
		`{"PartitionKey":"q","RowKey":"7","bad name":7}`,
		`{"PartitionKey":"q","RowKey":"8","N":8}`,
	}, "\n")
	r := run(t, input, "import", tbl.Name())
	if r.code != 1 {
		t.Fatalf("import with bad lines: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"line 2: ", "line 4: ", "line 6: ", "line 7: "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not report %q:\n%s", want, r.stderr)
		}
	}
	if regexp.MustCompile(`line (1|3|5|8):`).MatchString(r.stderr) {
		t.Errorf("stderr reports a good line:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "line 6: (PartitionKey \"p\", RowKey \"1\"): the keys of line 1 again") {
		t.Errorf("the repeated keys are not reported as such:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "imported 3 entities") || !strings.Contains(r.stdout, "4 lines failed") {
		t.Errorf("summary: %q", r.stdout)
	}
	got := all(t, tbl)
	if len(got) != 3 || got[0].RowKey != "1" || got[1].RowKey != "5" || got[2].RowKey != "8" {
		t.Fatalf("table holds %+v, want rows 1, 5 and 8", got)
	}
	if v := got[0].Properties["N"]; !v.Equal(entity.Int32(1)) {
		t.Errorf("row 1 was overwritten by the repeat: N = %v", v)
	}

	// An existing entity: insert refuses it, --upsert replaces it.
	again := `{"PartitionKey":"p","RowKey":"1","N":6}` + "\n"
	r = run(t, again, "import", tbl.Name())
	if r.code != 1 || !strings.Contains(r.stderr, "line 1: ") || !strings.Contains(r.stderr, "EntityAlreadyExists") || !strings.Contains(r.stdout, "imported 0 entities") {
		t.Fatalf("import of an existing entity: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = mustRun(t, again, "import", "--upsert", tbl.Name(), "-")
	if !strings.Contains(r.stdout, "imported 1 entity into") {
		t.Fatalf("import --upsert: %s", r.stdout)
	}
	if got = all(t, tbl); !got[0].Properties["N"].Equal(entity.Int32(6)) {
		t.Errorf("after --upsert row 1 has N = %v, want 6", got[0].Properties["N"])
	}
}

func TestQueryCountDeleteAndTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl := newRows(t)
	var es []entity.Entity
	for i := 0; i < 30; i++ {
		es = append(es, entity.Entity{PartitionKey: fmt.Sprintf("p%d", i%2), RowKey: fmt.Sprintf("%02d", i), Properties: map[string]entity.Value{
			"Age": entity.Int32(int32(i)), "Name": entity.String(fmt.Sprintf("name %d", i)),
		}})
	}
	if _, err := tbl.BulkWrite(ctx, es, nil); err != nil {
		t.Fatal(err)
	}
	name := tbl.Name()

	r := mustRun(t, "", "query", name, "PartitionKey eq 'p0' and Age lt 10", "--explain")
	if n := strings.Count(r.stdout, "\n"); n != 5 {
		t.Errorf("query printed %d lines, want 5:\n%s", n, r.stdout)
	}
	for _, want := range []string{"class:    partition scan", "pages:    1", "requests: 1", "returned: 5", "scanned:  15 (keys-only count of PartitionKey eq 'p0': 1 more requests)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--explain lacks %q:\n%s", want, r.stderr)
		}
	}
	r = mustRun(t, "", "query", "--explain", "--format", "table", "--top", "2", "--select", "Name, Age", name, "PartitionKey eq 'p1' and RowKey ge '05' and RowKey lt '13'")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !regexp.MustCompile(`^PartitionKey +RowKey +Timestamp +Age +Name$`).MatchString(lines[0]) || !regexp.MustCompile(`^p1 +05 +\S+ +5 +name 5$`).MatchString(lines[1]) {
		t.Errorf("--format table:\n%s", r.stdout)
	}
	if ageCol := strings.Index(lines[0], "Age"); ageCol < 0 || !strings.HasPrefix(lines[4][ageCol:], "11 ") {
		t.Errorf("columns are not aligned:\n%s", r.stdout)
	}
	for _, want := range []string{"class:    range query", "pages:    2", "requests: 2", "returned: 4", "scanned:  4 (the filter is its key conditions)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--explain lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := mustRun(t, "", "query", name, "Age ge 28", "--allow-scan"); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("table scan with --allow-scan printed:\n%s", r.stdout)
	}

	if r := mustRun(t, "", "count", name); strings.TrimSpace(r.stdout) != "30" {
		t.Errorf("count = %q, want 30", r.stdout)
	}
	if r := mustRun(t, "", "count", name, "PartitionKey eq 'p1' and Age gt 20"); strings.TrimSpace(r.stdout) != "5" {
		t.Errorf("count with a filter = %q, want 5", r.stdout)
	}
	// Azure's typing, as the emulator answers it: an Int64 literal is
	// widened for no Int32 property (a comparison of different types, le
	// true for all 15 of p1), an Int32 one is compared as such.
	for f, want := range map[string]string{
		"PartitionKey eq 'p1' and Age le 21L": "15",
		"PartitionKey eq 'p1' and Age le 21":  "11",
		"PartitionKey eq 'p1' and Age":        "0",
	} {
		if r := mustRun(t, "", "count", name, f); strings.TrimSpace(r.stdout) != want {
			t.Errorf("count %q = %q, want %s", f, r.stdout, want)
		}
	}

	if r := mustRun(t, "", "tables", name[:len(name)-2]); !strings.Contains(r.stdout, name+"\n") {
		t.Errorf("tables %s does not list %s:\n%s", name[:len(name)-2], name, r.stdout)
	}

	if r := mustRun(t, "", "delete", name, "PartitionKey eq 'p1' and Age gt 20", "--yes"); !strings.Contains(r.stdout, "deleted 5 of 5 matching entities") || !strings.Contains(r.stdout, "1 page and 1 transaction") {
		t.Errorf("delete FILTER --yes: %q", r.stdout)
	}
	if r := mustRun(t, "", "delete", "--partition", "p0", name); !strings.Contains(r.stdout, "deleted 15 of 15") {
		t.Errorf("delete --partition: %q", r.stdout)
	}
	got := all(t, tbl)
	if len(got) != 10 {
		t.Fatalf("after the deletes the table holds %d entities, want 10", len(got))
	}
	for _, e := range got {
		if age := e.Properties["Age"].V.(int32); e.PartitionKey != "p1" || age > 20 {
			t.Errorf("entity (%s, %s) with Age %d survived", e.PartitionKey, e.RowKey, age)
		}
	}
}

// The poison commands are the worker's: a transaction that fails
// permanently shows in "poison list" and "poison requeue" moves it back.
func TestPoisonListAndRequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct := testenv.Account(t)
	qname := testenv.QueueName(t)
	q, err := consistency.NewQueue(acct, qname, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tx, err := consistency.ParseTransaction([]byte(`{"v":1,"id":"cli-poison-1","steps":[{"kind":"upsert-entity","args":{"table":"`+testenv.TableName(t)+`","entity":{"PartitionKey":"p","RowKey":"r"}}}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, tx, nil); err != nil {
		t.Fatal(err)
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{qname}, PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx, nil) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := q.Poisoned(ctx, 32, nil)
		if err == nil && len(recs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the transaction was not poisoned: %v %+v", err, recs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}

	r := mustRun(t, "", "poison", "list", "--queue", qname)
	if !strings.Contains(r.stdout, "tx=cli-poison-1") || !strings.Contains(r.stdout, "TableNotFound") || !strings.Contains(r.stdout, "1 poisoned message shown") {
		t.Fatalf("poison list:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "poison", "requeue", "--queue", qname, "--id", "cli-poison-1"); !strings.Contains(r.stdout, "1 message requeued to "+qname) {
		t.Fatalf("poison requeue: %s", r.stdout)
	}
	if r := mustRun(t, "", "poison", "list", "--queue", qname, "--json"); strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("poison list --json after the requeue: %q", r.stdout)
	}
}

// Without an account, the command says how to get one, a local emulator
// included.
func TestNoAccountNamesTheEmulator(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	cmd := exec.Command(bin, "tables")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AZURE_STORAGE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("tablekit tables without an account: %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true", "tablekit emulator"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not name %s:\n%s", want, out)
		}
	}
}

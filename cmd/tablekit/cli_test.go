package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/tools/testenv"
)

// "help CMD" prints what "CMD --help" prints; each command's help says its
// exit status, and its JSON fields exactly when it has --json.
func TestHelpCommandAndItsSections(t *testing.T) {
	for _, cmd := range (&app{}).commands() {
		words := strings.Fields(cmd.name)
		var viaHelp, viaFlag, errOut bytes.Buffer
		if code := realMain(context.Background(), append([]string{"help"}, words...), nil, &viaHelp, &errOut); code != 0 {
			t.Fatalf("help %s: exit %d: %s", cmd.name, code, errOut.String())
		}
		if code := realMain(context.Background(), append(words, "--help"), nil, &viaFlag, &errOut); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", cmd.name, code, errOut.String())
		}
		help := viaHelp.String()
		if help != viaFlag.String() || !strings.HasPrefix(help, "Usage: tablekit "+cmd.name+" ") {
			t.Errorf("help %s prints\n%s\nwhere %s --help prints\n%s", cmd.name, help, cmd.name, viaFlag.String())
		}
		if !strings.Contains(help, "\nExit status:\n  0") {
			t.Errorf("help %s does not say its exit status:\n%s", cmd.name, help)
		}
		fs := (&app{}).flagSet(cmd)
		hasJSON := fs.Lookup("json") != nil
		if strings.Contains(help, "\nJSON (--json):\n") != hasJSON {
			t.Errorf("%s: --json %v, but its help documents JSON fields %v:\n%s", cmd.name, hasJSON, !hasJSON, help)
		}
		// Every flag is written with two dashes, none with one.
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(help, "  --"+f.Name) || strings.Contains(help, " -"+f.Name+" ") {
				t.Errorf("help %s does not show --%s with two dashes", cmd.name, f.Name)
			}
		})
	}
	for _, args := range [][]string{{"help", "bogus"}, {"help", "poison", "bogus"}, {"help", "query", "extra"}} {
		var out, errOut bytes.Buffer
		if code := realMain(context.Background(), args, nil, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "unknown command") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and unknown command", args, code, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := realMain(context.Background(), []string{"help"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Commands:") {
		t.Errorf("help: exit %d, stdout %q", code, out.String())
	}
}

// Flag errors write the flag with two dashes, as every document does,
// whether it was given with one dash or two; one dash is still accepted.
func TestFlagErrorsUseTwoDashes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tables", "--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"tables", "-bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"count", "T", "-parallel", "x"}, `invalid value "x" for flag --parallel`},
		{[]string{"count", "T", "--json=maybe"}, `invalid boolean value "maybe" for --json`},
		{[]string{"backup", "T", "--to"}, "flag needs an argument: --to"},
		{[]string{"query", "T", "PartitionKey eq 'a'", "-json", "-format", "table"}, "--json prints rows as JSON lines"},
	} {
		var out, errOut bytes.Buffer
		// A closed port: a request would exit 1.
		conn := "--connection-string=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + emulator.DevAccountKey + ";TableEndpoint=http://127.0.0.1:1/devstoreaccount1"
		args := append([]string{c.args[0], conn}, c.args[1:]...)
		code := realMain(context.Background(), args, nil, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("tablekit %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errOut.String(), c.want)
		}
	}
}

// jsonLines parses text as JSON objects, one a line.
func jsonLines(t *testing.T, what, text string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: line %q is not a JSON object: %v\nall:\n%s", what, line, err, text)
		}
		objs = append(objs, m)
	}
	return objs
}

// has checks that m holds each of want's fields with its value.
func has(t *testing.T, what string, m map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got, ok := m[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s: %q = %v (present %v), want %v; all: %v", what, k, got, ok, v, m)
		}
	}
}

// --json on tables, count, export, import, delete and query, with the exit
// statuses they document.
func TestJSONOfEveryDataCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tbl := newRows(t)
	name := tbl.Name()
	var es []entity.Entity
	for i := 0; i < 6; i++ {
		es = append(es, entity.Entity{PartitionKey: fmt.Sprintf("p%d", i%2), RowKey: fmt.Sprintf("%02d", i), Properties: map[string]entity.Value{
			"Amount": entity.Int64(int64(i)), "Name": entity.String(fmt.Sprint("n", i)),
		}})
	}
	if _, err := tbl.BulkWrite(ctx, es, nil); err != nil {
		t.Fatal(err)
	}

	// One dash on input, as the flag package takes it.
	r := mustRun(t, "", "tables", name, "-json")
	has(t, "tables --json", jsonLines(t, "tables --json", r.stdout)[0], map[string]any{"name": name})
	if len(jsonLines(t, "tables --json", r.stdout)) != 1 || strings.Contains(r.stdout, "command") {
		t.Errorf("tables --json: %q, want one {\"name\"} object", r.stdout)
	}

	r = mustRun(t, "", "count", name, "PartitionKey eq 'p1'", "--json")
	has(t, "count --json", jsonLines(t, "count --json", r.stdout)[0], map[string]any{"command": "count", "ok": true, "table": name, "filter": "PartitionKey eq 'p1'", "count": 3, "requests": 1})

	r = mustRun(t, "", "export", name, "--json")
	if len(jsonLines(t, "export's entities", r.stdout)) != 6 {
		t.Errorf("export --json wrote %q, want the 6 entities", r.stdout)
	}
	has(t, "export --json's summary", jsonLines(t, "export --json's summary", r.stderr)[0], map[string]any{"command": "export", "ok": true, "table": name, "filter": "", "exported": 6})

	// Rows on stdout as ever, the report on stderr as one object; the
	// Int32 constant gets its note.
	r = mustRun(t, "", "query", name, "PartitionKey eq 'p1' and Amount eq 5", "--explain", "--json")
	rep := jsonLines(t, "query --explain --json", r.stderr)
	if len(rep) != 1 {
		t.Fatalf("query --explain --json wrote %d objects on stderr:\n%s", len(rep), r.stderr)
	}
	has(t, "query --explain --json", rep[0], map[string]any{"command": "query", "ok": true, "table": name, "class": "partition scan", "pages": 1, "returned": strings.Count(r.stdout, "\n"),
		"scanned": 3, "scannedBy": "count", "scope": "PartitionKey eq 'p1'", "constants": "[map[constant:5 op:eq property:Amount type:Edm.Int32]]"})
	if notes, _ := rep[0]["notes"].([]any); len(notes) != 1 || !strings.Contains(fmt.Sprint(notes[0]), "Amount eq 5 sends an Edm.Int32 constant") {
		t.Errorf("query --explain --json notes: %v", rep[0]["notes"])
	}

	// Import with a bad line: exit 1, the summary says which.
	input := `{"PartitionKey":"p","RowKey":"1"}` + "\n" + `{"PartitionKey":"p"}` + "\n"
	dst := name + "imp"
	rowsNamed(t, testenv.Account(t), dst) // dropped at the end
	r = run(t, input, "import", dst, "--json")
	if r.code != 1 {
		t.Fatalf("import with a bad line: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	imp := jsonLines(t, "import --json", r.stdout)[0]
	has(t, "import --json", imp, map[string]any{"command": "import", "ok": false, "table": dst, "imported": 1, "failed": 1, "error": "1 line not imported (listed above)"})
	if f, _ := imp["failures"].([]any); len(f) != 1 || fmt.Sprint(f[0].(map[string]any)["line"]) != "2" {
		t.Errorf("import --json failures: %v", imp["failures"])
	}

	r = mustRun(t, "", "delete", name, "--partition", "p0", "--json")
	has(t, "delete --json", jsonLines(t, "delete --json", r.stdout)[0], map[string]any{"command": "delete", "ok": true, "table": name, "filter": "PartitionKey eq 'p0'", "matched": 3, "deleted": 3, "gone": 0, "transactions": 1})

	// A failure of the service exits 1, a usage error 2.
	if r := run(t, "", "count", name+"missing", "--json"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "TableNotFound") {
		t.Errorf("count of a missing table: exit %d, stdout %q, stderr %q; want exit 1 and TableNotFound", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", "delete", name, "Amount gt 1", "--json"); r.code != 2 || r.stdout != "" {
		t.Errorf("delete FILTER without --yes: exit %d, stdout %q; want exit 2 and nothing", r.code, r.stdout)
	}
}

// --explain says what EDM type each number of the filter has and which
// stored types it is compared with: an Int32 5 is widened for an Int64
// Amount, an Int64 5L is never narrowed for an Int32 Count.
func TestExplainNamesTheConstantsType(t *testing.T) {
	t.Parallel()
	tbl := newRows(t)
	if _, err := tbl.BulkWrite(context.Background(), []entity.Entity{{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{"Amount": entity.Int64(5), "Count": entity.Int32(5)}}}, nil); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "query", tbl.Name(), "PartitionKey eq 'p' and Amount eq 5", "--explain")
	for _, want := range []string{"note:     Amount eq 5 sends an Edm.Int32 constant, compared with an Int32, Int64 or Double property (widened)", "any other type", "ne, lt, le true", "docs/EMULATOR.md"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--explain lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("Amount eq 5 against an Int64 Amount of 5: stdout %q; want the row (widened)", r.stdout)
	}
	if strings.Contains(r.stderr, "PartitionKey eq 'p' sends") {
		t.Errorf("--explain notes a string comparison:\n%s", r.stderr)
	}
	r = mustRun(t, "", "query", tbl.Name(), "PartitionKey eq 'p' and Amount eq 5L", "--explain")
	if strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stderr, "Amount eq 5L sends an Edm.Int64 constant") {
		t.Errorf("query with 5L: stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
	r = mustRun(t, "", "query", tbl.Name(), "PartitionKey eq 'p' and Count eq 5L", "--explain")
	if r.stdout != "" || !strings.Contains(r.stderr, "an Int32 property (write 5 for it)") {
		t.Errorf("Count eq 5L against an Int32 Count: stdout %q, stderr:\n%s; want no row (never narrowed) and the note", r.stdout, r.stderr)
	}
}

// verify's summary counts and rates what it read and compared, not what
// it wrote (nothing).
func TestVerifyReportsWhatItRead(t *testing.T) {
	t.Parallel()
	tbl := newRows(t)
	fillRows(t, tbl, 40, 4)
	dir := filepath.Join(t.TempDir(), "b")
	mustRun(t, "", "backup", tbl.Name(), "--to", dir)
	r := mustRun(t, "", "verify", "--from", dir, tbl.Name(), "--json")
	s := jsonSummary(t, r)
	has(t, "verify --json", s, map[string]any{"command": "verify", "ok": true, "written": 0, "backupEntities": 40, "tableEntities": 40, "compared": 80})
	if rate, _ := s["entitiesPerSecond"].(float64); rate <= 0 {
		t.Errorf("verify --json: entitiesPerSecond %v, want the rate of the 80 entities compared", s["entitiesPerSecond"])
	}
	r = mustRun(t, "", "verify", "--from", dir, tbl.Name())
	if !strings.Contains(r.stdout, "40 entities of the backup compared with 40 of the tables") || strings.Contains(r.stdout, " 0 entities/s") {
		t.Errorf("verify: %q", r.stdout)
	}
	r = mustRun(t, "", "verify", "--from", dir, "--backup-only", "--json")
	has(t, "verify --backup-only --json", jsonSummary(t, r), map[string]any{"backupEntities": 40, "compared": 40})
}

// A job nobody works on: job status --json says it runs and exits 3; job
// requeue --json says how many messages it sent.
func TestJobStatusAndRequeueJSON(t *testing.T) {
	t.Parallel()
	acct := testenv.Account(t)
	src := newRows(t)
	fillRows(t, src, 20, 4)
	dst := rowsNamed(t, acct, src.Name()+"c")
	ck := src.Name() + "ck"
	rowsNamed(t, acct, ck)
	queue := testenv.QueueName(t)
	r := mustRun(t, "", "copy", src.Name(), dst.Name(), "--distributed", "--queue", queue, "--ranges", "3", "--checkpoint-table", ck, "--json")
	ref, _ := jsonSummary(t, r)["job"].(string)
	r = run(t, "", "job", "status", ref, "--json")
	if r.code != 3 {
		t.Fatalf("job status of a job without workers: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	has(t, "job status --json", jsonSummary(t, r), map[string]any{"command": "job", "ok": false, "job": ref, "state": "running", "ranges": 3, "rangesDone": 0})
	r = mustRun(t, "", "job", "requeue", ref, "--json")
	has(t, "job requeue --json", jsonSummary(t, r), map[string]any{"command": "job requeue", "ok": true, "job": ref, "queue": queue, "sent": 3})
}

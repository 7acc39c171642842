package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// query, count, export and delete keep one rule: a FILTER that is a table
// scan, the empty one included, is refused before any request without
// --allow-scan (exit 2), in the command line's words; with it, it runs.
// count and export given no FILTER work on the whole table.
func TestScanRuleIsOneForEveryCommand(t *testing.T) {
	t.Parallel()
	// The connection string points at a closed port: a request would
	// fail with exit 1.
	conn := "--connection-string=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:1/devstoreaccount1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "Tbl", ""}, "an empty FILTER is the whole table of Tbl"},
		{[]string{"count", "Tbl", ""}, "an empty FILTER is the whole table of Tbl"},
		{[]string{"export", "Tbl", ""}, "an empty FILTER is the whole table of Tbl"},
		{[]string{"delete", "Tbl", "", "--yes"}, "an empty FILTER is the whole table of Tbl"},
		{[]string{"query", "Tbl", "Age gt 3"}, `FILTER "Age gt 3" pins no partition`},
		{[]string{"count", "Tbl", "Age gt 3"}, `FILTER "Age gt 3" pins no partition`},
		{[]string{"export", "Tbl", "Age gt 3"}, `FILTER "Age gt 3" pins no partition`},
		{[]string{"delete", "Tbl", "Age gt 3", "--yes"}, `FILTER "Age gt 3" pins no partition`},
	} {
		var out, errOut bytes.Buffer
		code := realMain(context.Background(), append(c.args, conn), nil, &out, &errOut)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, c.want) || !strings.Contains(msg, "add --allow-scan to run it") {
			t.Errorf("tablekit %q: exit %d, stderr %q; want exit 2, %q and add --allow-scan", c.args, code, msg, c.want)
		}
		if strings.Contains(msg, "AllowTableScan") {
			t.Errorf("tablekit %q names the Go option: %q", c.args, msg)
		}
	}

	tbl := newRows(t)
	if _, err := tbl.BulkWrite(context.Background(), []entity.Entity{
		{PartitionKey: "a", RowKey: "1", Properties: map[string]entity.Value{"Age": entity.Int32(5)}},
		{PartitionKey: "b", RowKey: "1", Properties: map[string]entity.Value{"Age": entity.Int32(1)}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	name := tbl.Name()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"count", name}, "2\n"},
		{[]string{"count", name, "", "--allow-scan"}, "2\n"},
		{[]string{"count", name, "Age gt 3", "--allow-scan"}, "1\n"},
	} {
		if r := mustRun(t, "", c.args...); r.stdout != c.want {
			t.Errorf("tablekit %q printed %q; want %q", c.args, r.stdout, c.want)
		}
	}
	if r := mustRun(t, "", "query", name, "", "--allow-scan"); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf(`query "" --allow-scan printed %q; want 2 rows`, r.stdout)
	}
	if r := mustRun(t, "", "export", name, "", "--allow-scan"); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf(`export "" --allow-scan printed %q; want 2 rows`, r.stdout)
	}
	if r := mustRun(t, "", "delete", name, "", "--yes", "--allow-scan"); !strings.Contains(r.stdout, "deleted 2 of 2 matching entities") {
		t.Errorf(`delete "" --yes --allow-scan printed %q`, r.stdout)
	}
}

// Every command answers its own --help, and so does each group of
// commands ("poison", "job", "emulator"'s cert): exit 0, usage on stdout.
func TestEveryCommandAndGroupAnswersHelp(t *testing.T) {
	for _, args := range [][]string{{"poison", "--help"}, {"help", "poison"}, {"job", "-h"}, {"help", "job"}} {
		var out, errOut bytes.Buffer
		code := realMain(context.Background(), args, nil, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "Usage: tablekit "+args[len(args)-1]) && !strings.HasPrefix(out.String(), "Usage: tablekit "+args[0]) || errOut.Len() != 0 {
			t.Errorf("tablekit %q: exit %d, stdout %q, stderr %q; want exit 0 and the group's usage", args, code, out.String(), errOut.String())
		}
	}
	for _, cmd := range (&app{}).commands() {
		var out, errOut bytes.Buffer
		args := append(strings.Fields(cmd.name), "--help")
		if code := realMain(context.Background(), args, nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "Usage: tablekit "+cmd.name+" ") {
			t.Errorf("tablekit %q: exit %d, stdout %.80q", args, code, out.String())
		}
	}
}

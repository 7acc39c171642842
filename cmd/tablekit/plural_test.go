package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// The commands' sentences say "1 entity", "2 entities", "1 table".
func TestSentencesCountInTheirNumber(t *testing.T) {
	t.Parallel()
	tbl := newRows(t)
	if _, err := tbl.BulkWrite(context.Background(), []entity.Entity{{PartitionKey: "p", RowKey: "1"}}, nil); err != nil {
		t.Fatal(err)
	}
	name := tbl.Name()
	exp := mustRun(t, "", "export", name)
	if !strings.Contains(exp.stderr, "exported 1 entity from "+name+" in 1 request (") {
		t.Errorf("export of one entity says %q", exp.stderr)
	}
	// The second line repeats the first's keys, the third is no entity.
	imp := run(t, exp.stdout+exp.stdout+"x\n", "import", name+"copy")
	if imp.code != 1 || !strings.Contains(imp.stdout, "imported 1 entity into "+name+"copy in 1 transaction (") || !strings.Contains(imp.stdout, "; 2 lines failed") {
		t.Errorf("import of one entity, two bad lines, says %q", imp.stdout)
	}
	dir := t.TempDir()
	if r := mustRun(t, "", "backup", name, "--to", dir); !strings.Contains(r.stdout, "backed up 1 entity of 1 table to ") {
		t.Errorf("backup of one table says %q", r.stdout)
	}
	if r := mustRun(t, "", "delete", name, "--partition", "p"); !strings.Contains(r.stdout, "deleted 1 of 1 matching entity from "+name+" in 1 page and 1 transaction (") {
		t.Errorf("delete of one entity says %q", r.stdout)
	}
}

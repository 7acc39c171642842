package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// TestFilterOnAPropertyNoEntityHasWarns: query, count, export and delete
// warn on stderr when no entity read has a property the FILTER compares
// (a typo matches nothing and says nothing), naming a property that
// differs only in case; a filter on properties the entities have does not.
func TestFilterOnAPropertyNoEntityHasWarns(t *testing.T) {
	t.Parallel()
	tbl := newRows(t)
	if _, err := tbl.BulkWrite(context.Background(), []entity.Entity{
		{PartitionKey: "a", RowKey: "1", Properties: map[string]entity.Value{"Total": entity.Int32(5)}},
		{PartitionKey: "a", RowKey: "2", Properties: map[string]entity.Value{"Total": entity.Int32(7)}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"query", tbl.Name(), "PartitionKey eq 'a' and Totl gt 1"},
		{"count", tbl.Name(), "PartitionKey eq 'a' and Totl gt 1"},
		{"export", tbl.Name(), "PartitionKey eq 'a' and Totl gt 1"},
		{"delete", tbl.Name(), "PartitionKey eq 'a' and Totl gt 1", "--yes"},
		{"query", tbl.Name(), "PartitionKey eq 'a' and total gt 1"},
	} {
		r := run(t, "", args...)
		prop := "Totl"
		if strings.Contains(args[2], "total") {
			prop = "total"
		}
		if r.code != 0 || !strings.Contains(r.stderr, "tablekit "+args[0]+": warning: none of the 2 entities read has a property "+prop) {
			t.Errorf("tablekit %q: exit %d, stderr %q; want the warning", args, r.code, r.stderr)
		}
		if prop == "total" && !strings.Contains(r.stderr, "read: Total") {
			t.Errorf("tablekit %q: stderr %q does not name Total", args, r.stderr)
		}
	}
	r := run(t, "", "query", tbl.Name(), "PartitionKey eq 'a' and Total gt 6")
	if r.code != 0 || strings.Contains(r.stderr, "warning") || !strings.Contains(r.stdout, `"RowKey":"2"`) {
		t.Errorf("a filter on a property the entities have: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", "count", tbl.Name(), "PartitionKey eq 'a' and Total gt 60")
	if r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Errorf("count matching nothing on a property the entities have: exit %d, stderr %q", r.code, r.stderr)
	}
}

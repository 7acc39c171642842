package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// probeRows is how many entities warnUnknownProperties reads when a
// command read none: one request.
const probeRows = 100

// warnUnknownProperties warns on stderr, for each property FILTER f
// compares that none of the entities read has (seen), that it may be
// misspelt: the service compares a missing property as false, so a typo
// matches nothing and says nothing. The command line has no schema to
// check the filter against, as the library's typed tables do; the data
// is the evidence. When the command read no entity (read is 0), it reads
// up to probeRows entities of the filter's partition (or of the table)
// first: one request.
func (a *app) warnUnknownProperties(ctx context.Context, cmd string, tbl *rows, f keys.Filter, read int, seen map[string]bool) {
	var missing []string
	for _, p := range f.Properties() {
		switch p {
		case "PartitionKey", "RowKey", "Timestamp":
			continue
		}
		if !seen[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return
	}
	if read == 0 {
		probe := keys.Filter{}
		if pk, ok := f.PartitionKey(); ok {
			probe = keys.PK().Eq(pk)
		}
		page, err := tbl.Page(ctx, probe, "", &patterns.QueryOptions{SelectAll: true, Top: probeRows, AllowTableScan: true})
		if err != nil || len(page.Items) == 0 {
			return // nothing to judge by
		}
		read = len(page.Items)
		seen = propertiesOf(page.Items)
		kept := missing[:0]
		for _, p := range missing {
			if !seen[p] {
				kept = append(kept, p)
			}
		}
		missing = kept
	}
	for _, p := range missing {
		fmt.Fprintf(a.stderr, "tablekit %s: warning: none of the %d entities read has a property %s; a property that is not there compares as false, so check its spelling and case (%s)\n",
			cmd, read, p, strings.Join(near(p, seen), ", "))
	}
}

// propertiesOf returns the names of the properties the entities have.
func propertiesOf(items []entity.Entity) map[string]bool {
	seen := map[string]bool{}
	for _, e := range items {
		for p := range e.Properties {
			seen[p] = true
		}
	}
	return seen
}

// near names the properties read that differ from p only in case, or
// says that none does.
func near(p string, seen map[string]bool) []string {
	var out []string
	for s := range seen {
		if strings.EqualFold(s, p) {
			out = append(out, "read: "+s)
		}
	}
	if len(out) == 0 {
		return []string{"no property read differs from it only in case"}
	}
	return out
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/patterns"
)

// viewsSummary is what views --json prints.
type viewsSummary struct {
	Command  string       `json:"command"` // "views"
	OK       bool         `json:"ok"`
	Table    string       `json:"table"`
	Entities int          `json:"entities"` // entities that list views
	Missing  int          `json:"missing"`
	Stale    int          `json:"stale"`
	Orphans  int          `json:"orphans"`
	Entries  []viewsEntry `json:"entries,omitempty"`
	Repaired bool         `json:"repaired"` // --repair ran
	Seconds  float64      `json:"seconds"`
}

// viewsEntry is one wrong view.
type viewsEntry struct {
	Problem string `json:"problem"`
	View    string `json:"view"`
	Entry   string `json:"entry"`
	Entity  string `json:"entity"`
}

func (a *app) cmdViews(ctx context.Context, args []string) error {
	table := args[0]
	if _, err := a.table(table); err != nil {
		return usagef("%v", err)
	}
	start := time.Now()
	opts := &patterns.MaintenanceOptions{ScanParallel: a.parallel}
	rep, err := patterns.VerifyViews(ctx, a.acct, table, opts)
	if err != nil {
		return err
	}
	found := rep
	if a.repair && !rep.OK() {
		if _, err := patterns.RepairViews(ctx, a.acct, table, opts); err != nil {
			return err
		}
		if rep, err = patterns.VerifyViews(ctx, a.acct, table, opts); err != nil {
			return err
		}
	}
	s := viewsSummary{Command: "views", OK: rep.OK(), Table: table, Entities: rep.Primaries,
		Missing: len(rep.Missing), Stale: len(rep.Stale), Orphans: len(rep.Orphans), Repaired: a.repair && !found.OK(), Seconds: time.Since(start).Seconds()}
	for _, e := range rep.Entries {
		s.Entries = append(s.Entries, viewsEntry{Problem: e.Problem.String(), View: e.Index, Entry: e.Entry.String(), Entity: e.Primary.String()})
	}
	if a.json {
		if err := cliconn.JSONLine(a.stdout, s); err != nil {
			return err
		}
	} else {
		if s.Repaired {
			fmt.Fprintf(a.stdout, "found %s missing, %s stale, %s orphaned; repaired\n",
				cliconn.Count(len(found.Missing), "view", ""), cliconn.Count(len(found.Stale), "view", ""), cliconn.Count(len(found.Orphans), "view", ""))
		}
		fmt.Fprintf(a.stdout, "%s: %s with views; %s missing, %s stale, %s orphaned\n", table, cliconn.Count(rep.Primaries, "entity", "entities"),
			cliconn.Count(len(rep.Missing), "view", ""), cliconn.Count(len(rep.Stale), "view", ""), cliconn.Count(len(rep.Orphans), "view", ""))
		for i, e := range s.Entries {
			if i == 20 {
				fmt.Fprintf(a.stdout, "  ... and %d more (--json lists them all)\n", len(s.Entries)-i)
				break
			}
			fmt.Fprintf(a.stdout, "  %s %s: %s, of %s\n", e.Problem, e.View, e.Entry, e.Entity)
		}
	}
	if !rep.OK() {
		return exitError{1, ""}
	}
	return nil
}

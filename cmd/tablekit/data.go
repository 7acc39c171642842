package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// rows is a table of dynamic entities: every property with its EDM type.
type rows = patterns.Table[entity.Entity]

func (a *app) table(name string) (*rows, error) {
	return patterns.NewTable[entity.Entity](a.acct, name, nil)
}

// parseFilter reads a FILTER argument; "" is the whole table.
func parseFilter(s string) (keys.Filter, error) {
	f, err := keys.ParseFilter(s)
	if err != nil {
		return f, usageError{err.Error()}
	}
	return f, nil
}

// checkScan is the rule query, count, export and delete share: a FILTER
// that is a table scan (it pins no partition; the empty FILTER "" is the
// whole table) runs only with --allow-scan, and is refused before any
// request otherwise. given is false when the command was given no FILTER
// at all: count and export then work on the whole table by their form,
// as copy and backup do, and need no flag; a FILTER, even "", may be a
// variable that came out wrong. The library's own check is then off: its
// refusal speaks of Go options, this one of flags.
func (a *app) checkScan(table string, f keys.Filter, given bool) error {
	if !given || a.allowScan || keys.Classify(f) != keys.TableScan {
		return nil
	}
	if f.IsZero() {
		return usagef("an empty FILTER is the whole table of %s: a table scan, which reads every partition; add --allow-scan to run it", table)
	}
	text, _ := f.Build()
	return usagef("FILTER %q pins no partition (PartitionKey eq '...'): a table scan, which reads every partition of %s; add --allow-scan to run it", text, table)
}

func (a *app) cmdTables(ctx context.Context, args []string) error {
	o := &aztables.ListTablesOptions{}
	if len(args) == 1 && args[0] != "" {
		lo, hi := keys.PrefixRange(args[0])
		f := keys.Prop("TableName").Ge(lo)
		if hi != "" {
			f = keys.And(f, keys.Prop("TableName").Lt(hi))
		}
		text, err := f.Build()
		if err != nil {
			return usageError{err.Error()}
		}
		o.Filter = &text
	}
	if a.acct.Tables() == nil {
		return tablekit.ErrNoEndpoint
	}
	pager := a.acct.Tables().NewListTablesPager(o)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return tablekit.MapError(err, "list tables", a.acct.Name())
		}
		for _, t := range page.Tables {
			if t.Name == nil {
				continue
			}
			if a.json {
				if err := cliconn.JSONLine(a.stdout, tableItem{Name: *t.Name}); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintln(a.stdout, *t.Name)
		}
	}
	return nil
}

// tableItem is one line of tables --json.
type tableItem struct {
	Name string `json:"name"`
}

func (a *app) cmdQuery(ctx context.Context, args []string) error {
	f, err := parseFilter(args[1])
	if err != nil {
		return err
	}
	if a.format != "json" && a.format != "table" {
		return usagef("--format %q: want json or table", a.format)
	}
	if a.json && a.format != "json" {
		return usagef("--json prints rows as JSON lines: it does not go with --format %s", a.format)
	}
	if a.limit < 0 {
		return usagef("--limit %d: want 0 or more", a.limit)
	}
	if err := a.checkScan(args[0], f, true); err != nil {
		return err
	}
	tbl, err := a.table(args[0])
	if err != nil {
		return err
	}
	opts := &patterns.QueryOptions{SelectAll: a.sel == "", Top: a.top, AllowTableScan: true}
	if a.sel != "" {
		// The service returns only what $select names: keep the keys and
		// Timestamp, which every row prints.
		opts.Select = []string{"PartitionKey", "RowKey", "Timestamp"}
		for _, p := range strings.Split(a.sel, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(opts.Select, p) {
				opts.Select = append(opts.Select, p)
			}
		}
	}
	out := bufio.NewWriter(a.stdout)
	defer out.Flush()
	var table []entity.Entity
	a.counter.Reset()
	pages, returned := 0, 0
	seen := map[string]bool{}
	token := ""
	var class keys.Class
	for {
		p, err := tbl.Page(ctx, f, token, opts)
		if err != nil {
			return err
		}
		pages++
		class = p.Class
		for _, e := range p.Items {
			if a.limit > 0 && returned == a.limit {
				break
			}
			returned++
			for p := range e.Properties {
				seen[p] = true
			}
			if a.format == "table" {
				table = append(table, e)
				continue
			}
			if err := writeLine(out, e); err != nil {
				return err
			}
		}
		if p.Token == "" || (a.limit > 0 && returned == a.limit) {
			break
		}
		token = p.Token
	}
	if a.format == "table" {
		if err := writeTable(out, table); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if a.explain {
		if err := a.writeExplain(ctx, tbl, f, class, pages, returned); err != nil {
			return err
		}
	}
	if a.sel == "" {
		a.warnUnknownProperties(ctx, "query", tbl, f, returned, seen)
	}
	return nil
}

// explainReport is what query --explain prints (as JSON with --json).
type explainReport struct {
	Command  string `json:"command"` // "query"
	OK       bool   `json:"ok"`
	Table    string `json:"table"`
	Filter   string `json:"filter"`
	Class    string `json:"class"`
	Pages    int    `json:"pages"`
	Requests int64  `json:"requests"`
	Returned int    `json:"returned"`
	// Scanned is nil when not measured (--limit stopped the query).
	Scanned *int `json:"scanned,omitempty"`
	// ScannedBy says how Scanned was found: "filter" (the filter is its
	// key conditions: Scanned is Returned) or "count" (a keys-only count
	// of Scope, which took CountRequests more requests); "" when not
	// measured.
	ScannedBy     string            `json:"scannedBy"`
	Scope         string            `json:"scope"`
	CountRequests int64             `json:"countRequests"`
	Constants     []keys.Comparison `json:"constants"`
	Notes         []string          `json:"notes"`
}

// writeExplain prints what the query cost. The service does not say how
// many entities it read; they are the entities matching the filter's scope
// (its key conditions), counted keys-only when the scope differs from the
// filter.
func (a *app) writeExplain(ctx context.Context, tbl *rows, f keys.Filter, class keys.Class, pages, returned int) error {
	text, _ := f.Build()
	scope := f.Scope()
	stext, _ := scope.Build()
	r := explainReport{Command: "query", OK: true, Table: tbl.Name(), Filter: text, Class: class.String(), Pages: pages,
		Requests: a.counter.Take(), Returned: returned, Scope: stext, Constants: []keys.Comparison{}}
	switch {
	case a.limit > 0 && returned == a.limit:
	case scope.Equal(f):
		r.Scanned, r.ScannedBy = &returned, "filter"
	default:
		n, err := tbl.Count(ctx, scope, &patterns.WhereOptions{AllowTableScan: true})
		if err != nil {
			return err
		}
		r.Scanned, r.ScannedBy, r.CountRequests = &n, "count", a.counter.Take()
	}
	r.Constants, r.Notes = typeNotes(f)
	if a.json {
		return cliconn.JSONLine(a.stderr, r)
	}
	w := tabwriter.NewWriter(a.stderr, 0, 0, 1, ' ', 0)
	fmt.Fprintf(w, "class:\t%s\n", r.Class)
	fmt.Fprintf(w, "filter:\t%s\n", quoteOrAll(text))
	fmt.Fprintf(w, "pages:\t%d\n", pages)
	fmt.Fprintf(w, "requests:\t%d\n", r.Requests)
	fmt.Fprintf(w, "returned:\t%d\n", returned)
	switch r.ScannedBy {
	case "":
		fmt.Fprintf(w, "scanned:\tnot measured: --limit stopped the query early\n")
	case "filter":
		fmt.Fprintf(w, "scanned:\t%d (the filter is its key conditions)\n", returned)
	default:
		fmt.Fprintf(w, "scanned:\t%d (keys-only count of %s: %d more requests)\n", *r.Scanned, quoteOrAll(stext), r.CountRequests)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note:\t%s\n", n)
	}
	return w.Flush()
}

// typeNotes returns f's comparisons of a property with a number, and a
// note for each saying which stored types the constant is compared with.
// The filter says the constant's EDM type; only the stored entities say
// the property's. As docs/EMULATOR.md ("Filters, as Azure evaluates
// them") has it, keys.Filter.Match and the service widen a number
// constant to a wider property type (Int32 to Int64 or Double, Int64 to
// Double) and never narrow it; a property of any other type is not
// compared: eq, gt and ge are false, ne, lt and le true.
func typeNotes(f keys.Filter) ([]keys.Comparison, []string) {
	cs := []keys.Comparison{}
	var notes []string
	for _, c := range f.Comparisons() {
		var compared, other string
		switch c.Type {
		case "Edm.Int32":
			compared = "an Int32, Int64 or Double property (widened)"
			other = "any other type, a String among them"
		case "Edm.Int64":
			n := strings.TrimSuffix(strings.TrimSuffix(c.Constant, "L"), "l")
			compared = "an Int64 or Double property (widened)"
			other = "an Int32 property (write " + n + " for it) or any other type"
		case "Edm.Double":
			compared = "a Double property only"
			other = "an Int32 or Int64 property (write an integer constant for them) or any other type"
		default:
			continue
		}
		cs = append(cs, c)
		notes = append(notes, fmt.Sprintf("%s %s %s sends an %s constant, compared with %s; where %s is stored as %s it is not compared (eq, gt, ge false; ne, lt, le true); see docs/EMULATOR.md, \"Filters, as Azure evaluates them\"",
			c.Property, c.Op, c.Constant, c.Type, compared, c.Property, other))
	}
	return cs, notes
}

func quoteOrAll(filter string) string {
	if filter == "" {
		return "(none: the whole table)"
	}
	return filter
}

// writeLine writes e as one JSON line in the service's format.
func writeLine(w io.Writer, e entity.Entity) error {
	b, err := e.MarshalJSON()
	if err != nil {
		return fmt.Errorf("entity (PartitionKey %q, RowKey %q): %w", e.PartitionKey, e.RowKey, err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// writeTable writes rows as aligned columns: the keys, Timestamp, then
// every property any row has, by name.
func writeTable(w io.Writer, rows []entity.Entity) error {
	var names []string
	seen := map[string]bool{}
	for _, e := range rows {
		for n := range e.Properties {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "PartitionKey\tRowKey\tTimestamp")
	for _, n := range names {
		fmt.Fprint(tw, "\t", n)
	}
	fmt.Fprintln(tw)
	for _, e := range rows {
		ts := ""
		if !e.Timestamp.IsZero() {
			ts = e.Timestamp.Format(time.RFC3339Nano)
		}
		fmt.Fprint(tw, cell(e.PartitionKey), "\t", cell(e.RowKey), "\t", ts)
		for _, n := range names {
			fmt.Fprint(tw, "\t")
			if v, ok := e.Properties[n]; ok {
				fmt.Fprint(tw, cellValue(v))
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

const maxCell = 60

// cell makes s fit one aligned cell: control characters quoted, long text
// cut.
func cell(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) > maxCell {
		r := []rune(s)
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}

// cellValue is v as text: strings bare, everything else as its JSON.
func cellValue(v entity.Value) string {
	b, err := v.AppendJSON(nil)
	if err != nil {
		return "!" + err.Error()
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			return cell(s)
		}
	}
	return cell(string(b))
}

// tableAndFilter opens the table args[0] and reads the optional FILTER
// args[1] (none: the whole table), which checkScan must allow.
func (a *app) tableAndFilter(args []string) (*rows, keys.Filter, error) {
	var f keys.Filter
	if len(args) > 1 {
		var err error
		if f, err = parseFilter(args[1]); err != nil {
			return nil, f, err
		}
	}
	if err := a.checkScan(args[0], f, len(args) > 1); err != nil {
		return nil, f, err
	}
	tbl, err := a.table(args[0])
	return tbl, f, err
}

func (a *app) cmdCount(ctx context.Context, args []string) error {
	tbl, f, err := a.tableAndFilter(args)
	if err != nil {
		return err
	}
	a.counter.Reset()
	start := time.Now()
	n, err := tbl.Count(ctx, f, &patterns.WhereOptions{AllowTableScan: true, Parallel: a.parallel})
	if err != nil {
		return err
	}
	if n == 0 {
		a.warnUnknownProperties(ctx, "count", tbl, f, 0, nil)
	}
	if a.json {
		text, _ := f.Build()
		return cliconn.JSONLine(a.stdout, countSummary{Command: "count", OK: true, Table: tbl.Name(), Filter: text, Count: n,
			Requests: a.counter.Take(), Seconds: time.Since(start).Seconds()})
	}
	fmt.Fprintln(a.stdout, n)
	return nil
}

// countSummary is what count --json prints.
type countSummary struct {
	Command  string  `json:"command"` // "count"
	OK       bool    `json:"ok"`
	Table    string  `json:"table"`
	Filter   string  `json:"filter"` // "": the whole table
	Count    int     `json:"count"`
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
}

// exportSummary is what export --json prints on stderr.
type exportSummary struct {
	Command  string  `json:"command"` // "export"
	OK       bool    `json:"ok"`
	Table    string  `json:"table"`
	Filter   string  `json:"filter"`
	Exported int     `json:"exported"` // entities written to stdout
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"entitiesPerSecond"`
	Error    string  `json:"error,omitempty"`
}

func (a *app) cmdExport(ctx context.Context, args []string) error {
	tbl, f, err := a.tableAndFilter(args)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(a.stdout, 256<<10)
	var mu sync.Mutex // one range's page at a time on out
	n := 0
	start := time.Now()
	a.counter.Reset()
	parallel := a.parallel
	if parallel <= 0 && keys.Classify(f) != keys.TableScan {
		parallel = 1
	}
	_, err = tbl.Scan(ctx, f, func(_ context.Context, page []entity.Entity) error {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range page {
			if err := writeLine(out, e); err != nil {
				return err
			}
		}
		n += len(page)
		return nil
	}, &patterns.ScanOptions{QueryOptions: patterns.QueryOptions{SelectAll: true}, Parallel: parallel})
	if err != nil {
		out.Flush()
		if a.json {
			a.exportSummary(args[0], f, n, start, err)
		}
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if n == 0 {
		a.warnUnknownProperties(ctx, "export", tbl, f, 0, nil)
	}
	if a.json {
		return a.exportSummary(args[0], f, n, start, nil)
	}
	fmt.Fprintf(a.stderr, "exported %s from %s in %s (%v)\n", cliconn.Count(n, "entity", "entities"), args[0], cliconn.Count(a.counter.Take(), "request", ""), time.Since(start).Round(time.Millisecond))
	return nil
}

// exportSummary prints export's --json summary on stderr.
func (a *app) exportSummary(table string, f keys.Filter, n int, start time.Time, err error) error {
	text, _ := f.Build()
	s := exportSummary{Command: "export", OK: err == nil, Table: table, Filter: text, Exported: n, Requests: a.counter.Take(), Seconds: time.Since(start).Seconds()}
	if s.Seconds > 0 {
		s.Rate = float64(n) / s.Seconds
	}
	if err != nil {
		s.Error = err.Error()
	}
	return cliconn.JSONLine(a.stderr, s)
}

// badLine is an input line that was not written.
type badLine struct {
	line int
	err  error
}

// maxLine bounds one input line: an entity is at most 1 MiB on the
// service, and JSON escaping of strings and base64 of binary make its text
// larger.
const maxLine = 8 << 20

func (a *app) cmdImport(ctx context.Context, args []string) (err error) {
	in := a.stdin
	if len(args) == 2 && args[1] != "-" {
		f, err := os.Open(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	tbl, err := a.table(args[0])
	if err != nil {
		return err
	}
	if a.create {
		if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
			return err
		}
	}

	var bad []badLine
	var lineOf []int // input line of each entity handed to the writer
	// The bulk writer sends the transactions of a partition concurrently,
	// so of two lines with the same keys either could land last: the
	// first one is written and the repeats are reported.
	firstLine := map[string]int{}
	var read atomic.Int64
	var readErr error
	r := bufio.NewReaderSize(in, 256<<10)
	entities := iter.Seq[entity.Entity](func(yield func(entity.Entity) bool) {
		line := 0
		for {
			text, err := readLine(r)
			if len(text) > 0 || err == nil {
				line++
			}
			if t := bytes.TrimSpace(text); len(t) > 0 {
				if len(t) > maxLine {
					bad = append(bad, badLine{line, fmt.Errorf("%d bytes; an entity line is at most %d", len(t), maxLine)})
				} else if e, perr := entity.ParseEntity(t); perr != nil {
					bad = append(bad, badLine{line, perr})
				} else if first, dup := firstLine[e.PartitionKey+"\x00"+e.RowKey]; dup {
					bad = append(bad, badLine{line, fmt.Errorf("(PartitionKey %q, RowKey %q): the keys of line %d again; each entity is imported once", e.PartitionKey, e.RowKey, first)})
				} else {
					firstLine[e.PartitionKey+"\x00"+e.RowKey] = line
					lineOf = append(lineOf, line)
					read.Add(1)
					if !yield(e) {
						return
					}
				}
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				return
			}
		}
	})

	start := time.Now()
	stop := a.progress(&read, start)
	res, werr := tbl.BulkWriteSeq(ctx, entities, &patterns.BulkOptions{Insert: !a.upsert, Concurrency: a.concurrency})
	stop()

	var be *patterns.BulkError
	if werr != nil && !errors.As(werr, &be) {
		return werr
	}
	for _, f := range res.Failed {
		bad = append(bad, badLine{lineOf[f.Index], fmt.Errorf("(PartitionKey %q, RowKey %q): %w", f.PartitionKey, f.RowKey, f.Err)})
	}
	slices.SortFunc(bad, func(x, y badLine) int { return x.line - y.line })
	for _, b := range bad {
		fmt.Fprintf(a.stderr, "line %d: %v\n", b.line, b.err)
	}
	if a.json {
		s := importSummary{Command: "import", Table: args[0], Imported: res.Written, Transactions: res.Requests, Throttled: res.Throttled,
			Failed: len(bad), Failures: []lineFailure{}, Seconds: time.Since(start).Seconds()}
		for _, b := range bad {
			s.Failures = append(s.Failures, lineFailure{Line: b.line, Error: b.err.Error()})
		}
		if s.Seconds > 0 {
			s.Rate = float64(s.Imported) / s.Seconds
		}
		err := importErr(readErr, len(lineOf)+len(bad), len(bad))
		s.OK = err == nil
		if err != nil {
			s.Error = err.Error()
		}
		if jerr := cliconn.JSONLine(a.stdout, s); err == nil {
			err = jerr
		}
		return err
	}
	throttled := ""
	if res.Throttled > 0 {
		// The service was over its target: the import slowed down.
		throttled = fmt.Sprintf(", %d throttled and resent", res.Throttled)
	}
	fmt.Fprintf(a.stdout, "imported %s into %s in %s (%v%s); %s failed\n",
		cliconn.Count(res.Written, "entity", "entities"), args[0], cliconn.Count(res.Requests, "transaction", ""), time.Since(start).Round(time.Millisecond), throttled, cliconn.Count(len(bad), "line", ""))
	return importErr(readErr, len(lineOf)+len(bad), len(bad))
}

// importErr is import's error: the input's, else the count of lines not
// imported.
func importErr(readErr error, lines, bad int) error {
	if readErr != nil {
		return fmt.Errorf("reading the input stopped after line %d: %w", lines, readErr)
	}
	if bad > 0 {
		return fmt.Errorf("%s not imported (listed above)", cliconn.Count(bad, "line", ""))
	}
	return nil
}

// importSummary is what import --json prints.
type importSummary struct {
	Command      string        `json:"command"` // "import"
	OK           bool          `json:"ok"`
	Table        string        `json:"table"`
	Imported     int           `json:"imported"`
	Transactions int           `json:"transactions"`
	Throttled    int           `json:"throttled"` // transactions the service throttled, sent again
	Failed       int           `json:"failed"`    // lines not imported
	Failures     []lineFailure `json:"failures"`
	Seconds      float64       `json:"seconds"`
	Rate         float64       `json:"entitiesPerSecond"`
	Error        string        `json:"error,omitempty"`
}

// lineFailure is one input line import did not write.
type lineFailure struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// readLine returns the next line without its end, and io.EOF after the
// last; a line longer than maxLine is read whole and reported by the
// caller.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) <= maxLine {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil {
			line = line[:len(line)-1]
		}
		return line, err
	}
}

// progress shows, on a terminal, how many entities were read so far, four
// times a second; the returned func stops it.
func (a *app) progress(read *atomic.Int64, start time.Time) func() {
	if !a.terminal {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(a.stdout, "\r\033[K")
				return
			case <-t.C:
				n := read.Load()
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(a.stdout, "\r\033[Kimporting: %s read (%.0f/s)", cliconn.Count(n, "entity", "entities"), rate)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func (a *app) cmdDelete(ctx context.Context, args []string) error {
	var f keys.Filter
	given := len(args) == 2
	if given {
		if !a.yes {
			return usagef("deleting what FILTER matches needs --yes (run \"tablekit count\" with it first)")
		}
		var err error
		if f, err = parseFilter(args[1]); err != nil {
			return err
		}
	}
	if a.partition != "" {
		f = keys.And(keys.PK().Eq(a.partition), f)
	} else if !given {
		return usagef("give --partition PK, or a FILTER and --yes")
	}
	if err := a.checkScan(args[0], f, given); err != nil {
		return err
	}
	tbl, err := a.table(args[0])
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := tbl.DeleteWhere(ctx, f, &patterns.WhereOptions{AllowTableScan: true, Concurrency: a.concurrency, Parallel: a.parallel})
	if err == nil && res.Matched == 0 {
		a.warnUnknownProperties(ctx, "delete", tbl, f, 0, nil)
	}
	if a.json {
		if errors.As(err, new(usageError)) {
			return err
		}
		text, _ := f.Build()
		s := deleteSummary{Command: "delete", OK: err == nil, Table: args[0], Filter: text, Matched: res.Matched, Deleted: res.Deleted, Gone: res.Gone,
			Pages: res.Pages, Transactions: res.Transactions, Seconds: time.Since(start).Seconds()}
		if err != nil {
			s.Error = err.Error()
		}
		if jerr := cliconn.JSONLine(a.stdout, s); err == nil {
			err = jerr
		}
		return err
	}
	fmt.Fprintf(a.stdout, "deleted %d of %s from %s in %s and %s (%v)",
		res.Deleted, cliconn.Count(res.Matched, "matching entity", "matching entities"), args[0], cliconn.Count(res.Pages, "page", ""), cliconn.Count(res.Transactions, "transaction", ""), time.Since(start).Round(time.Millisecond))
	if res.Gone == 1 {
		fmt.Fprint(a.stdout, "; 1 was already gone")
	} else if res.Gone > 0 {
		fmt.Fprintf(a.stdout, "; %d were already gone", res.Gone)
	}
	fmt.Fprintln(a.stdout)
	return err
}

// deleteSummary is what delete --json prints.
type deleteSummary struct {
	Command      string  `json:"command"` // "delete"
	OK           bool    `json:"ok"`
	Table        string  `json:"table"`
	Filter       string  `json:"filter"` // --partition's condition and FILTER, as sent
	Matched      int     `json:"matched"`
	Deleted      int     `json:"deleted"`
	Gone         int     `json:"gone"` // matched, but deleted by someone else meanwhile
	Pages        int     `json:"pages"`
	Transactions int     `json:"transactions"`
	Seconds      float64 `json:"seconds"`
	Error        string  `json:"error,omitempty"`
}

// Command tablekit is a tool for the people who own Azure tables: it lists
// tables, runs and explains OData queries, counts, exports a table to JSON
// lines that keep every EDM type and imports them back, deletes in bulk
// through entity group transactions, copies tables (across accounts too),
// backs them up (full or incremental) to a directory or Blob storage,
// restores and verifies them (package tablecopy), and lists or requeues
// the poisoned messages of tablekit's transaction queues. It connects as tablekit-worker
// does. Run "tablekit --help", or "tablekit COMMAND --help" for a command's
// usage and an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/patterns"
)

const intro = `tablekit works with the tables of an Azure Storage account (or Azurite).

Usage:
  tablekit COMMAND [flags] [arguments]
  tablekit COMMAND --help        a command's flags, JSON fields, exit status and an example
  tablekit help COMMAND          the same
  tablekit --help                this text
  tablekit --version             the version (tablekit version)

Commands:
`

const outro = `
Connecting: set AZURE_STORAGE_CONNECTION_STRING (or --connection-string), or
give the account's endpoints (--account or --table-endpoint, --queue-endpoint,
--blob-endpoint) to authenticate with Microsoft Entra ID through azidentity's
DefaultAzureCredential. Flags may come before or after the arguments.

copy, backup, restore and verify reach a second account with the same
flags prefixed --dest- (the target table of copy; the blob:// location of
the others).

--json prints what a command reports as JSON, one object a line, with the
same field names from one release to the next. A summary has "command" and
"ok", and "error" when the command failed; the items a command lists (tables'
names, query's and export's entities, poison list's records) are one object
each. Each command's --help lists its fields.

Exit status: 0 success, 1 failure (a verification that found a difference
is one), 2 usage error (a FILTER that is a table scan, "" included, refused
without --allow-scan is one: query, count, export and delete share the rule);
job status exits 3 while the job runs. Each command's --help says which of
these it returns and when.
`

// command is one subcommand.
type command struct {
	name     string // "query", "poison list"
	args     string // the arguments after the flags, for the usage line
	summary  string
	about    string // what it does, in a few lines
	jsonDoc  string // what --json prints: its objects and their fields; "" when it has no --json
	exits    string // its exit statuses and when; "" is exitsDefault
	example  string
	flags    func(fs *flag.FlagSet)
	run      func(ctx context.Context, args []string) error
	minArgs  int
	maxArgs  int
	needConn bool
}

// app is one run of the command: its flags' values and where it writes.
type app struct {
	conn           cliconn.Options
	stdout, stderr io.Writer
	stdin          io.Reader
	terminal       bool // stdout is a terminal: show progress
	counter        *tablekit.RequestCounter
	acct           *tablekit.Account

	// flags of the commands (each command registers only its own)
	format, sel, partition, queue, container string
	explain, allowScan, upsert, yes, create  bool
	repair                                   bool // views --repair
	json                                     bool // --json, of every command that has it
	top, limit, concurrency, parallel        int
	poisonList                               cliconn.PoisonList
	poisonRequeue                            cliconn.PoisonRequeue
	whole                                    wholeFlags      // copy, backup, restore, verify
	dest                                     cliconn.Options // --dest- flags: a second account
	emu                                      emulatorFlags
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitsDefault is the exit status of a command that says nothing else.
const exitsDefault = `0 done; 1 failed (the service or the network, or interrupted by SIGINT or
SIGTERM); 2 usage error (a flag, an argument, a FILTER or a table name),
before any request.`

// jsonFlag registers --json for a command whose fields doc lists.
func (a *app) jsonFlag(fs *flag.FlagSet, what string) {
	fs.BoolVar(&a.json, "json", false, what+" (fields: see JSON below)")
}

func (a *app) commands() []*command {
	scan := func(fs *flag.FlagSet) {
		fs.BoolVar(&a.allowScan, "allow-scan", false, "run a FILTER that is a table scan (reads every partition); refused without it")
	}
	parallel := func(fs *flag.FlagSet) {
		fs.IntVar(&a.parallel, "parallel", 0, fmt.Sprintf("key ranges read at once; 0: %d for a table scan, 1 otherwise (1 keeps key order)", patterns.DefaultScanParallel))
	}
	queue := func(fs *flag.FlagSet) {
		fs.StringVar(&a.queue, "queue", "", "transaction queue name")
		fs.StringVar(&a.container, "container", consistency.DefaultBlobContainer, "blob container of large transactions and poison records")
	}
	cmds := []*command{
		{
			name: "tables", args: "[PREFIX]", summary: "list the account's tables", maxArgs: 1, needConn: true,
			about:   "Lists the tables of the account, one name a line, optionally only those whose\nname starts with PREFIX.",
			jsonDoc: `one object per table: {"name":"Orders"}`,
			example: "tablekit tables\n  tablekit tables Orders --json",
			flags:   func(fs *flag.FlagSet) { a.jsonFlag(fs, "print each table as a JSON object") },
			run:     a.cmdTables,
		},
		{
			name: "query", args: "TABLE FILTER", summary: "run an OData filter; print rows as JSON lines or a table", minArgs: 2, maxArgs: 2, needConn: true,
			about: `Runs FILTER (OData $filter text, checked by tablekit's parser before any
request) on TABLE and prints the rows as JSON lines in the service's format
(with @odata.type annotations), or as an aligned table with --format table.
--explain prints to stderr the query's class (point, range, partition scan,
table scan), the pages and requests it took, and the entities it returned
and scanned (measured with a keys-only count of the key conditions the
service scans by, when they differ from FILTER; those requests are shown
apart), and each number compared with a property, with the stored types it
is compared with: a constant is widened to a wider number type (5 matches an
Int64 or Double 5) and never narrowed (5L matches no Int32); a property of
another type is not compared (docs/EMULATOR.md, "Filters, as Azure
evaluates them"). A FILTER that does not
pin one partition is a table scan and needs --allow-scan; so does an empty
FILTER (""), the whole table.`,
			jsonDoc: `rows are JSON lines (--format json, which --json requires); --explain's report
  is one object on stderr: {"command":"query","ok":true,"table","filter","class",
  "pages","requests","returned","scanned" (absent when not measured),
  "scannedBy" ("filter": the filter is its key conditions; "count": a keys-only
  count of "scope", which took "countRequests" more requests; "" when not
  measured), "scope","constants":[{"property","op","constant","type"}],"notes":[...]}.
  "constants" are the filter's comparisons of a property with a number, with
  the constant's EDM type; "notes" say in words which stored types each is compared with.`,
			example: "tablekit query Employees \"PartitionKey eq 'Sales' and RowKey ge '1' and RowKey lt '2'\" --format table --explain",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&a.format, "format", "json", "output: json (JSON lines) or table (aligned columns; reads every row first)")
				fs.BoolVar(&a.explain, "explain", false, "print the query class, pages, requests and entities returned and scanned to stderr")
				fs.StringVar(&a.sel, "select", "", "comma-separated properties to return ($select); empty: all")
				fs.IntVar(&a.top, "top", 0, "page size, 1 to 1000 ($top); 0: 1000")
				fs.IntVar(&a.limit, "limit", 0, "stop after this many rows; 0: no limit")
				a.jsonFlag(fs, "rows as JSON lines and --explain's report as a JSON object")
				scan(fs)
			},
			run: a.cmdQuery,
		},
		{
			name: "count", args: "TABLE [FILTER]", summary: "count the entities matching FILTER (keys only)", minArgs: 1, maxArgs: 2, needConn: true,
			about: `Counts the entities of TABLE matching FILTER, or all of them without one,
reading keys only ($select=PartitionKey,RowKey): one request per 1,000
entities. A table scan reads key ranges in parallel (--parallel). A FILTER
that is a table scan, the empty FILTER ("") included, needs --allow-scan;
without FILTER, count counts the whole table.`,
			jsonDoc: `{"command":"count","ok":true,"table","filter","count","requests","seconds"}`,
			example: "tablekit count Employees \"PartitionKey eq 'Sales'\"\n  tablekit count Employees --parallel 32 --json",
			flags:   func(fs *flag.FlagSet) { scan(fs); parallel(fs); a.jsonFlag(fs, "print the count as a JSON object") },
			run:     a.cmdCount,
		},
		{
			name: "export", args: "TABLE [FILTER]", summary: "write entities as JSON lines that keep every EDM type", minArgs: 1, maxArgs: 2, needConn: true,
			about: `Writes the entities of TABLE matching FILTER (all without one) to stdout, one
JSON object a line in the Table service's own format: every Int64, Double,
DateTime, Guid and Binary property carries its @odata.type annotation, so
"tablekit import" writes back identical entities (Int64 above 2^53, 3.0 as a
Double, DateTime to 100 ns). A summary goes to stderr. A table scan (the
whole table, without FILTER) reads key ranges in parallel (--parallel), so
its lines come in no particular order; --parallel 1 keeps key order. A
FILTER that is a table scan, the empty FILTER ("") included, needs
--allow-scan; without FILTER, export writes the whole table.`,
			jsonDoc: `the entities are JSON lines on stdout with or without it; the summary on stderr
  is {"command":"export","ok","table","filter","exported","requests","seconds",
  "entitiesPerSecond","error"}, also when the export failed part way.`,
			example: "tablekit export Employees > employees.jsonl\n  tablekit export Employees \"PartitionKey eq 'Sales'\" > sales.jsonl",
			flags: func(fs *flag.FlagSet) {
				scan(fs)
				parallel(fs)
				a.jsonFlag(fs, "print the summary on stderr as a JSON object")
			},
			run: a.cmdExport,
		},
		{
			name: "import", args: "TABLE [FILE]", summary: "write JSON lines (as export writes them) through the bulk writer", minArgs: 1, maxArgs: 2, needConn: true,
			about: `Reads JSON lines from FILE (or stdin, or "-") in the format export writes
and writes them to TABLE through the bulk writer: entity group transactions
of up to 100 entities of one partition. Each entity is inserted (an existing
one is a failure) or, with --upsert, inserted or replaced. A line that is not
a valid entity, a line repeating the keys of an earlier one, and an entity
the service refuses are reported with their line number; every other line
is written. Shows progress on a terminal and a
summary otherwise. The table is created if missing (--create=false to
refuse).`,
			jsonDoc: `{"command":"import","ok","table","imported","transactions","throttled","failed",
  "failures":[{"line","error"}],"seconds","entitiesPerSecond","error"}: "failed"
  counts the lines not imported, each listed in "failures" (and on stderr).`,
			exits: `0 every line imported; 1 a line failed (the others are written), the input
could not be read, or the service failed; 2 usage error, before any request.`,
			example: "tablekit import EmployeesCopy employees.jsonl\n  tablekit export Employees | tablekit import --upsert EmployeesCopy",
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&a.upsert, "upsert", false, "insert or replace instead of insert")
				fs.BoolVar(&a.create, "create", true, "create TABLE if it does not exist")
				fs.IntVar(&a.concurrency, "concurrency", 8, "most transactions in flight (fewer while the service throttles)")
				a.jsonFlag(fs, "print the summary as a JSON object")
			},
			run: a.cmdImport,
		},
		{
			name: "views", args: "TABLE", summary: "check (and with --repair mend) the views TABLE's entities list", minArgs: 1, maxArgs: 1, needConn: true,
			about: `Checks the views of a patterns.Model's (or an EventualIndexedTable's) entities
without their Go type, from what each entity lists in its TkCopies property,
as the stock tablekit-worker sees them: each listed view (an index copy, a
tail row, in the entity's partition or in another table) must exist and hold
the entity's properties it names, and a view row that names an entity of
TABLE that does not list it is stale, or an orphan when that entity is gone.
It scans TABLE whole (in parallel, --parallel) and, in the other tables the
lists name, the partitions of each view. With --repair it mends what it
found with the worker's own sync-copies step, applied at once, entity by
entity, then checks again. Prints what it found; a view an entity should have
but does not list is the Model's Verify's to find (it knows the views'
declaration).`,
			jsonDoc: `{"command":"views","ok","table","entities","missing","stale","orphans",
  "entries":[{"problem","view","entry","entity"}],"repaired","seconds"}: "ok" is
  false when views are wrong (after the repair, with --repair).`,
			exits: `0 every view as listed; 1 views wrong (or still wrong after --repair), or
the service failed; 2 usage error, before any request.`,
			example: "tablekit views Orders\n  tablekit views Orders --repair --json",
			flags: func(fs *flag.FlagSet) {
				fs.BoolVar(&a.repair, "repair", false, "mend what the check finds, then check again")
				parallel(fs)
				a.jsonFlag(fs, "print the report as a JSON object")
			},
			run: a.cmdViews,
		},
		{
			name: "delete", args: "TABLE [FILTER]", summary: "delete a partition (--partition) or the entities matching FILTER (--yes)", minArgs: 1, maxArgs: 2, needConn: true,
			about: `Deletes entities in entity group transactions of up to 100, reading their
keys a page of 1,000 at a time: every entity of partition --partition, or
those matching FILTER, which needs --yes (and --allow-scan when it is a table
scan, the empty FILTER "" included; its key ranges are read in parallel,
--parallel). With both, the entities of the partition matching FILTER. Prints
what it deleted.`,
			jsonDoc: `{"command":"delete","ok","table","filter","matched","deleted","gone","pages",
  "transactions","seconds","error"}: "gone" counts the matched entities deleted
  by someone else meanwhile; the summary is printed when the delete failed too.`,
			exits: `0 done; 1 failed (what was deleted until then is reported); 2 usage error
(no --partition or FILTER, a FILTER without --yes, a table scan without
--allow-scan), before any request.`,
			example: "tablekit delete Employees --partition Sales\n  tablekit delete Employees \"PartitionKey eq 'Sales' and Age gt 65\" --yes",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&a.partition, "partition", "", "delete the entities of this partition")
				fs.BoolVar(&a.yes, "yes", false, "confirm deleting what FILTER matches")
				fs.IntVar(&a.concurrency, "concurrency", 8, "most transactions in flight (fewer while the service throttles)")
				a.jsonFlag(fs, "print the summary as a JSON object")
				scan(fs)
				parallel(fs)
			},
			run: a.cmdDelete,
		},
	}
	cmds = append(cmds, a.wholeCommands()...)
	return append(cmds, []*command{
		{
			name: "poison list", summary: "show a transaction queue's poisoned messages and their errors", needConn: true,
			about: "Shows the messages of --queue's poison queue, as \"tablekit-worker poison list\" does.",
			jsonDoc: `one object per poisoned message: {"poisonMessageId","v","queue","messageId","txId",
  "dequeueCount","step","kind","error","permanent","at","message","messageBlob"}
  (consistency.PoisonRecord's fields).`,
			exits:   "0 done; 1 failed; 2 usage error (no --queue, an invalid queue name).",
			example: "tablekit poison list --queue orders --json",
			flags: func(fs *flag.FlagSet) {
				queue(fs)
				a.poisonList.Register(fs)
			},
			run: a.cmdPoisonList,
		},
		{
			name: "poison requeue", summary: "move poisoned messages back to their queue", needConn: true,
			about:   "Moves the messages of --queue's poison queue back to it, as \"tablekit-worker\npoison requeue\" does.",
			jsonDoc: `{"command":"poison requeue","ok","queue","requeued","error"}`,
			exits:   "0 done; 1 failed (the messages requeued until then are counted); 2 usage\nerror (no --queue, an invalid queue name).",
			example: "tablekit poison requeue --queue orders --id 0f8e...",
			flags: func(fs *flag.FlagSet) {
				queue(fs)
				a.poisonRequeue.Register(fs)
			},
			run: a.cmdPoisonRequeue,
		},
		{
			// Before "emulator": the first command whose words match wins.
			name: "emulator cert", summary: "write a local CA and a certificate for the emulator's HTTPS (--out DIR)",
			about: `Writes a certificate authority (ca.pem) and a server certificate (cert.pem,
key.pem; ECDSA P-256, valid 397 days) for localhost, 127.0.0.1 and ::1 to
--out, for "tablekit emulator --cert DIR/cert.pem --key DIR/key.pem". The CA's
own key is not kept: trusting ca.pem trusts this certificate only. Clients
trust it with SSL_CERT_FILE (Go, on Linux), REQUESTS_CA_BUNDLE (Python) or
NODE_EXTRA_CA_CERTS (Node.js) naming ca.pem.`,
			exits:   "0 written; 1 could not write; 2 usage error (no --out).",
			example: "tablekit emulator cert --out ~/.tablekit/cert",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&a.emu.certOut, "out", "", "directory to write ca.pem, cert.pem and key.pem to (created if missing)")
			},
			run: a.cmdEmulatorCert,
		},
		{
			// Before "emulator", as "emulator cert".
			name: "emulator health", summary: "check that a running emulator's services answer (the image's healthcheck)",
			about: `Reads the file where a running emulator wrote its services' URLs (its --status,
or $TABLEKIT_EMULATOR_STATUS, which the emulator's image sets for both) and
asks each service whether it answers, as a container's healthcheck does
without a shell: the services the emulator's command serves, on its ports.`,
			exits:   "0 every service listed answers; 1 one does not, or the file is missing (not\nlistening yet); 2 usage error (no file named).",
			example: "tablekit emulator health --status /run/tablekit/emulator.json",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&a.emu.status, "status", "", "the file the emulator's --status names (default: $"+statusEnv+")")
				fs.DurationVar(&a.emu.healthTimeout, "timeout", healthTimeoutDefault, "time each service has to answer")
			},
			run: a.cmdEmulatorHealth,
		},
		{
			name: "emulator", summary: "run tablekit's Azure Storage emulator (Table, Queue, Blob) until stopped",
			about: `Runs tablekit's emulator of the Table, Queue and Blob services on loopback
ports (Azurite's and Storage Explorer's defaults unless given), answering as
Azure does. It prints the connection string on stdout, then serves until
SIGTERM or Ctrl-C, and stops cleanly. Any language's SDK can point at it.
Azurite's flag names work too, and AZURITE_ACCOUNTS ("name:key1[:key2];...",
keys in base64) replaces the development account with the accounts it names,
served on the same ports by path (README, "Switching from Azurite").`,
			jsonDoc: `one object once it listens: {"command":"emulator","ok":true,"connectionString",
  "table","queue","blob"} (the services' URLs), instead of the connection string.`,
			exits: `0 stopped by SIGTERM or Ctrl-C; 1 could not start (a port in use); 2 usage
error.`,
			example: "tablekit emulator\n  tablekit emulator --table-port 0 --queue-port 0 --blob-port 0 --cosmos\n  tablekit emulator --cert cert/cert.pem --key cert/key.pem --oauth basic",
			flags: func(fs *flag.FlagSet) {
				a.emu.register(fs)
				a.jsonFlag(fs, "print the connection string and the services' URLs as a JSON object")
			},
			run: a.cmdEmulator,
		},
		a.azuriteCommand("azurite", "all three services", "azurite --blobHost 0.0.0.0 --queueHost 0.0.0.0 --tableHost 0.0.0.0 --location /data"),
		a.azuriteCommand("azurite-blob", "the Blob service alone", "azurite-blob --blobHost 0.0.0.0 --blobPort 10000"),
		a.azuriteCommand("azurite-queue", "the Queue service alone", "azurite-queue --queueHost 0.0.0.0 --queuePort 10001"),
		a.azuriteCommand("azurite-table", "the Table service alone", "azurite-table --tableHost 0.0.0.0 --tablePort 10002"),
		{
			name: "version", summary: "print tablekit's version (also tablekit --version)",
			about:   "Prints the version of tablekit this binary was built from, as backup manifests\nrecord it: v0.1.0 for a release, a pseudo-version naming the commit for a build\nfrom a clone, or (devel) when the build recorded no version.",
			exits:   "0.",
			example: "tablekit version",
			run:     a.cmdVersion,
		},
	}...)
}

// flagSet is cmd's flags: the connection's and its own.
func (a *app) flagSet(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd.needConn {
		a.conn.Register(fs)
	}
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	return fs
}

func usage(w io.Writer, cmds []*command) {
	fmt.Fprint(w, intro)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, outro)
}

// commandUsage documents one command: usage line, what it does, its flags
// (the connection flags last), an example.
func (a *app) commandUsage(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "Usage: tablekit %s [flags] %s\n\n%s\n", cmd.name, cmd.args, cmd.about)
	own := flag.NewFlagSet("", flag.ContinueOnError)
	if cmd.flags != nil {
		cmd.flags(own)
	}
	conn := flag.NewFlagSet("", flag.ContinueOnError)
	(&cliconn.Options{}).Register(conn)
	if hasFlags(own) {
		fmt.Fprint(w, "\nFlags:\n")
		cliconn.PrintFlags(w, own, nil)
	}
	if cmd.needConn {
		fmt.Fprint(w, "\nConnection flags:\n")
		cliconn.PrintFlags(w, conn, nil)
	}
	if cmd.jsonDoc != "" {
		fmt.Fprintf(w, "\nJSON (--json):\n  %s\n", cmd.jsonDoc)
	}
	exits := cmd.exits
	if exits == "" {
		exits = exitsDefault
	}
	fmt.Fprintf(w, "\nExit status:\n  %s\n", strings.ReplaceAll(exits, "\n", "\n  "))
	fmt.Fprintf(w, "\nExample:\n  %s\n", cmd.example)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseInterleaved parses flags given before, between or after the
// positional arguments, which it returns; "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := cliconn.FlagError(fs.Parse(args)); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(realMain(ctx, azuriteArgs(os.Args[0], os.Args[1:]), os.Stdin, os.Stdout, os.Stderr))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func realMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: cliconn.RedactingWriter{W: stderr}, terminal: isTerminal(stdout)}
	cmds := a.commands()
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	i, rest, status := cliconn.PickCommand("tablekit", args, names, func(w io.Writer) { usage(w, cmds) }, stdout, a.stderr)
	if i < 0 {
		return status
	}
	cmd := cmds[i]
	fs := a.flagSet(cmd)
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.commandUsage(stdout, cmd)
			return 0
		}
		fmt.Fprintf(a.stderr, "tablekit %s: %v; run tablekit %s --help\n", cmd.name, err, cmd.name)
		return 2
	}
	if len(pos) < cmd.minArgs || len(pos) > cmd.maxArgs {
		fmt.Fprintf(a.stderr, "tablekit %s: want %s, got %s; run tablekit %s --help\n", cmd.name, strings.TrimSpace("arguments "+cmd.args), cliconn.Count(len(pos), "argument", ""), cmd.name)
		return 2
	}
	if cmd.needConn {
		a.counter = &tablekit.RequestCounter{}
		acct, err := a.conn.Connect(&tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{a.counter}}})
		if err != nil {
			return a.fail(cmd, err)
		}
		a.acct = acct
	}
	if err := cmd.run(ctx, pos); err != nil {
		return a.fail(cmd, err)
	}
	return 0
}

// cmdVersion prints the build's version.
func (a *app) cmdVersion(context.Context, []string) error {
	fmt.Fprintln(a.stdout, "tablekit", buildinfo.Version())
	return nil
}

// fail reports err and returns the exit status: 2 for a usage error (an
// invalid table or queue name is one), else 1.
func (a *app) fail(cmd *command, err error) int {
	var xe exitError
	if errors.As(err, &xe) {
		if xe.msg != "" {
			fmt.Fprintf(a.stderr, "tablekit %s: %v\n", cmd.name, err)
		}
		return xe.code
	}
	fmt.Fprintf(a.stderr, "tablekit %s: %v\n", cmd.name, err)
	var ue usageError
	var ce cliconn.UsageError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.Is(err, tablekit.ErrInvalidName) {
		return 2
	}
	return 1
}

func (a *app) consistencyQueue() (*consistency.Queue, error) {
	if a.queue == "" {
		return nil, usagef("--queue is required")
	}
	return consistency.NewQueue(a.acct, a.queue, &consistency.QueueOptions{BlobContainer: a.container})
}

func (a *app) cmdPoisonList(ctx context.Context, _ []string) error {
	q, err := a.consistencyQueue()
	if err != nil {
		return err
	}
	return a.poisonList.Run(ctx, q, a.stdout)
}

func (a *app) cmdPoisonRequeue(ctx context.Context, _ []string) error {
	q, err := a.consistencyQueue()
	if err != nil {
		return err
	}
	return a.poisonRequeue.Run(ctx, q, a.stdout)
}

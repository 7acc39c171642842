// Command tablekit-worker applies tablekit's eventually consistent
// transactions: it reads transaction queues, applies each transaction's
// idempotent steps, and moves messages that cannot be applied to a poison
// queue. It also lists and requeues poisoned messages and enqueues
// transactions from files. Run "tablekit-worker --help" for its usage,
// which is its documentation.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/cmd/internal/cliconn"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/buildinfo"
	"github.com/tablekit/tablekit/tablecopy"
)

const intro = `tablekit-worker applies tablekit's eventually consistent transactions.

A transaction is one queue message holding an ordered list of idempotent
steps ({"v":1,"id":"...","steps":[{"kind":"...","args":{...}}]}). The worker
applies the steps in order and deletes the message only when every step has
succeeded. Transient failures (5xx, 408, 429, connection errors) are retried
with exponential backoff; permanent ones (other 4xx, malformed messages,
unknown steps), and messages delivered more than --max-dequeue times, move to
the poison queue <queue>-poison with their last error. Nothing is dropped.

Built-in steps: upsert-entity, delete-entity, move-entity, put-blob,
delete-blob, sync-copies, index-list, blob-cleanup, copy-props,
copy-props-where (see the consistency package documentation for their
arguments), and tablecopy-range: one key range of a distributed copy or
backup that "tablekit copy --distributed" or "tablekit backup --distributed"
started (docs/COPY.md). A range names its accounts by endpoint, never with a
secret: the worker reads and writes them with its own account and the one of
the --dest- flags (a copy's target account, a backup's Blob storage account);
a backup into a directory only under a --job-dir.

Usage:
  tablekit-worker run            --queue NAME [flags]   apply transactions until SIGTERM/SIGINT
                                                        (with --until-empty: until the queues are empty)
  tablekit-worker poison list    --queue NAME [flags]   show poisoned messages and their errors
  tablekit-worker poison requeue --queue NAME [flags]   move poisoned messages back to the queue
  tablekit-worker enqueue        --queue NAME [flags] FILE.json
                                                        enqueue the transaction in FILE.json ("-" = stdin)
  tablekit-worker --help                                this text (tablekit-worker help)
  tablekit-worker COMMAND --help                        a command's usage and flags (also
                                                        tablekit-worker help COMMAND)
  tablekit-worker --version                             the version, as the metrics' build_info gives it

Connecting: set AZURE_STORAGE_CONNECTION_STRING (or --connection-string), or
give the account's endpoints (--account, or --table-endpoint, --queue-endpoint,
--blob-endpoint) to authenticate with Microsoft Entra ID through azidentity's
DefaultAzureCredential (environment, workload identity, managed identity,
Azure CLI). Settings are flags; only secrets come from the environment:
AZURE_STORAGE_CONNECTION_STRING, and TABLEKIT_DEST_CONNECTION_STRING for
the account of the --dest- flags.

SIGTERM or SIGINT, at any moment from the start, makes "run" drain: it stops
receiving, releases received messages that have not started, lets in-flight
transactions finish for up to --drain, releases the rest for another worker,
and exits 0. With --until-empty, "run" drains and exits 0 once the queues are
empty: a receive found no visible message and then every queue's approximate
message count was zero, which counts invisible messages (held by a worker,
waiting for a retry backoff, or enqueued with --delay).

HTTP on --metrics-addr: /metrics (Prometheus text format, with each queue's
and poison queue's approximate depth), /livez (200 while the process serves
HTTP: the liveness probe; a storage outage does not fail it), /readyz (200
while the worker receives from storage, 503 with the reason otherwise: the
readiness probe) and /healthz (the same as /readyz, kept for existing
probes). docs/DEPLOY.md has manifests for Kubernetes, KEDA and Azure
Container Apps.

enqueue, poison list and poison requeue print JSON with --json, one object a
line; their flags below list the fields.

Exit status: 0 success (run: drained after SIGTERM, SIGINT or --until-empty),
1 failure, 2 usage error (a flag, an argument, a missing --queue).
`

// command is one subcommand: its flags and what it does.
type command struct {
	name    string
	args    string // after the name, for the usage line
	summary string
	fs      *flag.FlagSet
	run     func(ctx context.Context, args []string) error
}

// config holds every flag's value.
type config struct {
	conn                           cliconn.Options
	dest                           cliconn.Options // a second account, for distributed jobs
	container, logLevel, logFormat string

	queues                  stringList
	jobDirs                 stringList
	concurrency, batch      int
	visibility, poll, drain time.Duration
	maxDequeue              int64
	backoff                 string
	metricsAddr             string
	create, untilEmpty      bool
	depthInterval           time.Duration
	base64                  bool
	json                    bool // enqueue --json
	poisonList              cliconn.PoisonList
	poisonRequeue           cliconn.PoisonRequeue
	delay                   time.Duration
	stdout, stderr          io.Writer
}

// stringList is a repeatable, comma-separated flag.
type stringList = cliconn.StringList

// envDestConnectionString names the variable holding the connection
// string of the --dest- account when no --dest- flag is given: a secret,
// which a container passes in its environment rather than on its command
// line. Every setting that is not a secret is a flag.
const envDestConnectionString = "TABLEKIT_DEST_CONNECTION_STRING"

// commands builds the subcommands; their flag sets are the source of the
// usage text.
func commands(c *config) []*command {
	conn := func(fs *flag.FlagSet) {
		c.conn.Register(fs)
		fs.StringVar(&c.container, "container", consistency.DefaultBlobContainer, "blob container for transactions over 64 KiB and large poison records")
		fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error; debug logs every applied step")
		fs.StringVar(&c.logFormat, "log-format", "json", "log format: json or text, written to stderr")
		fs.Var(&c.queues, "queue", "transaction queue name; repeat or separate with commas to read several")
	}
	newFS := func(name string) *flag.FlagSet {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		conn(fs)
		return fs
	}

	run := newFS("run")
	run.IntVar(&c.concurrency, "concurrency", 16, "transactions processed at once, over all queues")
	run.IntVar(&c.batch, "batch", 0, "messages per receive, 1 to 32; each queue receives again when no more than that many are left waiting for a free slot; 0 means twice --concurrency, at most 32")
	run.DurationVar(&c.visibility, "visibility", 30*time.Second, "visibility timeout of a received message, extended every third of it while its steps run; whole seconds")
	run.Int64Var(&c.maxDequeue, "max-dequeue", 5, "deliveries before a failing message moves to the poison queue")
	run.StringVar(&c.backoff, "backoff", "2s,4s,10s,30s", "retry delays after the 1st, 2nd, ... failure; the last repeats; ±20% jitter")
	run.DurationVar(&c.poll, "poll", 2*time.Second, "longest wait between receives when the queues are empty")
	run.DurationVar(&c.drain, "drain", 30*time.Second, "how long in-flight transactions may finish after SIGTERM")
	run.StringVar(&c.metricsAddr, "metrics-addr", ":9090", "address serving /metrics, /livez, /readyz and /healthz; empty disables")
	run.BoolVar(&c.untilEmpty, "until-empty", false, "drain and exit 0 once the queues are empty, counting invisible messages (for KEDA ScaledJobs and scripts)")
	run.DurationVar(&c.depthInterval, "depth-interval", 30*time.Second, "how often the queue depth gauges of /metrics are refreshed (2 requests per queue); 0 disables")
	run.BoolVar(&c.create, "create", true, "create the queues, poison queues and container at start if missing")
	run.Var(&c.jobDirs, "job-dir", "a directory under which distributed backup jobs may write (a filesystem every worker mounts at the same path); repeat or separate with commas; none: local backup jobs fail")
	c.dest.RegisterPrefixed(run, "dest-", "a second account that distributed copy and backup jobs name (a copy's target, a backup's blob:// location; env TABLEKIT_DEST_CONNECTION_STRING)")

	list := newFS("poison list")
	c.poisonList.Register(list)

	requeue := newFS("poison requeue")
	c.poisonRequeue.Register(requeue)

	enq := newFS("enqueue")
	enq.DurationVar(&c.delay, "delay", 0, "keep the message invisible this long before a worker may take it")
	enq.BoolVar(&c.json, "json", false, `print the result as one JSON object: {"command":"enqueue","ok","queue","id"} (default: the transaction's id alone)`)
	enq.BoolVar(&c.base64, "base64", false, "write the message base64-encoded, as an Azure Functions queue trigger expects; workers read both forms")

	return []*command{
		{name: "run", args: "--queue NAME [flags]", summary: "apply transactions until SIGTERM/SIGINT", fs: run, run: c.cmdRun},
		{name: "poison list", args: "--queue NAME [flags]", summary: "show poisoned messages and their errors", fs: list, run: c.cmdPoisonList},
		{name: "poison requeue", args: "--queue NAME [flags]", summary: "move poisoned messages back to their queue", fs: requeue, run: c.cmdPoisonRequeue},
		{name: "enqueue", args: "--queue NAME [flags] FILE.json", summary: "enqueue the transaction in FILE.json (\"-\" reads stdin)", fs: enq, run: c.cmdEnqueue},
	}
}

// usage writes the full documentation: the introduction, the flags every
// command takes, then each command's own flags.
func usage(w io.Writer, cmds []*command) {
	fmt.Fprint(w, intro)
	common := commonFlags()
	fmt.Fprint(w, "\nFlags of every command:\n")
	cliconn.PrintFlags(w, common, nil)
	for _, cmd := range cmds {
		fmt.Fprintf(w, "\nFlags of %q (%s):\n", cmd.name, cmd.summary)
		cliconn.PrintFlags(w, cmd.fs, common)
	}
}

// commandUsage writes one command's help: its usage line, what it does,
// its own flags, then those every command takes.
func commandUsage(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "Usage: tablekit-worker %s %s\n\n%s.\n", cmd.name, cmd.args, strings.ToUpper(cmd.summary[:1])+cmd.summary[1:])
	common := commonFlags()
	fmt.Fprint(w, "\nFlags:\n")
	cliconn.PrintFlags(w, cmd.fs, common)
	fmt.Fprint(w, "\nFlags of every command:\n")
	cliconn.PrintFlags(w, common, nil)
	fmt.Fprint(w, "\nRun tablekit-worker --help for connecting, signals, the HTTP endpoints and\nthe exit statuses.\n")
}

// commonFlags is a flag set holding only the flags every command takes.
func commonFlags() *flag.FlagSet {
	c := &config{}
	cmds := commands(c)
	fs := flag.NewFlagSet("common", flag.ContinueOnError)
	cmds[0].fs.VisitAll(func(f *flag.Flag) {
		for _, k := range cmds[1:] {
			if k.fs.Lookup(f.Name) == nil {
				return
			}
		}
		fs.Var(f.Value, f.Name, f.Usage)
		fs.Lookup(f.Name).DefValue = f.DefValue
	})
	return fs
}

func main() {
	// Signals are caught before anything else runs, so that a SIGTERM
	// during the start drains instead of killing the process.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	stderr = cliconn.RedactingWriter{W: stderr}
	c := &config{stdout: stdout, stderr: stderr}
	cmds := commands(c)
	names := make([]string, len(cmds))
	for i, k := range cmds {
		names[i] = k.name
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, "tablekit-worker", buildinfo.Version())
		return 0
	}
	i, rest, status := cliconn.PickCommand("tablekit-worker", args, names, func(w io.Writer) { usage(w, cmds) }, stdout, stderr)
	if i < 0 {
		return status
	}
	cmd := cmds[i]
	if err := cliconn.FlagError(cmd.fs.Parse(rest)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(stdout, cmd)
			return 0
		}
		fmt.Fprintf(stderr, "tablekit-worker %s: %v; run tablekit-worker --help\n", cmd.name, err)
		return 2
	}
	if len(c.queues) == 0 {
		_ = c.queues.Set("")
	}
	if len(c.queues) == 0 {
		fmt.Fprintf(stderr, "tablekit-worker %s: --queue is required\n", cmd.name)
		return 2
	}
	if err := cmd.run(ctx, cmd.fs.Args()); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "tablekit-worker %s: %v\n", cmd.name, err)
			return 2
		}
		fmt.Fprintf(stderr, "tablekit-worker %s: %v\n", cmd.name, err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func (c *config) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usageError{"--log-level " + c.logLevel + ": want debug, info, warn or error"}
	}
	o := &slog.HandlerOptions{Level: lvl}
	switch c.logFormat {
	case "json":
		return slog.New(slog.NewJSONHandler(c.stderr, o)), nil
	case "text":
		return slog.New(slog.NewTextHandler(c.stderr, o)), nil
	}
	return nil, usageError{"--log-format " + c.logFormat + ": want json or text"}
}

// connect connects as cliconn does for every tablekit command; a missing
// account is a usage error.
func (c *config) connect() (*tablekit.Account, error) {
	acct, err := c.conn.Connect(nil)
	if ue := (cliconn.UsageError{}); errors.As(err, &ue) {
		return nil, usageError{ue.Msg}
	}
	return acct, err
}

func parseBackoff(s string) (*consistency.Backoff, error) {
	b := &consistency.Backoff{Jitter: 0.2}
	for _, p := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			return nil, usageError{"--backoff " + s + ": want comma-separated durations such as 2s,4s,10s,30s"}
		}
		b.Delays = append(b.Delays, d)
	}
	return b, nil
}

func (c *config) cmdRun(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{"unexpected arguments " + strings.Join(args, " ")}
	}
	log, err := c.logger()
	if err != nil {
		return err
	}
	log.Info("worker starting", "queues", []string(c.queues))
	backoff, err := parseBackoff(c.backoff)
	if err != nil {
		return err
	}
	acct, err := c.connect()
	if err != nil {
		return err
	}
	depth := c.depthInterval
	if depth <= 0 {
		depth = -1
	}
	w, err := consistency.NewWorker(acct, &consistency.WorkerOptions{
		Queues: c.queues, Concurrency: c.concurrency, BatchSize: c.batch,
		VisibilityTimeout: c.visibility, MaxDequeueCount: c.maxDequeue, Backoff: backoff,
		PollInterval: c.poll, DrainTimeout: c.drain, UntilEmpty: c.untilEmpty, DepthInterval: depth,
		BlobContainer: c.container, Logger: log,
	})
	if err != nil {
		return err
	}
	var others []*tablekit.Account
	if !c.dest.Given() {
		// In a container the secret comes from the environment, not argv.
		c.dest.ConnectionString = ""
	}
	if c.dest.Given() {
		dacct, err := c.dest.Connect(nil)
		if ue := (cliconn.UsageError{}); errors.As(err, &ue) {
			return usageError{ue.Msg}
		}
		if err != nil {
			return err
		}
		others = append(others, dacct)
	}
	if len(c.jobDirs) == 0 {
		if v := ""; v != "" {
			_ = c.jobDirs.Set(v)
		}
	}
	w.Handle(tablecopy.KindRange, tablecopy.RangeHandler(&tablecopy.RangeHandlerOptions{Accounts: others, Dirs: c.jobDirs}))
	// /livez answers from here on, during the start too.
	if c.metricsAddr != "" {
		ln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		log.Info("metrics listening", "addr", ln.Addr().String())
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if c.create {
		// A signal does not cut the creation short: Run then drains at once
		// and the process exits 0.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		for _, name := range c.queues {
			q, err := consistency.NewQueue(acct, name, &consistency.QueueOptions{BlobContainer: c.container})
			if err != nil {
				return err
			}
			if err := q.Create(cctx, nil); err != nil {
				return err
			}
		}
	}
	return w.Run(ctx, nil)
}

func (c *config) queue() (*consistency.Queue, error) {
	if len(c.queues) != 1 {
		return nil, usageError{"give exactly one --queue"}
	}
	acct, err := c.connect()
	if err != nil {
		return nil, err
	}
	return consistency.NewQueue(acct, c.queues[0], &consistency.QueueOptions{BlobContainer: c.container, Base64: c.base64})
}

func (c *config) cmdPoisonList(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{"unexpected arguments " + strings.Join(args, " ")}
	}
	q, err := c.queue()
	if err != nil {
		return err
	}
	return c.poisonList.Run(ctx, q, c.stdout)
}

func (c *config) cmdPoisonRequeue(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return usageError{"unexpected arguments " + strings.Join(args, " ")}
	}
	q, err := c.queue()
	if err != nil {
		return err
	}
	return c.poisonRequeue.Run(ctx, q, c.stdout)
}

func (c *config) cmdEnqueue(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return usageError{"give one FILE.json (or - for stdin)"}
	}
	var data []byte
	var err error
	if args[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(args[0])
	}
	if err != nil {
		return err
	}
	tx, err := consistency.ParseTransaction(data, true)
	if err != nil {
		return err
	}
	q, err := c.queue()
	if err != nil {
		return err
	}
	if err := q.Enqueue(ctx, tx, &consistency.EnqueueOptions{Delay: c.delay}); err != nil {
		return err
	}
	if c.json {
		return cliconn.JSONLine(c.stdout, enqueueSummary{Command: "enqueue", OK: true, Queue: q.Name(), ID: tx.ID})
	}
	fmt.Fprintln(c.stdout, tx.ID)
	return nil
}

// enqueueSummary is what "enqueue --json" prints.
type enqueueSummary struct {
	Command string `json:"command"` // "enqueue"
	OK      bool   `json:"ok"`
	Queue   string `json:"queue"`
	ID      string `json:"id"` // the transaction's id
}

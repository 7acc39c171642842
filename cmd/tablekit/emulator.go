package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/emulator"
)

// emulatorSummary is what emulator --json prints once it listens.
type emulatorSummary struct {
	Command          string `json:"command"` // "emulator"
	OK               bool   `json:"ok"`
	ConnectionString string `json:"connectionString"` // the development account's: its key is well known
	Table            string `json:"table"`
	Queue            string `json:"queue"`
	Blob             string `json:"blob"`
}

// emulatorFlags are the flags of "tablekit emulator": emulator.Options.
type emulatorFlags struct {
	opts         emulator.Options
	earlyEnd     float64
	earlyEndSeed int64
	throttle     bool
	// The targets and burst of --throttle (or of --scale's model), when
	// given: throttlePartition and throttleAccount in entities a second.
	throttlePartition, throttleAccount int
	throttleBurst                      time.Duration
	scale                              float64
	certOut                            string // emulator cert --out

	// Azurite's flags where they mean the same (see register).
	fs                                            *flag.FlagSet // the parsed set: which flags were given
	blobHost, queueHost, tableHost                string
	loose, inMemory, pathStyle, noTelemetry       bool
	blobKeepAlive, queueKeepAlive, tableKeepAlive int
	extentMemoryLimit                             float64

	silent    bool   // no request log on stderr
	debug     string // the debug log's file
	reset     bool
	testClock bool // clock commands on stdin (emulator.Instance.Advance)

	services string // --services: a list for emulator.ParseServices
	status   string // --status: the file tablekit emulator health reads
	// azurite is the Azurite command being run (azurite, azurite-blob,
	// ...; see azurite.go), "" for tablekit emulator.
	azurite string
	// healthTimeout bounds each request of tablekit emulator health.
	healthTimeout time.Duration
}

func (f *emulatorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.opts.Host, "host", "127.0.0.1", "address the services listen on")
	fs.IntVar(&f.opts.BlobPort, "blob-port", emulator.DefaultBlobPort, "Blob service port (0: any free port)")
	fs.IntVar(&f.opts.QueuePort, "queue-port", emulator.DefaultQueuePort, "Queue service port (0: any free port)")
	fs.IntVar(&f.opts.TablePort, "table-port", emulator.DefaultTablePort, "Table service port (0: any free port)")
	fs.StringVar(&f.opts.AccountName, "account", emulator.DevAccountName, "account name")
	fs.StringVar(&f.opts.AccountKey, "account-key", "", "account key, base64 (default: the development account's well-known key)")
	fs.StringVar(&f.opts.CertFile, "cert", "", "serve HTTPS with this certificate: PEM (with --key) or PFX (with --pwd), as Azurite's --cert")
	fs.StringVar(&f.opts.KeyFile, "key", "", "PEM private key of --cert, as Azurite's --key")
	fs.StringVar(&f.opts.CertPassword, "pwd", "", "password of a PFX --cert, as Azurite's --pwd")
	fs.StringVar(&f.opts.OAuth, "oauth", "", `accept Microsoft Entra ID bearer tokens: "basic" (audience, issuer and lifetime checked, not the signature), as Azurite's --oauth; needs --cert`)
	fs.BoolVar(&f.opts.Cosmos, "cosmos", false, "answer as the Cosmos DB Table API does (its name and size rules, unsorted results)")
	fs.BoolVar(&f.opts.SkipAPIVersionCheck, "skipApiVersionCheck", false, "serve any x-ms-version, as Azurite's flag of that name does; so does AZURITE_SKIP_API_VERSION_CHECK=true (default: 400 InvalidHeaderValue for a version after "+emulator.NewestServiceVersion+" or unpublished)")
	fs.Float64Var(&f.earlyEnd, "early-end", 0, "probability (0 to 1) that a query page ends early with a continuation, as Azure's may")
	fs.Int64Var(&f.earlyEndSeed, "seed", 1, "seed of --early-end's choices")
	fs.DurationVar(&f.opts.Latency, "latency", 0, "delay added to every Table service request, as if across a network")
	fs.BoolVar(&f.throttle, "throttle", false, "answer 503 ServerBusy over Azure's targets (2,000 entities/s a partition, 20,000 an account)")
	fs.IntVar(&f.throttlePartition, "throttle-partition", 0, "a partition's target in entities a second for --throttle, which it turns on (0: Azure's 2,000; negative: none); with --scale, scaled as every rate")
	fs.IntVar(&f.throttleAccount, "throttle-account", 0, "the account's target in entities a second for --throttle, which it turns on (0: Azure's 20,000; negative: none); with --scale, scaled as every rate")
	fs.DurationVar(&f.throttleBurst, "throttle-burst", 0, "how much of a second's target an idle partition or account admits at once before the rate applies, for --throttle, which it turns on (default 100ms; Azure publishes none: 100ms or less to test a strict service, seconds a lenient one)")
	fs.BoolVar(&f.silent, "silent", false, "no request log (default: a line per request on stderr, without keys, signatures or tokens), as Azurite's flag of that name")
	fs.BoolVar(&f.silent, "s", false, "Azurite's short name for --silent")
	fs.StringVar(&f.debug, "debug", "", "append a debug log to this file: each request's and answer's headers (credentials redacted) and the servers' own errors, as Azurite's flag of that name")
	fs.StringVar(&f.debug, "d", "", "Azurite's short name for --debug")
	fs.StringVar(&f.opts.Location, "location", "", "directory where the emulator keeps its data across restarts, as Azurite's --location (default: memory only, nothing kept; under Azurite's command names, the current directory, as Azurite's)")
	fs.StringVar(&f.opts.Location, "l", "", "Azurite's short name for --location")
	fs.BoolVar(&f.reset, "reset", false, "empty --location before starting: remove the emulator's files there (tables, queues, blobs), and nothing else")
	fs.BoolVar(&f.testClock, "test-clock", false, `for tests only: read clock commands on stdin, "advance DURATION" (Go's syntax: 1s, 90m) and "now", each answered on stdout by "now TIME" (RFC 3339, the emulator's time after it) or "error: ..."; queue visibility and time to live, leases, SAS and token times follow the moved clock. Off by default: only the process holding stdin can move it`)
	fs.Float64Var(&f.opts.ClockRate, "clock-rate", 0, "for tests only: run the clock this many times as fast as real time (1 to 10000; at 50 a message enqueued with a 1 s delay is visible after 20 ms), for code that waits on queue delays, leases or SAS times without moving the clock (default: real time)")
	fs.StringVar(&f.services, "services", "", "the services to serve, a comma-separated list of blob, queue and table (default: all three; Azurite serves one with azurite-blob, azurite-queue, azurite-table, which tablekit runs too)")
	fs.StringVar(&f.status, "status", "", "write the services' URLs to this file once they listen, for tablekit emulator health, and remove it when stopping (default: $"+statusEnv+", which the image sets)")
	fs.Float64Var(&f.scale, "scale", 0, "run the scale model (partition servers, page service times, Azure's targets) with every rate multiplied by this (1: Azure's; 0: no model)")

	// Azurite's names, so that its command line runs unchanged.
	f.fs = fs
	fs.StringVar(&f.blobHost, "blobHost", "", "Azurite's name: the address to listen on; the three services share one, so --blobHost, --queueHost, --tableHost and --host must agree")
	fs.StringVar(&f.queueHost, "queueHost", "", "Azurite's name: see --blobHost")
	fs.StringVar(&f.tableHost, "tableHost", "", "Azurite's name: see --blobHost")
	fs.IntVar(&f.opts.BlobPort, "blobPort", emulator.DefaultBlobPort, "Azurite's name for --blob-port")
	fs.IntVar(&f.opts.QueuePort, "queuePort", emulator.DefaultQueuePort, "Azurite's name for --queue-port")
	fs.IntVar(&f.opts.TablePort, "tablePort", emulator.DefaultTablePort, "Azurite's name for --table-port")
	fs.BoolVar(&f.loose, "loose", false, "Azurite's flag, accepted: tablekit has no strict mode to loosen (headers and parameters it does not implement are ignored, as Azure ignores unknown ones; features it leaves out answer 501 either way)")
	fs.BoolVar(&f.loose, "L", false, "Azurite's short name for --loose")
	fs.BoolVar(&f.inMemory, "inMemoryPersistence", false, "Azurite's flag: keep nothing on disk, tablekit's default (refused with --location, as Azurite refuses it)")
	fs.BoolVar(&f.pathStyle, "disableProductStyleUrl", false, "Azurite's flag, accepted: tablekit always takes the account from the path's first segment")
	fs.BoolVar(&f.noTelemetry, "disableTelemetry", false, "Azurite's flag, accepted: tablekit collects no telemetry")
	fs.IntVar(&f.blobKeepAlive, "blobKeepAliveTimeout", 0, "Azurite's flag, accepted and ignored: tablekit keeps its own connection timeouts")
	fs.IntVar(&f.queueKeepAlive, "queueKeepAliveTimeout", 0, "Azurite's flag, accepted and ignored (see --blobKeepAliveTimeout)")
	fs.IntVar(&f.tableKeepAlive, "tableKeepAliveTimeout", 0, "Azurite's flag, accepted and ignored (see --blobKeepAliveTimeout)")
	fs.Float64Var(&f.extentMemoryLimit, "extentMemoryLimit", 0, "Azurite's flag, accepted with --inMemoryPersistence and ignored: tablekit has no extent store to limit")
}

// given reports whether the flag named name was on the command line.
func (f *emulatorFlags) given(name string) bool {
	seen := false
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { seen = seen || fl.Name == name })
	}
	return seen
}

// options turns the flags, and AZURITE_ACCOUNTS and
// AZURITE_SKIP_API_VERSION_CHECK as getenv reads them, into the
// emulator's options.
func (f *emulatorFlags) options(getenv func(string) string) (emulator.Options, error) {
	o := f.opts
	if f.earlyEnd < 0 || f.earlyEnd > 1 {
		return o, usagef("--early-end %v: want a probability from 0 to 1", f.earlyEnd)
	}
	if f.earlyEnd > 0 {
		o.EarlyEnd = &emulator.EarlyEnd{Seed: f.earlyEndSeed, Probability: f.earlyEnd}
	}
	if f.given("clock-rate") && (math.IsNaN(o.ClockRate) || o.ClockRate < 1 || o.ClockRate > emulator.MaxClockRate) {
		return o, usagef("--clock-rate %v: want 1 to %d", o.ClockRate, emulator.MaxClockRate)
	}
	if f.scale < 0 {
		return o, usagef("--scale %v: want a positive factor, or 0 for no model", f.scale)
	}
	if f.given("throttle-burst") && f.throttleBurst <= 0 {
		return o, usagef("--throttle-burst %v: want a positive duration", f.throttleBurst)
	}
	shape := f.given("throttle-partition") || f.given("throttle-account") || f.given("throttle-burst")
	if shape && f.throttlePartition < 0 && f.throttleAccount < 0 {
		return o, usagef("--throttle-partition %d and --throttle-account %d: no target left to throttle at", f.throttlePartition, f.throttleAccount)
	}
	if f.throttle || shape {
		o.Throttle = &emulator.ThrottleOptions{PartitionEntitiesPerSecond: f.throttlePartition, AccountEntitiesPerSecond: f.throttleAccount, Burst: f.throttleBurst}
	}
	if f.scale > 0 {
		o.Scale = &emulator.ScaleOptions{Scale: f.scale}
	}
	if o.OAuth != "" && o.OAuth != emulator.OAuthBasic {
		return o, usagef("--oauth %q: want %q", o.OAuth, emulator.OAuthBasic)
	}
	if o.OAuth != "" && o.CertFile == "" {
		return o, usagef("--oauth needs --cert: bearer tokens are accepted over HTTPS only, as Azurite's --oauth")
	}
	if o.CertFile == "" && (o.KeyFile != "" || o.CertPassword != "") {
		return o, usagef("--key and --pwd need --cert")
	}
	if o.CertFile != "" && o.KeyFile != "" && o.CertPassword != "" {
		return o, usagef("--pwd is for a PFX --cert, given without --key")
	}
	services, err := emulator.ParseServices(f.services)
	if err != nil {
		return o, usagef("--services: %v", err)
	}
	if only, ok := azuriteServes[f.azurite]; ok && only != "" {
		if f.given("services") {
			return o, usagef("--services: %s serves the %s service alone", f.azurite, only)
		}
		services = []emulator.Service{only}
	}
	o.Services = services
	served := func(s emulator.Service) bool { return len(services) == 0 || slices.Contains(services, s) }
	// One listen address for the services: Azurite's per-service hosts
	// are taken when they agree; a service not served has no say, as
	// azurite-blob ignores --tableHost.
	var named []string
	for _, h := range []struct {
		flag, value string
		service     emulator.Service
	}{{"host", o.Host, ""}, {"blobHost", f.blobHost, emulator.BlobService}, {"queueHost", f.queueHost, emulator.QueueService}, {"tableHost", f.tableHost, emulator.TableService}} {
		if !f.given(h.flag) || h.service != "" && !served(h.service) {
			continue
		}
		if len(named) > 0 && h.value != o.Host {
			return o, usagef("--%s %s and --%s %s differ: tablekit's three services listen on one address", named[0], o.Host, h.flag, h.value)
		}
		o.Host = h.value
		named = append(named, h.flag)
	}
	location := f.given("location") || f.given("l")
	if f.inMemory && location {
		return o, usagef("--inMemoryPersistence does not go with --location (Azurite refuses them together too)")
	}
	if f.azurite != "" && !location && !f.inMemory {
		// Azurite keeps its data in the current directory by default.
		o.Location = "."
	}
	if f.given("extentMemoryLimit") && !f.inMemory {
		return o, usagef("--extentMemoryLimit is only supported with --inMemoryPersistence (as in Azurite)")
	}
	if getenv(emulator.SkipAPIVersionCheckEnv) == "true" {
		o.SkipAPIVersionCheck = true
	}
	if env := getenv(emulator.AccountsEnv); env != "" {
		if f.given("account") || f.given("account-key") {
			return o, usagef("%s and --account/--account-key both name the accounts: give one", emulator.AccountsEnv)
		}
		accts, err := emulator.ParseAccounts(env)
		if err != nil {
			return o, usagef("%v", err)
		}
		o.Accounts, o.AccountName, o.AccountKey = accts, "", ""
	}
	return o, nil
}

// cmdEmulator runs the emulator until ctx ends (SIGTERM, Ctrl-C).
func (a *app) cmdEmulator(ctx context.Context, _ []string) error {
	o, err := a.emu.options(os.Getenv)
	if err != nil {
		return err
	}
	if !a.emu.silent {
		o.Log = a.stderr
	}
	if a.emu.debug != "" {
		f, err := os.OpenFile(a.emu.debug, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--debug: %w", err)
		}
		defer f.Close()
		o.DebugLog = f
	}
	if a.emu.reset {
		if o.Location == "" {
			return usagef("--reset empties --location: give one")
		}
		if err := emulator.ResetLocation(o.Location); err != nil {
			return err
		}
	}
	inst, err := emulator.Start(ctx, &o)
	if err != nil {
		return err
	}
	defer inst.Stop()
	status := a.emu.status
	if status == "" {
		status = os.Getenv(statusEnv)
	}
	if status != "" {
		if err := writeStatus(status, inst); err != nil {
			return err
		}
		defer os.Remove(status)
	}
	if a.emu.azurite != "" {
		// Azurite's own lines on stdout, which Testcontainers and other
		// tools wait for; the connection string goes to stderr.
		for _, line := range azuriteStartLines(a.emu.azurite, &o, inst) {
			fmt.Fprintln(a.stdout, line)
		}
		fmt.Fprintln(a.stderr, inst.ConnectionString)
		defer func() {
			closing, closed := azuriteCloseLines(inst)
			for _, line := range closing {
				fmt.Fprintln(a.stdout, line)
			}
			inst.Stop()
			for _, line := range closed {
				fmt.Fprintln(a.stdout, line)
			}
		}()
	} else if a.json {
		// Not cliconn.JSONLine: it redacts, and the connection string is
		// what the user asked for, key included, as without --json.
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(emulatorSummary{Command: "emulator", OK: true, ConnectionString: inst.ConnectionString,
			Table: inst.TableURL, Queue: inst.QueueURL, Blob: inst.BlobURL}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(a.stdout, inst.ConnectionString)
	}
	var urls []string
	for _, u := range []struct{ name, url string }{{"Table", inst.TableURL}, {"Queue", inst.QueueURL}, {"Blob", inst.BlobURL}} {
		if u.url != "" {
			urls = append(urls, u.name+" "+u.url)
		}
	}
	fmt.Fprintf(a.stderr, "tablekit emulator: %s; stop with Ctrl-C or SIGTERM\n", strings.Join(urls, ", "))
	if names := inst.Accounts(); len(names) > 1 {
		fmt.Fprintf(a.stderr, "tablekit emulator: accounts %s (%s), on the same ports by path\n", strings.Join(names, ", "), emulator.AccountsEnv)
	}
	if a.emu.testClock {
		fmt.Fprintln(a.stderr, `tablekit emulator: --test-clock: "advance DURATION" or "now" on stdin moves or reads the clock (for tests only)`)
		go clockCommands(a.stdin, a.stdout, inst)
	}
	<-ctx.Done()
	fmt.Fprintln(a.stderr, "tablekit emulator: stopping")
	return nil
}

// clockCommands answers --test-clock's commands, one a line of in, until
// in ends: "advance DURATION" moves inst's clock forward, "now" reads it;
// each is answered by a line on out, "now TIME" or "error: WHY". The
// answer comes once the clock has moved, so a test that waits for it
// knows that the services follow the new time.
func clockCommands(in io.Reader, out io.Writer, inst *emulator.Instance) {
	if in == nil {
		return
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		word, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch word {
		case "":
			continue
		case "advance":
			d, err := time.ParseDuration(strings.TrimSpace(arg))
			if err != nil || d < 0 {
				fmt.Fprintf(out, "error: advance %q: want a positive duration, such as 1s or 90m\n", strings.TrimSpace(arg))
				continue
			}
			inst.Advance(d)
		case "now":
		default:
			fmt.Fprintf(out, "error: %q: want \"advance DURATION\" or \"now\"\n", word)
			continue
		}
		fmt.Fprintln(out, "now", inst.Now().UTC().Format(time.RFC3339Nano))
	}
}

// cmdEmulatorCert writes a local certificate authority and a server
// certificate for localhost, 127.0.0.1 and ::1 to --out.
func (a *app) cmdEmulatorCert(_ context.Context, _ []string) error {
	if a.emu.certOut == "" {
		return usagef("--out is required")
	}
	c, err := emulator.NewCertificate()
	if err != nil {
		return err
	}
	if err := c.WriteFiles(a.emu.certOut); err != nil {
		return err
	}
	ca := filepath.Join(a.emu.certOut, emulator.CAFile)
	fmt.Fprintf(a.stdout, "wrote %s, %s and %s\n", ca, filepath.Join(a.emu.certOut, emulator.CertFile), filepath.Join(a.emu.certOut, emulator.KeyFile))
	fmt.Fprintf(a.stdout, "serve:  tablekit emulator --cert %s --key %s\n", filepath.Join(a.emu.certOut, emulator.CertFile), filepath.Join(a.emu.certOut, emulator.KeyFile))
	fmt.Fprintf(a.stdout, "trust:  SSL_CERT_FILE=%s (Go), REQUESTS_CA_BUNDLE=%s (Python), NODE_EXTRA_CA_CERTS=%s (Node.js)\n", ca, ca, ca)
	return nil
}

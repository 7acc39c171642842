// Package azurite starts Azurite, Microsoft's open-source Azure Storage
// emulator, for tests: tablekit's own and its users'.
//
// Start launches one Azurite process with blob, queue and table services on
// free loopback ports, in-memory persistence, and returns its connection
// string. Use it from TestMain for one emulator per test binary, or call
// StartTB from a test for one per test:
//
//	func TestMain(m *testing.M) {
//		az, err := azurite.Start(context.Background(), nil)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		az.Stop()
//		os.Exit(code)
//	}
//
// Azurite accepts requests that Azure Table storage refuses. With
// Options.Strict, a loopback proxy in front of the table endpoint refuses
// them as Azure does (status, error code, message), so a test that passes
// here does not fail on Azure; see Options.Strict for the rules.
//
// Azurite on loopback answers in well under a millisecond and never
// throttles. Options.Latency adds a delay to every table request, and
// Options.Throttle answers 503 ServerBusy, as Azure does, once a
// partition or the account is over its scalability target (by default
// Azure's 2,000 entities per second per partition and 20,000 per
// account), so retries, back-off and concurrency limits can be tested
// and benchmarked:
//
//	az := azurite.StartTB(t, &azurite.Options{
//		Latency:  5 * time.Millisecond,
//		Throttle: &azurite.ThrottleOptions{}, // Azure's targets
//	})
//	// ... run the load ...
//	t.Logf("throttled %d requests", az.Stats().Throttled)
//
// Strict, Latency and Throttle each start the same loopback proxy in
// front of the table endpoint (TableURL and ConnectionString then point at
// it), and each applies only when set: Latency or Throttle alone leave
// Azurite's own rules as they are.
//
// Options.CertFile and KeyFile serve the three services over HTTPS, and
// Options.OAuth accepts bearer tokens there (Azurite's --cert, --key and
// --oauth basic, which Get User Delegation Key needs).
//
// The azurite command is looked for, in order: $TABLEKIT_AZURITE (a path);
// tablekit's own pinned install (integration/azurite/_npm, installed by
// `make test` with npm ci); node_modules/.bin/azurite in the current
// directory or any parent (your project's own `npm install azurite`); and
// PATH. When none is found, Start fails with the command that installs it:
// tests fail loudly instead of skipping.
package azurite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/childproc"
)

// Version is the Azurite release tablekit pins and tests against.
const Version = "3.37.0"

// AccountName and AccountKey are Azurite's well-known development
// credentials (azrules.DevAccountName, azrules.DevAccountKey). They are
// public and work only against the emulator.
const (
	AccountName = azrules.DevAccountName
	AccountKey  = azrules.DevAccountKey
)

// ErrNotInstalled is returned by Start and Find when no azurite command can
// be found. The error's text carries the command that installs it.
var ErrNotInstalled = errors.New("azurite is not installed")

// Options configures Start. A nil *Options means the defaults.
type Options struct {
	// Command is the azurite executable. Empty means Find().
	Command string
	// StartTimeout bounds the wait for all three ports to accept
	// connections. Default 90s: Azurite starts in a second or two on an
	// idle machine, but missed 30 s on this 2-core machine at a load
	// average of 16 (2026-11-28); an Azurite that exits is reported at
	// once, whatever the timeout.
	StartTimeout time.Duration
	// Output receives Azurite's stdout and stderr. Default: kept in memory
	// and included in the error if startup fails.
	Output io.Writer
	// ExtraArgs are appended to the command line (e.g. "--loose").
	ExtraArgs []string
	// Strict puts a loopback reverse proxy in front of the table endpoint
	// that refuses what Azure Table storage refuses and Azurite lets
	// through, with Azure's status, error code and message: a transaction
	// spanning partitions, with more than 100 operations or two on one
	// entity; an entity with more than 252 custom properties, over 1 MiB,
	// or with a property name that is not a C# identifier of at most 255
	// characters; $top above 1000; a $filter with an unterminated string
	// literal; an entity outside the key range of a SAS (and a query
	// under such a SAS returns only the range). A key or a value Azurite
	// refuses too (a key with / \ # ? or over 1 KiB, a String over 32K
	// UTF-16 units, a Binary over 64 KiB) gets Azure's answer as well.
	// The rules are the ones tablekit's emulator answers by. Everything
	// else passes through untouched. TableURL and ConnectionString then
	// point at the proxy; blob and queue endpoints are Azurite's own.
	Strict bool
	// Latency is added to every request to the table endpoint (queries,
	// point reads, writes, transactions, table operations): the proxy
	// holds each request this long before it refuses, throttles or
	// forwards it, as if the service were across a network. The whole
	// delay comes before the request reaches Azurite; the response is
	// streamed back at once. A client that gives up meanwhile (its
	// context ends) stops the wait, and the request is neither answered
	// nor forwarded (see ProxyStats.Abandoned). Zero means none.
	Latency time.Duration
	// LatencyJitter adds a random delay, uniform in [0, LatencyJitter),
	// to Latency for each request. Zero means none.
	LatencyJitter time.Duration
	// Throttle makes the proxy answer as Azure does when a partition or
	// the account is over its scalability target: 503 with error code
	// ServerBusy. Each request costs its entities (a transaction each of
	// its operations; a query page the entities it returns, charged when
	// it arrives), counted in token buckets per partition and per
	// account that fill at the target and hold ThrottleOptions.Burst's
	// worth of it. &ThrottleOptions{} is Azure's targets; nil means no
	// throttling. ThrottleOptions says exactly what counts; Instance.Stats
	// reports what was admitted and throttled. Throttling applies after
	// Latency and after Strict's rules.
	Throttle *ThrottleOptions
	// CertFile and KeyFile, when both are set, serve the three services
	// over HTTPS with this PEM certificate and key (Azurite's --cert and
	// --key): the URLs and ConnectionString then say https, and clients
	// must trust the certificate. Strict, Latency and Throttle's proxy
	// speaks plain HTTP to Azurite, so Start refuses them together.
	CertFile, KeyFile string
	// OAuth is Azurite's --oauth level: "basic" accepts Microsoft Entra
	// ID bearer tokens (and serves Get User Delegation Key). Azurite
	// needs HTTPS for it: Start refuses it without CertFile.
	OAuth string
}

// Instance is a running Azurite.
type Instance struct {
	// ConnectionString has explicit endpoints and the development key.
	ConnectionString string
	// BlobURL, QueueURL and TableURL are the service endpoints, such as
	// http://127.0.0.1:41234/devstoreaccount1.
	BlobURL, QueueURL, TableURL string
	// DirectTableURL is Azurite's own table endpoint, behind no proxy:
	// requests to it get no latency, no throttling and none of Strict's
	// rules. It serves the same tables as TableURL, so a test or a
	// benchmark can load its data fast and then measure through the
	// proxy. It equals TableURL when no proxy runs.
	DirectTableURL string

	proc     *childproc.Process
	stopOnce sync.Once
	location string
	proxy    *tableProxy
}

// Find returns the path of the azurite command, searching as the package
// documentation describes, or an error wrapping ErrNotInstalled that names
// the install command.
func Find() (string, error) {
	if p := os.Getenv("TABLEKIT_AZURITE"); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w: TABLEKIT_AZURITE=%s is not an executable file", ErrNotInstalled, p)
	}
	if dir := pinnedDir(); dir != "" {
		if p := filepath.Join(dir, "node_modules", ".bin", "azurite"); isExecutable(p) {
			return p, nil
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if p := filepath.Join(d, "node_modules", ".bin", "azurite"); isExecutable(p) {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if p, err := exec.LookPath("azurite"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s", ErrNotInstalled, InstallHint())
}

// InstallHint is the command that installs the pinned Azurite.
func InstallHint() string {
	if dir := pinnedDir(); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
			return "run `npm ci --prefix " + dir + "` (or `make azurite-install` in the tablekit repository), or `npm install --save-dev azurite@" + Version + "` in your project"
		}
	}
	return "run `npm install --save-dev azurite@" + Version + "` in your project (Node.js 20 or later), or set TABLEKIT_AZURITE to the azurite command"
}

// pinnedDir is tablekit's own npm project, next to this source file when
// the source is on disk (in the repository or the module cache). In a
// binary built with -trimpath (make test builds so) the file's name is
// its import path: the project is then looked for in the tablekit
// module that holds the current directory.
func pinnedDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	if filepath.IsAbs(file) {
		return npmProject(filepath.Join(filepath.Dir(file), "_npm"))
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if !bytes.HasPrefix(mod, []byte("module github.com/tablekit/tablekit\n")) {
				return ""
			}
			return npmProject(filepath.Join(d, "integration", "azurite", "_npm"))
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// npmProject is dir when it holds a package.json, else "".
func npmProject(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		return ""
	}
	return dir
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Start launches Azurite and waits until its three services accept
// connections. ctx bounds the startup only; the process runs until Stop
// (or until the calling process exits, on Linux).
func Start(ctx context.Context, opts *Options) (*Instance, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 90 * time.Second
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("azurite: set both Options.CertFile and KeyFile, or neither")
	}
	if o.OAuth != "" && o.CertFile == "" {
		return nil, errors.New("azurite: Options.OAuth needs HTTPS (CertFile and KeyFile), as Azurite's --oauth needs --cert")
	}
	if o.CertFile != "" && (o.Strict || o.Latency > 0 || o.LatencyJitter > 0 || o.Throttle != nil) {
		return nil, errors.New("azurite: Options.Strict, Latency and Throttle are not available over HTTPS (CertFile)")
	}
	cmdPath := o.Command
	if cmdPath == "" {
		var err error
		if cmdPath, err = Find(); err != nil {
			return nil, err
		}
	}
	return start(ctx, cmdPath, o)
}

// start runs Azurite with its three services on port 0, so that each
// takes a free port as it binds, and reads the ports from the lines Azurite
// prints once a service listens ("Azurite Table service is successfully
// listening at http://127.0.0.1:40213"). Ports probed here and handed to
// Azurite could be taken in between: with four test runs at once starting
// Azurites (make test), one Azurite's table service failed to bind a port
// another's blob service had just taken, and before it exited, the probe
// of its port reached the other's blob service, so a test's table requests
// met a blob service (400 InvalidResourceName).
func start(ctx context.Context, cmdPath string, o Options) (*Instance, error) {
	// Azurite keeps everything in memory; its working directory takes any
	// stray file it might write, and is removed on Stop.
	location, err := os.MkdirTemp("", "tablekit-azurite-")
	if err != nil {
		return nil, fmt.Errorf("azurite: %w", err)
	}
	args := []string{
		"--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry", "--silent",
		"--blobHost", "127.0.0.1", "--blobPort", "0",
		"--queueHost", "127.0.0.1", "--queuePort", "0",
		"--tableHost", "127.0.0.1", "--tablePort", "0",
	}
	if o.CertFile != "" {
		// Azurite runs in a directory of its own: absolute paths.
		cert, err1 := filepath.Abs(o.CertFile)
		key, err2 := filepath.Abs(o.KeyFile)
		if err := errors.Join(err1, err2); err != nil {
			os.RemoveAll(location)
			return nil, fmt.Errorf("azurite: %w", err)
		}
		args = append(args, "--cert", cert, "--key", key)
	}
	if o.OAuth != "" {
		args = append(args, "--oauth", o.OAuth)
	}
	args = append(args, o.ExtraArgs...)

	var logBuf lockedBuffer
	var out io.Writer = &logBuf
	if o.Output != nil {
		out = io.MultiWriter(o.Output, &logBuf)
	}
	listening := &listenWatch{found: make(chan struct{})}
	inst := &Instance{location: location}
	cmd := exec.Command(cmdPath, args...)
	cmd.Stdout = io.MultiWriter(out, listening)
	cmd.Stderr = out
	cmd.Dir = location
	// A crashed test binary leaves no Azurite behind (childproc).
	proc, err := childproc.Start(cmd)
	if err != nil {
		os.RemoveAll(location)
		return nil, fmt.Errorf("azurite: starting %s: %w", cmdPath, err)
	}
	inst.proc = proc

	timeout := time.NewTimer(o.StartTimeout)
	defer timeout.Stop()
	select {
	case <-listening.found:
	case <-inst.proc.Done():
		inst.cleanup()
		return nil, fmt.Errorf("azurite exited during startup (%v): %s", inst.proc.Err(), bytes.TrimSpace(logBuf.Bytes()))
	case <-ctx.Done():
		inst.Stop()
		return nil, fmt.Errorf("azurite: startup: %w", ctx.Err())
	case <-timeout.C:
		inst.Stop()
		return nil, fmt.Errorf("azurite did not report its three services listening within %v: %s", o.StartTimeout, bytes.TrimSpace(logBuf.Bytes()))
	}
	ports := listening.ports()

	scheme := "http"
	if o.CertFile != "" {
		scheme = "https"
	}
	base := scheme + "://127.0.0.1:"
	inst.BlobURL = base + ports["Blob"] + "/" + AccountName
	inst.QueueURL = base + ports["Queue"] + "/" + AccountName
	inst.TableURL = base + ports["Table"] + "/" + AccountName
	inst.DirectTableURL = inst.TableURL
	if o.Strict || o.Latency > 0 || o.LatencyJitter > 0 || o.Throttle != nil {
		p, u, err := startProxy(base+ports["Table"], proxyConfig{
			strict: o.Strict, latency: o.Latency, jitter: o.LatencyJitter, throttle: o.Throttle,
		})
		if err != nil {
			inst.Stop()
			return nil, fmt.Errorf("azurite: table proxy: %w", err)
		}
		inst.proxy = p
		inst.TableURL = u + "/" + AccountName
	}
	inst.ConnectionString = "DefaultEndpointsProtocol=" + scheme + ";AccountName=" + AccountName +
		";AccountKey=" + AccountKey +
		";BlobEndpoint=" + inst.BlobURL +
		";QueueEndpoint=" + inst.QueueURL +
		";TableEndpoint=" + inst.TableURL + ";"
	return inst, nil
}

// listenWatch reads Azurite's stdout for the line each service prints once
// it listens, and closes found when the Blob, Queue and Table services
// have each printed theirs.
type listenWatch struct {
	mu      sync.Mutex
	partial []byte
	port    map[string]string // service ("Blob") -> port
	found   chan struct{}
}

// listeningLine is what Azurite prints once a service is bound:
// "Azurite Table service is successfully listening at https?://127.0.0.1:40213".
var listeningLine = regexp.MustCompile(`^Azurite (Blob|Queue|Table) service is successfully listening at https?://[^\s]*:([0-9]+)\s*$`)

func (w *listenWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.port) == 3 {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if m := listeningLine.FindStringSubmatch(line); m != nil {
			if w.port == nil {
				w.port = map[string]string{}
			}
			w.port[m[1]] = m[2]
			if len(w.port) == 3 {
				close(w.found)
				w.partial = nil
				break
			}
		}
	}
	if len(w.partial) > 64<<10 { // no line that long is Azurite's
		w.partial = nil
	}
	return len(p), nil
}

func (w *listenWatch) ports() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.port
}

// Stop terminates Azurite (SIGTERM, then SIGKILL after 5 s) and removes its
// working directory. It is safe to call more than once.
func (i *Instance) Stop() error {
	i.stopOnce.Do(func() {
		if i.proxy != nil {
			i.proxy.close()
		}
		if i.proc != nil {
			i.proc.Stop(5 * time.Second)
		}
		i.cleanup()
	})
	return nil
}

func (i *Instance) cleanup() { os.RemoveAll(i.location) }

// StartTB starts Azurite for one test (or benchmark) and stops it in
// tb.Cleanup. It fails the test, never skips it, when Azurite cannot start.
func StartTB(tb testing.TB, opts *Options) *Instance {
	tb.Helper()
	inst, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("azurite: %v", err)
	}
	tb.Cleanup(func() { inst.Stop() })
	return inst
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// Package testenv gives tablekit's storage tests an account, unique
// resource names and cleanup, and reads the variables that steer them.
// One service serves a whole test binary, started on first use and
// stopped when the binary exits; TABLEKIT_TEST_TARGET (EnvTarget) says
// which:
//
//   - unset or "emulator", tablekit's emulator, which answers as Azure
//     does: in the test process, or in a process of its own when
//     TABLEKIT_TEST_EMULATOR names a tablekit command (EnvEmulatorBinary;
//     make test sets it);
//   - "emulator-early-end", the emulator ending query pages early as Azure
//     may (emulator.Options.EarlyEnd, seeded by TABLEKIT_TEST_SEED): the
//     tests then prove that nothing stops at a short or empty page. Early
//     ends add requests and change where pages end, so CountingAccount's
//     queries (its tests assert request counts) are exempt
//     (emulator.NoEarlyEndHeader), and MainConnectionString (Examples,
//     whose output shows pages) is a second emulator, one that ends no
//     page early;
//   - "azurite", Azurite through the integration/azurite harness in strict
//     mode (Azure's rules that Azurite lets through are enforced by its
//     proxy); "azurite-lenient", plain Azurite;
//   - an account's connection string: that account.
//
// Tests that need more than Go (Node.js, Azurite, the JS SDK) belong to a
// tier and say so in their first line (Tier): they run only when
// TABLEKIT_TEST_TIERS (EnvTiers) asks for their tier, and then fail, with
// the command that installs it, when what they need is missing; they never
// skip silently. The same holds for the azurite targets.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/tier"
)

var (
	once     sync.Once
	connStr  string
	startErr error
	stopper  interface{ Stop() error }

	// On the emulator targets: the Examples' emulator, which ends no page
	// early and runs its clock ExampleClockRate times as fast.
	examplesOnce sync.Once
	examples     interface{ Stop() error }
	examplesConn string
	examplesErr  error
)

// DefaultParallel is how many Parallel tests Main runs at once when
// -parallel is not given. Patterns' tests took 65 s at 8 and 45 s at 16,
// with Go alone (go test -count=1 -parallel N ./patterns/, 2026-11-28,
// this 2-core machine): their longest, in azcore's retry delays, waited
// half a minute for a place.
const DefaultParallel = 16

// TestGCPercent is the garbage collector's target (GOGC) in a test binary
// whose TestMain calls Main, and in the emulator process it starts, when
// GOGC is not set and no benchmark runs: the heap may grow to five times
// what is live between collections instead of two. Patterns' tests spent
// 19% less CPU at 200 than at Go's 100 (median of four runs each, 41.5 s
// against 51.5 s), their peak memory 450 to 540 MB instead of 310 to 360;
// at 400, 12% less again (median of six runs each, 37.1 s against
// 42.0 s) and about a second less time (36.1 s against 37.0 s), their
// peak memory 630 to 810 MB instead of 430 to 530 (GOGC=N, alternately,
// on one test binary built by go test -c ./patterns/, 2026-11-29, this
// 2-core machine). A test run is mostly bound by CPU (make test), and
// memory is what a test machine has to spare. Benchmarks keep Go's
// default, the one a user's program runs with.
const TestGCPercent = 400

// testGC reports whether Main applies TestGCPercent: GOGC is unset and no
// benchmark runs. Call it after flag.Parse.
func testGC() bool {
	b := flag.Lookup("test.bench")
	return os.Getenv("GOGC") == "" && (b == nil || b.Value.String() == "")
}

// Main runs the tests and then stops the shared Azurite, if one was
// started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// Without it, Azurite is killed when the test binary exits (on Linux).
//
// Unless -parallel is given, Main lets Parallel tests run
// DefaultParallel at once, not GOMAXPROCS: a storage test spends its
// time waiting on a service, azcore's retry delays or a child process,
// not on a CPU, so a plain `go test ./...` on a 2-core machine would
// otherwise leave most of them queued behind two sleepers.
//
// Under the race detector, Main also keeps the commands the tests start
// from sleeping a second on exit (raceExitSleep). Unless GOGC is set or a
// benchmark runs, it sets the garbage collector's target to
// TestGCPercent.
func Main(m *testing.M) {
	if startedThroughSelf() {
		fmt.Fprintf(os.Stderr, "testenv: %s is this test binary run as a command (Self), but its TestMain did not run the command (RunsAs)\n", os.Args[0])
		os.Exit(2)
	}
	flag.Parse()
	raceExitSleep()
	if testGC() {
		debug.SetGCPercent(TestGCPercent)
		gcEnv = "GOGC=" + strconv.Itoa(TestGCPercent)
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(DefaultParallel))
	}
	code := m.Run()
	removeCommands()
	if stopper != nil {
		stopper.Stop()
	}
	if examples != nil {
		examples.Stop()
	}
	os.Exit(code)
}

// ConnectionString returns the connection string of the test account,
// starting the emulator or Azurite on first use.
func ConnectionString(t testing.TB) string {
	t.Helper()
	start()
	if startErr != nil {
		t.Fatalf("testenv: cannot start %s: %v", Target(), startErr)
	}
	return connStr
}

// MainConnectionString is ConnectionString for TestMain and Example
// functions, which have no testing.TB: when the service cannot start it
// prints why and exits the test binary with status 1.
//
// On the emulator targets it is an emulator of its own, started on first
// use, that ends no page early (an Example's output shows its pages) and
// whose clock runs ExampleClockRate times as fast as real time (an
// Example that waits for a worker to apply an intent delayed a second
// waits a tenth of one). On Azurite or an account it is the shared
// service, in real time.
func MainConnectionString() string {
	cs, err := exactConnectionString()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: cannot start %s: %v\n", Target(), err)
		os.Exit(1)
	}
	return cs
}

// ExampleClockRate is how many times as fast as real time the clock of
// MainConnectionString's emulator runs (emulator.Options.ClockRate): a
// consistency worker's messages, invisible 30 s while it works on them,
// stay so for 3 s of real time, far longer than an Example's worker takes
// over one. The four Examples of patterns that wait for a worker took
// 1.0 s each at real time (go test -json ./patterns/, 2026-11-29).
//
// The clock runs fast from TestMain on, so by the time the Examples run
// (after the package's tests) it is ahead of the real one by nine times
// the tests' time: a SAS or token an Example signs with an expiry from
// time.Now must allow for that (an hour covers tests of six minutes).
const ExampleClockRate = 10

// exactConnectionString is the connection string of a service whose query
// pages end only at $top or at their range's end (for Examples, which keep
// to their own tables): on the emulator targets an emulator of its own,
// started on first use, whose clock runs ExampleClockRate times as fast as
// real time; else the shared service.
func exactConnectionString() (string, error) {
	if Target() != TargetEmulator {
		start()
		return connStr, startErr
	}
	examplesOnce.Do(func() {
		examples, examplesConn, _, examplesErr = startEmulator(context.Background(), nil, false, ExampleClockRate)
	})
	if examplesErr != nil {
		return "", examplesErr
	}
	return examplesConn, nil
}

func start() {
	once.Do(func() {
		tg, err := readTarget()
		if err != nil {
			startErr = err
			return
		}
		switch tg.kind {
		case targetAccount:
			connStr = tg.connStr
		case TargetEmulator:
			ee, err := earlyEnd()
			if err != nil {
				startErr = err
				return
			}
			stopper, connStr, _, startErr = startEmulator(context.Background(), ee, false, 0)
		case TargetAzurite:
			if cs := strings.TrimSpace(os.Getenv(EnvAzurite)); cs != "" {
				connStr = cs // started by tools/withazurite, for every test binary of a run
				return
			}
			if err := tier.Needs(TierAzurite); err != nil {
				startErr = fmt.Errorf("%s=%s: %w", EnvTarget, os.Getenv(EnvTarget), err)
				return
			}
			// Strict unless asked otherwise: Azurite behind the proxy that
			// refuses what Azure refuses, so a test that passes here does
			// not fail on Azure.
			inst, err := azurite.Start(context.Background(), &azurite.Options{Strict: !tg.lenient})
			if err != nil {
				startErr = err
				return
			}
			stopper, connStr = inst, inst.ConnectionString
		}
	})
}

// Account returns an Account on the test storage account.
func Account(t testing.TB) *tablekit.Account {
	t.Helper()
	return AccountWith(t, nil)
}

// AccountWith is Account with extra client options (such as per-retry
// policies for fault injection). When they count requests (a
// *tablekit.RequestCounter among the policies), the account's queries are
// exempt from early ends, as CountingAccount's are.
func AccountWith(t testing.TB, opts *tablekit.AccountOptions) *tablekit.Account {
	t.Helper()
	return accountOn(t, ConnectionString(t), opts)
}

// CountingAccount returns an Account whose every HTTP request is counted,
// once however often azcore tried it (a per-call policy): on Azurite or
// an account, a transient failure (a pooled connection the server closed
// as idle) makes azcore send a request again, which is no part of an
// operation's budget.
// Its queries carry emulator.NoEarlyEndHeader: on TargetEarlyEnd
// the emulator ends none of its pages early, so the tests that assert how
// many requests an operation takes still can, on the same emulator as the
// rest of the test (the early-end tests assert exactness instead).
func CountingAccount(t testing.TB) (*tablekit.Account, *tablekit.RequestCounter) {
	t.Helper()
	return CountingAccountOn(t, ConnectionString(t))
}

// CountingAccountOn is CountingAccount on the account of connStr (such as
// OtherAccount's).
func CountingAccountOn(t testing.TB, connStr string) (*tablekit.Account, *tablekit.RequestCounter) {
	t.Helper()
	c := &tablekit.RequestCounter{}
	return accountOn(t, connStr, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerCallPolicies: []policy.Policy{c},
	}}), c
}

// accountOn connects to connStr with opts, adding exactPages when opts
// count requests (opts itself unchanged).
func accountOn(t testing.TB, connStr string, opts *tablekit.AccountOptions) *tablekit.Account {
	t.Helper()
	if opts != nil && counts(opts) {
		o := *opts
		o.ClientOptions.PerRetryPolicies = append(slices.Clone(o.ClientOptions.PerRetryPolicies), exactPages{})
		opts = &o
	}
	acct, err := tablekit.Connect(connStr, opts)
	if err != nil {
		t.Fatalf("testenv: connect: %v", err)
	}
	return acct
}

// counts reports whether opts' policies include a request counter.
func counts(opts *tablekit.AccountOptions) bool {
	for _, p := range slices.Concat(opts.ClientOptions.PerCallPolicies, opts.ClientOptions.PerRetryPolicies) {
		if _, ok := p.(*tablekit.RequestCounter); ok {
			return true
		}
	}
	return false
}

// exactPages sets emulator.NoEarlyEndHeader on every request.
type exactPages struct{}

func (exactPages) Do(req *policy.Request) (*http.Response, error) {
	req.Raw().Header.Set(emulator.NoEarlyEndHeader, "1")
	return req.Next()
}

// TableName returns a unique table name for this test (letters and
// digits). If a table of that name exists when the test ends, it is
// deleted.
func TableName(t testing.TB) string {
	t.Helper()
	name := "t" + alnum(t.Name(), 40) + suffix()
	t.Cleanup(func() { deleteTable(t, name) })
	return name
}

// Table creates a table with a unique name and deletes it when the test
// ends.
func Table(t testing.TB, acct *tablekit.Account) *aztables.Client {
	t.Helper()
	name := TableName(t)
	c := acct.Tables().NewClient(name)
	if _, err := c.CreateTable(context.Background(), nil); err != nil {
		t.Fatalf("testenv: create table %s: %v", name, err)
	}
	return c
}

// QueueName returns a unique queue name for this test (lowercase letters,
// digits and hyphens). If the queue exists when the test ends, it is
// deleted.
func QueueName(t testing.TB) string {
	t.Helper()
	name := "q-" + strings.ToLower(alnum(t.Name(), 40)) + "-" + suffix()
	t.Cleanup(func() {
		acct, err := tablekit.Connect(connStr, nil)
		if err == nil && acct.Queues() != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = acct.Queues().DeleteQueue(ctx, name, nil)
		}
	})
	return name
}

// ContainerName returns a unique blob container name for this test. If the
// container exists when the test ends, it is deleted.
func ContainerName(t testing.TB) string {
	t.Helper()
	name := "c-" + strings.ToLower(alnum(t.Name(), 40)) + "-" + suffix()
	t.Cleanup(func() {
		acct, err := tablekit.Connect(connStr, nil)
		if err == nil && acct.Blobs() != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = acct.Blobs().DeleteContainer(ctx, name, nil)
		}
	})
	return name
}

func deleteTable(t testing.TB, name string) {
	if connStr == "" {
		return
	}
	acct, err := tablekit.Connect(connStr, nil)
	if err != nil || acct.Tables() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = acct.Tables().DeleteTable(ctx, name, nil)
}

// alnum keeps the ASCII letters and digits of s, at most n of them.
func alnum(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OtherAccount starts a second service of the tests' target (an emulator
// or an Azurite, another account to copy to) for this test only and
// returns its connection string; it is stopped when the test ends. On a
// real account (a connection string in EnvTarget) there is no second one:
// the test fails, naming what it needs.
func OtherAccount(t testing.TB) string {
	t.Helper()
	switch Target() {
	case TargetEmulator:
		ee, err := earlyEnd()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		return startEmulatorTB(t, ee)
	case TargetAzurite:
		return azurite.StartTB(t, nil).ConnectionString
	}
	t.Fatalf("testenv: this test needs a second account, which testenv cannot start when %s is a connection string", EnvTarget)
	return ""
}

// RaceExitSleep is the GORACE option Main gives the processes a test
// starts under the race detector, unless GORACE already sets
// atexit_sleep_ms. A race-instrumented Go program sleeps atexit_sleep_ms
// (1000 by default) when it exits, so that a race another thread is
// reporting at that moment is printed in full; a report is written as the
// race is found, so 10 ms covers one that is being printed. The commands'
// tests start hundreds of race-built processes: cmd/tablekit-worker's
// TestHelpDocumentsEveryFlag and TestVersion took 16.8 s, 8.1 s with
// atexit_sleep_ms=0 (their race-built test binary, run alone, 2026-11-28,
// this 2-core machine at load 11). make test sets it for the test
// binaries too.
const RaceExitSleep = "atexit_sleep_ms=10"

// raceExitSleep adds RaceExitSleep to GORACE for the processes this test
// binary starts, under the race detector.
func raceExitSleep() {
	if !Race {
		return
	}
	g := os.Getenv("GORACE")
	if strings.Contains(g, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(RaceExitSleep+" "+g))
}

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildMu  sync.Mutex
	buildDir string
	builds   = map[string]*commandBuild{} // package directory -> its build

	// Prebuild's builds run under buildCtx, which removeCommands cancels
	// before it waits for them: a build no test came to need is killed
	// when the tests end, not left writing into a removed directory.
	buildCtx, cancelBuilds = context.WithCancel(context.Background())
	prebuilds              sync.WaitGroup
)

// commandBuild is the one build of a command per test binary.
type commandBuild struct {
	once sync.Once
	bin  string
	out  string // go build's output when it failed
	err  error
}

// Command builds the command in the package directory dir (relative to
// the test's package, as go test runs it: "." or "../tablekit-worker")
// once per test binary and returns the binary's path. It is built as
// build/images.sh builds the binaries it ships (-ldflags='-s -w'), with
// the race detector exactly when this test binary is (go test -race), so
// `go test ./...` compiles nothing twice and `go test -race` checks the
// command's concurrency as well as the test's. The binaries live in one
// temporary directory, removed when Main returns.
func Command(t testing.TB, dir string) string {
	t.Helper()
	raceExitSleep() // for packages whose TestMain is not Main
	b := buildOf(dir)
	b.run(context.Background(), dir)
	if b.err != nil {
		t.Fatalf("testenv: go build %s: %v\n%s", dir, b.err, b.out)
	}
	return b.bin
}

// Prebuild starts Command's build of the command in dir in the
// background and returns at once: the test that calls Command for it
// later finds it built, or waits for the rest, while the tests before it
// run. Call it from TestMain, before Main, for a command that few of the
// tests need and that takes seconds to link (the tests that only run it
// can run the test binary itself instead: Self). A build that no test
// needed is killed when Main ends.
func Prebuild(dir string) {
	raceExitSleep()
	b := buildOf(dir)
	prebuilds.Add(1)
	go func() {
		defer prebuilds.Done()
		b.run(buildCtx, dir)
	}()
}

// buildOf returns the build of the command in dir.
func buildOf(dir string) *commandBuild {
	buildMu.Lock()
	defer buildMu.Unlock()
	b := builds[dir]
	if b == nil {
		b = &commandBuild{}
		builds[dir] = b
	}
	return b
}

// run builds the command once; a caller that comes while another builds
// it waits for that build.
func (b *commandBuild) run(ctx context.Context, dir string) {
	b.once.Do(func() {
		d, err := commandDir()
		if err != nil {
			b.err = err
			return
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			b.err = err
			return
		}
		bin := filepath.Join(d, filepath.Base(abs))
		// Without the symbol table and DWARF, as build/images.sh builds
		// the binaries it ships: the link took a third less CPU (0.58 s
		// against 0.90 s for tablekit-worker), and stack traces, race
		// reports and the build information are the same.
		args := []string{"build", "-ldflags=-s -w"}
		if Race {
			args = append(args, "-race")
		}
		out, err := exec.CommandContext(ctx, "go", append(args, "-o", bin, dir)...).CombinedOutput()
		if err != nil {
			b.out, b.err = string(out), err
			return
		}
		b.bin = bin
	})
}

// commandDir is the directory the commands live in, made on first use.
func commandDir() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir == "" {
		d, err := os.MkdirTemp("", commandsPrefix)
		if err != nil {
			return "", fmt.Errorf("a directory for the commands: %w", err)
		}
		buildDir = d
	}
	return buildDir, nil
}

// Self returns the path of a link called name to this test binary, made
// once in the directory Command builds into. Run through it, the test
// binary of a command's package is that command, when its TestMain
// begins so:
//
//	func TestMain(m *testing.M) {
//		if testenv.RunsAs("tablekit-worker") {
//			main()
//		}
//		testenv.Main(m)
//	}
//
// A test of the command then starts it without a build (a go build of
// a command, its link mostly, took 1.5 to 4 s of CPU and wall time on
// this 2-core machine); under go test -race the test binary, and so the
// command, is race-built, as Command builds it then. Only what reads the
// binary's build information differs (go test stamps no version control
// information): a test of that uses Command.
func Self(t testing.TB, name string) string {
	t.Helper()
	raceExitSleep() // for packages whose TestMain is not Main
	d, err := commandDir()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("testenv: this test binary: %v", err)
	}
	// Beside, not among, Command's binaries, which are named for their
	// packages too.
	link := filepath.Join(d, "self", name)
	buildMu.Lock()
	defer buildMu.Unlock()
	if target, err := os.Readlink(link); err == nil && target == exe {
		return link
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := os.Symlink(exe, link); err != nil {
		t.Fatalf("testenv: a link to this test binary: %v", err)
	}
	return link
}

// RunsAs reports whether this process was started through Self's link
// called name.
func RunsAs(name string) bool {
	return len(os.Args) > 0 && filepath.Base(os.Args[0]) == name
}

// commandsPrefix begins the name of the directory Command and Self use.
const commandsPrefix = "tablekit-commands"

// startedThroughSelf reports whether this process was started through a
// link Self made: then its TestMain should have run the command, and Main
// must not run the tests, which would start it again, and so on.
func startedThroughSelf() bool {
	if len(os.Args) == 0 {
		return false
	}
	dir := filepath.Dir(os.Args[0])
	return filepath.Base(dir) == "self" && strings.HasPrefix(filepath.Base(filepath.Dir(dir)), commandsPrefix)
}

// removeCommands kills the builds Prebuild started that are still under
// way and removes what Command built and Self linked.
func removeCommands() {
	cancelBuilds()
	prebuilds.Wait()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

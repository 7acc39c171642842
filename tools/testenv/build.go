package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildMu    sync.Mutex
	buildDir   string
	built      = map[string]string{} // package directory -> binary
	buildFails = map[string]string{} // package directory -> go build's output
)

// Command builds the command in the package directory dir (relative to
// the test's package, as go test runs it: "." or "../tablekit-worker")
// once per test binary and returns the binary's path. It is built with
// the race detector exactly when this test binary is (go test -race), so
// `go test ./...` compiles nothing twice and `go test -race` checks the
// command's concurrency as well as the test's. The binaries live in one
// temporary directory, removed when Main returns.
func Command(t testing.TB, dir string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	raceExitSleep() // for packages whose TestMain is not Main
	if out, failed := buildFails[dir]; failed {
		t.Fatalf("testenv: go build %s failed earlier:\n%s", dir, out)
	}
	if bin, ok := built[dir]; ok {
		return bin
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "tablekit-commands")
		if err != nil {
			t.Fatalf("testenv: a directory for the commands: %v", err)
		}
		buildDir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("testenv: %s: %v", dir, err)
	}
	bin := filepath.Join(buildDir, filepath.Base(abs))
	args := []string{"build"}
	if Race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "-o", bin, dir)...).CombinedOutput()
	if err != nil {
		buildFails[dir] = string(out)
		t.Fatalf("testenv: go build %s: %v\n%s", dir, err, out)
	}
	built[dir] = bin
	return bin
}

// removeCommands removes what Command built.
func removeCommands() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildMu  sync.Mutex
	buildDir string
	builds   = map[string]*build{} // package directory -> its build
)

// build is one command's build: done is closed when bin or out is set.
type build struct {
	done chan struct{}
	bin  string // the binary, once built
	out  string // go build's output, when it failed
}

// Command builds the command in the package directory dir (relative to
// the test's package, as go test runs it: "." or "../tablekit-worker")
// once per test binary and returns the binary's path. It is built with
// the race detector exactly when this test binary is (go test -race), so
// `go test ./...` compiles nothing twice and `go test -race` checks the
// command's concurrency as well as the test's. The binaries live in one
// temporary directory, removed when Main returns.
//
// Two commands build at the same time: a test that needs tablekit does
// not wait behind another's build of tablekit-worker. Tests that need the
// same command wait for its one build.
func Command(t testing.TB, dir string) string {
	t.Helper()
	raceExitSleep() // for packages whose TestMain is not Main
	b, first, err := commandBuild(dir)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if first {
		b.run(dir)
	}
	<-b.done
	if b.out != "" {
		t.Fatalf("testenv: go build %s failed:\n%s", dir, b.out)
	}
	return b.bin
}

// commandBuild returns the build of dir, and whether the caller is the
// first to ask for it (and must run it).
func commandBuild(dir string) (*build, bool, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if b, ok := builds[dir]; ok {
		return b, false, nil
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "tablekit-commands")
		if err != nil {
			return nil, false, err
		}
		buildDir = d
	}
	b := &build{done: make(chan struct{})}
	builds[dir] = b
	return b, true, nil
}

// run builds the command in dir into the build directory, then closes
// b.done.
func (b *build) run(dir string) {
	defer close(b.done)
	abs, err := filepath.Abs(dir)
	if err != nil {
		b.out = err.Error()
		return
	}
	bin := filepath.Join(buildDir, filepath.Base(abs))
	args := []string{"build"}
	if Race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "-o", bin, dir)...).CombinedOutput()
	if err != nil {
		b.out = err.Error() + "\n" + string(out)
		return
	}
	b.bin = bin
}

// removeCommands removes what Command built, once every build has ended.
func removeCommands() {
	buildMu.Lock()
	defer buildMu.Unlock()
	for _, b := range builds {
		<-b.done
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

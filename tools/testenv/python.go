package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// pythonCandidates are the interpreters Python tries, in order: Debian's
// own, for which python3-azure installs its modules (a python3 of pyenv or
// of a virtual environment earlier on PATH does not see them), then the
// one on PATH.
var pythonCandidates = []string{"/usr/bin/python3", "python3"}

// pythonFind exits 0 when the Azure SDK for Python's modules the python
// tier drives are installed. It finds them without importing them:
// importing takes 0.7 s of CPU.
const pythonFind = "import importlib.util as u, sys; " +
	"sys.exit(0 if all(u.find_spec(m) for m in ('azure.data.tables', 'azure.storage.queue', 'azure.storage.blob')) else 1)"

// python is findPython's answer, found once per test binary.
var python struct {
	once sync.Once
	path string
	err  error
}

// PythonInstall is the command that installs what the python tier needs,
// from the repository's root (make test runs it).
const PythonInstall = "make pyinterop-install"

// Python returns a Python 3 interpreter that imports the Azure SDK for
// Python (azure-data-tables, azure-storage-queue, azure-storage-blob), or
// fails the test with the command that installs it. Call it after
// Tier(t, TierPython).
func Python(t testing.TB) string {
	t.Helper()
	py, err := findPython()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return py
}

// findPython returns the first of pythonCandidates that has the SDK; the
// error says what each one lacked and how to install it.
func findPython() (string, error) {
	python.once.Do(func() { python.path, python.err = lookPython() })
	return python.path, python.err
}

func lookPython() (string, error) {
	var tried []string
	for _, c := range pythonCandidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: not found", c))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, "-c", pythonFind)
		cmd.Stderr = &stderr
		err = cmd.Run()
		cancel()
		if err == nil {
			return path, nil
		}
		why := "no azure.data.tables, azure.storage.queue and azure.storage.blob"
		if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); lines[0] != "" {
			why = lines[len(lines)-1]
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, why))
	}
	return "", fmt.Errorf("no Python 3 that imports the Azure SDK for Python (%s): run `%s` from the repository root "+
		"(it runs `apt-get install -y python3-azure`; make test does)", strings.Join(tried, "; "), PythonInstall)
}

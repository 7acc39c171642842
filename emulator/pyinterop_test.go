package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/tools/testenv"
)

// The Python SDK interop test: _pyinterop/interop.py drives the Azure SDK
// for Python as Debian packages it (python3-azure: azure-data-tables,
// azure-storage-queue, azure-storage-blob) through tables, queues and
// blobs as Python users drive them, checking at each step what Azure
// answers, and prints one JSON line per step. Unlike the JS SDK, whose
// HTTP stack lowercases response header names, the Python SDK reads
// metadata names in the case the service sends them, so it shows whether
// the emulator keeps that case as Azure does.

// pyInteropScript is the script, under a directory Go tooling does not walk.
const pyInteropScript = "_pyinterop/interop.py"

// pySteps is every step interop.py runs, in order.
var pySteps = []string{
	"tables.create",
	"tables.edm",
	"tables.staleETag",
	"tables.paging",
	"tables.transaction",
	"tables.limits",
	"tables.sasPartition",
	"tables.delete",
	"queues.messages",
	"queues.metadataCase",
	"blobs.stagedBlocks",
	"blobs.noOverwrite",
	"blobs.listings",
	"blobs.append",
	"blobs.sas",
	"blobs.metadataCase",
	"blobs.leases",
	"blobs.copy",
	"blobs.deleteContainer",
}

// pyStep is one line of interop.py's output.
type pyStep struct {
	Step     string          `json:"step"`
	OK       bool            `json:"ok"`
	MS       int             `json:"ms"`
	Saw      json.RawMessage `json:"saw"`
	Error    json.RawMessage `json:"error"`
	Trace    []string        `json:"trace"`
	Problems []string        `json:"problems"`
}

func TestPythonInterop(t *testing.T) {
	testenv.Tier(t, testenv.TierPython)
	py := testenv.Python(t)
	script, err := filepath.Abs(pyInteropScript)
	if err != nil {
		t.Fatal(err)
	}
	em := emulator.StartTB(t, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Env = append(os.Environ(), "TABLEKIT_CONNECTION_STRING="+em.ConnectionString, "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	exitCode := cmd.ProcessState.ExitCode()
	elapsed := time.Since(start).Round(time.Millisecond)
	if exitCode != 0 && exitCode != 1 {
		t.Fatalf("%s %s: %v (exit %d)\nstderr:\n%s\nstdout:\n%s", py, pyInteropScript, runErr, exitCode, stderr.String(), stdout.String())
	}

	steps := map[string]pyStep{}
	var order []string
	anyFailed := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		var s pyStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil || s.Step == "" {
			t.Fatalf("interop.py printed a line that is not a step (%v): %s", err, sc.Text())
		}
		if _, dup := steps[s.Step]; dup {
			t.Fatalf("interop.py printed step %s twice", s.Step)
		}
		steps[s.Step] = s
		order = append(order, s.Step)
		anyFailed = anyFailed || !s.OK
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading interop.py's output: %v", err)
	}
	times := make([]string, 0, len(order))
	for _, name := range order {
		times = append(times, fmt.Sprintf("%s %d ms", name, steps[name].MS))
	}
	t.Logf("interop.py ran in %v: %s", elapsed, strings.Join(times, ", "))
	if anyFailed != (exitCode == 1) {
		t.Errorf("interop.py exited %d, but its steps say failed=%v\nstderr:\n%s", exitCode, anyFailed, stderr.String())
	}
	if strings.Join(order, " ") != strings.Join(pySteps, " ") {
		t.Errorf("interop.py ran the steps\n  %v\nwant\n  %v", order, pySteps)
	}
	for _, name := range pySteps {
		s, ok := steps[name]
		switch {
		case !ok:
			continue // reported above
		case len(s.Error) > 0:
			t.Errorf("step %s raised %s\n  %s", name, s.Error, strings.Join(s.Trace, "\n  "))
		case !s.OK:
			t.Errorf("step %s: the emulator did not answer as Azure does:\n  %s\n  saw: %s", name, strings.Join(s.Problems, "\n  "), s.Saw)
		}
	}
}

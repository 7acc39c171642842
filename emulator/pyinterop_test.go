package emulator_test

import (
	"bytes"
	"context"
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
	if runErr != nil && exitCode != 1 {
		t.Fatalf("%s %s: %v\nstderr:\n%s", py, pyInteropScript, runErr, stderr.String())
	}
	steps := testenv.PySteps(t, "interop.py", stdout.Bytes(), stderr.Bytes(), exitCode, pySteps)
	times := make([]string, 0, len(steps))
	for _, s := range steps {
		times = append(times, fmt.Sprintf("%s %d ms", s.Step, s.MS))
	}
	t.Logf("interop.py ran in %v: %s", elapsed, strings.Join(times, ", "))
}

package emulator_test

import (
	"testing"

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
	t.Parallel()
	testenv.PyScript{Path: pyInteropScript, Steps: pySteps}.Run(t)
}

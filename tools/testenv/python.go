package testenv

import (
	"testing"

	"github.com/tablekit/tablekit/tools/tier"
)

// PythonInstall is the command that installs what the python tier needs,
// from the repository's root (make test runs it).
const PythonInstall = tier.PythonInstall

// Python returns a Python 3 interpreter that imports the Azure SDK for
// Python (azure-data-tables, azure-storage-queue, azure-storage-blob), or
// fails the test with the command that installs it. Call it after
// Tier(t, TierPython).
func Python(t testing.TB) string {
	t.Helper()
	py, err := tier.FindPython()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return py
}

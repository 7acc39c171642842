package emulator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/integration/azurite"
	"github.com/tablekit/tablekit/tools/testenv"
)

// pageBlobSteps are the steps _pyinterop/pageblobs.py runs, in order.
var pageBlobSteps = []string{
	"pages.create", "pages.upload", "pages.clear", "pages.download", "pages.misaligned", "pages.beyondEnd",
	"pages.sequenceNumber", "pages.sequenceCondition", "pages.resize", "pages.wrongType", "pages.listing",
	"pages.snapshotCopy",
}

// TestPythonPageBlobs runs _pyinterop/pageblobs.py, the Azure SDK for
// Python driving page blobs, on the emulator (every answer Azure's) and
// on Azurite 3.37, where the script expects Azurite's own answer at the
// steps it departs from Azure, each with its evidence (pageblobs.py's
// AZURITE).
func TestPythonPageBlobs(t *testing.T) {
	testenv.Tier(t, testenv.TierPython)
	py := testenv.Python(t)
	script, err := filepath.Abs("_pyinterop/pageblobs.py")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("emulator", func(t *testing.T) {
		t.Parallel()
		runPageBlobs(t, py, script, emulator.StartTB(t, nil).ConnectionString, "")
	})
	t.Run("azurite", func(t *testing.T) {
		testenv.Tier(t, testenv.TierAzurite)
		t.Parallel()
		runPageBlobs(t, py, script, azurite.StartTB(t, nil).ConnectionString, "azurite")
	})
}

// runPageBlobs runs pageblobs.py against the account of conn.
func runPageBlobs(t *testing.T, py, script, conn, target string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Env = append(os.Environ(), "TABLEKIT_CONNECTION_STRING="+conn, "PAGEBLOBS_TARGET="+target, "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); runErr != nil && code != 1 {
		t.Fatalf("%s: %v\nstderr:\n%s", script, runErr, stderr.String())
	}
	steps := testenv.PySteps(t, "pageblobs.py", stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode(), pageBlobSteps)
	t.Logf("pageblobs.py: %d steps in %v", len(steps), time.Since(start).Round(time.Millisecond))
}

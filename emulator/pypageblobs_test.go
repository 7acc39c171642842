package emulator_test

import (
	"testing"

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
	t.Parallel()
	testenv.PyScript{Path: "_pyinterop/pageblobs.py", Steps: pageBlobSteps, OnAzurite: true}.Run(t)
}

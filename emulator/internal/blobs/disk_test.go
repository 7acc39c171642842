package blobs_test

import (
	"testing"

	"github.com/tablekit/tablekit/emulator/internal/blobs"
)

// TestOnDisk runs the Blob service's tests again on a service kept in a
// location (blobs.Open with Config.Location): every answer must be the
// same as in memory, and at the end of each test the location, opened
// again, must hold exactly what the service held (reopened), so that a
// change some handler forgets to write through fails here. Left out:
// the tests that need Azurite (they compare with it, not with memory) and
// TestAppendBlobBlockLimit (50,000 appends, each its own commit: 7.8 s;
// TestConcurrentAppendsAtPositions appends on disk).
//
// It runs them twice: with contents up to 64 KiB kept in the database (the
// default), and with every content of more than a byte in a file of its
// own, so that both ways of keeping a content, a snapshot's included, see
// every test.
func TestOnDisk(t *testing.T) {
	onDisk = true
	defer func() { onDisk = false }()
	t.Run("inline", testOnDisk)
	defer blobs.SetInlineMax(blobs.SetInlineMax(1))
	t.Run("files", testOnDisk)
}

func testOnDisk(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"PublicAccess", TestPublicAccess},
		{"ContainerPolicy", TestContainerPolicy},
		{"ETagListsLeasesAndMD5Details", TestETagListsLeasesAndMD5Details},
		{"PutBlobChecksums", TestPutBlobChecksums},
		{"AppendToSealedBlob", TestAppendToSealedBlob},
		{"NoCredentials", TestNoCredentials},
		{"CopyBlob", TestCopyBlob},
		{"PutBlobFromURL", TestPutBlobFromURL},
		{"PutBlockFromURL", TestPutBlockFromURL},
		{"BlobIndexTags", TestBlobIndexTags},
		{"BlobIndexTagLimits", TestBlobIndexTagLimits},
		{"FindBlobsByTags", TestFindBlobsByTags},
		{"IfTagsConditions", TestIfTagsConditions},
		{"RootContainer", TestRootContainer},
		{"BlobLeases", TestBlobLeases},
		{"ContainerLeases", TestContainerLeases},
		{"ETagsChangeOnEveryWrite", TestETagsChangeOnEveryWrite},
		{"ConcurrentAppendsAtPositions", TestConcurrentAppendsAtPositions},
		{"ParallelTransfers", TestParallelTransfers},
		{"NamesAndMarkers", TestNamesAndMarkers},
		{"DeletedContainer", TestDeletedContainer},
		{"UnsupportedAnswers", TestUnsupportedAnswers},
		{"Snapshots", TestSnapshots},
		{"StartupRequests", TestStartupRequests},
		{"BlobLogOnEmulator", TestBlobLogOnEmulator},
		{"SetBlobTier", TestSetBlobTier},
		{"ArchivedBlobAndRehydration", TestArchivedBlobAndRehydration},
		{"PageBlobs", TestPageBlobs},
		{"PageBlobTypesAndLeases", TestPageBlobTypesAndLeases},
		{"PageBlobUnserved", TestPageBlobUnserved},
		{"PageBlobSparse", TestPageBlobSparse},
	} {
		t.Run(c.name, c.f)
	}
}

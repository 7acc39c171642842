package blobs_test

import "testing"

// TestOnDisk runs the Blob service's tests again on a service kept in a
// location (blobs.Open with Config.Location): every answer must be the
// same as in memory, and at the end of each test the location, opened
// again, must hold exactly what the service held (reopened), so that a
// change some handler forgets to write through fails here. Left out:
// the tests that need Azurite (they compare with it, not with memory) and
// TestAppendBlobBlockLimit (50,000 appends, each its own commit: 7.8 s;
// TestConcurrentAppendsAtPositions appends on disk).
func TestOnDisk(t *testing.T) {
	onDisk = true
	defer func() { onDisk = false }()
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
	} {
		t.Run(c.name, c.f)
	}
}

package blobs_test

import (
	"strconv"
	"testing"
	"time"
)

// TestFeaturesOnAzurite runs the lease, copy, snapshot, public access and
// page blob tag condition scenarios against Azurite (the azurite tier): the answers the emulator
// gives there are Azurite's too, except where the scenario says Azurite
// departs from Azure.
func TestFeaturesOnAzurite(t *testing.T) {
	az := startAzurite(t)
	prefix := "f" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "-"
	for _, sc := range []struct {
		name string
		run  func(t *testing.T, endpoint, prefix string)
	}{
		{"BlobLeases", func(t *testing.T, endpoint, prefix string) { testBlobLeases(t, endpoint, prefix, time.Sleep) }},
		{"ContainerLeases", testContainerLeases},
		{"CopyBlob", testCopyBlob},
		{"Snapshots", testSnapshots},
		{"PublicAccess", testPublicAccess},
		{"PageBlobTagConditions", testPageBlobTagConditions},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, az.BlobURL, prefix) })
	}
}

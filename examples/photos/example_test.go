package main

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/tools/testenv"
)

// testConnStr is set by TestMain for the Example, which cannot take a *testing.T.
var testConnStr string

func TestMain(m *testing.M) {
	testConnStr = testenv.MainConnectionString()
	testenv.Main(m)
}

func Example() {
	if err := run(context.Background(), testConnStr, "photosexample", true); err != nil {
		panic(err)
	}
	// Output:
	// insert  Sales/000123 with a 1536 KiB photo (upload the blob, then the entity): 2 requests
	// lazy    Jun Cao, Photo: 1572864 bytes of image/jpeg, sha256 68ff583e3601...: 1 request (the entity only)
	// open    streamed 1572864 bytes, checked against the entity's hash: 1 request
	// get     entity and photo together, photo intact: true: 2 requests
	// replace the photo (read, upload, replace, enqueue the old blob's cleanup): 4 requests
	// worker  removed the old photo's blob
	// lazy    Photo is now 1048576 bytes: 1 request
	// delete  the employee (read, delete, enqueue the blob's cleanup): 3 requests
	// worker  removed the last photo's blob
}

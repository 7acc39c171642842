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
	if err := run(context.Background(), testConnStr, "archiveexample", true); err != nil {
		panic(err)
	}
	// Output:
	// current employees: 000123, 000456, 000789
	// enqueued: archive employee 000456: 1 request
	// the worker moved it
	// Current, Sales partition: [000123 000789]: 1 request
	// Archive, Sales/000456: Lee Park, age 58: 1 request
	// applied the same transaction again (a redelivery): no change, 2 requests
}

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
	if err := run(context.Background(), testConnStr, "applogsexample"); err != nil {
		panic(err)
	}
	// Output:
	// append  120 records from 14:40 to 15:20, buffered in memory: 0 requests
	// flush   one blob per hour touched (and a listing the first time an hour is seen): 4 requests
	//         app/2024/05/01/1400/000001.log
	//         app/2024/05/01/1500/000001.log
	// read    errors and critical messages from 15:04 to 15:06:
	//         15:04:40 ERROR request 74 served
	//         15:05:20 CRITICAL request 76 served
	//         cost: 2 requests (list the hour's prefix, download the blob that overlaps)
}

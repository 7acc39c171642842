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
	if err := run(context.Background(), testConnStr, "quickstartexample"); err != nil {
		panic(err)
	}
	// Output:
	// wrote   Sales/000123 Jun Cao
	// read    Jun Cao, age 31, salary 3000.0 (a float64 stays a Double)
	// updated age 32
	// refused a replace with a stale ETag (tablekit.ErrPreconditionFailed)
	// query   (PartitionKey eq 'Sales') and (RowKey ge '000124') (range query)
	//         000124 Emp000124 Lee
	//         000125 Emp000125 Lee
	// deleted Sales/000123
}

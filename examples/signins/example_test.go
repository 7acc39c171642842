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
	if err := run(context.Background(), testConnStr, "signinsexample"); err != nil {
		panic(err)
	}
	// Output:
	// wrote   127 sign-ins over 64 days, 2024-02-28 to 2024-05-01: 255 requests (the first write of a day also creates its table: 2 more)
	// drop    days older than 60 (before 2024-03-02): 3 tables, 4 requests (list, then one delete per table)
	//         signinsexample20240228
	//         signinsexample20240229
	//         signinsexample20240301
	// list    61 tables left, signinsexample20240302 to signinsexample20240501: 1 request
	// insert  into a dropped day -> refused (its name is never reused): 0 requests
	// query   jcao's sign-ins since 2024-04-30 (one partition in each day's table):
	//         2024-04-30 08:01 from 10.0.0.1, succeeded true
	//         2024-05-01 08:00 from 10.0.0.1, succeeded false
	//         cost: 2 requests
}

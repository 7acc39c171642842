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
	if err := run(context.Background(), testConnStr, "pagingexample"); err != nil {
		panic(err)
	}
	// Output:
	// wrote   25 Sales employees; the server hands out pages of 10
	// page 1  10 employees, 000100 Emp A .. 000109 Emp J, token for the next page: 1 request
	//         a tampered token -> HTTP 400: 0 requests
	//         the token with dept=Marketing -> HTTP 400: 0 requests
	// page 2  10 employees, 000110 Emp K .. 000119 Emp T, token for the next page: 1 request
	// page 3  5 employees, 000120 Emp U .. 000124 Emp Y, last page: 1 request
}

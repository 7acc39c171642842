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
	if err := run(context.Background(), testConnStr, "expensesexample"); err != nil {
		panic(err)
	}
	// Output:
	// appended 15 claims of employee 000123, one a day from 2024-03-01: 15 requests
	// the first claim's RowKey 2516930153999999999_0001 reads back as 2024-03-01T09:30:00Z
	// the ten most recent ($top=10), newest first: 1 request
	//   2024-03-15  taxi       108.00
	//   2024-03-14  lunch      101.00
	//   2024-03-13  hotel       94.00
	//   2024-03-12  conference  87.00
	//   2024-03-11  taxi        80.00
	//   2024-03-10  museum      73.00
	//   2024-03-09  coffee      66.00
	//   2024-03-08  books       59.00
	//   2024-03-07  flight      52.00
	//   2024-03-06  parking     45.00
	// claims from 2024-03-03 to 2024-03-06 (a range query on the RowKeys): dinner 38.00; train 31.00; lunch 24.00; total 93.00: 1 request
}

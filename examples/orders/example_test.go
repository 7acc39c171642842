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
	if err := run(context.Background(), testConnStr, "ordersexample", true); err != nil {
		panic(err)
	}
	// Output:
	// placed N1 (12 bytes of items): 3 requests
	// placed N2 (140000 bytes of items): 3 requests
	// placed N3 (0 bytes of items): 2 requests
	// order N2 by number: c1/o2, open, total 1400: 1 request
	// c1's 2 most recent orders: N3, N2: 1 request
	// order o2 with its items: 140000 bytes: 2 requests (the entity, its blob)
	// shipped o1: 4 requests
	// shipped o2: 4 requests
	// shipped, across customers: N1, N2: 1 request
	// archive o1: 1 request
	// archive o2: 1 request
	// shipped after the archive: []
	// c1's recent orders after the archive: 1 (N3)
	// archived o2: shipped, 140000 bytes of items
	// verify: 2 orders, 0 views missing, 0 stale, 0 orphaned
}

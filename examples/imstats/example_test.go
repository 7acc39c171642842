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
	if err := run(context.Background(), testConnStr, "imstatsexample"); err != nil {
		panic(err)
	}
	// Output:
	// == data series: 24 hourly counts in one entity
	// wrote   hours 08 to 17 with one insert-or-merge: 1 request
	// add     5 messages at 14:00 -> 18 (read, then a merge on its ETag): 2 requests
	// read    the whole day for a chart: 1 request
	//         H08  4 ####
	//         H09 11 ###########
	//         H10  7 #######
	//         H11  3 ###
	//         H12 10 ##########
	//         H13  6 ######
	//         H14 18 ##################
	//         H15  9 #########
	//         H16  5 #####
	//         H17 12 ############
	//
	// == wide entity: 365 daily counts in one logical entity
	// wrote   365 properties over 2 physical entities in one transaction: 1 request
	// read    the whole year with one range query: 1 request
	//         physical entities: 2024_00, 2024_01
	//         365 properties, 2892 messages in all, busiest day D016 with 16
	// update  D200 = 99 on the ETag read: 1 request
}

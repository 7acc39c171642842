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
	if err := run(context.Background(), testConnStr, "employeesexample", true); err != nil {
		panic(err)
	}
	// Output:
	// == heterogeneous entity types: departments and employees in one table
	// wrote   2 departments and 4 employees: 6 requests
	// query   the Sales partition, each row decoded into its own type:
	//         Employee   000123 Jun Cao
	//         Employee   000152 Don Jones
	//         Employee   000223 Jane Jones
	//         Department Sales: 3 employees, manager Mary Smith
	//         cost: 1 request (a partition scan)
	// by id   Sales/000223 -> Jane Jones <jonesj@contoso.com>: 1 request (a point query)
	//
	// == intra-partition secondary index: email_ copies in the same partition
	// wrote   4 employees, each with its email copy in one transaction: 4 requests
	// lookup  RowKey eq 'email_jonesj@contoso.com' -> Jane Jones (empid_000223): 1 request
	// prefix  Sales emails starting with j -> jonesj@contoso.com, junc@contoso.com: 1 request
	// insert  another jonesj@contoso.com -> refused, nothing written: 1 request
	// update  Jane's email, entity and copies in one transaction: 2 requests
	// lookup  jonesj@contoso.com -> not found any more: 1 request
	// lookup  jane.jones@contoso.com -> Jane Jones: 1 request
	//
	// == index entities (option 2): Sales/Jones lists the Sales employees named Jones
	// wrote   4 employees, each a read of its index entity and one transaction: 8 requests
	// lookup  Sales/Jones -> 2 employees: 3 requests (the index entity, then each employee)
	//         000152 Don Jones
	//         000223 Jane Jones
	// rename  000152 Jones -> Hall, three entities in one transaction: 4 requests
	// members Sales/Jones -> [000223]: 1 request
	// members Sales/Hall -> [000152]: 1 request
	//
	// == inter-partition secondary index: an organisation-wide email index kept by the worker
	// wrote   4 employees, each an enqueued intent and an insert: 8 requests
	// worker  wrote the copies into partitions email_d, email_j and email_k
	// lookup  PartitionKey eq 'email_k' and RowKey eq 'kenj@contoso.com' -> Ken Jones, Marketing/000301: 1 request
	// update  Ken's email (read, enqueue, replace): 3 requests
	// worker  moved the copy from kenj@ to ken.jones@
	// lookup  ken.jones@contoso.com -> Ken Jones, Marketing/000301: 1 request
}

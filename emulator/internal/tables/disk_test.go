package tables_test

import "testing"

// TestOnDisk runs the package's tests again on a service that keeps its
// tables in a database (tables.Open): the same answers, from disk.
func TestOnDisk(t *testing.T) {
	onDisk = true
	defer func() { onDisk = false }()
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"BatchSDK", TestBatchSDK},
		{"Tablekit", TestTablekit},
		{"BatchLimits", TestBatchLimits},
		{"Concurrent", TestConcurrent},
		{"BatchChangeSetsAndRetrieve", TestBatchChangeSetsAndRetrieve},
		{"Tables", TestTables},
		{"EntityCRUD", TestEntityCRUD},
		{"NoCredentials", TestNoCredentials},
		{"Limits", TestLimits},
		{"FormatsAndPreferences", TestFormatsAndPreferences},
		{"DateTimeText", TestDateTimeText},
		{"DoubleExponentText", TestDoubleExponentText},
		{"URLKeysNoEntityCanHave", TestURLKeysNoEntityCanHave},
		{"LoadModel", TestLoadModel},
		{"EarlyEnd", TestEarlyEnd},
		{"CosmosProfile", TestCosmosProfile},
		{"AzloadModel", TestAzloadModel},
		{"LoadQueryCost", TestLoadQueryCost},
		{"LoadEmptyPartitionKey", TestLoadEmptyPartitionKey},
		{"Query", TestQuery},
		{"QueryOrderUTF16", TestQueryOrderUTF16},
		{"QueryContinuationAndSelect", TestQueryContinuationAndSelect},
		{"QueryErrors", TestQueryErrors},
		{"QueryFilterRules", TestQueryFilterRules},
	} {
		t.Run(c.name, c.f)
	}
}

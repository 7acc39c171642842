package keys

import (
	"strconv"

	"github.com/tablekit/tablekit/azrules"
)

// CosmosMaxRowKeyBytes is the longest RowKey the Azure Cosmos DB Table API
// accepts: 255 bytes (of UTF-8), where Azure Table storage accepts 1 KiB
// (azrules.CosmosMaxRowKeyBytes, where its evidence is). See
// docs/COSMOS.md.
const CosmosMaxRowKeyBytes = azrules.CosmosMaxRowKeyBytes

// ValidateCosmosKeys checks a PartitionKey and RowKey for the Azure Cosmos
// DB Table API: Azure Table storage's rules (ValidateKey), and a RowKey of
// at most CosmosMaxRowKeyBytes bytes. A PartitionKey within Azure's 1 KiB
// is always within Cosmos DB's 2,048 bytes, so it needs nothing more.
// Errors are *KeyError values wrapping ErrInvalidKey.
func ValidateCosmosKeys(pk, rk string) error {
	if err := ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	if err := ValidateKey("RowKey", rk); err != nil {
		return err
	}
	if len(rk) > CosmosMaxRowKeyBytes {
		return &KeyError{Key: "RowKey", Rule: strconv.Itoa(len(rk)) + " bytes exceeds the Azure Cosmos DB Table API limit of " +
			strconv.Itoa(CosmosMaxRowKeyBytes) + " bytes (UTF-8)"}
	}
	return nil
}

// ValidateCosmosTableName checks a table name for the Azure Cosmos DB
// Table API: ValidateTableName's rules (3 to 63 letters and digits,
// starting with a letter), which Azure Table storage applies too, in any
// case. Cosmos DB accepts mixed case (the Azure SDK for Go's recorded
// Cosmos DB sessions create and use tableName2210495615) and compares
// names case-sensitively: "Orders" and "orders" are two tables there, one
// on Azure Table storage. Its naming guide also allows '-', which Azure
// Table storage refuses; tablekit keeps to the names both accept, so data
// can move between the two.
func ValidateCosmosTableName(name string) error {
	return ValidateTableName(name)
}

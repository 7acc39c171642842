package keys

import "strconv"

// CosmosMaxRowKeyBytes is the longest RowKey the Azure Cosmos DB Table API
// accepts: 255 bytes (of UTF-8), where Azure Table storage accepts 1 KiB
// ("Frequently asked questions about Azure Cosmos DB for Table": "Row keys
// can only be up to 255 bytes"). See docs/COSMOS.md.
const CosmosMaxRowKeyBytes = 255

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

// ValidateCosmosTableName checks a table name that must work on the Azure
// Cosmos DB Table API as on Azure Table storage: ValidateTableName's rules,
// in lower case. Cosmos DB compares table names case-sensitively (Azure
// Table storage does not) and documents lowercase letters, digits and '-'
// only; Azure Table storage refuses '-', so lowercase letters and digits
// are what both accept.
func ValidateCosmosTableName(name string) error {
	if err := ValidateTableName(name); err != nil {
		return err
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			return &NameError{Kind: "table", Name: name, Rule: "character " + strconv.QuoteRune(rune(c)) + " at " + strconv.Itoa(i) +
				": the Azure Cosmos DB Table API takes lowercase table names (and compares names case-sensitively)"}
		}
	}
	return nil
}

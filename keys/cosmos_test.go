package keys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/keys"
)

func TestValidateCosmosKeys(t *testing.T) {
	cases := []struct {
		name, pk, rk string
		ok           bool
	}{
		{"short keys", "p", "r", true},
		{"RowKey of 255 bytes", "p", strings.Repeat("r", 255), true},
		{"RowKey of 256 bytes", "p", strings.Repeat("r", 256), false},
		{"RowKey of 128 two-byte characters (256 bytes)", "p", strings.Repeat("é", 128), false},
		{"PartitionKey at Azure's limit", strings.Repeat("p", keys.MaxKeyUnits), "r", true},
		{"PartitionKey over Azure's limit", strings.Repeat("p", keys.MaxKeyUnits+1), "r", false},
		{"Azure's character rules", "a/b", "r", false},
	}
	for _, c := range cases {
		err := keys.ValidateCosmosKeys(c.pk, c.rk)
		if (err == nil) != c.ok {
			t.Errorf("%s: ValidateCosmosKeys = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("%s: %v does not wrap ErrInvalidKey", c.name, err)
		}
	}
	// Azure Table storage takes the 256-byte RowKey Cosmos DB refuses.
	if err := keys.ValidateKey("RowKey", strings.Repeat("r", 256)); err != nil {
		t.Errorf("ValidateKey refuses a 256-byte RowKey: %v", err)
	}
}

func TestValidateCosmosTableName(t *testing.T) {
	for name, ok := range map[string]bool{"orders": true, "orders2024": true, "Orders": true, "ordersX": true, "tableName2210495615": true, "or": false, "1orders": false, "ord-ers": false, "tables": false} {
		err := keys.ValidateCosmosTableName(name)
		if (err == nil) != ok {
			t.Errorf("ValidateCosmosTableName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && !errors.Is(err, keys.ErrInvalidName) {
			t.Errorf("%q: %v does not wrap ErrInvalidName", name, err)
		}
	}
}

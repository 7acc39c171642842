package entity_test

import (
	"strings"
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// TestSizeIsValidatesFormula: Size is the formula Validate checks
// against MaxEntitySize, less Timestamp's 34 bytes: an entity of
// MaxEntitySize-34 by Size passes Validate, one byte more does not.
func TestSizeIsValidatesFormula(t *testing.T) {
	e := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{
		"S": entity.String("abc"), "I": entity.Int32(7), "B": entity.Binary([]byte{1, 2, 3}),
		"L": entity.Int64(1), "D": entity.Double(1.5), "T": entity.Bool(true),
		"G": entity.Guid(entity.GUID{}), "W": entity.String("\U0001F600"),
	}}
	// 4+2+2; S 10+10; I 10+4; B 10+7; L 10+8; D 10+8; T 10+1; G 10+16; W 10+8.
	if got, want := e.Size(), 8+20+14+17+18+18+11+26+18; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
	const timestamp = 8 + 2*len("Timestamp") + 8
	big := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{}}
	for i := 0; i < 15; i++ {
		big.Properties["B"+strings.Repeat("x", i)] = entity.Binary(make([]byte, entity.MaxBinarySize))
	}
	fill := entity.MaxEntitySize - timestamp - big.Size() - (8 + 2*len("Z") + 4)
	big.Properties["Z"] = entity.Binary(make([]byte, fill))
	if got := big.Size(); got != entity.MaxEntitySize-timestamp {
		t.Fatalf("built an entity of %d bytes, want %d", got, entity.MaxEntitySize-timestamp)
	}
	if err := big.Validate(); err != nil {
		t.Errorf("an entity of MaxEntitySize less Timestamp: %v", err)
	}
	big.Properties["Z"] = entity.Binary(make([]byte, fill+1))
	if err := big.Validate(); err == nil {
		t.Error("one byte more passed Validate")
	}
}

package wire

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
)

// RowKeySet finds the first earlier operation with the same RowKey, as a
// map would, for transactions of every size up to and past its table's
// (where it compares one by one), with keys that differ only at the end,
// empty keys and many duplicates.
func TestRowKeySetMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 3000 {
		n := 1 + rng.IntN(400)
		distinct := 1 + rng.IntN(2*n)
		ops := make([]Op, n)
		for i := range ops {
			ops[i].RowKey = strings.Repeat("k", rng.IntN(3)) + strconv.Itoa(rng.IntN(distinct))
			if rng.IntN(50) == 0 {
				ops[i].RowKey = ""
			}
		}
		var set RowKeySet
		seen := map[string]int{}
		for i, op := range ops {
			j, dup := set.Lookup(ops, op.RowKey)
			wj, wdup := seen[op.RowKey]
			if dup != wdup || dup && j != wj {
				t.Fatalf("round %d, op %d of %d (%q): Lookup = %d, %v; want %d, %v", round, i, n, op.RowKey, j, dup, wj, wdup)
			}
			if !dup {
				set.Add(ops, i)
				seen[op.RowKey] = i
			}
		}
	}
}

// ValidateTransaction names both operations of a duplicate RowKey.
func TestValidateTransactionDuplicateRowKey(t *testing.T) {
	ops := make([]Op, 100)
	for i := range ops {
		ops[i] = Op{Type: OpUpsertReplace, PartitionKey: "p", RowKey: "r" + strconv.Itoa(i), Entity: []byte(`{}`)}
	}
	if err := ValidateTransaction(ops); err != nil {
		t.Fatalf("distinct keys: %v", err)
	}
	ops[97].RowKey = "r3"
	err := ValidateTransaction(ops)
	if !errors.Is(err, tablekit.ErrInvalidTransaction) || !strings.Contains(err.Error(), "operations 3 and 97") {
		t.Errorf("duplicate: %v, want operations 3 and 97 named", err)
	}
}

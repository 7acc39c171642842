package wire

import "hash/maphash"

// RowKeySet finds the operations of one transaction that touch the same
// RowKey without allocating: an open-addressing table of 256 slots, each
// naming an operation by its index (a transaction has at most
// MaxTransactionOps, so the table is never more than 40% full). A map per
// transaction was a third of a bulk write's allocated bytes, built twice
// (by the bulk writer's grouping and by ValidateTransaction). The zero
// value is empty.
type RowKeySet struct {
	slot   [256]uint8 // 1 + the index of the operation whose RowKey is here; 0: empty
	n      int        // operations added
	end    int        // 1 + the index of the last added
	linear bool       // past the table: compare one by one
}

// maxSetOps is how many operations the table indexes (200 of 256 slots:
// a probe always reaches an empty one). Past it, or past index 254 (an
// index + 1 fills a slot's byte), Lookup compares RowKeys one by one;
// a valid transaction never gets there.
const maxSetOps = 200

var rowKeySeed = maphash.MakeSeed()

// Lookup returns the index of an operation among those added whose RowKey
// is rk; ops are the operations the indexes added refer to.
func (s *RowKeySet) Lookup(ops []Op, rk string) (int, bool) {
	if s.linear {
		// The first operation with rk is the one added: a later one with
		// the same RowKey was found, and not added.
		for i := range min(s.end, len(ops)) {
			if ops[i].RowKey == rk {
				return i, true
			}
		}
		return 0, false
	}
	for h := maphash.String(rowKeySeed, rk); ; h++ {
		x := s.slot[uint8(h)]
		if x == 0 {
			return 0, false
		}
		if j := int(x) - 1; j < len(ops) && ops[j].RowKey == rk {
			return j, true
		}
	}
}

// Add records ops[i], whose RowKey Lookup did not find. Operations are
// added in the order of their indexes.
func (s *RowKeySet) Add(ops []Op, i int) {
	s.n, s.end = s.n+1, i+1
	if s.linear = s.linear || s.n > maxSetOps || i+1 > 255; s.linear {
		return
	}
	for h := maphash.String(rowKeySeed, ops[i].RowKey); ; h++ {
		if s.slot[uint8(h)] == 0 {
			s.slot[uint8(h)] = uint8(i + 1)
			return
		}
	}
}

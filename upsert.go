package tablekit

import (
	"strconv"

	"github.com/tablekit/tablekit/internal/tkerr"
)

// UpsertMode chooses what an upsert does to an entity that already
// exists. It is the one upsert mode of tablekit: patterns' Upsert methods,
// BulkWrite and the consistency package's upsert-entity step all take it.
// The zero value is UpsertReplace.
type UpsertMode int

const (
	// UpsertReplace replaces an existing entity (insert-or-replace): the
	// stored entity becomes exactly the one written.
	UpsertReplace UpsertMode = iota
	// UpsertMerge merges into an existing entity (insert-or-merge):
	// properties the write does not carry keep their stored values.
	UpsertMerge
)

// String returns "replace" or "merge".
func (m UpsertMode) String() string {
	switch m {
	case UpsertReplace:
		return "replace"
	case UpsertMerge:
		return "merge"
	}
	return "UpsertMode(" + strconv.Itoa(int(m)) + ")"
}

// Valid reports whether m is UpsertReplace or UpsertMerge.
func (m UpsertMode) Valid() bool { return m == UpsertReplace || m == UpsertMerge }

// MarshalText returns "replace" or "merge", the words the Table service
// and aztables.UpdateMode use.
func (m UpsertMode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, tkerr.Errorf("tablekit: %w: upsert mode %d is neither UpsertReplace nor UpsertMerge", ErrInvalidArgument, int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText accepts "replace" or "merge" (any case); empty means
// UpsertReplace.
func (m *UpsertMode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "replace", "Replace", "REPLACE":
		*m = UpsertReplace
	case "merge", "Merge", "MERGE":
		*m = UpsertMerge
	default:
		return tkerr.Errorf("tablekit: %w: upsert mode %q is neither replace nor merge", ErrInvalidArgument, b)
	}
	return nil
}

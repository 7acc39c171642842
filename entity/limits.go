package entity

import "github.com/tablekit/tablekit/azrules"

// Limits of the Table service, checked by Marshal before any request.
// Azurite does not enforce all of them (docs/RULES.md); Azure does. They
// are defined, with their evidence, in azrules.
const (
	// MaxProperties is the number of custom properties an entity may
	// have, besides PartitionKey, RowKey and Timestamp.
	MaxProperties = azrules.MaxProperties
	// MaxEntitySize is the largest entity, in bytes of the size formula
	// below.
	MaxEntitySize = azrules.MaxEntitySize
	// MaxStringUnits is the longest String value, in UTF-16 code units
	// (64 KiB). A character outside the Basic Multilingual Plane counts
	// twice.
	MaxStringUnits = azrules.MaxStringUnits
	// MaxBinarySize is the longest Binary value, in bytes.
	MaxBinarySize = azrules.MaxBinaryBytes
	// MaxPropertyNameLength is the longest property name, in UTF-16 code
	// units (as the service counts them: a character outside the Basic
	// Multilingual Plane is two).
	MaxPropertyNameLength = azrules.MaxPropertyNameLength
)

// Size formula. An entity's size is computed as the Table service documents
// it ("Understanding the Table service data model", size of an entity):
//
//	4 + 2*len(PartitionKey) + 2*len(RowKey)
//	  + for each property, Timestamp included: 8 + 2*len(name) + size of the value
//
// where lengths count UTF-16 code units and a value's size is: String
// 4 + 2*len, Binary 4 + len, Int32 4, Int64 8, Double 8, Boolean 1,
// DateTime 8, Guid 16. Timestamp is counted (34 bytes) although the service
// sets it, which makes the check a little stricter than Azure's, never
// looser. An encrypted property is counted at its stored (Binary) size.
const timestampSize = 8 + 2*len("Timestamp") + 8

func edmSize(t EDMType) int {
	switch t {
	case EdmInt32:
		return 4
	case EdmInt64, EdmDouble, EdmDateTime:
		return 8
	case EdmBoolean:
		return 1
	case EdmGuid:
		return 16
	}
	return 4
}

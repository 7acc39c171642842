package entity

import "github.com/tablekit/tablekit/azrules"

// Size returns e's size as the Table service counts it against
// MaxEntitySize, by the formula of "Understanding the Table service data
// model" (see limits.go): 4 + 2*len(PartitionKey) + 2*len(RowKey), plus
// for each custom property 8 + 2*len(name) + the value's size (String
// 4 + 2*len, Binary 4 + len, Int32 4, Int64, Double and DateTime 8,
// Boolean 1, Guid 16), lengths in UTF-16 code units.
//
// Timestamp, which the service sets, is not counted: Size is the
// service's side of the rule, which tablekit's emulator and the Azurite
// harness's strict proxy answer by. Validate counts Timestamp too (34
// bytes), so the client refuses a little earlier than the service, never
// later. A value whose V does not have its Type's Go type counts as an
// empty one of its type.
func (e Entity) Size() int {
	n := 4 + 2*azrules.UTF16Len(e.PartitionKey) + 2*azrules.UTF16Len(e.RowKey)
	for name, v := range e.Properties {
		n += 8 + 2*azrules.UTF16Len(name) + valueSize(v)
	}
	return n
}

// valueSize is a value's size by the size formula.
func valueSize(v Value) int {
	switch x := v.V.(type) {
	case string:
		if v.Type == EdmString {
			return 4 + 2*azrules.UTF16Len(x)
		}
	case []byte:
		if v.Type == EdmBinary {
			return 4 + len(x)
		}
	}
	return edmSize(v.Type)
}

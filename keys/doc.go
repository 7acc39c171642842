// Package keys holds tablekit's key encodings and its typed $filter
// builder: the pure, storage-free half of designing Table storage keys and
// queries as the Azure Table storage design guide teaches
// (https://learn.microsoft.com/azure/storage/tables/table-storage-design-guide).
// It imports only the standard library.
//
// # Validation
//
// ValidateKey, ValidateTableName, ValidateQueueName and
// ValidateContainerName apply the service's rules client-side (Azurite is
// more lenient than Azure). Errors are *KeyError and *NameError, wrapping
// ErrInvalidKey and ErrInvalidName.
//
// # Building keys
//
// The guide's "Design for querying" section and its compound key, log
// tail, high volume delete and prepend/append sections shape these:
//
//   - Compound, Join, Split: compound keys ("empid_000123_2012") with an
//     escape scheme that round-trips any part and keeps part order.
//   - Template: a typed pattern such as "empid_{ID:6}_{Year}" that builds
//     a key from a struct and parses it back.
//   - PadInt, PadUint, ParsePadInt, ParsePadUint: numbers whose string
//     order is their numeric order ("000223"), negative numbers included.
//   - Ticks, InvertedTicks, ParseInvertedTicks, TimeKey, ParseTimeKey:
//     .NET-compatible time keys; InvertedTicks is exactly the guide's
//     string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks).
//   - PrefixRange: the [lo, hi) bounds of all keys with a prefix.
//   - Bucket, BucketKey, BucketedKey, BucketKeys: spread hot partitions
//     over n buckets with a documented hash (FNV-1a 32), and list them all
//     for fan-out reads.
//   - PeriodTable, ParsePeriodTable, PeriodTables: a table per hour, day or
//     month, so old data is deleted by deleting a table.
//
// # Filters
//
// A Filter is an immutable expression tree, written as $filter text only
// by Build:
//
//	f := keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("email_a"), keys.Prop("Age").Ge(30))
//	s, err := f.Build() // (PartitionKey eq 'Sales') and (RowKey ge 'email_a') and (RowKey lt 'email_b') and (Age ge 30)
//
// PK and RK give key conditions (eq, ne, gt, ge, lt, le, Prefix, Between);
// Prop gives property conditions; And, Or and Not combine them. The Go type
// of a property value picks its literal, so a value can never break out
// of it:
//
//	string (any string kind)          'text', quotes doubled
//	bool                              true, false
//	int, int8, int16, int32, uint8,
//	uint16                            Edm.Int32: 42
//	int64, uint32, uint, uint64       Edm.Int64: 42L
//	float32, float64                  Edm.Double, always with a point: 3.0
//	time.Time                         datetime'2014-08-22T00:50:32.0000000Z' (UTC, 100 ns)
//	any type whose kind is [16]byte   guid'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'
//	[]byte                            X'0a1b'
//
// Pointers are followed; nil, NaN, infinities, out-of-range integers and
// other types are errors reported by Build, wrapping ErrInvalidFilter.
// ParseFilter reads $filter text back into a Filter, accepting what the
// Table service accepts as far as the evidence shows (a bare Boolean
// property, Doubles written 3D or 1E+3 included), so filters found in
// existing code can be checked; Match evaluates a Filter as the service
// does, a number literal widened to a wider property type.
//
// # Classification
//
// Classify ranks a filter as the guide ranks queries: Point, Range,
// PartitionScan, TableScan. Filter.PartitionKey returns the partition a
// query is confined to. tablekit's Table[T] refuses table scans unless
// the caller opts in.
package keys

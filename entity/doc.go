// Package entity converts Go structs to and from Azure Table storage
// entities, keeping every EDM type exact and enforcing the service's
// limits before a request is sent.
//
// It implements the data-model parts of the Azure Table storage design
// guide: "Understanding Table storage data model" (types and limits),
// "Work with heterogeneous entity types" (Registry) and "Encrypt table
// data" (the encrypt tag option). It imports only the standard library and
// tablekit's keys package; the root package re-exports ErrInvalidEntity.
//
// # Codecs
//
// CodecOf builds the plan of a struct type once (cached per type) and
// reports bad tags, unknown options, conflicting embedded fields and
// unsupported field types there, naming the type and field. A Codec's
// Marshal and AppendMarshal write the request body of an insert, update or
// batch operation; Unmarshal reads a row as GetEntity or a query page
// returns it. Marshal and Unmarshal at package level use a codec with nil
// Options.
//
//	type Employee struct {
//		PartitionKey string    // role by name: PartitionKey
//		RowKey       string    // role by name: RowKey
//		ETag         string    // filled from odata.etag on reads
//		Timestamp    time.Time // filled on reads, never written
//		Name         string
//		Salary       int64     // Edm.Int64
//		Address      Address   `table:",json"` // a JSON string property
//		SSN          string    `table:"SSN,encrypt"`
//		Internal     string    `table:"-"`
//	}
//
// # Tags
//
// `table:"Name,option,..."` renames a property; "-" skips the field.
// Options: omitempty; pk, rk, etag and timestamp (roles, taken by default by
// fields named PartitionKey, RowKey, ETag and Timestamp); json (store a
// struct, slice or map as encoding/json text in a String property, the
// guide's advice for complex types); encrypt. Unknown options are errors.
// Embedded structs are promoted as encoding/json does; two fields that map
// to the same property at the same depth are an error, never dropped.
//
// # Types
//
// string -> String; bool -> Boolean; int8, int16, int32, uint8, uint16 ->
// Int32; int, int64, uint32 -> Int64; uint, uint64 -> Int64 (values above
// math.MaxInt64 are an error); float32, float64 -> Double, always
// annotated, NaN and ±Inf as "NaN", "Infinity", "-Infinity"; time.Time ->
// DateTime in UTC with 7 fractional digits (finer precision is truncated
// to the service's 100 ns; the zero time is stored as an absent property;
// other times must lie in 1601-9999); GUID and any [16]byte-based type ->
// Guid; []byte -> Binary (nil is absent, empty is stored empty); pointers
// -> absent when nil; encoding.TextMarshaler -> String.
// PropertyMarshaler/PropertyUnmarshaler let a field type choose its
// stored value; EntityMarshaler/EntityUnmarshaler take over a whole entity.
//
// Reads are typed by the destination field, not by the wire: an Int32
// fills an int64 field, 3 fills a float64 field, a Double written as 3.0
// fills an int field, and a value that does not fit (2^40 into an int32)
// is an error naming the field. Unknown properties are ignored.
//
// # Limits
//
// Marshal checks, as Azure does (Azurite checks only some of them): at
// most 252 custom properties (MaxProperties); entity size at most 1 MiB
// (MaxEntitySize) by the service's documented formula 4 + 2*len(PK) +
// 2*len(RK) + for each property 8 + 2*len(name) + the value's size
// (String 4 + 2*len, Binary 4 + len, Int32 4, Int64, Double and DateTime
// 8, Boolean 1, Guid 16), lengths in UTF-16 code units and Timestamp
// counted, so the check is never looser than Azure's; strings at most 32,768 UTF-16 code
// units and valid UTF-8; Binary at most 64 KiB; keys by keys.ValidateKey;
// property names C# identifiers of at most 255 characters, not
// PartitionKey, RowKey or Timestamp. Errors wrap ErrInvalidEntity (or
// keys.ErrInvalidKey) and say which rule was broken.
//
// # Property bags
//
// Entity holds a row without a struct: Properties maps names to Values
// with an explicit EDMType. Its MarshalJSON and UnmarshalJSON round-trip
// every EDM type; unannotated values are typed as the service types them.
//
// # Heterogeneous tables
//
// A Registry maps kinds ("Employee.v2": a name and a version, stored in the
// discriminator property, EntityType by default) to Go types. Its Marshal
// writes the discriminator; Resolve, ResolveAll and ResolvePage decode
// each row of a mixed query into its registered type.
//
// # Encryption
//
// Fields tagged encrypt are sealed with AES-256-GCM under the current key
// of Options.Keys (a KeyProvider; KeyRing holds keys in memory) and stored
// as Binary. The key id travels inside the stored value so keys rotate;
// altered values fail to open with an error wrapping ErrDecrypt. Types
// with encrypted fields report Codec.Encrypted, and merges of them must be
// refused: the stored entity may hold values sealed under other keys that
// a merge cannot re-seal (the guide's reason).
package entity

package azrules

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Table names.
//
// Evidence (docs): "Understanding the Table service data model", section
// "Table names": alphanumeric, not beginning with a number, 3 to 63
// characters, case-insensitive, "tables" reserved.
const (
	// MinTableNameLength is the shortest table name.
	MinTableNameLength = 3
	// MaxTableNameLength is the longest table name.
	MaxTableNameLength = 63
)

// CheckTableName applies the Table service's table name rule: 3 to 63
// ASCII letters and digits, starting with a letter, and not the reserved
// name "tables" in any case. The rule holds for the Azure Cosmos DB Table
// API too, which accepts more (see keys.ValidateCosmosTableName).
func CheckTableName(name string) error {
	if len(name) < MinTableNameLength || len(name) > MaxTableNameLength {
		return lengthErr("must be 3 to 63 characters long")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		isLetter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		isDigit := c >= '0' && c <= '9'
		if i == 0 && !isLetter {
			return characterErr("must start with a letter")
		}
		if !isLetter && !isDigit {
			return characterErr(fmt.Sprintf("character %q at %d: only letters and digits are allowed", c, i))
		}
	}
	if len(name) == 6 && (name[0]|0x20) == 't' && equalFold(name, "tables") {
		return formErr(`"tables" is reserved`)
	}
	return nil
}

// PartitionKey and RowKey.
//
// Evidence (docs): "Understanding the Table service data model", section
// "Characters disallowed in key fields" (/ \ # ? and the control
// characters U+0000-U+001F, U+007F-U+009F) and "The PartitionKey property"
// ("a string value of up to 1 KiB in size"). The service stores strings
// as UTF-16, so 1 KiB is 512 code units. SDK thread: Azure answers 400
// OutOfRangeInput to a longer key and InvalidInput to a '/' in a RowKey
// (azure-storage-net issue 386, 2017; azure-sdk-for-python issue 29106,
// 2023). Azurite refuses keys over 512 characters and the same
// characters.
const (
	// MaxKeyBytes is the size limit of a PartitionKey or RowKey: 1 KiB.
	MaxKeyBytes = 1024
	// MaxKeyUnits is MaxKeyBytes in UTF-16 code units: 512.
	MaxKeyUnits = MaxKeyBytes / 2
)

// CosmosMaxRowKeyBytes is the longest RowKey the Azure Cosmos DB Table
// API accepts, in bytes of UTF-8; its PartitionKey limit (2 KiB) is above
// Azure Table storage's, so only the RowKey needs a rule of its own.
//
// Evidence (docs): "Frequently asked questions about Azure Cosmos DB for
// Table": "Row keys can only be up to 255 bytes".
const CosmosMaxRowKeyBytes = 255

// CheckKey applies the rule of a PartitionKey or RowKey value: valid
// UTF-8, at most MaxKeyUnits UTF-16 code units, and none of '/', '\\',
// '#', '?' or the control characters U+0000-U+001F and U+007F-U+009F.
// The empty string is a valid key. The first character refused is
// reported before the length.
func CheckKey(k string) error {
	if len(k) <= MaxKeyUnits && plainKey(k) {
		return nil
	}
	return checkKey(k)
}

// checkKey is CheckKey's general path: any key, and the error that names
// the first rule broken.
func checkKey(k string) error {
	if !utf8.ValidString(k) {
		return formErr("not valid UTF-8")
	}
	units := 0
	for i, r := range k {
		switch {
		case r == '/' || r == '\\' || r == '#' || r == '?':
			return characterErr(fmt.Sprintf("character %q at byte %d is not allowed in keys (/ \\ # ?)", r, i))
		case r <= 0x1f || (r >= 0x7f && r <= 0x9f):
			return characterErr(fmt.Sprintf("control character U+%04X at byte %d is not allowed in keys", r, i))
		}
		units += utf16.RuneLen(r)
	}
	if units > MaxKeyUnits {
		return lengthErr(fmt.Sprintf("%d UTF-16 code units exceeds the 1 KiB limit (%d units)", units, MaxKeyUnits))
	}
	return nil
}

// plainKey reports whether every byte of k is ASCII allowed in a key
// (one UTF-16 unit each): most keys are, and then one table lookup a
// byte decides, instead of validating UTF-8 and decoding runes.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if !plainKeyByte[k[i]] {
			return false
		}
	}
	return true
}

// plainKeyByte marks the ASCII bytes allowed in keys: not a control
// character (U+0000-U+001F, U+007F), nor / \ # ?.
var plainKeyByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '/' && c != '\\' && c != '#' && c != '?'
	}
	return t
}()

// Properties of an entity.
//
// Evidence (docs): "Understanding the Table service data model", sections
// "Property names" (C# identifier rules, up to 255 characters), "Property
// limitations" (up to 252 custom properties besides the 3 system ones)
// and "Property types" (String up to 64 KiB, UTF-16, so 32 Ki code units;
// Binary up to 64 KiB); Azure's error messages say the same
// (PropertyNameTooLong "(255)", TooManyProperties "up to 252",
// PropertyValueTooLarge "32K or less"). Azurite enforces the String and
// Binary sizes but neither the names nor the count.
const (
	// MaxPropertyNameLength is the longest property name, in UTF-16 code
	// units.
	MaxPropertyNameLength = 255
	// MaxProperties is the number of custom properties an entity may
	// have, besides PartitionKey, RowKey and Timestamp.
	MaxProperties = 252
	// MaxStringUnits is the longest String value, in UTF-16 code units
	// (64 KiB).
	MaxStringUnits = 32 * 1024
	// MaxBinaryBytes is the longest Binary value, in bytes.
	MaxBinaryBytes = 64 * 1024
)

// MaxEntitySize is the largest entity, in bytes of the size formula of
// "Understanding the Table service data model" (entity.Entity.Size
// computes it): 4 + 2*len(PartitionKey) + 2*len(RowKey) + for each
// property 8 + 2*len(name) + the value's size, lengths in UTF-16 units.
//
// Evidence (docs): the same page, "An entity can be up to 1 MiB in size";
// Azure's EntityTooLarge message says "(1MB)". Azurite checks it on update
// and upsert only, not on insert.
const MaxEntitySize = 1 << 20

// IsSystemProperty reports whether name is one of the three properties
// the service sets (PartitionKey, RowKey, Timestamp), which no custom
// property may be named.
func IsSystemProperty(name string) bool {
	return name == "PartitionKey" || name == "RowKey" || name == "Timestamp"
}

// CheckPropertyName applies the property name rule: 1 to
// MaxPropertyNameLength UTF-16 code units of valid UTF-8 that form a C#
// identifier (IsIdentifier). It does not refuse the system property names
// (IsSystemProperty), which a filter may name.
func CheckPropertyName(name string) error {
	if name == "" {
		return lengthErr("a property name must not be empty")
	}
	if !utf8.ValidString(name) {
		return formErr("a property name must be valid UTF-8")
	}
	if n := UTF16Len(name); n > MaxPropertyNameLength {
		return lengthErr("property names are at most 255 characters (UTF-16 code units), this one has " + strconv.Itoa(n))
	}
	for i, r := range name {
		if !identifierRune(r, i == 0) {
			if i == 0 {
				return characterErr("a property name must start with a letter or '_' (C# identifier rules)")
			}
			return characterErr("character " + strconv.QuoteRune(r) + " is not allowed in a property name (C# identifier rules)")
		}
	}
	return nil
}

// IsIdentifier reports whether s is a C# identifier, the rule of property
// names and of queue, container and blob metadata names: not empty, a
// letter, a letter number or '_' first, then also decimal digits,
// connectors, combining marks and formatting characters. It checks no
// length.
//
// Evidence (docs): "Understanding the Table service data model" (property
// names), "Setting and retrieving properties and metadata for Blob
// service resources" and "Set Queue Metadata" (metadata names "must adhere
// to the naming rules for C# identifiers"); the C# language
// specification's identifier grammar.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !identifierRune(r, i == 0) {
			return false
		}
	}
	return true
}

// identifierRune reports whether r may appear in a C# identifier, first
// or later.
func identifierRune(r rune, first bool) bool {
	if r < utf8.RuneSelf {
		return r == '_' || (r|0x20 >= 'a' && r|0x20 <= 'z') || (!first && r >= '0' && r <= '9')
	}
	if unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) {
		return true
	}
	return !first && unicode.In(r, unicode.Nd, unicode.Pc, unicode.Mn, unicode.Mc, unicode.Cf)
}

// CheckString applies the size rule of a String value: at most
// MaxStringUnits UTF-16 code units.
func CheckString(s string) error {
	// A string has no more UTF-16 code units than UTF-8 bytes.
	if len(s) <= MaxStringUnits {
		return nil
	}
	if n := UTF16Len(s); n > MaxStringUnits {
		return lengthErr(fmt.Sprintf("a String value has %d UTF-16 code units, more than %d", n, MaxStringUnits))
	}
	return nil
}

// CheckBinary applies the size rule of a Binary value of n bytes: at most
// MaxBinaryBytes.
func CheckBinary(n int) error {
	if n > MaxBinaryBytes {
		return lengthErr(fmt.Sprintf("a Binary value has %d bytes, more than %d", n, MaxBinaryBytes))
	}
	return nil
}

// CheckPropertyCount applies the rule of an entity's custom properties:
// at most MaxProperties.
func CheckPropertyCount(n int) error {
	if n > MaxProperties {
		return lengthErr(fmt.Sprintf("%d custom properties, more than %d", n, MaxProperties))
	}
	return nil
}

// CheckEntitySize applies the rule of an entity's size (in bytes of the
// documented formula): at most MaxEntitySize.
func CheckEntitySize(n int) error {
	if n > MaxEntitySize {
		return lengthErr(fmt.Sprintf("%d bytes, more than the entity limit of %d (1 MiB)", n, MaxEntitySize))
	}
	return nil
}

// Entity group transactions (batches).
//
// Evidence (docs): "Performing entity group transactions": at most 100
// operations, a payload of at most 4 MiB, one partition, one operation
// per entity. Recording: the Azure SDK for Go's recorded TestBatchError
// shows a refused transaction's 202 naming the failing operation's
// index. Azurite enforces the count and the size (413) but not the single
// partition.
const (
	// MaxBatchOperations is the most operations one transaction holds.
	MaxBatchOperations = 100
	// MaxBatchBytes is the largest request body of a transaction on
	// Azure Table storage. The emulator bounds every Table request body
	// by it.
	MaxBatchBytes = 4 << 20
)

// CosmosMaxBatchBytes is the largest request body of a transaction on the
// Azure Cosmos DB Table API.
//
// Evidence (docs): "Frequently asked questions about Azure Cosmos DB for
// Table" gives 2 MB for a transaction's payload, where Azure Table
// storage takes 4 MiB.
const CosmosMaxBatchBytes = 2 << 20

// CheckBatchOperations applies the count rule of a transaction of n
// operations: at most MaxBatchOperations.
func CheckBatchOperations(n int) error {
	if n > MaxBatchOperations {
		return lengthErr(fmt.Sprintf("%d operations; at most %d are allowed", n, MaxBatchOperations))
	}
	return nil
}

// CheckBatchBytes applies the size rule of a transaction's request body
// of n bytes: MaxBatchBytes, or CosmosMaxBatchBytes on the Azure Cosmos DB
// Table API.
func CheckBatchBytes(n int, cosmos bool) error {
	max := MaxBatchBytes
	if cosmos {
		max = CosmosMaxBatchBytes
	}
	if n > max {
		return lengthErr(fmt.Sprintf("a body of %d bytes; at most %d are allowed", n, max))
	}
	return nil
}

// Queries.
//
// Evidence (docs): "Query Entities" and "Query timeout and pagination":
// at most 1,000 entities a page; a $top above 1,000 is a 400 InvalidInput
// (Azurite caps it silently). "Querying tables and entities": at most 15
// discrete comparisons in one $filter.
const (
	// MinTop is the smallest $top Azure accepts: $top=0 is answered 200
	// with no entity. Evidence (medium, first-hand reports of a real
	// account): Azurite issue #1428 (a Storage Explorer developer: "the
	// platform ... returns zero entities"); CloudStub's
	// Query_WhenUsingZeroTakeCount_ReturnsNoEntities, asserted against an
	// account. Below 0 is 400 InvalidInput (CloudStub's
	// Query_TakeCountLessThan0_ThrowsException).
	MinTop = 0
	// MaxTop is the largest $top: the most entities one page holds.
	MaxTop = 1000
	// MaxFilterComparisons is the most discrete comparisons one $filter
	// may hold.
	MaxFilterComparisons = 15
)

// CheckTop applies the rule of a query's $top as sent, in decimal: an
// integer from MinTop to MaxTop.
func CheckTop(top string) error {
	n, err := strconv.Atoi(top)
	if err != nil {
		return formErr(fmt.Sprintf("$top %q is not an integer", top))
	}
	if n < MinTop || n > MaxTop {
		return lengthErr(fmt.Sprintf("$top %d is outside %d..%d", n, MinTop, MaxTop))
	}
	return nil
}

// CheckFilterComparisons applies the rule of a $filter of n discrete
// comparisons: at most MaxFilterComparisons.
func CheckFilterComparisons(n int) error {
	if n > MaxFilterComparisons {
		return lengthErr(fmt.Sprintf("%d comparisons, more than the service's limit of %d", n, MaxFilterComparisons))
	}
	return nil
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

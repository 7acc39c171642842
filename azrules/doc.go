// Package azrules is the one definition of every published limit and name
// rule of Azure's Table, Queue and Blob services that tablekit checks: the
// client before it sends (keys, entity, the core transport, patterns,
// consistency, tablecopy), the Azurite harness's strict proxy, and the
// emulator when it answers. A rule written twice drifts; here each is
// written once, with the evidence for it beside it.
//
// The package imports only the standard library and nothing of tablekit,
// so every package can import it. docs/RULES.md is the same list as a
// table, with what Azurite does beside each rule.
//
// # How callers use it
//
// Constants hold the limits (MaxTop, MaxBatchOperations, MaxEntitySize,
// ...). Check functions (CheckKey, CheckTableName, CheckQueueName,
// CheckBlobName, CheckPropertyName, CheckTop, ...) return nil or a plain
// error saying, in words, which rule the value breaks. They never build a
// package's own error: the caller wraps the answer in its own (keys'
// *KeyError and *NameError, entity's *Error, the emulator's HTTP answers
// in emulator/answer, the strict proxy's). The errors wrap one of three
// sentinels, so a caller that answers differently by kind (the emulator:
// OutOfRangeInput for a length, InvalidInput for a character) asks with
// errors.Is:
//
//	ErrLength     too long or too short
//	ErrCharacter  a character the rule does not allow
//	ErrForm       anything else: not UTF-8, a reserved name, a bad segment
//
// # The rules, by service
//
// Tables: CheckTableName; CheckKey (PartitionKey and RowKey, MaxKeyUnits);
// CheckPropertyName, IsSystemProperty and MaxProperties; MaxStringUnits,
// MaxBinaryBytes and MaxEntitySize (entity.Entity.Size is the documented
// formula); MaxBatchOperations, MaxBatchBytes and CosmosMaxBatchBytes;
// CheckTop; MaxFilterComparisons; CosmosMaxRowKeyBytes.
//
// Queues: CheckQueueName; MaxMessageBytes; MaxMessagesPerGet.
//
// Blobs: CheckContainerName; CheckBlobName and MaxBlobNameUnits.
//
// Both queues and blobs: IsIdentifier (metadata names), MaxMetadataBytes.
//
// Everywhere: UTF16Len, the unit the Table service counts strings in;
// the development account (DevAccountName, DevAccountKey and the default
// ports).
//
// # Evidence and its strength
//
// Each rule's comment ends with its evidence, strongest first:
//
//	recording   a real service's answer recorded with full headers
//	            (the Azure SDK for Go's recorded sessions)
//	docs        Azure's published documentation (REST API reference)
//	SDK thread  an Azure SDK issue or answer showing what the real
//	            service answered
//	Azurite     Azurite's behaviour only (weakest: Azurite is more
//	            lenient than Azure in several places)
//
// Where the evidence is docs alone and the docs leave a detail open (the
// unit of a length, the answer to an edge case), the comment says which
// reading tablekit takes and why.
package azrules

package answer

import (
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"unicode/utf16"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// Limits of the Table service the answers below name, defined with their
// evidence in azrules (internal/wire.MaxTransactionOps and
// patterns.MaxPageSize are the client's names for the same numbers).
const (
	// MaxTop is the largest $top a query may ask for.
	MaxTop = azrules.MaxTop
	// MaxBatchOperations is the most operations one entity group
	// transaction may hold.
	MaxBatchOperations = azrules.MaxBatchOperations
)

// The Table service's error codes that answer answers with.
const (
	CodeInvalidInput          = "InvalidInput"
	CodeOutOfRangeInput       = "OutOfRangeInput"
	CodeTooManyProperties     = "TooManyProperties"
	CodeEntityTooLarge        = "EntityTooLarge"
	CodePropertyNameTooLong   = "PropertyNameTooLong"
	CodePropertyNameInvalid   = "PropertyNameInvalid"
	CodePropertyValueTooLarge = "PropertyValueTooLarge"
	CodeDifferentPartitions   = "CommandsInBatchActOnDifferentPartitions"
	CodeInvalidDuplicateRow   = "InvalidDuplicateRow"
	CodeAuthorizationFailure  = "AuthorizationFailure"
	CodeServerBusy            = "ServerBusy"
	CodeNotImplemented        = "NotImplemented"
)

// Azure's messages, the first line of each answer (the service appends
// RequestId and Time).
const (
	MsgInvalidInput          = "One of the request inputs is not valid."
	MsgNotImplemented        = "The requested operation is not implemented on the specified resource."
	MsgOutOfRangeInput       = "One of the request inputs is out of range."
	MsgTooManyProperties     = "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties."
	MsgEntityTooLarge        = "The entity is larger than the maximum allowed size (1MB)."
	MsgPropertyNameTooLong   = "The property name exceeds the maximum allowed length (255)."
	MsgPropertyNameInvalid   = "The property name is invalid."
	MsgPropertyValueTooLarge = "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."
	MsgDifferentPartitions   = "All commands in a batch must operate on same entity group."
	MsgInvalidDuplicateRow   = "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."
	MsgTooManyOperations     = "The batch request operation exceeds the maximum 100 changes per change set."
	MsgAuthorizationFailure  = "This request is not authorized to perform this operation."
	MsgServerBusy            = "The server is busy."
	MsgAccountOverLimit      = "Operations per second is over the account limit."
)

func badRequest(code, msg string) *Error { return New(http.StatusBadRequest, code, msg) }

// InvalidInput is Azure's 400 InvalidInput: a malformed query ($top over
// MaxTop, an unterminated string literal) among others.
func InvalidInput() *Error { return badRequest(CodeInvalidInput, MsgInvalidInput) }

// OutOfRangeInput is Azure's 400 OutOfRangeInput: a value outside what
// the service takes (a key too long or with a forbidden character, a
// DateTime outside its range, a Cosmos DB key) among others.
func OutOfRangeInput() *Error { return badRequest(CodeOutOfRangeInput, MsgOutOfRangeInput) }

// AuthorizationFailure is Azure's 403 to a request a SAS does not cover:
// an entity outside the SAS's key range.
func AuthorizationFailure() *Error {
	return New(http.StatusForbidden, CodeAuthorizationFailure, MsgAuthorizationFailure)
}

// ServerBusy is Azure's 503 to a request over a partition's scalability
// target.
func ServerBusy() *Error {
	return New(http.StatusServiceUnavailable, CodeServerBusy, MsgServerBusy)
}

// AccountOverLimit is Azure's 503 to a request over the account's
// scalability target: error code ServerBusy, with the message the REST
// API's common error codes give for an account over its request rate.
func AccountOverLimit() *Error {
	return New(http.StatusServiceUnavailable, CodeServerBusy, MsgAccountOverLimit)
}

// CheckEntity applies the rules of an entity to be written, with
// PartitionKey pk and RowKey rk (the URL's keys for an update, the body's
// for an insert), and returns Azure's answer to the first rule broken, in
// the order the service checks them, or nil:
//
//	a key over azrules.MaxKeyUnits                    400 OutOfRangeInput
//	a key with a character azrules.CheckKey refuses   400 InvalidInput
//	a property name longer than azrules.MaxPropertyNameLength
//	                                                  400 PropertyNameTooLong
//	a name entity.ValidatePropertyName refuses        400 PropertyNameInvalid
//	more than azrules.MaxProperties custom properties 400 TooManyProperties
//	a String over azrules.MaxStringUnits or a Binary over azrules.MaxBinaryBytes
//	                                                  400 PropertyValueTooLarge
//	a DateTime outside the service's range            400 OutOfRangeInput
//	over azrules.MaxEntitySize by entity.Entity.Size  400 EntityTooLarge
//
// The limits and the rules are azrules', the ones the client checks
// before it sends. Names are checked in sorted order, so the
// answer does not depend on a map's order. e.PartitionKey and e.RowKey
// are not looked at.
func CheckEntity(pk, rk string, e entity.Entity) *Error {
	if e := checkKey(pk); e != nil {
		return e
	}
	if e := checkKey(rk); e != nil {
		return e
	}
	names := make([]string, 0, len(e.Properties))
	for name := range e.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if entity.ValidatePropertyName(name) == nil {
			continue
		}
		if len(name) > azrules.MaxPropertyNameLength && azrules.UTF16Len(name) > azrules.MaxPropertyNameLength {
			return badRequest(CodePropertyNameTooLong, MsgPropertyNameTooLong)
		}
		return badRequest(CodePropertyNameInvalid, MsgPropertyNameInvalid)
	}
	if azrules.CheckPropertyCount(len(e.Properties)) != nil {
		return badRequest(CodeTooManyProperties, MsgTooManyProperties)
	}
	for _, name := range names {
		v := e.Properties[name]
		switch x := v.V.(type) {
		case string:
			if azrules.CheckString(x) != nil {
				return badRequest(CodePropertyValueTooLarge, MsgPropertyValueTooLarge)
			}
			if v.Type == entity.EdmString {
				continue // nothing left to check
			}
		case []byte:
			if azrules.CheckBinary(len(x)) != nil {
				return badRequest(CodePropertyValueTooLarge, MsgPropertyValueTooLarge)
			}
			if v.Type == entity.EdmBinary {
				continue
			}
		}
		// What is left of the value's rules: its Go type, a DateTime's
		// range.
		if _, err := v.AppendJSON(nil); err != nil {
			return OutOfRangeInput()
		}
	}
	if azrules.CheckEntitySize(e.Size()) != nil {
		return badRequest(CodeEntityTooLarge, MsgEntityTooLarge)
	}
	return nil
}

// CheckQuery applies the rules of a query's parameters that Azure checks
// before it reads a row: a $top that azrules.CheckTop refuses (not an
// integer from 0 to MaxTop) is 400 InvalidInput; a $filter is read by
// keys.ParseFilter, the grammar tablekit's client and emulator share
// (docs/EMULATOR.md, "Filters", gives its evidence): a malformed one is
// 400 InvalidInput, a well-formed one of a form Azure does not implement
// (two properties or two constants compared, the constant first) 501
// NotImplemented.
func CheckQuery(q url.Values) *Error {
	if top, ok := q["$top"]; ok && len(top) > 0 && azrules.CheckTop(top[0]) != nil {
		return InvalidInput()
	}
	if f := q.Get("$filter"); f != "" {
		_, err := keys.ParseFilter(f)
		switch {
		case errors.Is(err, keys.ErrUnsupportedFilter):
			return FilterNotImplemented()
		case err != nil:
			return InvalidFilter(f, err)
		}
	}
	return nil
}

// InvalidFilter is Azure's 400 InvalidInput to the $filter text f that
// keys.ParseFilter refused with err. Where a complete expression is
// followed by a token that cannot continue it, Azure names the position
// just past that token, in UTF-16 code units from 0 ("Syntax error at
// position 7 in 'aaa bbb ccc'.", the Python SDK's recorded
// test_query_invalid_filter, 2021; "... position 23 in 'property1 eq
// 1'invalid”.", CloudStub's tests against an account); other malformed
// filters have the generic message.
func InvalidFilter(f string, err error) *Error {
	var fe *keys.FilterError
	if !errors.As(err, &fe) || fe.TokenEnd <= 0 || fe.TokenEnd > len(f) {
		return InvalidInput()
	}
	pos := 0
	for _, r := range f[:fe.TokenEnd] {
		pos += utf16.RuneLen(r)
	}
	return badRequest(CodeInvalidInput, "Syntax error at position "+strconv.Itoa(pos)+" in '"+f+"'.")
}

// FilterNotImplemented is Azure's 501 NotImplemented to a well-formed
// $filter of a form it does not implement ("1 eq 2", "A eq B"), as
// CloudStub's tests assert it against an account
// (CloudStub.AzureDataTables.Tests/Table/Sync/TableClientQueryTests.cs,
// Query_WhenUsingUnsupportedFilter_ThrowsException).
func FilterNotImplemented() *Error {
	return New(http.StatusNotImplemented, CodeNotImplemented, MsgNotImplemented)
}

// BatchOp is one operation of an entity group transaction, as the rules
// see it.
type BatchOp struct {
	// Table is the table the operation's URL names.
	Table string
	// PartitionKey and RowKey are the entity's keys: the URL's, or the
	// body's for an insert.
	PartitionKey, RowKey string
	// Entity is the body; nil for a delete (or an operation without one).
	Entity *entity.Entity
}

// BatchError is Azure's answer to a transaction it refuses: the answer
// (Err) of the operation at Index (0-based), which the service sends
// inside a 202 Accepted batch response (WriteBatchError).
type BatchError struct {
	Index int
	Err   *Error
	// Preference is the failing operation's Preference-Applied
	// (return-no-content or return-content, for an insert), "" for none.
	Preference string
	// ContentID is the failing operation's Content-ID, which its answer
	// echoes as a success's does (the Python SDK's recorded
	// test_batch_update_if_doesnt_match, 2017: "HTTP/1.1 412 ...",
	// then "Content-ID: 1"), "" for none.
	ContentID string
	// ExtraChangeSets counts the batch's change sets after the first,
	// each answered 400 after the first's answer
	// (AppendRefusedChangeSets).
	ExtraChangeSets int
	// Operations is the change set's number of operations, 0 when not
	// known: Azure leaves the index out of a one-operation change set's
	// message (Message).
	Operations int
}

func (e *BatchError) Error() string {
	return "operation " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Message is the message as the service writes it inside the batch
// response: the operation's index, a colon, the message; the message
// alone when the change set holds one operation. Azure's recorded answers
// agree: a one-operation change set refused with 412 has no prefix (the
// Python SDK's test_batch_update_if_doesnt_match, 2017 and 2021), while
// index 0 of a three-operation one has "0:" (404 TableNotFound, the
// JavaScript SDK's batch_operations recordings of 2020 and 2021), and so
// has a 412 at index 0 of two operations (the Python SDK's
// test_batch_update_if_doesnt_match of 2013, an assertion on a live run):
// the rule is the change set's size, not the index or the status.
func (e *BatchError) Message() string {
	if e.Operations == 1 {
		return e.Err.Message
	}
	return strconv.Itoa(e.Index) + ":" + e.Err.Message
}

// CheckBatch applies the rules of "Performing entity group transactions"
// to ops, in Azure's order: at most MaxBatchOperations operations (the
// answer names the last allowed index, 99); then, operation by operation,
// the first operation's PartitionKey, one operation per entity, and
// CheckEntity. It returns nil when ops pass (an empty ops included).
func CheckBatch(ops []BatchOp) *BatchError {
	be := checkBatch(ops)
	if be != nil {
		be.Operations = len(ops)
	}
	return be
}

// checkBatch is CheckBatch but for the error's Operations.
func checkBatch(ops []BatchOp) *BatchError {
	if len(ops) > MaxBatchOperations {
		return &BatchError{Index: MaxBatchOperations - 1, Err: badRequest(CodeInvalidInput, MsgTooManyOperations)}
	}
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if op.PartitionKey != ops[0].PartitionKey {
			return &BatchError{Index: i, Err: badRequest(CodeDifferentPartitions, MsgDifferentPartitions)}
		}
		if seen[op.RowKey] {
			return &BatchError{Index: i, Err: badRequest(CodeInvalidDuplicateRow, MsgInvalidDuplicateRow)}
		}
		seen[op.RowKey] = true
		if op.Entity != nil {
			if err := CheckEntity(op.PartitionKey, op.RowKey, *op.Entity); err != nil {
				return &BatchError{Index: i, Err: err}
			}
		}
	}
	return nil
}

// MsgInvalidKeyCharacters is Azure's message for a key holding a
// character keys may not hold.
const MsgInvalidKeyCharacters = "The key value contains invalid characters ('/', '\\', '#', '?' and control characters are not allowed)."

// MsgURLKeySyntax is Azure's message for a key in a request's URL
// (PartitionKey='…',RowKey='…') holding a character keys may not hold.
const MsgURLKeySyntax = "Bad Request - Error in query syntax."

// CheckURLKeys is Azure's answer to an entity addressed by its keys in
// the URL (a point read, update, merge or delete, alone or in a
// transaction) when a key is one no entity can have: 400 OutOfRangeInput
// for a key over azrules.MaxKeyUnits, 400 InvalidInput "Bad Request -
// Error in query syntax." for a forbidden character ('/', '\', '#', '?'
// or a control character, percent-encoded in the URL). Evidence: a real
// service's answer to an InsertOrReplace, which addresses its entity by
// URL, with a '/' in its RowKey (azure-storage-net issue 386, 2017:
// "0:Bad Request - Error in query syntax.", InvalidInput), strong for
// the code, medium for the other operations, which parse the same URL.
// nil when both keys could be an entity's.
func CheckURLKeys(pk, rk string) *Error {
	for _, k := range [2]string{pk, rk} {
		if azrules.CheckKey(k) == nil {
			continue
		}
		if azrules.UTF16Len(k) > azrules.MaxKeyUnits {
			return OutOfRangeInput()
		}
		return badRequest(CodeInvalidInput, MsgURLKeySyntax)
	}
	return nil
}

// checkKey is Azure's answer to a PartitionKey or RowKey azrules.CheckKey
// refuses: too long is out of range, whatever else is wrong; a forbidden
// character is invalid input (Azure answered InvalidInput to a '/' in a
// RowKey: azure-storage-net issue 386, 2017; the message is the one
// Azure's Tables team quotes in azure-sdk-for-python issue 29106, 2023).
func checkKey(k string) *Error {
	if azrules.CheckKey(k) == nil {
		return nil
	}
	if azrules.UTF16Len(k) > azrules.MaxKeyUnits {
		return OutOfRangeInput()
	}
	return badRequest(CodeInvalidInput, MsgInvalidKeyCharacters)
}

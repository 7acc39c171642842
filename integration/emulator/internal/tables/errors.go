package tables

import (
	"net/http"
	"unicode/utf16"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/azrules"
	"github.com/tablekit/tablekit/keys"
)

// Azure's answers, as the Table service words them ("Table service error
// codes"; Azurite's StorageErrorFactory for the wording of the ones it
// shares; the Azurite harness's strict proxy for those Azurite lacks).
var (
	errTableExists   = azrules.New(http.StatusConflict, "TableAlreadyExists", "The table specified already exists.")
	errTableNotFound = azrules.New(http.StatusNotFound, "TableNotFound", "The table specified does not exist.")
	errNotFound      = azrules.New(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	errEntityExists  = azrules.New(http.StatusConflict, "EntityAlreadyExists", "The specified entity already exists.")
	errCondition     = azrules.New(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.")
	errInvalidInput  = azrules.New(http.StatusBadRequest, "InvalidInput", "One of the request inputs is not valid.")
	errNeedsValue    = azrules.New(http.StatusBadRequest, "PropertiesNeedValue", "The values are not specified for all properties in the entity.")
	errNameChars     = azrules.New(http.StatusBadRequest, "InvalidResourceName", "The specifed resource name contains invalid characters.")
	errNameLength    = azrules.New(http.StatusBadRequest, "OutOfRangeInput", "The specified resource name length is not within the permissible limits.")
	errBodyTooLarge  = azrules.New(http.StatusRequestEntityTooLarge, "RequestBodyTooLarge", "The request body is too large and exceeds the maximum permissible limit.")
	errAtom          = azrules.New(http.StatusUnsupportedMediaType, "AtomFormatNotSupported", "Atom format is not supported.")
	errMethod        = azrules.New(http.StatusMethodNotAllowed, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.")
	errNoIfMatch     = azrules.New(http.StatusBadRequest, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not specified.")
	errTooManyProps  = azrules.New(http.StatusBadRequest, "TooManyProperties", "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties.")
	errEntityTooBig  = azrules.New(http.StatusBadRequest, "EntityTooLarge", "The entity is larger than the maximum allowed size (1MB).")
	errNameTooLong   = azrules.New(http.StatusBadRequest, "PropertyNameTooLong", "The property name exceeds the maximum allowed length (255).")
	errNameInvalid   = azrules.New(http.StatusBadRequest, "PropertyNameInvalid", "The property name is invalid.")
	errValueTooLarge = azrules.New(http.StatusBadRequest, "PropertyValueTooLarge", "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less.")
	errOtherParts    = azrules.New(http.StatusBadRequest, "CommandsInBatchActOnDifferentPartitions", "All commands in a batch must operate on same entity group.")
	errDuplicateRow  = azrules.New(http.StatusBadRequest, "InvalidDuplicateRow", "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request.")
	errTooManyOps    = azrules.New(http.StatusBadRequest, "InvalidInput", "The batch request operation exceeds the maximum 100 changes per change set.")
	errNotImpl       = azrules.New(http.StatusNotImplemented, "NotImplemented", "The requested operation is not implemented on the specified resource.")
)

// checkEntity says which of Azure's rules e breaks, with Azure's answer,
// in the order the service checks them: keys, property names, the
// number of properties, each value, then the entity's size. The rules
// themselves are entity's and keys' (the client's checks); this only
// names the one that failed. On Cosmos DB an entity may be as large as
// its request body limit (2 MB; body is the request's size), where
// entity.Validate holds Azure Table storage's 1 MiB.
func (s *Service) checkEntity(e *entity.Entity, body int) *azrules.Error {
	if s.checkKeys(e.PartitionKey, e.RowKey) != nil {
		return errInvalidInput
	}
	for name := range e.Properties {
		if entity.ValidatePropertyName(name) != nil {
			if utf16Len(name) > entity.MaxPropertyNameLength {
				return errNameTooLong
			}
			return errNameInvalid
		}
	}
	if len(e.Properties) > entity.MaxProperties {
		return errTooManyProps
	}
	for _, v := range e.Properties {
		if _, err := v.AppendJSON(nil); err != nil {
			if v.Type == entity.EdmString || v.Type == entity.EdmBinary {
				return errValueTooLarge
			}
			return errInvalidInput
		}
	}
	if e.Validate() != nil && !(s.cfg.Cosmos && body <= maxCosmosBody) {
		return errEntityTooBig
	}
	return nil
}

func (s *Service) checkKeys(pk, rk string) error {
	if s.cfg.Cosmos {
		return keys.ValidateCosmosKeys(pk, rk)
	}
	if err := keys.ValidateKey("PartitionKey", pk); err != nil {
		return err
	}
	return keys.ValidateKey("RowKey", rk)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

package tables

import (
	"net/http"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/azrules"
	"github.com/tablekit/tablekit/keys"
)

// Azure's answers that azrules does not define (azrules has the entity,
// query and transaction rules' answers), as the Table service words them
// ("Table service error codes"; Azurite's StorageErrorFactory for the
// wording of those it shares).
var (
	errInvalidInput  = azrules.InvalidInput()
	errTableExists   = azrules.New(http.StatusConflict, "TableAlreadyExists", "The table specified already exists.")
	errTableNotFound = azrules.New(http.StatusNotFound, "TableNotFound", "The table specified does not exist.")
	errNotFound      = azrules.New(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	errEntityExists  = azrules.New(http.StatusConflict, "EntityAlreadyExists", "The specified entity already exists.")
	errCondition     = azrules.New(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.")
	errNeedsValue    = azrules.New(http.StatusBadRequest, "PropertiesNeedValue", "The values are not specified for all properties in the entity.")
	errAtom          = azrules.New(http.StatusUnsupportedMediaType, "AtomFormatNotSupported", "Atom format is not supported.")
	errNoIfMatch     = azrules.New(http.StatusBadRequest, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not specified.")
)

// checkEntity applies Azure's rules to an entity to write
// (azrules.CheckEntity: the client's own definitions, with the service's
// answers). On Cosmos DB the keys follow its rules (a RowKey of at most
// 255 bytes) and an entity may be as large as its 2 MB request.
func (s *Service) checkEntity(e *entity.Entity) *azrules.Error {
	if !s.cfg.Cosmos {
		return azrules.CheckEntity(e.PartitionKey, e.RowKey, *e)
	}
	if keys.ValidateCosmosKeys(e.PartitionKey, e.RowKey) != nil {
		return azrules.OutOfRangeInput()
	}
	ae := azrules.CheckEntity(e.PartitionKey, e.RowKey, *e)
	if ae != nil && ae.Code == azrules.CodeEntityTooLarge && e.Size() <= maxCosmosBody {
		return nil
	}
	return ae
}

package tables

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
)

// Azure's answers that answer does not define (answer has the entity,
// query and transaction rules' answers), as the Table service words them
// ("Table service error codes"; Azurite's StorageErrorFactory for the
// wording of those it shares).
var (
	errInvalidInput         = answer.InvalidInput()
	errTableExists          = answer.New(http.StatusConflict, "TableAlreadyExists", "The table specified already exists.")
	errTableNotFound        = answer.New(http.StatusNotFound, "TableNotFound", "The table specified does not exist.")
	errNotFound             = answer.New(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")
	errEntityExists         = answer.New(http.StatusConflict, "EntityAlreadyExists", "The specified entity already exists.")
	errCondition            = answer.New(http.StatusPreconditionFailed, "UpdateConditionNotSatisfied", "The update condition specified in the request was not satisfied.")
	errNeedsValue           = answer.New(http.StatusBadRequest, "PropertiesNeedValue", "The values are not specified for all properties in the entity.")
	errAtom                 = answer.New(http.StatusUnsupportedMediaType, "AtomFormatNotSupported", "Atom format is not supported.")
	errNoIfMatch            = answer.New(http.StatusBadRequest, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not specified.")
	errFilterNotImplemented = answer.FilterNotImplemented()
)

// checkEntity applies Azure's rules to an entity to write
// (answer.CheckEntity: the client's own definitions, with the service's
// answers). On Cosmos DB the keys follow its rules (a RowKey of at most
// 255 bytes) and an entity may be as large as its 2 MB request.
func (s *Service) checkEntity(e *entity.Entity) *answer.Error {
	if !s.cfg.Cosmos {
		return answer.CheckEntity(e.PartitionKey, e.RowKey, *e)
	}
	if keys.ValidateCosmosKeys(e.PartitionKey, e.RowKey) != nil {
		return answer.OutOfRangeInput()
	}
	ae := answer.CheckEntity(e.PartitionKey, e.RowKey, *e)
	if ae != nil && ae.Code == answer.CodeEntityTooLarge && e.Size() <= maxCosmosBody {
		return nil
	}
	return ae
}

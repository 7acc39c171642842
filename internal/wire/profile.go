package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// Profile is the set of rules of the service a table lives on: Azure
// Table storage (and Azurite), or the Azure Cosmos DB Table API, whose
// limits differ (docs/COSMOS.md). Every write is checked against its
// table's profile before any request. Where Azure Table storage is the
// tighter of the two (entity size, property count), the Cosmos profile
// keeps Azure Table storage's limit, so data written on one service can
// move to the other.
type Profile struct {
	name   string
	cosmos bool
}

// The two profiles.
var (
	// StorageProfile is Azure Table storage's rules (and Azurite's, which
	// are looser; see integration/azurite's strict mode).
	StorageProfile = &Profile{name: "Azure Table storage"}
	// CosmosProfile is the Azure Cosmos DB Table API's rules: Azure Table
	// storage's, plus RowKeys of at most 255 bytes, transactions of at
	// most 2 MiB, lowercase table names, no reserved property names
	// (CosmosReservedProperties), and no sort order in results.
	CosmosProfile = &Profile{name: "Azure Cosmos DB Table API", cosmos: true}
)

// CosmosMaxTransactionBytes is the largest transaction (batch) body the
// Azure Cosmos DB Table API accepts: 2 MB, where Azure Table storage
// accepts 4 MiB (azrules.CosmosMaxBatchBytes, where its evidence is).
const CosmosMaxTransactionBytes = azrules.CosmosMaxBatchBytes

// ErrUnsortedResults is returned (wrapped) by RequireSortedResults when
// the service does not return query results in PartitionKey, RowKey order:
// tablekit.ErrUnsortedResults.
var ErrUnsortedResults = errs.ErrUnsortedResults

// ProfileFor returns the profile of an endpoint: CosmosProfile when cosmos
// (tablehttp.Client.IsCosmos), StorageProfile otherwise.
func ProfileFor(cosmos bool) *Profile {
	if cosmos {
		return CosmosProfile
	}
	return StorageProfile
}

// String names the service.
func (p *Profile) String() string { return p.name }

// Cosmos reports whether p is the Azure Cosmos DB Table API's profile.
func (p *Profile) Cosmos() bool { return p.cosmos }

// ValidateKeys checks a PartitionKey and RowKey (keys.ValidateKey, and
// keys.ValidateCosmosKeys on Cosmos DB).
func (p *Profile) ValidateKeys(pk, rk string) error {
	if p.cosmos {
		return keys.ValidateCosmosKeys(pk, rk)
	}
	return ValidateKeys(pk, rk)
}

// ValidateTableName checks a table name (keys.ValidateTableName, and
// keys.ValidateCosmosTableName on Cosmos DB).
func (p *Profile) ValidateTableName(name string) error {
	if p.cosmos {
		return keys.ValidateCosmosTableName(name)
	}
	return keys.ValidateTableName(name)
}

// ValidateOp checks one single-entity write before any request.
func (p *Profile) ValidateOp(op Op) error {
	if err := validateOp(op); err != nil {
		return err
	}
	if err := p.ValidateKeys(op.PartitionKey, op.RowKey); err != nil {
		return tkerr.Errorf("tablekit: %v of (%q, %q) on %s: %w", op.Type, op.PartitionKey, op.RowKey, p.name, err)
	}
	if err := p.validateProperties(op); err != nil {
		return tkerr.Errorf("tablekit: %v of (%q, %q): %w", op.Type, op.PartitionKey, op.RowKey, err)
	}
	return nil
}

// CosmosReservedProperties are the property names the Azure Cosmos DB
// Table API reserves and does not support ("Frequently asked questions
// about Azure Cosmos DB for Table": "Azure Cosmos DB reserves the entity
// property names ID, rid, etag, and ResourceId").
var CosmosReservedProperties = []string{"ID", "rid", "etag", "ResourceId"}

// validateProperties refuses, on Cosmos DB, an entity with a property
// Cosmos DB reserves (CosmosReservedProperties), with an error wrapping
// tablekit.ErrInvalidEntity that names it.
func (p *Profile) validateProperties(op Op) error {
	if !p.cosmos || op.Type == OpDelete || len(op.Entity) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(op.Entity))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: left to the service, as on Azure Table storage
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i] // "ID@odata.type" annotates ID
		}
		if slices.Contains(CosmosReservedProperties, name) {
			return fmt.Errorf("%w: property %q is reserved by %s (reserved: %s)", errs.ErrInvalidEntity, name, p.name, strings.Join(CosmosReservedProperties, ", "))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// ValidateTransaction checks ops against ValidateTransaction's rules and,
// on Cosmos DB, its RowKey limit and its 2 MB transaction limit. Errors
// wrap tablekit.ErrInvalidTransaction (or ErrInvalidKey) and name the
// operation's index.
func (p *Profile) ValidateTransaction(ops []Op) error {
	if err := ValidateTransaction(ops); err != nil || !p.cosmos {
		return err
	}
	size := 0
	for i, op := range ops {
		if err := keys.ValidateCosmosKeys(op.PartitionKey, op.RowKey); err != nil {
			return fmt.Errorf("operation %d on %s: %w", i, p.name, err)
		}
		if err := p.validateProperties(op); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		size += OpWireSize(op)
	}
	if size > CosmosMaxTransactionBytes {
		return fmt.Errorf("%w: the request body would be about %d bytes; %s accepts at most %d (2 MB)", errs.ErrInvalidTransaction, size, p.name, CosmosMaxTransactionBytes)
	}
	return nil
}

// SortedResults reports whether the service returns query results in
// PartitionKey, RowKey order: Azure Table storage does, the Azure Cosmos
// DB Table API does not.
func (p *Profile) SortedResults() bool { return !p.cosmos }

// RequireSortedResults returns nil when the service sorts query results,
// and otherwise an error wrapping ErrUnsortedResults that names what
// needs the order (a repository, an operation), so that a pattern refuses
// rather than return rows in the wrong order.
func (p *Profile) RequireSortedResults(what string) error {
	if p.SortedResults() {
		return nil
	}
	return fmt.Errorf("%w: %s relies on that order, which %s does not give (see docs/COSMOS.md)", ErrUnsortedResults, what, p.name)
}

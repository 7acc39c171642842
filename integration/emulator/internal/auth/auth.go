// Package auth authenticates and authorizes requests to the emulator as
// Azure Storage does: Shared Key and Shared Key Lite signatures, account
// SAS and service SAS (permissions, start, expiry, protocol, IP, and a
// table SAS's PartitionKey/RowKey range). A request that fails gets
// Azure's answer (403 AuthenticationFailed, AuthorizationFailure,
// AuthorizationPermissionMismatch, ...) as an *azrules.Error.
package auth

import (
	"net/http"

	"github.com/tablekit/tablekit/internal/azrules"
)

// Service is one of the storage services.
type Service uint8

// The services.
const (
	Blob Service = iota + 1
	Queue
	Table
)

// Account is the storage account the emulator serves: its name and its
// keys (primary first; any key signs).
type Account struct {
	Name string
	Keys [][]byte
}

// Operation is what a request asks to do, as the service that parsed it
// knows it: the resource it addresses and the SAS permission it needs.
type Operation struct {
	Service Service
	// ResourceType is the account SAS resource type the operation needs:
	// 's' (service: list tables, queues, containers; properties), 'c'
	// (container: a table, queue or container itself) or 'o' (object:
	// entities, messages, blobs).
	ResourceType byte
	// Permission is the SAS permission letter the operation needs (r, a,
	// u, d, l, w, c, p, ...), as the REST reference lists it for the
	// service and the kind of SAS.
	Permission byte
	// Name is the table, queue or container; empty for a service-level
	// operation.
	Name string
	// Blob is the blob's name for a blob operation.
	Blob string
	// PartitionKey and RowKey are the entity a table entity operation
	// addresses (HasKeys), checked against a table SAS's key range.
	PartitionKey, RowKey string
	HasKeys              bool
}

// Grant is what an authorized request may do beyond the operation it was
// checked for: under a table SAS with a key range, a query sees only
// entities inside the range.
type Grant struct {
	// SAS is true when the request was authorized by a shared access
	// signature, false for Shared Key (Lite).
	SAS bool
	// KeyRange is the table SAS's PartitionKey/RowKey range; nil when
	// the SAS has none (or the request is not a table SAS).
	KeyRange *KeyRange
}

// KeyRange is a table SAS's range of keys (spk, srk, epk, erk), inclusive,
// in the service's key order.
type KeyRange struct {
	StartPK, StartRK, EndPK, EndRK string
	HasStart, HasEnd               bool
}

// Authenticator checks requests for one Account.
type Authenticator struct {
	acct Account
}

// New returns an Authenticator for acct.
func New(acct Account) *Authenticator { return &Authenticator{acct: acct} }

// Authorize checks r's credentials (Authorization header or SAS query
// parameters) for op. It returns the grant, or Azure's answer when the
// request is not authenticated or not authorized.
func (a *Authenticator) Authorize(r *http.Request, op Operation) (*Grant, *azrules.Error) {
	return &Grant{}, nil // contract: implemented on the auth branch
}

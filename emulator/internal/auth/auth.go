package auth

import (
	"bytes"
	"net/http"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
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
// keys (primary first; any key signs). A key is the decoded key, the bytes
// the account key's base64 text stands for (base64.StdEncoding of
// integration/azurite.AccountKey for the development account).
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
	// Bearer is true when the request was authorized by a bearer token
	// (EnableBearer); BearerIdentity reads who it names.
	Bearer bool
	// KeyRange is the table SAS's PartitionKey/RowKey range; nil when
	// the SAS has none (or the request is not a table SAS).
	KeyRange *KeyRange
}

// KeyRange is a table SAS's range of keys (spk, srk, epk, erk), inclusive,
// in the service's key order: answer' definition, shared with the
// Azurite harness's strict proxy.
type KeyRange = answer.KeyRange

// Authenticator checks requests for one Account. It is safe for
// concurrent use.
type Authenticator struct {
	acct Account
	keys []*keyMAC
	// policies looks up a stored access policy (si); nil knows none.
	policies PolicyLookup
	// now is the clock SAS and token lifetimes are checked on; time.Now
	// unless set (SetClock).
	now func() time.Time
	// dateNow is the clock a Shared Key request's date is checked on; nil
	// means now (SetDateClock).
	dateNow func() time.Time
	// bearer accepts bearer tokens (EnableBearer); bearerHTTPS says the
	// services are served over TLS.
	bearer, bearerHTTPS bool
}

// New returns an Authenticator for acct. It keeps its own copy of the
// keys.
func New(acct Account) *Authenticator {
	a := &Authenticator{acct: Account{Name: acct.Name}, now: time.Now}
	for _, k := range acct.Keys {
		k = bytes.Clone(k)
		a.acct.Keys = append(a.acct.Keys, k)
		a.keys = append(a.keys, newKeyMAC(k))
	}
	return a
}

// Authorize checks r's credentials (Authorization header or SAS query
// parameters) for op. It returns the grant, or Azure's answer when the
// request is not authenticated or not authorized. The Grant is shared
// between requests: read it, never modify it.
//
// A request with an Authorization header is checked as Shared Key or
// Shared Key Lite (the header wins over SAS parameters), or as a bearer
// token after EnableBearer (bearer.go); one with a sig
// query parameter as an account SAS (it has ss or srt) or a service SAS
// for op.Service; one with neither gets 401 NoAuthenticationInformation,
// as Azure answers from version 2019-12-12 on (the service adds the
// WWW-Authenticate header, WWWAuthenticate; a public blob container's
// anonymous reads are the blob service's to allow).
func (a *Authenticator) Authorize(r *http.Request, op Operation) (*Grant, *answer.Error) {
	if h := r.Header["Authorization"]; len(h) > 0 {
		if a.isBearer(h[0]) {
			return a.bearerToken(r, op.Service, a.acct.Name, h[0])
		}
		if err := a.sharedKey(r, op.Service, h[0]); err != nil {
			return nil, err
		}
		return grantSharedKey, nil
	}
	if hasSig(r.URL.RawQuery) {
		return a.sas(r, op)
	}
	return nil, noAuthenticationInformation()
}

// Anonymous says whether r carries no credentials: neither an
// Authorization header nor a SAS signature. Authorize answers such a
// request 401; the Blob service first lets a public container's
// anonymous reads through.
func Anonymous(r *http.Request) bool {
	return len(r.Header["Authorization"]) == 0 && !hasSig(r.URL.RawQuery)
}

// The grants without a key range are shared by every request.
var (
	grantSharedKey = &Grant{}
	grantSAS       = &Grant{SAS: true}
)

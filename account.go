package tablekit

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/internal/queuehttp"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/keys"
)

// EnvConnectionString is the conventional environment variable holding a
// storage connection string. tablekit reads it only through
// ConnectionStringFromEnv, never implicitly.
const EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"

// DevelopmentConnectionString is the connection string of Azurite's default
// endpoints on this machine (blob 10000, queue 10001, table 10002).
const DevelopmentConnectionString = "UseDevelopmentStorage=true"

// ErrNoEndpoint is returned when an operation needs a service (tables,
// queues or blobs) for which the Account has no endpoint, as with a SAS
// connection string that names only a TableEndpoint.
var ErrNoEndpoint = errors.New("tablekit: the account has no endpoint for this service")

// AccountOptions configures the SDK clients an Account creates. A nil
// *AccountOptions means the SDK defaults.
type AccountOptions struct {
	// ClientOptions is passed to the table, queue and blob clients: retry
	// policy, transport, telemetry, logging and per-call/per-retry
	// policies all go here.
	ClientOptions azcore.ClientOptions
}

// Account is one storage account: a table, a queue and a blob service
// client sharing one configuration. It is safe for concurrent use.
type Account struct {
	name   string
	key    *aztables.SharedKeyCredential // nil unless authenticated by shared key
	auth   tablehttp.Auth                // how the raw table transport authenticates
	httpMu sync.Mutex
	http   *tablehttp.Client
	qhttp  *queuehttp.Client
	tables *aztables.ServiceClient
	queues *azqueue.ServiceClient
	blobs  *azblob.Client
	urls   endpoints
	opts   AccountOptions
}

type endpoints struct{ table, queue, blob string }

// ConnectionStringFromEnv returns $AZURE_STORAGE_CONNECTION_STRING, or
// fallback when it is unset or empty. Programs pass
// DevelopmentConnectionString as the fallback to run on Azurite by default
// and on Azure when the variable is set.
func ConnectionStringFromEnv(fallback string) string {
	if v := strings.TrimSpace(os.Getenv(EnvConnectionString)); v != "" {
		return v
	}
	return fallback
}

// Connect parses a storage connection string and returns an Account. It
// accepts every form users paste: UseDevelopmentStorage=true (expanded to
// Azurite's default endpoints, which aztables' own parser rejects);
// DefaultEndpointsProtocol/AccountName/AccountKey/EndpointSuffix; explicit
// TableEndpoint, QueueEndpoint and BlobEndpoint with a key or a
// SharedAccessSignature. A SharedAccessSignature must be a SAS token as the
// portal and the CLI hand it out: a query string of key=value pairs holding
// one sig, with or without a leading '?'; any other value is refused.
// Services without an endpoint return nil from their accessor. Errors wrap
// ErrInvalidConnectionString and never contain the key or signature.
// Connect makes no request.
func Connect(connectionString string, opts *AccountOptions) (*Account, error) {
	s, err := parseConnectionString(connectionString)
	if err != nil {
		return nil, err
	}
	if s.accountKey != "" {
		return NewAccountWithSharedKey(s.accountName, s.accountKey, Endpoints{Table: s.tableURL, Queue: s.queueURL, Blob: s.blobURL}, opts)
	}
	a := &Account{name: s.accountName, opts: optsOrZero(opts), auth: tablehttp.Auth{SAS: s.sas}}
	co := a.opts.ClientOptions
	if s.tableURL != "" {
		a.urls.table = s.tableURL
		if a.tables, err = aztables.NewServiceClientWithNoCredential(withSAS(s.tableURL, s.sas), &aztables.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("table", err)
		}
	}
	if s.queueURL != "" {
		a.urls.queue = s.queueURL
		if a.queues, err = azqueue.NewServiceClientWithNoCredential(withSAS(s.queueURL, s.sas), &azqueue.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("queue", err)
		}
	}
	if s.blobURL != "" {
		a.urls.blob = s.blobURL
		if a.blobs, err = azblob.NewClientWithNoCredential(withSAS(s.blobURL, s.sas), &azblob.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("blob", err)
		}
	}
	return a, nil
}

// Endpoints are the service URLs of an account, such as
// https://myaccount.table.core.windows.net or, for Azurite,
// http://127.0.0.1:10002/devstoreaccount1. Empty ones are not configured.
type Endpoints struct {
	Table, Queue, Blob string
}

// AccountEndpoints returns the public-cloud endpoints of a named account.
func AccountEndpoints(accountName string) Endpoints {
	return Endpoints{
		Table: "https://" + accountName + ".table.core.windows.net",
		Queue: "https://" + accountName + ".queue.core.windows.net",
		Blob:  "https://" + accountName + ".blob.core.windows.net",
	}
}

// NewAccountWithSharedKey authenticates with the account name and key.
func NewAccountWithSharedKey(accountName, accountKey string, ep Endpoints, opts *AccountOptions) (*Account, error) {
	if accountName == "" {
		return nil, &connError{msg: "account name is empty"}
	}
	if err := checkKey(accountKey); err != nil || accountKey == "" {
		return nil, &connError{msg: "AccountKey is not base64"}
	}
	if err := checkEndpoints(ep); err != nil {
		return nil, err
	}
	a := &Account{name: accountName, opts: optsOrZero(opts), urls: endpoints{ep.Table, ep.Queue, ep.Blob}}
	co := a.opts.ClientOptions
	var err error
	if a.key, err = aztables.NewSharedKeyCredential(accountName, accountKey); err != nil {
		return nil, &connError{msg: "AccountKey is not base64"}
	}
	a.auth.Key, _ = base64.StdEncoding.DecodeString(accountKey)
	if ep.Table != "" {
		if a.tables, err = aztables.NewServiceClientWithSharedKey(ep.Table, a.key, &aztables.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("table", err)
		}
	}
	if ep.Queue != "" {
		qk, err := azqueue.NewSharedKeyCredential(accountName, accountKey)
		if err != nil {
			return nil, &connError{msg: "AccountKey is not base64"}
		}
		if a.queues, err = azqueue.NewServiceClientWithSharedKeyCredential(ep.Queue, qk, &azqueue.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("queue", err)
		}
	}
	if ep.Blob != "" {
		bk, err := azblob.NewSharedKeyCredential(accountName, accountKey)
		if err != nil {
			return nil, &connError{msg: "AccountKey is not base64"}
		}
		if a.blobs, err = azblob.NewClientWithSharedKeyCredential(ep.Blob, bk, &azblob.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("blob", err)
		}
	}
	return a, nil
}

// NewAccountWithCredential authenticates with Microsoft Entra ID through a
// token credential, such as azidentity.NewDefaultAzureCredential's. The
// account name is taken from the first endpoint's host name.
func NewAccountWithCredential(ep Endpoints, cred azcore.TokenCredential, opts *AccountOptions) (*Account, error) {
	if cred == nil {
		return nil, errors.New("tablekit: NewAccountWithCredential: credential is nil")
	}
	if err := checkEndpoints(ep); err != nil {
		return nil, err
	}
	a := &Account{opts: optsOrZero(opts), urls: endpoints{ep.Table, ep.Queue, ep.Blob}, auth: tablehttp.Auth{Token: cred}}
	co := a.opts.ClientOptions
	var err error
	for _, p := range []string{ep.Table, ep.Queue, ep.Blob} {
		if p != "" {
			a.name = accountFromEndpoint(p)
			break
		}
	}
	if ep.Table != "" {
		if a.tables, err = aztables.NewServiceClient(ep.Table, cred, &aztables.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("table", err)
		}
	}
	if ep.Queue != "" {
		if a.queues, err = azqueue.NewServiceClient(ep.Queue, cred, &azqueue.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("queue", err)
		}
	}
	if ep.Blob != "" {
		if a.blobs, err = azblob.NewClient(ep.Blob, cred, &azblob.ClientOptions{ClientOptions: co}); err != nil {
			return nil, wrapClientErr("blob", err)
		}
	}
	return a, nil
}

// Name is the storage account's name (devstoreaccount1 on Azurite).
func (a *Account) Name() string { return a.name }

// Tables is the table service client, or nil without a table endpoint.
func (a *Account) Tables() *aztables.ServiceClient { return a.tables }

// Queues is the queue service client, or nil without a queue endpoint.
func (a *Account) Queues() *azqueue.ServiceClient { return a.queues }

// Blobs is the blob client, or nil without a blob endpoint.
func (a *Account) Blobs() *azblob.Client { return a.blobs }

// TableEndpoint is the table service URL without SAS ("" when not configured).
func (a *Account) TableEndpoint() string { return a.urls.table }

// QueueEndpoint is the queue service URL without SAS ("" when not configured).
func (a *Account) QueueEndpoint() string { return a.urls.queue }

// BlobEndpoint is the blob service URL without SAS ("" when not configured).
func (a *Account) BlobEndpoint() string { return a.urls.blob }

// SharedKey is the account's shared-key credential, or nil when the account
// authenticates another way. tablekit uses it to sign SAS tokens locally.
func (a *Account) SharedKey() *aztables.SharedKeyCredential { return a.key }

// ClientOptions returns a copy of the options the SDK clients were built
// with (tablekit's attempt counter included), for callers that build
// further clients on the same configuration.
func (a *Account) ClientOptions() azcore.ClientOptions {
	co := a.opts.ClientOptions
	co.PerRetryPolicies = slices.Clone(co.PerRetryPolicies)
	return co
}

// Table returns a client for one table after validating its name. It makes
// no request.
func (a *Account) Table(name string) (*aztables.Client, error) {
	if a.tables == nil {
		return nil, ErrNoEndpoint
	}
	if err := validateTableName(name); err != nil {
		return nil, err
	}
	return a.tables.NewClient(name), nil
}

// Queue returns a client for one queue after validating its name.
func (a *Account) Queue(name string) (*azqueue.QueueClient, error) {
	if a.queues == nil {
		return nil, ErrNoEndpoint
	}
	if err := validateQueueName(name); err != nil {
		return nil, err
	}
	return a.queues.NewQueueClient(name), nil
}

// IsDevelopmentStorage reports whether the account is Azurite's development
// account.
func (a *Account) IsDevelopmentStorage() bool { return a.name == devAccountName }

// optsOrZero copies the caller's options (never written into) and adds
// the attempt counter as the last per-retry policy, nearest the transport,
// so patterns can recognise a retried write that the service had already
// applied.
func optsOrZero(o *AccountOptions) AccountOptions {
	var c AccountOptions
	if o != nil {
		c = *o
	}
	c.ClientOptions.PerRetryPolicies = append(slices.Clip(c.ClientOptions.PerRetryPolicies), attempts.Policy{}, redactPolicy{})
	return c
}

// accountPolicies is how many per-retry policies optsOrZero adds.
const accountPolicies = 2

// callerOptions are the options the caller gave, without the policies
// optsOrZero adds (the raw table transport adds their work itself).
func (a *Account) callerOptions() azcore.ClientOptions {
	co := a.opts.ClientOptions
	n := len(co.PerRetryPolicies) - accountPolicies
	co.PerRetryPolicies = co.PerRetryPolicies[:n:n]
	return co
}

// redactPolicy removes SAS signatures from what a request leaves behind:
// net/http's *url.Error prints the whole request URL, and azcore returns
// it as is; a response keeps its request, which every
// *azcore.ResponseError carries (RawResponse.Request). The response gets a
// copy of the request whose URL is redacted; the request itself, which a
// retry sends again, is left alone.
type redactPolicy struct{}

func (redactPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	redactTry(resp, err)
	return resp, err
}

// redactTry is what redactPolicy does to what a try returns.
func redactTry(resp *http.Response, err error) {
	if err != nil {
		// (Not declared outside: errors.As would move it to the heap on
		// every try, failed or not.)
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = Redact(ue.URL)
		}
	}
	if resp != nil && resp.Request != nil && resp.Request.URL != nil {
		if q := resp.Request.URL.RawQuery; q != "" {
			if r := Redact(q); r != q {
				u := *resp.Request.URL
				u.RawQuery = r
				resp.Request = resp.Request.WithContext(resp.Request.Context()) // a shallow copy
				resp.Request.URL = &u
			}
		}
	}
}

func withSAS(u, sas string) string {
	if sas == "" {
		return u
	}
	return u + "?" + sas
}

func checkEndpoints(ep Endpoints) error {
	if ep.Table == "" && ep.Queue == "" && ep.Blob == "" {
		return &connError{msg: "no endpoint given"}
	}
	for _, e := range []struct{ name, url string }{{"Table", ep.Table}, {"Queue", ep.Queue}, {"Blob", ep.Blob}} {
		if e.url == "" {
			continue
		}
		// The text of a malformed endpoint is not echoed: it may hold
		// anything pasted into it, a key or a signature included.
		u, err := url.Parse(e.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &connError{msg: "the " + e.name + " endpoint is not an absolute http(s) URL"}
		}
		if u.RawQuery != "" {
			return &connError{msg: "endpoint " + quote(u.Scheme+"://"+u.Host+u.Path) + " carries a query string; pass a SAS through a connection string"}
		}
	}
	return nil
}

func wrapClientErr(service string, err error) error {
	return &connError{msg: "cannot create the " + service + " client: " + Redact(err.Error())}
}

var (
	validateTableName = keys.ValidateTableName
	validateQueueName = keys.ValidateQueueName
)

// Redact returns s with credentials replaced by REDACTED: the value of
// every SAS signature (sig=..., also URL-escaped as sig%3D... inside
// another URL), and the values of AccountKey= and SharedAccessSignature=
// settings of a connection string. Names are matched in any case; the
// rest of s is kept, so a redacted URL still says which resource it names.
//
// Every error tablekit builds goes through it: MapError's labels and
// messages, and the pipeline policy that every client of an Account runs,
// which redacts transport errors (*url.Error) and the request kept by a
// response (so an *azcore.ResponseError's RawResponse.Request.URL holds no
// signature). Use it on text of your own that may hold a SAS URL or a
// connection string before it reaches a log.
func Redact(s string) string { return redact.Redact(s) }

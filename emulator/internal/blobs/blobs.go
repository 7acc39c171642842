// Package blobs is the emulator's Blob service, answering as Azure's
// Blob service answers: containers (create, delete, properties,
// metadata, access policy and public access, list), block blobs (put
// blob, put block, put block list, get block list), append blobs
// (create, append block with its conditions, seal), page blobs (create,
// put and clear pages, page ranges, resize, sequence numbers: page.go,
// sparse in pageranges.go), and for every blob
// get (with ranges), properties, metadata, index tags (tags.go), Find
// Blobs by Tags and x-ms-if-tags conditions (find.go, on the filter
// grammar of tagfilter.go), access
// tiers and rehydration from the archive tier (tier.go), delete
// and list (prefix, delimiter, continuation), leases (lease.go), copies within the account
// (copy.go) and snapshots (snapshot.go), Blob Batch of Delete Blob or
// Set Blob Tier (batch.go), under Azure's conditional
// headers and lease conditions, with Azure's status
// codes, error codes and messages (and the elements naming a refused
// header or query parameter) in XML bodies; the service's properties
// (CORS rules applied by package cors) and, on the secondary endpoint, its
// statistics.
//
// Requests arrive path-style: /ACCOUNT, /ACCOUNT/CONTAINER and
// /ACCOUNT/CONTAINER/BLOB, or /ACCOUNT-secondary/... for the read-only
// secondary endpoint. Every request is authorized (Config.Auth), or is
// an anonymous read its container's public access level allows
// (access.go), before the service does any work for it.
//
// State lives in memory; with a location (Config.Location, Open) every
// change is also written through to disk before it is answered
// (persist.go). A service-wide lock guards the set of
// containers; each container has its own lock for its blobs, so work on
// different containers never waits, and readers of one container wait
// only for its writers while they copy out what they answer with. Blob
// contents are never changed in place (an append writes past every
// reader's end), so bodies are written without holding a lock.
package blobs

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/body"
	"github.com/tablekit/tablekit/emulator/internal/cors"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// Config is what the service serves and how.
type Config struct {
	// Account is the account name, the first segment of every path.
	Account string
	// Auth checks every request. Nil allows every request.
	Auth *auth.Authenticator
	// Location, when set, is the directory the service keeps its state
	// in (disk.BlobsFile, and disk.BlobDataDir for large contents),
	// written through before each answer and loaded back by Open. Empty
	// means memory only.
	Location string
	// Now is the service's clock: leases expire and break, and writes
	// take their times (Last-Modified, ETags, snapshots), by it. Nil
	// means time.Now.
	Now func() time.Time
	// Peers returns the Blob service of another account served beside
	// this one, or nil: a copy whose source names that account reads it
	// there (fromurl.go). Nil serves copies within the account only.
	Peers func(account string) *Service
}

// Service is the Blob service of one emulator instance. It is safe for
// concurrent use.
type Service struct {
	cfg Config

	mu         sync.RWMutex
	containers map[string]*container
	names      []string // container names, sorted

	clock clock
	props svcprops.Properties // guarded by mu

	store *store // nil in memory only
}

// New returns an empty Blob service in memory (Config.Location is
// Open's).
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, containers: map[string]*container{}, props: svcprops.Defaults(true)}
	s.clock.read = cfg.Now
	return s
}

// request is one request as the service parsed it.
type request struct {
	w         http.ResponseWriter
	r         *http.Request
	container string     // empty for a service-level request
	blob      string     // empty for a service- or container-level request
	query     url.Values // the URL's query, parsed once
	secondary bool       // sent to the account's secondary endpoint
	restype   string
	comp      string
	// pending is the commit of the change the request made, with a
	// location: its answer waits for it (held).
	pending *write
	// batchVersion is, for a sub-request of a Blob Batch, the batch's
	// x-ms-version, which Azure applies to every sub-request (REST "Blob
	// Batch"). A sub-request is signed without one, so authorize sets it
	// once the sub-request is authorized.
	batchVersion string
}

// ServeHTTP answers one request to the Blob service.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		s.preflight(w, r)
		return
	}
	s.serve(w, r, "")
}

// serve answers one request, or one sub-request of a Blob Batch sent
// with x-ms-version batchVersion (batch.go).
func (s *Service) serve(w http.ResponseWriter, r *http.Request, batchVersion string) {
	w = cors.Wrap(w, r, s.corsRules())
	query := r.URL.Query()
	r = body.Gate(r) // opened by authorize
	q := &request{w: w, r: r, query: query, restype: query.Get("restype"), comp: query.Get("comp"), batchVersion: batchVersion}
	if s.store != nil {
		h := &held{ResponseWriter: w, q: q}
		q.w = h
		defer h.finish()
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	account, rest, _ := strings.Cut(path, "/")
	switch account {
	case s.cfg.Account:
	case s.cfg.Account + secondarySuffix:
		q.secondary = true
	default:
		writeError(w, r, answer.InvalidURI())
		return
	}
	q.container, q.blob, _ = strings.Cut(rest, "/")
	if q.container != "" && q.blob == "" && q.restype != "container" && !accountInfo(q) {
		// One segment after the account names a blob of the root
		// container (REST "Working with the root container"):
		// /ACCOUNT/BLOB is /ACCOUNT/$root/BLOB.
		q.container, q.blob = rootContainer, q.container
	}
	// Names are checked on every request, as Azure does, before anything
	// else.
	var e *answer.Error
	if q.container != "" {
		e = validContainerName(q.container)
	}
	if e == nil && q.blob != "" {
		e = validBlobName(q.blob)
	}
	if e != nil {
		writeError(w, r, e)
		return
	}
	resource := byte('o')
	if q.container == "" {
		resource = 's'
	} else if q.blob == "" {
		resource = 'c'
	}
	if q.secondary && r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, r, s.refuse(q, resource, answer.SecondaryWrite()))
		return
	}
	if e := unserved(q); e != nil {
		writeError(w, r, s.refuse(q, resource, e))
		return
	}
	switch {
	case q.container == "":
		e = s.serveAccount(q)
	case accountInfo(q):
		// Get Account Information answers at a container's or a blob's
		// URL as at the account's (REST "Get Account Information": the
		// request may name a container or a blob, for a service SAS on
		// it, from version 2018-03-28).
		e = s.authorized(q, s.accountProperties, resource, 'r')
	case q.blob == "":
		e = s.serveContainer(q)
	default:
		e = s.serveBlob(q)
	}
	if e != nil {
		writeError(w, r, e)
	}
}

// rootContainer is the container a blob addressed without one is in.
const rootContainer = "$root"

// accountInfo says whether q is Get Account Information
// (restype=account&comp=properties, GET or HEAD).
func accountInfo(q *request) bool {
	m := q.r.Method
	return (m == http.MethodGet || m == http.MethodHead) && q.restype == "account" && q.comp == "properties"
}

// authorized runs op once q is authorized for it (authorize).
func (s *Service) authorized(q *request, op func(*request) *answer.Error, resource byte, perms ...byte) *answer.Error {
	if e := s.authorize(q, resource, perms...); e != nil {
		return e
	}
	return op(q)
}

// authorize checks q for an operation needing one of perms (the first
// refusal is the answer when every one is refused).
func (s *Service) authorize(q *request, resource byte, perms ...byte) *answer.Error {
	if s.cfg.Auth == nil {
		q.admit()
		return nil
	}
	var first *answer.Error
	for _, p := range perms {
		_, e := s.cfg.Auth.Authorize(q.r, auth.Operation{
			Service: auth.Blob, ResourceType: resource, Permission: p,
			Name: q.container, Blob: q.blob,
		})
		if e == nil {
			q.admit()
			return nil
		}
		if first == nil {
			first = e
		}
	}
	return first
}

// admit opens q's body, q being authorized, and gives a batch's
// sub-request the batch's version.
func (q *request) admit() {
	body.Open(q.r)
	if q.batchVersion != "" && q.r.Header.Get("x-ms-version") == "" {
		q.r.Header.Set("x-ms-version", q.batchVersion)
	}
}

// serveAccount answers the service-level operations.
func (s *Service) serveAccount(q *request) *answer.Error {
	m := q.r.Method
	switch {
	case m == http.MethodGet && q.comp == "list" && q.restype == "":
		return s.authorized(q, s.listContainers, 's', 'l')
	case (m == http.MethodGet || m == http.MethodHead) && q.restype == "account" && q.comp == "properties":
		return s.authorized(q, s.accountProperties, 's', 'r')
	case (m == http.MethodGet || m == http.MethodHead) && q.restype == "service" && q.comp == "properties":
		return s.authorized(q, s.serviceProperties, 's', 'r')
	case m == http.MethodPut && q.restype == "service" && q.comp == "properties":
		return s.authorized(q, s.setServiceProperties, 's', 'w')
	case m == http.MethodGet && q.restype == "service" && q.comp == "stats":
		return s.authorized(q, s.serviceStats, 's', 'r')
	case m == http.MethodPost && q.comp == "batch" && q.restype == "":
		return s.authorized(q, s.submitBatch, 's', batchPerms...)
	case m == http.MethodGet && q.comp == "blobs" && q.restype == "":
		return s.authorized(q, s.findBlobs, 's', 'f')
	case q.restype == "service" && q.comp == "userdelegationkey":
		if m != http.MethodPost {
			return s.refuse(q, 's', answer.UnsupportedHTTPVerb())
		}
		return s.userDelegationKey(q) // authorized there: a bearer token only
	}
	return s.refuse(q, 's', unsupported(q))
}

// serveContainer answers the operations on a container
// (restype=container).
func (s *Service) serveContainer(q *request) *answer.Error {
	m := q.r.Method
	read := m == http.MethodGet || m == http.MethodHead
	switch {
	case m == http.MethodPut && q.comp == "":
		return s.authorized(q, s.createContainer, 'c', 'c', 'w')
	case m == http.MethodDelete && q.comp == "":
		return s.authorized(q, s.deleteContainer, 'c', 'd')
	case read && (q.comp == "" || q.comp == "metadata"):
		return s.readable(q, s.containerProperties, 'c', 'r', publicContainer)
	case m == http.MethodPut && q.comp == "metadata":
		return s.authorized(q, s.setContainerMetadata, 'c', 'w')
	case m == http.MethodGet && q.comp == "list":
		return s.readable(q, s.listBlobs, 'c', 'l', publicContainer)
	case m == http.MethodPut && q.comp == "lease":
		return s.authorized(q, s.leaseContainer, 'c', 'w')
	case read && q.comp == "acl":
		// Azure lets only the account owner read a container's ACL; the
		// Authenticator has no Shared-Key-only operation, so any valid
		// SAS passes too (Permission 0), as for the Queue service's ACLs.
		return s.authorized(q, s.containerACL, 'c', 0)
	case m == http.MethodPut && q.comp == "acl":
		return s.authorized(q, s.setContainerACL, 'c', 0)
	case m == http.MethodPost && q.comp == "batch":
		return s.authorized(q, s.submitBatch, 'c', batchPerms...)
	case m == http.MethodGet && q.comp == "blobs":
		return s.authorized(q, s.findBlobs, 'c', 'f')
	}
	return s.refuse(q, 'c', unsupported(q))
}

// serveBlob answers the operations on a blob.
func (s *Service) serveBlob(q *request) *answer.Error {
	m := q.r.Method
	if q.query.Has("versionid") {
		return s.refuse(q, 'o', errNotImplemented("blob versions"))
	}
	read := m == http.MethodGet || m == http.MethodHead
	if q.query.Has("snapshot") && m == http.MethodPut && q.comp == "tags" {
		// Azure sets a snapshot's tags (from version 2020-08-04); the
		// emulator's snapshots keep the tags their blob had.
		return s.refuse(q, 'o', errNotImplemented("Set Blob Tags on a snapshot"))
	}
	if q.query.Has("snapshot") && m == http.MethodPut && q.comp == "tier" {
		// Azure sets a snapshot's tier; the emulator's snapshots keep
		// the tier their blob had.
		return s.refuse(q, 'o', errNotImplemented("Set Blob Tier on a snapshot"))
	}
	if q.query.Has("snapshot") && !(read && (q.comp == "" || q.comp == "metadata" || q.comp == "blocklist" || q.comp == "tags" || q.comp == "pagelist") || m == http.MethodDelete && q.comp == "") {
		// A snapshot is read-only: only its reads and its delete take the
		// parameter.
		return s.refuse(q, 'o', answer.InvalidQueryParameter("snapshot", q.query.Get("snapshot"), ""))
	}
	switch {
	case read && q.comp == "":
		return s.readable(q, s.getBlob, 'o', 'r', publicBlob)
	case read && q.comp == "metadata":
		return s.readable(q, s.getBlobMetadata, 'o', 'r', publicBlob)
	case m == http.MethodGet && q.comp == "blocklist":
		return s.readable(q, s.getBlockList, 'o', 'r', publicBlob)
	case m == http.MethodDelete && q.comp == "":
		return s.authorized(q, s.deleteBlob, 'o', 'd')
	case m == http.MethodPut && q.comp == "" && q.r.Header.Get("x-ms-copy-source") != "" && q.r.Header.Get("x-ms-blob-type") == "":
		// Copy Blob and Copy Blob From URL (Put Blob From URL sends
		// x-ms-blob-type).
		perms := []byte{'w'}
		if !s.blobExists(q.container, q.blob) {
			perms = append(perms, 'c')
		}
		return s.authorized(q, s.copyBlob, 'o', perms...)
	case m == http.MethodPut && q.comp == "copy":
		return s.authorized(q, s.abortCopy, 'o', 'w')
	case m == http.MethodPut && q.comp == "snapshot":
		return s.authorized(q, s.snapshotBlob, 'o', 'c', 'w')
	case m == http.MethodPut && (q.comp == "" || q.comp == "block" || q.comp == "blocklist"):
		// Create (c) writes a new blob; write (w) creates or overwrites.
		perms := []byte{'w'}
		if !s.blobExists(q.container, q.blob) {
			perms = append(perms, 'c')
		}
		op := s.putBlob
		switch q.comp {
		case "block":
			op = s.putBlock
		case "blocklist":
			op = s.putBlockList
		}
		return s.authorized(q, op, 'o', perms...)
	case m == http.MethodPut && q.comp == "page":
		return s.authorized(q, s.putPage, 'o', 'w')
	case m == http.MethodGet && q.comp == "pagelist":
		return s.readable(q, s.getPageRanges, 'o', 'r', publicBlob)
	case m == http.MethodPut && q.comp == "appendblock":
		return s.authorized(q, s.appendBlock, 'o', 'a', 'w')
	case m == http.MethodPut && q.comp == "seal":
		return s.authorized(q, s.seal, 'o', 'w')
	case m == http.MethodPut && q.comp == "metadata":
		return s.authorized(q, s.setBlobMetadata, 'o', 'w')
	case m == http.MethodPut && q.comp == "properties":
		return s.authorized(q, s.setBlobProperties, 'o', 'w')
	case m == http.MethodPut && q.comp == "lease":
		return s.authorized(q, s.leaseBlob, 'o', 'w')
	case m == http.MethodGet && q.comp == "tags":
		return s.authorized(q, s.getBlobTags, 'o', 't')
	case m == http.MethodPut && q.comp == "tags":
		return s.authorized(q, s.setBlobTags, 'o', 't')
	case m == http.MethodPut && q.comp == "tier":
		// A SAS sets a tier with write permission (REST "Create a
		// service SAS": Set Blob Tier under Write).
		return s.authorized(q, s.setBlobTier, 'o', 'w')
	}
	return s.refuse(q, 'o', unsupported(q))
}

// refuse answers a request the service does not serve with e, once the
// request is authorized (as a read for GET and HEAD, a write otherwise):
// like Azure, the service tells nothing to a request it cannot
// authenticate.
func (s *Service) refuse(q *request, resource byte, e *answer.Error) *answer.Error {
	perm := byte('w')
	if q.r.Method == http.MethodGet || q.r.Method == http.MethodHead {
		perm = 'r'
	}
	if ae := s.authorize(q, resource, perm); ae != nil {
		return ae
	}
	return e
}

// unsupported answers an operation the service does not serve: a verb
// the resource has no operation for is Azure's 405, a feature of the
// Blob service the emulator leaves out (incremental copy, Query Blob
// Contents, ...) is
// 501, and a comp the service does not know is Azure's 400.
func unsupported(q *request) *answer.Error {
	switch q.comp {
	case "", "list", "metadata", "block", "blocklist", "appendblock", "seal", "lease", "snapshot", "copy", "tier", "batch", "blobs",
		"page", "pagelist":
		return answer.UnsupportedHTTPVerb()
	case "tags", "acl", "undelete",
		"expiry", "immutabilityPolicies", "legalhold", "userdelegationkey",
		"stats", "properties", "incrementalcopy", "rename", "query":
		return errNotImplemented(q.r.Method + " comp=" + q.comp)
	}
	return answer.InvalidQueryParameter("comp", q.comp, "")
}

// setCommon sets the headers every answer carries.
func setCommon(h http.Header, r *http.Request) {
	answer.SetHeaders(h, r, answer.RequestID())
	h.Set("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
}

// setVersion sets the headers every answer carries and the ETag and
// Last-Modified of the container or blob version it answers about, and
// returns the answer's headers for the rest.
func setVersion(q *request, etag string, modified time.Time) http.Header {
	h := q.w.Header()
	setCommon(h, q.r)
	h.Set("ETag", etag)
	h.Set("Last-Modified", httpTime(modified))
	return h
}

// clock hands out modification times and ETags: each ETag is the time's
// .NET ticks (100 ns since 0001-01-01) in hex, as Azure's "0x8D..."
// ETags are, made unique and increasing even when two writes share a
// tick.
type clock struct {
	read func() time.Time // Config.Now
	mu   sync.Mutex
	last int64
}

// ticksTo1970 is the number of 100 ns ticks from 0001-01-01 to
// 1970-01-01.
const ticksTo1970 = 621355968000000000

// next returns the time of a write and its ETag.
func (c *clock) next() (time.Time, string) {
	now := c.read().UTC()
	t := now.UnixNano()/100 + ticksTo1970
	c.mu.Lock()
	if t <= c.last {
		t = c.last + 1
	}
	c.last = t
	c.mu.Unlock()
	return now, formatETag(t)
}

// formatETag writes ticks as Azure writes an ETag: quoted, 0x and upper
// case hex.
func formatETag(t int64) string {
	return `"0x` + strings.ToUpper(strconv.FormatInt(t, 16)) + `"`
}

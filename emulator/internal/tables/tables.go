// Package tables is the emulator's Table service: tables, entities,
// queries and entity group transactions, answering as Azure Table storage
// answers.
//
// Entities live in memory, one ordered index (a B-tree by PartitionKey,
// then RowKey, in the service's UTF-16 order) per table, so a point
// operation costs O(log n) and a key-range query O(log n + page). A query
// is planned from its filter (keys.Filter.Bounds): a PartitionKey eq
// reads one partition, RowKey bounds a range inside it, PartitionKey
// bounds a range of partitions; anything else scans the table, and every
// entity in the range is checked with keys.Filter.Match. Readers of a
// table share its lock; a write holds it for the write alone, and stored
// rows are never changed (a write replaces its row), so pages are encoded
// after the lock is released.
//
// With a location (Open; emulator.Options.Location) the tables live in a
// bbolt database instead (disk.go): the same order, kept by the stored
// keys' bytes; table names, ACLs and the service's properties beside
// them. Reads run in short read transactions (a query's scan in chunks
// of scanChunk entities); writes are applied by one goroutine, as many as
// are waiting in one transaction, and answered once it is on disk. A
// transaction is one database transaction, so a process killed at any
// moment leaves it whole or absent.
//
// Azure's rules for entities and transactions are emulator/answer'
// (the client's own definitions with the service's answers). Where the
// service's behaviour is not documented, the emulator chooses, and says
// so here:
//
//   - Filters are read by keys.ParseFilter and evaluated by
//     keys.Filter.Match, as Azure evaluates them on the evidence
//     docs/EMULATOR.md ("Filters") gives with its strength: a number
//     literal widened to a wider property type, other mismatched types
//     ordered below the literal, a missing property false. A malformed
//     filter is 400 InvalidInput; a comparison of two properties, two
//     constants or with the constant first is 501 NotImplemented; $top=0
//     is an empty page.
//   - $select of a property an entity lacks writes it as null, as Azure
//     does (Azurite leaves it out).
//   - Properties are written sorted by name after PartitionKey, RowKey
//     and Timestamp; Azure keeps its own order.
//   - Continuation values are Azure's form (1!<length>!<base64>); a query
//     page ends early only under EarlyEnd.
//   - Delete Entity without If-Match is 400 MissingRequiredHeader
//     (Azurite: 412).
//   - Atom (XML) is refused with 415 AtomFormatNotSupported, as Azurite
//     does; Azure answers it.
//   - The operations of one transaction share one Timestamp and ETag.
//   - A transaction holds changes only; a retrieve (GET) inside one is
//     refused.
//   - With Cosmos, partitions come in the order of a hash of their key
//     (rows of one partition by RowKey), as Cosmos DB's results are not
//     sorted.
package tables

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/body"
	"github.com/tablekit/tablekit/emulator/internal/cors"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// Load is the scale model's view of the work the service does. A nil
// Load means no model: nothing is throttled and work takes no time.
type Load interface {
	// Admit is asked before a request does its work, with the partition
	// it addresses (table and pk when hasPK; an empty PartitionKey is a
	// partition like any other) or, without hasPK, none (a query naming
	// no single partition, a table operation: the account only), and its
	// cost in entities: a write 1, a transaction its operations, a query
	// 0 (admitted while the partition and the account have an entity
	// left; what its page scanned is charged by Charge). A non-nil answer
	// (503 ServerBusy) is sent instead.
	Admit(ctx context.Context, table, pk string, hasPK bool, cost int) *answer.Error
	// Charge adds what a query page scanned to the partition's count
	// (table and pk when hasPK) or to the account's alone, after the
	// page is read.
	Charge(table, pk string, hasPK bool, scanned int)
	// Server is the simulated partition server that serves a partition.
	Server(table, pk string) int
	// Work blocks for the service time of reading scanned entities on
	// server, queued behind the server's other work; it returns early
	// with ctx's error.
	Work(ctx context.Context, server, scanned int) error
}

// EarlyEnd makes query pages end early as Azure's may: at a partition
// server boundary, after a page's time budget, or empty with a
// continuation. It is seeded, so a test that fails on it fails again.
type EarlyEnd struct {
	Seed int64
	// Probability is the chance, per page, that the page ends early (at
	// a random point, possibly before any entity) with a continuation.
	// Zero means 0.5.
	Probability float64
}

// NoEarlyEndHeader, set on a query, exempts it from EarlyEnd: its page
// ends only at $top or at its range's end. Tests that count a query's
// requests set it; tests of exactness do not.
const NoEarlyEndHeader = "X-Tablekit-No-Early-End"

// Config is what the service serves and how.
type Config struct {
	// Account is the account name, the first segment of every path.
	Account string
	// Auth checks every request.
	Auth *auth.Authenticator
	// Cosmos applies the Cosmos DB Table API's profile: its name and size
	// rules, case-sensitive table names, results not sorted.
	Cosmos bool
	// EarlyEnd, when set, ends query pages early as Azure may.
	EarlyEnd *EarlyEnd
	// Load is the scale model; nil means none.
	Load Load
	// Now is the service's clock: entities' Timestamps and tables'
	// creation times follow it. Nil means time.Now.
	Now func() time.Time
}

// Service is the Table service of one emulator instance. It is safe for
// concurrent use.
type Service struct {
	cfg Config

	mu     sync.RWMutex
	tables map[string]*table // by tableKey

	clock clock
	props svcprops.Properties // Set Table Service Properties' document

	rngMu sync.Mutex
	rng   *rand.Rand // EarlyEnd's draws; nil without EarlyEnd

	earlyPages, emptyPages atomic.Int64 // pages EarlyEnd ended, and of them the empty ones

	// d keeps the tables on disk (Open); nil: in memory (New).
	d *diskStore
}

// EarlyEnds returns how many query pages EarlyEnd has ended early since
// New, and how many of those were empty.
func (s *Service) EarlyEnds() (pages, empty int64) {
	return s.earlyPages.Load(), s.emptyPages.Load()
}

// New returns an empty Table service.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, tables: map[string]*table{}, props: svcprops.Defaults(false)}
	s.clock.read = cfg.Now
	if cfg.EarlyEnd != nil {
		seed := uint64(cfg.EarlyEnd.Seed)
		s.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return s
}

// Limits of request bodies, a single entity's request's and a
// transaction's: azrules.MaxBatchBytes on Azure Table storage,
// azrules.CosmosMaxBatchBytes on the Cosmos DB Table API.
const (
	maxBody       = azrules.MaxBatchBytes
	maxCosmosBody = azrules.CosmosMaxBatchBytes
)

func (s *Service) maxBody() int64 {
	if s.cfg.Cosmos {
		return maxCosmosBody
	}
	return maxBody
}

// request is one request as the handlers see it.
type request struct {
	w   http.ResponseWriter
	r   *http.Request
	id  string // x-ms-request-id
	fmt format
	// query is r's query, parsed once (a SAS in it makes a parse cost
	// about as much as a point read's lookup).
	query url.Values
	// base is the account's URL as the client addressed it, for the
	// odata.metadata and odata.id links.
	base string
	// load is the scale model this request sees: the service's, or nil
	// on the Unmodelled handler.
	load Load
	// extraChangeSets counts a batch's change sets after the first.
	extraChangeSets int
}

// Unmodelled returns a handler that serves the same tables as s without
// its Load: nothing throttled, no simulated service time. A benchmark
// loads its data through it and measures through s.
func (s *Service) Unmodelled() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, nil) })
}

// ServeHTTP answers one request to the Table service.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, s.cfg.Load)
}

// serve answers one request with load as the scale model (nil: none).
func (s *Service) serve(w http.ResponseWriter, r *http.Request, load Load) {
	r = body.Gate(r) // opened by authorize
	q := &request{w: w, r: r, id: answer.RequestID(), load: load, query: r.URL.Query()}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	q.base = scheme + "://" + r.Host + "/" + s.cfg.Account
	f, ferr := formatOf(q.query, r.Header)
	q.fmt = f
	if r.Method == http.MethodOptions {
		s.preflight(q)
		return
	}
	w = cors.Wrap(w, r, s.corsRules())
	q.w = w

	p := r.URL.EscapedPath()
	if acct, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/"); acct != s.cfg.Account {
		s.fail(q, errNotFound)
		return
	}
	method := r.Method
	if method == http.MethodPost {
		if m := r.Header.Get("X-HTTP-Method"); m != "" {
			method = strings.ToUpper(m)
		}
	}
	res, ok := answer.ParseTablePath(p)
	if !ok {
		s.fail(q, errInvalidInput)
		return
	}
	if res.Service {
		s.serveService(q, method)
		return
	}
	// Get Table ACL answers XML whatever Accept says (aztables'
	// GetAccessPolicy asks for application/xml).
	if ferr != nil && method == http.MethodGet && !q.query.Has("comp") {
		s.fail(q, ferr)
		return
	}
	switch {
	case res.Name == "Tables" && !res.Parens:
		switch method {
		case http.MethodGet:
			s.queryTables(q, "")
		case http.MethodPost:
			s.createTable(q)
		default:
			s.fail(q, answer.UnsupportedHTTPVerb())
		}
	case res.Name == "Tables":
		switch method {
		case http.MethodDelete:
			s.deleteTable(q, res.Table)
		case http.MethodGet:
			s.queryTables(q, res.Table)
		default:
			s.fail(q, answer.UnsupportedHTTPVerb())
		}
	case res.Name == "$batch":
		if method != http.MethodPost {
			s.fail(q, answer.UnsupportedHTTPVerb())
			return
		}
		s.batch(q)
	case q.query.Has("comp"):
		s.serveACL(q, res.Name, method)
	case res.HasKeys:
		if e := answer.CheckURLKeys(res.PartitionKey, res.RowKey); e != nil {
			s.fail(q, e)
			return
		}
		switch method {
		case http.MethodGet:
			s.getEntity(q, res.Name, res.PartitionKey, res.RowKey)
		case http.MethodPut:
			s.writeEntity(q, res.Name, res.PartitionKey, res.RowKey, false)
		case http.MethodPatch, "MERGE":
			s.writeEntity(q, res.Name, res.PartitionKey, res.RowKey, true)
		case http.MethodDelete:
			s.deleteEntity(q, res.Name, res.PartitionKey, res.RowKey)
		default:
			s.fail(q, answer.UnsupportedHTTPVerb())
		}
	default:
		switch method {
		case http.MethodGet:
			s.queryEntities(q, res.Name)
		case http.MethodPost:
			s.insertEntity(q, res.Name)
		default:
			s.fail(q, answer.UnsupportedHTTPVerb())
		}
	}
}

// authorize checks q's credentials for op; false means the answer was
// sent.
func (s *Service) authorize(q *request, op auth.Operation) (*auth.Grant, bool) {
	if s.cfg.Auth == nil {
		body.Open(q.r)
		return &auth.Grant{}, true
	}
	op.Service = auth.Table
	g, e := s.cfg.Auth.Authorize(q.r, op)
	if e != nil {
		if e.Status == http.StatusUnauthorized {
			// A request without credentials: Azure's challenge.
			q.w.Header().Set("WWW-Authenticate", auth.WWWAuthenticate)
		}
		s.fail(q, e)
		return nil, false
	}
	body.Open(q.r)
	if g == nil {
		g = &auth.Grant{}
	}
	return g, true
}

// openTable is the table named name; nil means it does not exist and
// the answer (404 TableNotFound) was sent.
func (s *Service) openTable(q *request, name string) *table {
	t := s.lookup(name)
	if t == nil {
		s.fail(q, errTableNotFound)
	}
	return t
}

// admit asks the scale model to admit a request to partition (table, pk)
// when hasPK, or to the account alone; false means the answer was sent.
func (s *Service) admit(q *request, table, pk string, hasPK bool, cost int) bool {
	if q.load == nil {
		return true
	}
	if e := q.load.Admit(q.r.Context(), table, pk, hasPK, cost); e != nil {
		s.fail(q, e)
		return false
	}
	return true
}

// readBody reads q's body up to limit bytes, once, into a buffer of its
// Content-Length (package body); false means the answer was sent: 413
// RequestBodyTooLarge over limit (unread when the Content-Length says
// so), 500 OperationTimedOut when the server's read deadline cut it, 400
// InvalidInput when it broke off. Callers authorize q first: nothing of a
// body is read for a request that is not allowed.
func (s *Service) readBody(q *request, limit int64) ([]byte, bool) {
	b, f := body.Read(q.r, limit)
	switch f {
	case body.OK:
		return b, true
	case body.TooLarge:
		s.fail(q, answer.RequestBodyTooLarge())
	case body.TimedOut:
		s.fail(q, answer.OperationTimedOut())
	case body.Unauthorized:
		s.fail(q, answer.InternalError())
	default:
		s.fail(q, errInvalidInput)
	}
	return nil, false
}

// fail answers q with e, in the JSON format q asked for
// (answer.WriteTableAs).
func (s *Service) fail(q *request, e *answer.Error) {
	answer.WriteTableAs(q.w, q.r, e, q.fmt.contentType())
}

// headers sets the headers of a success.
func (q *request) headers() http.Header {
	h := q.w.Header()
	answer.SetTableHeaders(h, q.r, q.id)
	h.Set("X-Content-Type-Options", "nosniff")
	return h
}

// reply sends a JSON success.
func (q *request) reply(status int, body []byte) {
	h := q.headers()
	if body != nil {
		h.Set("Content-Type", q.fmt.contentType())
	}
	q.w.WriteHeader(status)
	if body != nil && q.r.Method != http.MethodHead {
		q.w.Write(body)
	}
}

// Package queues is the emulator's Queue service, answering as Azure's
// Queue service answers: queues and their metadata and access policies,
// messages (put, get, peek, update, delete, clear) on a clock, the
// service's properties and the queue listing, with Azure's XML bodies,
// headers, status codes, error codes and messages.
//
// Requests arrive path-style: /ACCOUNT for the service,
// /ACCOUNT/QUEUE for a queue, /ACCOUNT/QUEUE/messages and
// /ACCOUNT/QUEUE/messages/ID for messages; /ACCOUNT-secondary/... for the
// read-only secondary endpoint, which also gives the service's
// statistics. Every request is authorized
// (Config.Auth) before any work, with the SAS resource type and
// permission the REST reference gives for its operation.
//
// The service's CORS rules answer preflight (OPTIONS) requests and add
// their Access-Control headers to a browser's requests.
//
// Messages live in memory, one lock per queue: a message handed to one
// receiver stays invisible to every other until its visibility timeout
// ends, however many clients dequeue at once.
package queues

import (
	"errors"
	"net/http"
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

// Config is what the service serves and how.
type Config struct {
	// Account is the account name, the first segment of every path.
	Account string
	// Auth checks every request.
	Auth *auth.Authenticator
	// Now is the service's clock: message visibility and expiry follow
	// it. Nil means time.Now. Tests set it to move time forward.
	Now func() time.Time
	// Location, when set, is the directory the service keeps its state
	// in (disk.QueuesFile), written through before each answer and loaded
	// back by Open. Empty means memory only.
	Location string
}

// Service is the Queue service of one emulator instance.
type Service struct {
	cfg Config

	mu     sync.RWMutex
	queues map[string]*queue
	props  svcprops.Properties

	// lastTick is the last pop receipt's time stamp (100 ns ticks): each
	// receipt gets a later one, so no two receipts are equal.
	lastTick atomic.Uint64

	store *store // nil in memory only
}

// New returns an empty Queue service in memory (Config.Location is
// Open's).
func New(cfg Config) *Service {
	return &Service{cfg: cfg, queues: map[string]*queue{}, props: svcprops.Defaults(false)}
}

// serverHeader is the Server header Azure's Queue service sends.
const serverHeader = "Windows-Azure-Queue/1.0 Microsoft-HTTPAPI/2.0"

// The answers the service gives more than once.
var (
	errQueueNotFound    = answer.New(http.StatusNotFound, "QueueNotFound", "The specified queue does not exist.")
	errQueueExists      = answer.New(http.StatusConflict, "QueueAlreadyExists", "The specified queue already exists.")
	errMessageNotFound  = answer.New(http.StatusNotFound, "MessageNotFound", "The specified message does not exist.")
	errEmptyMetadataKey = answer.New(http.StatusBadRequest, "EmptyMetadataKey", "The key for one of the metadata key-value pairs is empty.")
)

// secondarySuffix ends the account segment of a request to the
// account's read-only secondary endpoint (path-style, as Azurite takes
// it: /ACCOUNT-secondary/...). Azure's secondary of an RA-GRS account
// serves reads; the emulator's answers them from the same data, with no
// replication lag.
const secondarySuffix = "-secondary"

// now is the service's time.
func (s *Service) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now().UTC()
	}
	return time.Now().UTC()
}

// ServeHTTP answers one request to the Queue service.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", serverHeader)
	if r.Method == http.MethodOptions {
		if e := s.preflight(w, r); e != nil {
			writeError(w, r, e)
		}
		return
	}
	w = cors.Wrap(w, r, s.corsRules())
	r = body.Gate(r) // opened by authorize
	if e := s.serve(w, r); e != nil {
		writeError(w, r, e)
	}
}

// writeError answers r with e. A 401 (a request without credentials)
// carries Azure's WWW-Authenticate challenge.
func writeError(w http.ResponseWriter, r *http.Request, e *answer.Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", auth.WWWAuthenticate)
	}
	answer.WriteXML(w, r, e)
}

// serve routes r by its path: the account, then a queue, then its
// messages, then one message. It returns the error to answer with, or nil
// once it has answered.
func (s *Service) serve(w http.ResponseWriter, r *http.Request) *answer.Error {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	secondary := parts[0] == s.cfg.Account+secondarySuffix
	if parts[0] != s.cfg.Account && !secondary {
		return answer.InvalidURI()
	}
	// A trailing slash addresses the same resource (".../queue/").
	if n := len(parts); n > 1 && parts[n-1] == "" {
		parts = parts[:n-1]
	}
	// A write to the secondary is refused once the request is
	// authenticated (Permission 0: any signature of the account).
	if secondary && r.Method != http.MethodGet && r.Method != http.MethodHead {
		resource, name := byte('s'), ""
		if len(parts) > 1 {
			resource, name = 'c', parts[1]
		}
		if len(parts) > 2 {
			resource = 'o'
		}
		if e := s.authorize(r, resource, 0, name); e != nil {
			return e
		}
		return answer.SecondaryWrite()
	}
	q := r.URL.Query()
	switch len(parts) {
	case 1:
		return s.serveService(w, r, q, secondary)
	case 2:
		if e := validName(parts[1]); e != nil {
			return e
		}
		return s.serveQueue(w, r, q, parts[1])
	case 3, 4:
		if e := validName(parts[1]); e != nil {
			return e
		}
		if parts[2] != "messages" {
			return answer.InvalidURI()
		}
		if len(parts) == 3 {
			return s.serveMessages(w, r, q, parts[1])
		}
		return s.serveMessage(w, r, q, parts[1], parts[3])
	}
	return answer.InvalidURI()
}

// authorize asks Config.Auth whether r may do the operation.
func (s *Service) authorize(r *http.Request, resource, perm byte, name string) *answer.Error {
	if s.cfg.Auth == nil {
		body.Open(r)
		return nil
	}
	_, e := s.cfg.Auth.Authorize(r, auth.Operation{Service: auth.Queue, ResourceType: resource, Permission: perm, Name: name})
	if e == nil {
		body.Open(r)
	}
	return e
}

// validName is Azure's answer to a queue name azrules.CheckQueueName
// refuses: a length outside 3 to 63 is out of range, anything else (the
// empty name included) an invalid resource name.
func validName(name string) *answer.Error {
	err := azrules.CheckQueueName(name)
	switch {
	case err == nil:
		return nil
	case name != "" && errors.Is(err, azrules.ErrLength):
		return answer.ResourceNameLength()
	}
	return answer.InvalidResourceName()
}

// lookup returns the queue named name, or QueueNotFound.
func (s *Service) lookup(name string) (*queue, *answer.Error) {
	s.mu.RLock()
	q := s.queues[name]
	s.mu.RUnlock()
	if q == nil {
		return nil, errQueueNotFound
	}
	return q, nil
}

// begin sets the headers of a successful answer: Azure's common ones,
// Date from the service's clock, so that it agrees with the message times
// in the answer.
func (s *Service) begin(w http.ResponseWriter, r *http.Request) http.Header {
	h := w.Header()
	answer.SetHeaders(h, r, answer.RequestID())
	h.Set("Date", s.now().Format(http.TimeFormat))
	return h
}

// noContent answers status with no body.
func (s *Service) noContent(w http.ResponseWriter, r *http.Request, status int) {
	h := s.begin(w, r)
	h.Set("Content-Length", "0")
	w.WriteHeader(status)
}

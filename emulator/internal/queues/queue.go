package queues

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/azrules"
	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/disk"
	"github.com/tablekit/tablekit/emulator/internal/headcase"
)

// serveQueue answers the operations on a queue itself: Create Queue,
// Delete Queue, Get and Set Queue Metadata, Get and Set Queue ACL. Each
// is authorized with the SAS permission it needs before it runs.
func (s *Service) serveQueue(w http.ResponseWriter, r *http.Request, q url.Values, name string) *answer.Error {
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	var perm byte
	var op func(http.ResponseWriter, *http.Request, string) *answer.Error
	switch comp := q.Get("comp"); {
	case comp == "" && r.Method == http.MethodPut:
		perm, op = 'c', s.createQueue
	case comp == "" && r.Method == http.MethodDelete:
		perm, op = 'd', s.deleteQueue
	case comp == "metadata" && read:
		perm, op = 'r', s.getMetadata
	case comp == "metadata" && r.Method == http.MethodPut:
		perm, op = 'w', s.setMetadata
	// Only the account owner (Shared Key) may read or set a queue's
	// access policies: no SAS permission grants it, so the operation
	// asks for none (permission 0).
	case comp == "acl" && read:
		op = s.getACL
	case comp == "acl" && r.Method == http.MethodPut:
		op = s.setACL
	case comp == "", comp == "metadata", comp == "acl":
		return answer.UnsupportedHTTPVerb()
	default:
		return answer.InvalidQueryParameter("comp", comp, "")
	}
	if e := s.authorize(r, 'c', perm, name); e != nil {
		return e
	}
	return op(w, r, name)
}

// readMetadata returns r's x-ms-meta-* headers, each name in the case it
// was sent in (headcase: Go's HTTP server puts header names in their
// canonical form). Azure keeps that case and compares names ignoring it
// ("metadata names preserve the case with which they were created, but
// are case-insensitive when set or read": the REST docs' "Naming Queues
// and Metadata"; Azurite 3.37 reads them from the raw headers "the same
// as Azure Storage").
func readMetadata(r *http.Request) (map[string]string, *answer.Error) {
	md := map[string]string{}
	size := 0
	for k, v := range r.Header {
		if len(k) < len("x-ms-meta-") || !strings.EqualFold(k[:len("x-ms-meta-")], "x-ms-meta-") {
			continue
		}
		n := ""
		if len(k) > len("x-ms-meta-") {
			n = headcase.Name(r.Header, k)
		}
		if n == "" {
			return nil, errEmptyMetadataKey
		}
		if azrules.CheckMetadataName(n) != nil {
			return nil, answer.InvalidMetadata()
		}
		md[n] = strings.Join(v, ",")
		size += len(n) + len(md[n])
	}
	if azrules.CheckMetadataSize(size) != nil {
		return nil, answer.MetadataTooLarge()
	}
	return md, nil
}

// sameMetadata reports whether a and b hold the same names, compared
// ignoring case as Azure compares them (and Azurite, on Create Queue), and
// the same values.
func sameMetadata(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for an, av := range a {
		found := false
		for bn, bv := range b {
			if strings.EqualFold(an, bn) {
				found = av == bv
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// createQueue answers Create Queue: 201 for a new queue, 204 when the
// queue exists with the same metadata, 409 QueueAlreadyExists when its
// metadata differ.
func (s *Service) createQueue(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	md, e := readMetadata(r)
	if e != nil {
		return e
	}
	s.mu.Lock()
	if q := s.queues[name]; q != nil {
		s.mu.Unlock()
		q.mu.Lock()
		same := sameMetadata(q.metadata, md)
		q.mu.Unlock()
		if !same {
			return errQueueExists
		}
		s.noContent(w, r, http.StatusNoContent)
		return nil
	}
	q := newQueue(name, md)
	q.durable = s.store != nil
	s.queues[name] = q
	p := s.saveQueue(q, true)
	s.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusCreated)
	return nil
}

// deleteQueue answers Delete Queue: the queue and its messages go at once.
func (s *Service) deleteQueue(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	s.mu.Lock()
	q := s.queues[name]
	delete(s.queues, name)
	var p *disk.Pending
	if q != nil {
		p = s.dropQueue(name)
	}
	s.mu.Unlock()
	if q == nil {
		return errQueueNotFound
	}
	q.mu.Lock()
	q.gone = true
	q.clear()
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusNoContent)
	return nil
}

// locked looks up the queue named name and locks it; the caller unlocks.
func (s *Service) locked(name string) (*queue, *answer.Error) {
	q, e := s.lookup(name)
	if e != nil {
		return nil, e
	}
	q.mu.Lock()
	if q.gone {
		q.mu.Unlock()
		return nil, errQueueNotFound
	}
	return q, nil
}

// getMetadata answers Get Queue Metadata: the metadata and the
// approximate number of messages (expired ones no longer count).
func (s *Service) getMetadata(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	q.purge(s.now())
	md := copyMap(q.metadata)
	n := len(q.byID)
	q.mu.Unlock()
	h := s.begin(w, r)
	for k, v := range md {
		h["x-ms-meta-"+k] = []string{v}
	}
	h.Set("x-ms-approximate-messages-count", strconv.Itoa(n))
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// setMetadata answers Set Queue Metadata: the request's metadata replace
// the queue's.
func (s *Service) setMetadata(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	md, e := readMetadata(r)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	q.metadata = md
	p := s.saveQueue(q, false)
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusNoContent)
	return nil
}

// getACL answers Get Queue ACL.
func (s *Service) getACL(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	doc := acl.Document{List: append([]acl.Identifier(nil), q.acl...)}
	q.mu.Unlock()
	s.writeXML(w, r, http.StatusOK, &doc)
	return nil
}

// setACL answers Set Queue ACL: at most 5 policies, ids of at most 64
// characters, permissions among r, a, u, p, times in ISO 8601.
func (s *Service) setACL(w http.ResponseWriter, r *http.Request, name string) *answer.Error {
	body, e := readBody(r)
	if e != nil {
		return e
	}
	list, e := acl.Parse(body, acl.QueuePermissions)
	if e != nil {
		return e
	}
	q, e := s.locked(name)
	if e != nil {
		return e
	}
	q.acl = list
	p := s.saveQueue(q, false)
	q.mu.Unlock()
	if e := wait(p); e != nil {
		return e
	}
	s.noContent(w, r, http.StatusNoContent)
	return nil
}

// Policy returns the stored access policy id of the queue named name, and
// false when there is none: the Queue service's part of an
// auth.PolicyLookup (auth.Authenticator.SetPolicies), for a SAS that names
// a policy (si).
func (s *Service) Policy(name, id string) (auth.AccessPolicy, bool) {
	q, e := s.lookup(name)
	if e != nil {
		return auth.AccessPolicy{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := acl.Find(q.acl, id)
	return p, ok && !q.gone
}

package blobs

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/acl"
	"github.com/tablekit/tablekit/emulator/internal/auth"
)

// Public access levels (x-ms-blob-public-access): "blob" lets anyone
// read the container's blobs, "container" also its properties and
// listing; "" keeps it private.
const (
	publicBlob      = "blob"
	publicContainer = "container"
)

// errResourceNotFound is Azure's answer to an anonymous request the
// container's access level does not allow, at versions before
// 2019-12-12: it tells nothing of whether the container exists (the
// maintainers' word in azure-storage-cpp issue #397, 2021: "by design, so
// that malicious users cannot detect if a container exists"). From
// 2019-12-12 on, Azure answers 401 NoAuthenticationInformation with the
// bearer challenge (auth.Authorize).
var errResourceNotFound = answer.New(http.StatusNotFound, "ResourceNotFound", "The specified resource does not exist.")

// readable runs op, a read the container's public access level may
// allow (level: publicBlob for the blob reads, publicContainer for the
// container's), for an anonymous request when the level allows it, and
// otherwise once q is authorized for it (perm). An anonymous request
// refused is ResourceNotFound before version 2019-12-12, the
// Authenticator's 401 from it. The anonymous reads are those of Azure's
// "Configure anonymous read access for containers and blobs" table
// (Get Blob, Get Blob Properties, Get Blob Metadata, Get Block List; and
// for container access Get Container Properties, Get Container Metadata,
// List Blobs); Azurite's PublicAccessAuthenticator allows the same, less
// Get Blob Metadata.
func (s *Service) readable(q *request, op func(*request) *answer.Error, resource byte, perm byte, level string) *answer.Error {
	if s.cfg.Auth == nil || !auth.Anonymous(q.r) {
		return s.authorized(q, op, resource, perm)
	}
	access := ""
	if c := s.container(q.container); c != nil {
		c.mu.RLock()
		access = c.access
		c.mu.RUnlock()
	}
	if access == publicContainer || access == publicBlob && level == publicBlob {
		return op(q)
	}
	if v := q.r.Header.Get("x-ms-version"); v != "" && v < "2019-12-12" {
		return errResourceNotFound
	}
	return s.authorized(q, op, resource, perm)
}

// parsePublicAccess reads x-ms-blob-public-access: absent (private),
// blob or container; any other value is 400 InvalidHeaderValue.
func parsePublicAccess(h http.Header) (string, *answer.Error) {
	switch v := h.Get("x-ms-blob-public-access"); v {
	case "", publicBlob, publicContainer:
		return v, nil
	default:
		return "", answer.InvalidHeader("x-ms-blob-public-access", v)
	}
}

// maxACLBody bounds a Set Container ACL body: five policies.
const maxACLBody = 64 << 10

// setContainerACL is Set Container ACL: the public access level
// (x-ms-blob-public-access, absent: private) and the stored access
// policies (at most 5, ids of at most 64 characters, permissions among
// Azure's container letters, times in ISO 8601; otherwise 400
// InvalidXmlDocument), both replaced. If-Modified-Since and
// If-Unmodified-Since apply; a lease ID given must be the container's.
// The policies are kept and read back, and Policy finds them for a SAS
// that names one (si) once the emulator passes it to the Authenticator.
func (s *Service) setContainerACL(q *request) *answer.Error {
	access, e := parsePublicAccess(q.r.Header)
	if e != nil {
		return e
	}
	cond, e := parseConditions(q.r.Header, s.cfg.Now)
	if e != nil {
		return e
	}
	cond.onContainer, cond.leaseOptional = true, true
	if cond.hasMatch || cond.hasNoneMatch {
		return errUnsupportedCondition
	}
	body, e := readBody(q, maxACLBody)
	if e != nil {
		return e
	}
	list, e := acl.Parse(body, acl.ContainerPermissions)
	if e != nil {
		return e
	}
	c, e := s.lockContainer(q.container)
	if e != nil {
		return e
	}
	if e := cond.write(true, c.etag, c.modified, c.lease); e != nil {
		c.mu.Unlock()
		return e
	}
	now, etag := s.clock.next()
	c.access, c.acl, c.etag, c.modified = access, list, etag, now
	q.pending = s.saveContainer(c, false)
	c.mu.Unlock()
	setVersion(q, etag, now)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// Policy returns the stored access policy id of the container named
// container, and false when there is none: the Blob service's part of
// an auth.PolicyLookup (auth.Authenticator.SetPolicies), for a SAS that
// names a policy (si).
func (s *Service) Policy(container, id string) (auth.AccessPolicy, bool) {
	c := s.container(container)
	if c == nil {
		return auth.AccessPolicy{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := acl.Find(c.acl, id)
	return p, ok && !c.deleted
}

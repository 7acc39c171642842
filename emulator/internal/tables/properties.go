package tables

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/internal/cors"
	"github.com/tablekit/tablekit/emulator/internal/svcprops"
)

// setProperties merges p into the stored properties (svcprops.Merge).
func (s *Service) setProperties(p *svcprops.Properties) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.props.Merge(*p)
}

// corsRules returns the service's CORS rules.
func (s *Service) corsRules() []cors.Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.props.CorsRules()
}

// preflight answers an OPTIONS request (Preflight Table Request): without
// credentials, against the service's rules whatever the path names.
func (s *Service) preflight(q *request) {
	if e := cors.Preflight(q.w.Header(), q.r, s.corsRules()); e != nil {
		s.fail(q, e)
		return
	}
	q.headers()
	q.w.WriteHeader(http.StatusOK)
}

package queues

import (
	"net/http"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/cors"
)

// corsRules returns the service's CORS rules (Set Queue Service
// Properties); package cors applies them.
func (s *Service) corsRules() []cors.Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.props.CorsRules()
}

// preflight answers an OPTIONS request.
func (s *Service) preflight(w http.ResponseWriter, r *http.Request) *answer.Error {
	if e := cors.Preflight(w.Header(), r, s.corsRules()); e != nil {
		return e
	}
	s.begin(w, r)
	w.WriteHeader(http.StatusOK)
	return nil
}

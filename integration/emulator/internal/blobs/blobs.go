// Package blobs is the emulator's Blob service, answering as Azure's
// Blob service answers.
package blobs

import (
	"net/http"

	"github.com/tablekit/tablekit/integration/emulator/internal/auth"
	"github.com/tablekit/tablekit/internal/azrules"
)

// Config is what the service serves and how.
type Config struct {
	// Account is the account name, the first segment of every path.
	Account string
	// Auth checks every request.
	Auth *auth.Authenticator
}

// Service is the Blob service of one emulator instance.
type Service struct {
	cfg Config
}

// New returns an empty Blob service.
func New(cfg Config) *Service { return &Service{cfg: cfg} }

// ServeHTTP answers one request to the Blob service.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	azrules.WriteXML(w, r, azrules.New(http.StatusNotImplemented, "NotImplemented", "contract: implemented on the blobs branch"))
}

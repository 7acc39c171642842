package tables

import (
	"encoding/xml"
	"net/http"

	"github.com/tablekit/tablekit/emulator/internal/cors"
)

// serviceProperties is the Table service's properties document. The
// analytics elements are kept as the client sent them; the CORS rules are
// parsed, for package cors to apply.
type serviceProperties struct {
	XMLName       xml.Name    `xml:"StorageServiceProperties"`
	Logging       *rawElement `xml:"Logging"`
	HourMetrics   *rawElement `xml:"HourMetrics"`
	MinuteMetrics *rawElement `xml:"MinuteMetrics"`
	Cors          *cors.Rules `xml:"Cors"`
}

// rawElement is an element's content, kept as sent.
type rawElement struct {
	Inner []byte `xml:",innerxml"`
}

// defaultProperties are a new account's: analytics off, no CORS rules.
func defaultProperties() serviceProperties {
	return serviceProperties{
		Logging:       &rawElement{[]byte(`<Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		HourMetrics:   &rawElement{[]byte(`<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		MinuteMetrics: &rawElement{[]byte(`<Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy>`)},
		Cors:          &cors.Rules{},
	}
}

// setProperties merges p into the stored properties: the elements p holds
// replace the stored ones, those it leaves out stay (as Set Queue and
// Blob Service Properties document it).
func (s *Service) setProperties(p *serviceProperties) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Logging != nil {
		s.props.Logging = p.Logging
	}
	if p.HourMetrics != nil {
		s.props.HourMetrics = p.HourMetrics
	}
	if p.MinuteMetrics != nil {
		s.props.MinuteMetrics = p.MinuteMetrics
	}
	if p.Cors != nil {
		s.props.Cors = p.Cors
	}
}

// corsRules returns the service's CORS rules.
func (s *Service) corsRules() []cors.Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.props.Cors == nil {
		return nil
	}
	return s.props.Cors.Rules
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

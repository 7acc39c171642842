package queues

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// CORS as the Queue service applies its rules (Set Queue Service
// Properties): a preflight OPTIONS request is answered by the first rule
// that allows its origin, method and headers, or refused; a request that
// names an Origin gets the Access-Control headers of the first rule that
// allows its origin and method. Preflight requests carry no credentials.

var (
	errCorsHeader    = answer.New(http.StatusBadRequest, "InvalidHeaderValue", "A required CORS header is not present.")
	errCorsPreflight = answer.New(http.StatusForbidden, "CorsPreflightFailure", "CORS not enabled or no matching rule found for this request.")
)

// corsRules returns the service's CORS rules.
func (s *Service) corsRules() []corsRule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.props.Cors == nil {
		return nil
	}
	return s.props.Cors.Rules
}

// preflight answers an OPTIONS request.
func (s *Service) preflight(w http.ResponseWriter, r *http.Request) *answer.Error {
	origin, method := r.Header.Get("Origin"), r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return errCorsHeader
	}
	headers := r.Header.Get("Access-Control-Request-Headers")
	for _, rule := range s.corsRules() {
		if !inList(rule.AllowedOrigins, origin, false) || !inList(rule.AllowedMethods, method, false) {
			continue
		}
		if headers != "" && !allHeaders(rule.AllowedHeaders, headers) {
			continue
		}
		h := s.begin(w, r)
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", method)
		if headers != "" {
			h.Set("Access-Control-Allow-Headers", headers)
		}
		h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeInSeconds))
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	return errCorsPreflight
}

// corsWriter adds a matching rule's headers to an answer to a request from
// a browser (one naming its Origin), once the answer's own headers are
// known.
type corsWriter struct {
	http.ResponseWriter
	rule   corsRule
	origin string
	done   bool
}

// withCORS wraps w when r names an Origin that a CORS rule allows, with
// r's method.
func (s *Service) withCORS(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return w
	}
	rules := s.corsRules()
	for _, rule := range rules {
		if inList(rule.AllowedOrigins, origin, false) && inList(rule.AllowedMethods, r.Method, false) {
			return &corsWriter{ResponseWriter: w, rule: rule, origin: origin}
		}
	}
	if len(rules) > 0 {
		w.Header().Set("Vary", "Origin")
	}
	return w
}

func (c *corsWriter) WriteHeader(status int) {
	if !c.done {
		c.done = true
		h := c.Header()
		if c.rule.AllowedOrigins == "*" {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", c.origin)
			h.Set("Vary", "Origin")
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		h.Set("Access-Control-Expose-Headers", exposed(c.rule.ExposedHeaders, h))
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *corsWriter) Write(b []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// exposed is the Access-Control-Expose-Headers value for a rule's exposed
// headers: names as listed, and for a name ending in "*" the answer's
// headers it is a prefix of.
func exposed(rule string, h http.Header) string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[strings.ToLower(n)] {
			seen[strings.ToLower(n)] = true
			names = append(names, n)
		}
	}
	for _, e := range strings.Split(rule, ",") {
		e = strings.TrimSpace(e)
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			var match []string
			for k := range h {
				if strings.HasPrefix(strings.ToLower(k), strings.ToLower(prefix)) && !strings.HasPrefix(strings.ToLower(k), "access-control-") {
					match = append(match, k)
				}
			}
			sort.Strings(match)
			for _, k := range match {
				add(k)
			}
		} else if e != "" {
			add(e)
		}
	}
	return strings.Join(names, ",")
}

// inList reports whether v is in the comma-separated list (or the list is
// "*"), ignoring case; prefix allows entries ending in "*" to match by
// prefix.
func inList(list, v string, prefix bool) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	v = strings.ToLower(strings.TrimSpace(v))
	for _, e := range strings.Split(list, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == v {
			return true
		}
		if p, ok := strings.CutSuffix(e, "*"); prefix && ok && strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// allHeaders reports whether every header of the comma-separated request
// list is allowed.
func allHeaders(allowed, requested string) bool {
	for _, h := range strings.Split(requested, ",") {
		if !inList(allowed, h, true) {
			return false
		}
	}
	return true
}

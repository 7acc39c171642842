// Package cors is Cross-Origin Resource Sharing as Azure's Blob, Queue
// and Table services apply it, one definition for the three: the rules a
// Set Service Properties request stores (the Cors element), the answer to
// a preflight (OPTIONS) request, and the Access-Control headers added to
// an actual request that names its Origin.
//
// Azure evaluates a preflight against the service's rules, not the
// resource it names, and without credentials: the first rule allowing the
// origin, the method and every requested header answers 200 with the
// Access-Control-Allow-* headers; no rule is 403 CorsPreflightFailure; a
// request without Origin or Access-Control-Request-Method is 400
// InvalidHeaderValue ("Cross-Origin Resource Sharing (CORS) support for
// the Azure Storage services"; the answers' codes and messages are
// Azurite's, src/*/errors/StorageErrorFactory.ts). On an actual request
// the first rule allowing the origin and the method adds
// Access-Control-Allow-Origin (the origin, or "*" for a rule allowing any),
// Access-Control-Expose-Headers, and for a named origin Vary: Origin and
// Access-Control-Allow-Credentials; when rules exist and none matches, only
// Vary: Origin (Azurite's PreflightMiddlewareFactory does the same).
package cors

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Rule is one CorsRule of a service's properties, as Set Service
// Properties sends it: comma-separated lists, "*" for any origin, and
// header names that may end in "*" to allow a prefix.
type Rule struct {
	AllowedMethods  string `xml:"AllowedMethods"`
	AllowedOrigins  string `xml:"AllowedOrigins"`
	AllowedHeaders  string `xml:"AllowedHeaders"`
	ExposedHeaders  string `xml:"ExposedHeaders"`
	MaxAgeInSeconds int    `xml:"MaxAgeInSeconds"`
}

// Rules is the Cors element of a service's properties.
type Rules struct {
	Rules []Rule `xml:"CorsRule"`
}

// MaxRules is how many rules a service may hold: "You can specify up to
// five CORS rules per storage service" (Azure's CORS documentation).
const MaxRules = 5

// The answers to a preflight request that is refused.
var (
	errHeader    = answer.New(http.StatusBadRequest, "InvalidHeaderValue", "A required CORS header is not present.")
	errPreflight = answer.New(http.StatusForbidden, "CorsPreflightFailure", "CORS not enabled or no matching rule found for this request.")
)

// Preflight evaluates the OPTIONS request r against rules. When a rule
// allows it, Preflight sets the Access-Control headers on h and returns
// nil: the caller sends 200 with its service's common headers and no
// body. Otherwise it returns the answer to send. r's credentials, if any,
// are not looked at.
func Preflight(h http.Header, r *http.Request, rules []Rule) *answer.Error {
	origin, method := r.Header.Get("Origin"), r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return errHeader
	}
	headers := r.Header.Get("Access-Control-Request-Headers")
	for _, rule := range rules {
		if !inList(rule.AllowedOrigins, origin, false) || !inList(rule.AllowedMethods, method, false) {
			continue
		}
		if headers != "" && !allHeaders(rule.AllowedHeaders, headers) {
			continue
		}
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", method)
		if headers != "" {
			h.Set("Access-Control-Allow-Headers", headers)
		}
		h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeInSeconds))
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Set("Content-Length", "0")
		return nil
	}
	return errPreflight
}

// Wrap returns w, or when r names an Origin that one of rules allows with
// r's method, a writer that adds that rule's Access-Control headers once
// the answer's own headers are known (so Expose-Headers can name them).
// Without a matching rule it sets Vary: Origin when rules exist.
func Wrap(w http.ResponseWriter, r *http.Request, rules []Rule) http.ResponseWriter {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return w
	}
	for _, rule := range rules {
		if inList(rule.AllowedOrigins, origin, false) && inList(rule.AllowedMethods, r.Method, false) {
			return &writer{ResponseWriter: w, rule: rule, origin: origin}
		}
	}
	if len(rules) > 0 {
		w.Header().Set("Vary", "Origin")
	}
	return w
}

// writer adds a rule's headers to an answer as its status is written.
type writer struct {
	http.ResponseWriter
	rule   Rule
	origin string
	done   bool
}

func (c *writer) WriteHeader(status int) {
	if !c.done {
		c.done = true
		h := c.Header()
		if strings.TrimSpace(c.rule.AllowedOrigins) == "*" {
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

func (c *writer) Write(b []byte) (int, error) {
	if !c.done {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Flush passes a flush on, for answers streamed in parts.
func (c *writer) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		if !c.done {
			c.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (c *writer) Unwrap() http.ResponseWriter { return c.ResponseWriter }

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

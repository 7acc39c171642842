// Package faults injects transient failures into azcore pipelines so tests
// can prove that tablekit's retries and the consistency worker converge.
//
// A *Policy is an azcore per-retry policy (install it in
// azcore.ClientOptions.PerRetryPolicies). For every HTTP attempt it draws
// from a seeded generator and, at the configured rates, either fails the
// attempt before it reaches the service (the service sees nothing) or after
// (the request is sent and applied, the response is discarded and the client
// sees a failure: a write can succeed while its caller believes it failed).
//
// The n-th attempt through a Policy always gets the same decision for a
// given seed and rules, so a failing run can be replayed when requests are
// issued in the same order.
package faults

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Kind is the failure a Rule injects.
type Kind int

const (
	// Status500 answers 500 Internal Server Error (error code InternalError).
	Status500 Kind = iota + 1
	// Status503 answers 503 Server Unavailable (error code ServerBusy).
	Status503
	// Status408 answers 408 Request Timeout (error code OperationTimedOut).
	Status408
	// Status429 answers 429 Too Many Requests (error code ServerBusy).
	Status429
	// Timeout returns a net.Error whose Timeout() is true, as a read
	// deadline would.
	Timeout
	// ConnReset returns a *net.OpError wrapping ECONNRESET.
	ConnReset
)

var kindNames = map[Kind]string{
	Status500: "500", Status503: "503", Status408: "408", Status429: "429",
	Timeout: "timeout", ConnReset: "reset",
}

// String names the kind as ParseKind accepts it.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return k, nil
		}
	}
	return 0, errors.New("faults: unknown kind " + strconv.Quote(s) + " (want 500, 503, 408, 429, timeout or reset)")
}

// Rule injects one kind of failure into a fraction of the attempts.
type Rule struct {
	Kind Kind
	// Rate is the probability, in [0, 1], that an attempt gets this
	// failure. The rates of a Policy's rules add up (at most 1).
	Rate float64
	// After sends the request to the service first and fails on the way
	// back; otherwise the request never leaves the client.
	After bool
	// Match, when set, limits the rule to requests it returns true for.
	// Request and Once build common ones: a rule on one kind of request
	// (a table's insert), and a rule that fires for one request only.
	Match func(*http.Request) bool
	// Hold, when set, is called before the fault is returned; the attempt
	// (and so azcore's retry of it) waits until Hold returns. On an After
	// rule it runs once the service has answered, before the answer is
	// discarded: a test lets other clients write between a write landing
	// and its retry, in a fixed order instead of a race. Otherwise it runs
	// before the request reaches the service: the write lands only with
	// the retry, as late as the test wants (a slow service).
	Hold func()
	// Code, when set, is the error code of an injected status (in
	// x-ms-error-code and the OData body) instead of the kind's own:
	// "OperationTimedOut" makes a Status500 Azure's throttling answer.
	Code string
	// Message, when set, is the OData error message instead of "injected
	// fault": "Operations per second is over the account limit." is
	// Azure's answer when the account, not a partition, is over its target.
	Message string
	// Header is added to an injected status's answer, such as
	// x-ms-retry-after-ms (Cosmos DB) or Retry-After.
	Header http.Header
}

// Request returns a Match predicate true for requests with the given
// method (any when empty) whose URL path ends with pathSuffix, such as
// Request(http.MethodPost, "/"+table) for a table's single inserts (a
// transaction is a POST to /$batch and does not match).
func Request(method, pathSuffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return (method == "" || r.Method == method) && strings.HasSuffix(r.URL.Path, pathSuffix)
	}
}

// Once returns a Match predicate true for the first request match accepts
// (any request when match is nil) and false for every request after it:
// with Rate 1, exactly one chosen request gets the fault.
func Once(match func(*http.Request) bool) func(*http.Request) bool {
	var done atomic.Bool
	return func(r *http.Request) bool {
		if match != nil && !match(r) {
			return false
		}
		return done.CompareAndSwap(false, true)
	}
}

// RetryMode names azcore retry options under which a fault suite runs.
type RetryMode struct {
	Name  string // "default-retry" or "fast-retry", the subtest's name
	Retry policy.RetryOptions
}

// Default reports whether the mode is azcore's default retry options.
func (m RetryMode) Default() bool { return m.Name == "default-retry" }

// RetryModes returns the two modes every fault suite runs under:
// azcore's default retry options (three retries, the first after about
// 0.8 s, as a user's client has them), and fast, the suite's own quick
// options (retries after a millisecond or so). Both are needed: in 0.8 s
// more writers land on a busy entity than in 1 ms, which is what exposes a
// retried write that meets its own first attempt among others' writes.
func RetryModes(fast policy.RetryOptions) []RetryMode {
	return []RetryMode{{Name: "default-retry"}, {Name: "fast-retry", Retry: fast}}
}

// Event records one injected failure.
type Event struct {
	Seq    int64 // 0-based attempt number through the policy
	Kind   Kind
	After  bool
	Method string
	Path   string
}

// Policy is the fault-injecting azcore policy. It is safe for concurrent
// use. The zero value is not usable; call New.
type Policy struct {
	rules    []Rule
	mu       sync.Mutex
	rng      *rand.Rand
	seq      int64
	events   []Event
	disabled atomic.Bool
	injected atomic.Int64
}

// New returns a Policy drawing from a generator seeded with seed. Rules
// with a rate outside [0, 1], rates adding up to more than 1, or an unknown
// kind are an error.
func New(seed uint64, rules ...Rule) (*Policy, error) {
	total := 0.0
	for i, r := range rules {
		if _, ok := kindNames[r.Kind]; !ok {
			return nil, errors.New("faults: rule " + strconv.Itoa(i) + ": unknown kind " + r.Kind.String())
		}
		if r.Rate < 0 || r.Rate > 1 || r.Rate != r.Rate {
			return nil, errors.New("faults: rule " + strconv.Itoa(i) + ": rate must be in [0, 1]")
		}
		total += r.Rate
	}
	if total > 1+1e-9 {
		return nil, errors.New("faults: the rates add up to more than 1")
	}
	return &Policy{rules: append([]Rule(nil), rules...), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Transient returns rules that spread rate evenly over every kind, half of
// each before and half after the request reaches the service.
func Transient(rate float64) []Rule {
	kinds := []Kind{Status500, Status503, Status408, Status429, Timeout, ConnReset}
	per := rate / float64(2*len(kinds))
	rules := make([]Rule, 0, 2*len(kinds))
	for _, k := range kinds {
		rules = append(rules, Rule{Kind: k, Rate: per}, Rule{Kind: k, Rate: per, After: true})
	}
	return rules
}

// SetEnabled turns injection on or off. Disabled attempts still consume a
// draw, so the sequence stays aligned with the attempt numbers.
func (p *Policy) SetEnabled(on bool) { p.disabled.Store(!on) }

// Injected is the number of failures injected so far.
func (p *Policy) Injected() int64 { return p.injected.Load() }

// Events returns a copy of the injected failures, in order (at most the
// first 10,000).
func (p *Policy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// decide draws for one attempt and returns the rule to apply, or nil.
func (p *Policy) decide(raw *http.Request) (*Rule, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.seq
	p.seq++
	x := p.rng.Float64()
	if p.disabled.Load() {
		return nil, seq
	}
	acc := 0.0
	for i := range p.rules {
		r := &p.rules[i]
		acc += r.Rate
		if x < acc {
			if r.Match != nil && !r.Match(raw) {
				return nil, seq
			}
			if len(p.events) < 10000 {
				p.events = append(p.events, Event{Seq: seq, Kind: r.Kind, After: r.After, Method: raw.Method, Path: raw.URL.Path})
			}
			p.injected.Add(1)
			return r, seq
		}
	}
	return nil, seq
}

// Do implements policy.Policy.
func (p *Policy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	r, _ := p.decide(raw)
	if r == nil {
		return req.Next()
	}
	if r.After {
		resp, err := req.Next()
		if err != nil {
			return resp, err
		}
		// Let the service finish the request, then lose the answer.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	if r.Hold != nil {
		r.Hold()
	}
	return failure(r, raw)
}

// failure builds the response or error of one injected fault.
func failure(r *Rule, raw *http.Request) (*http.Response, error) {
	k := r.Kind
	var status int
	var code string
	switch k {
	case Status500:
		status, code = http.StatusInternalServerError, "InternalError"
	case Status503:
		status, code = http.StatusServiceUnavailable, "ServerBusy"
	case Status408:
		status, code = http.StatusRequestTimeout, "OperationTimedOut"
	case Status429:
		status, code = http.StatusTooManyRequests, "ServerBusy"
	case Timeout:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}
	default:
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	if r.Code != "" {
		code = r.Code
	}
	msg := "injected fault"
	if r.Message != "" {
		msg = r.Message
	}
	b, _ := json.Marshal(map[string]any{"odata.error": map[string]any{"code": code, "message": map[string]string{"lang": "en-US", "value": msg}}})
	body := string(b)
	h := http.Header{}
	for name, v := range r.Header {
		h[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
	}
	h.Set("x-ms-error-code", code)
	h.Set("Content-Type", "application/json")
	return &http.Response{
		StatusCode:    status,
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       raw,
	}, nil
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout (injected)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

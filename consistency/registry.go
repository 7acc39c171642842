package consistency

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/tablekit/tablekit"
)

// Handler applies one step. It must be idempotent: the worker runs a step
// again when its message is redelivered (after a crash, a timeout or a
// failure of a later step), and duplicate or reordered messages must
// converge to the same state. Return Permanent(err) for a failure that
// retrying cannot fix; other errors are classified by IsPermanent.
type Handler func(ctx context.Context, c *Call) error

// Call is what a Handler gets: the account and the step.
type Call struct {
	Account *tablekit.Account
	TxID    string          // the transaction's id
	Index   int             // 0-based position of the step in the transaction
	Kind    string          // the step's kind
	Args    json.RawMessage // the step's arguments (may be empty)
	// DequeueCount is how many times the queue has delivered the message
	// (1 on the first attempt; 0 when the step is applied with Apply).
	DequeueCount int64
	// MaxDequeueCount is the worker's delivery limit: a step that returns a
	// retryable error on that delivery sends the message to the poison
	// queue (0 with Apply).
	MaxDequeueCount int64
	// Age is how long the message had been queued when this delivery was
	// received, by the queue service's clock (0 with Apply, or when the
	// service did not say).
	Age time.Duration
	// ExpectWindow is the worker's WorkerOptions.ExpectWindow (0 with
	// Apply).
	ExpectWindow time.Duration
	Logger       *slog.Logger // never nil

	tables *tableSet // the core's table handles; shared by the steps of a worker
	parsed any       // the arguments as the step's validation decoded them (built-in kinds)
}

// tableSet returns the table handles of the call, opening a set on
// c.Account when the call was built without one.
func (c *Call) tableSet() *tableSet {
	if c.tables == nil || c.tables.acct != c.Account {
		c.tables = newTableSet(c.Account)
	}
	return c.tables
}

// Decode decodes the step's arguments into v, rejecting unknown fields.
// Errors wrap ErrInvalidArgs (and so ErrPermanent).
func (c *Call) Decode(v any) error {
	args := c.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if decodeKnown(args, v) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &wrapped{msg: "consistency: " + c.Kind + ": cannot decode the arguments: " + err.Error(), err: ErrInvalidArgs, cause: err}
	}
	return nil
}

// Registry maps step kinds to handlers. It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	m        map[string]Handler
	replaced map[string]bool // built-in kinds whose handler Handle replaced
}

// NewRegistry returns a registry holding the built-in steps (see Kinds).
func NewRegistry() *Registry {
	r := &Registry{m: make(map[string]Handler, len(builtins))}
	for k, b := range builtins {
		r.m[k] = b.apply
	}
	return r
}

// Handle registers h for kind, replacing any handler (built-in ones
// included) registered before. Like net/http's Handle, it panics on an
// empty kind or a nil handler: both are programming errors.
func (r *Registry) Handle(kind string, h Handler) {
	if kind == "" || h == nil {
		panic("consistency: Handle needs a kind and a handler")
	}
	r.mu.Lock()
	r.m[kind] = h
	if _, ok := builtins[kind]; ok {
		if r.replaced == nil {
			r.replaced = map[string]bool{}
		}
		r.replaced[kind] = true
	}
	r.mu.Unlock()
}

// Lookup returns the handler of kind.
func (r *Registry) Lookup(kind string) (Handler, bool) {
	r.mu.RLock()
	h, ok := r.m[kind]
	r.mu.RUnlock()
	return h, ok
}

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ks := make([]string, 0, len(r.m))
	for k := range r.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ValidateSteps checks the arguments of every built-in step of tx (custom
// kinds are checked by their handlers when they run): names of tables,
// containers and blobs, keys, and every entity a step writes against
// Azure's limits (entity.Entity.Validate, the check of every write).
// Queue.Enqueue calls it so that a malformed step fails at the caller, not
// in the poison queue; Apply and the worker run the same checks on the
// whole transaction before its first step. Errors are *StepError wrapping
// ErrInvalidArgs (and, for an entity, tablekit.ErrInvalidEntity or
// tablekit.ErrInvalidKey; for a name, tablekit.ErrInvalidName), naming the
// step's index and the property or field.
func ValidateSteps(tx *Transaction) error { return defaultRegistry.validate(tx) }

// validate is ValidateSteps for the steps this registry runs with a
// built-in handler: a built-in kind replaced with Handle is left to its
// handler.
func (r *Registry) validate(tx *Transaction) error {
	_, err := r.parse(tx, false)
	return err
}

// parse is validate, returning the arguments of the built-in steps as
// their validation decoded them (nil for the other steps), for the apply
// that follows: runStepsOn does not decode them a second time.
//
// argsDecoded says tx was decoded from an envelope (Transaction.validate).
func (r *Registry) parse(tx *Transaction, argsDecoded bool) ([]any, error) {
	if err := tx.validate(argsDecoded); err != nil {
		return nil, err
	}
	parsed := make([]any, len(tx.Steps))
	for i, s := range tx.Steps {
		b, ok := builtins[s.Kind]
		if !ok {
			continue
		}
		r.mu.RLock()
		replaced := r.replaced[s.Kind]
		r.mu.RUnlock()
		if replaced {
			continue
		}
		a, err := b.validate(s.Args)
		if err != nil {
			return nil, &StepError{TxID: tx.ID, Index: i, Kind: s.Kind, Err: err}
		}
		parsed[i] = a
	}
	return parsed, nil
}

// Apply runs the steps of tx in order, in the caller's goroutine, with the
// handlers of reg (nil means the built-ins). Writers use it for the fast
// path ("enqueue the intent, then apply it yourself"): the queued copy
// makes the outcome certain even if this call fails half way. The steps
// are validated first, as by ValidateSteps, so a transaction with an
// invalid step applies none. The first failure is returned as a
// *StepError.
func Apply(ctx context.Context, acct *tablekit.Account, tx *Transaction, reg *Registry, opts *ApplyOptions) error {
	if reg == nil {
		reg = defaultRegistry
	}
	parsed, err := reg.parse(tx, false)
	if err != nil {
		return err
	}
	return runStepsOn(ctx, newTableSet(acct), reg, tx, parsed, delivery{}, slog.New(slog.DiscardHandler))
}

var defaultRegistry = NewRegistry()

func runSteps(ctx context.Context, acct *tablekit.Account, reg *Registry, tx *Transaction, d delivery, log *slog.Logger) error {
	return runStepsOn(ctx, newTableSet(acct), reg, tx, nil, d, log)
}

// delivery is what the steps of a message are told about its delivery:
// the queue's dequeue count, the worker's limit, how long the message had
// been queued when it was received, and the worker's ExpectWindow. The
// zero value is Apply's: no delivery.
type delivery struct {
	count, max  int64
	age, window time.Duration
}

// queuedFor is how long a message inserted at inserted had been in its
// queue when it was received, by the queue service's clock: the receive
// made it visible again at nextVisible, vis after the receive. 0 when the
// service did not say (a zero time).
func queuedFor(inserted, nextVisible time.Time, vis time.Duration) time.Duration {
	if inserted.IsZero() || nextVisible.IsZero() {
		return 0
	}
	return max(0, nextVisible.Sub(inserted)-vis.Truncate(time.Second))
}

// runStepsOn is runSteps with the table handles ts (a worker keeps one set
// for all its messages) and the steps' arguments as Registry.parse
// decoded them (nil: each handler decodes its own).
func runStepsOn(ctx context.Context, ts *tableSet, reg *Registry, tx *Transaction, parsed []any, d delivery, log *slog.Logger) error {
	acct := ts.acct
	for i, s := range tx.Steps {
		h, ok := reg.Lookup(s.Kind)
		if !ok {
			return &StepError{TxID: tx.ID, Index: i, Kind: s.Kind, Err: &wrapped{msg: "consistency: no handler for step kind " + s.Kind, err: ErrUnknownStep}}
		}
		c := &Call{Account: acct, TxID: tx.ID, Index: i, Kind: s.Kind, Args: s.Args, DequeueCount: d.count, MaxDequeueCount: d.max,
			Age: d.age, ExpectWindow: d.window, Logger: log, tables: ts}
		if i < len(parsed) {
			c.parsed = parsed[i]
		}
		if err := h(ctx, c); err != nil {
			return &StepError{TxID: tx.ID, Index: i, Kind: s.Kind, Err: err}
		}
		if log.Enabled(ctx, slog.LevelDebug) {
			log.Debug("step applied", "tx", tx.ID, "step", i, "kind", s.Kind)
		}
	}
	return nil
}

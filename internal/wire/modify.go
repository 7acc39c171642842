package wire

// The one read-modify-write loop. Every read-modify-write of the project
// (Table.Update, index maintenance, data series, wide and large entities,
// index lists, the worker's steps) goes through Modify, so each applies its
// change exactly once or says that it cannot tell.
//
// The write-id log. Each write Modify sends records a random id in the
// entity's UpdateLogProperty, after the ids of the writes before it. When a
// write's outcome is open (a lost response), the entity is read back: if
// its log holds the id, the write landed. If it does not, the log tells
// whether the write could still have landed: the write was conditional on
// the state Modify read, whose last log entry (the anchor) it followed; if
// the stored log still holds the anchor, the write that followed the
// anchor is the one that consumed that state, and if it is not ours, ours
// never landed, so the change is safely applied again. An entity read with
// no log gets an anchor derived from its ETag. An entity still at the
// version the write was conditional on shows that it never landed, log or
// none (a write that lands changes the ETag); should the write reach the
// service after that read-back, the next attempt's read finds its id and
// stops there. When the anchor has been pushed out of the log by later
// writers (UpdateLogLen of them), or a write that keeps no log replaced
// the entity since, nothing can tell, and Modify returns
// tablekit.ErrOutcomeUnknown rather than risk applying the change twice.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// UpdateLogProperty is the property in which Modify records the ids of the
// last writes of an entity (space-separated), so that a write whose
// response was lost can tell whether it landed. It is one of the entity's
// 252 properties.
const UpdateLogProperty = "TkUpdates"

// UpdateLogLen is how many ids the log keeps.
const UpdateLogLen = 16

// DefaultMaxAttempts bounds a Modify loop when its options do not.
const DefaultMaxAttempts = 16

// ErrNoChange, returned by a ModifyFunc, ends Modify without a write.
var ErrNoChange = errors.New("tablekit: no change")

// ModifyFunc decides the write of one attempt from the stored entity: its
// JSON, nil when it does not exist. It returns OpInsert (only when stored is
// nil), OpReplace, OpMerge or OpDelete on the same keys; Modify makes the
// write conditional on what was read. It may be called once per attempt.
type ModifyFunc func(stored []byte) (Op, error)

// ModifyOptions configures Modify and ModifyBatch. A nil *ModifyOptions
// means the defaults.
type ModifyOptions struct {
	// MaxAttempts bounds the attempts on conflicts. Default 16.
	MaxAttempts int
	// Verb names the operation in errors. Default "update".
	Verb string
	// MustExist makes a missing entity an error wrapping
	// tablekit.ErrNotFound instead of a nil stored to fn.
	MustExist bool
	// Typed reads the entity with full metadata (see GetTyped).
	Typed bool
	// IfMatch, when set, is the version the caller's change is based on:
	// a stored entity at another version fails the modify with an error
	// wrapping tablekit.ErrPreconditionFailed, at once or after a lost
	// race, without calling fn again.
	IfMatch string
	// Race reports whether a failed write lost a race and the loop should
	// read again; nil means a conflict on any operation (412, or 409 on an
	// insert, or 404). Errors it refuses are returned as they are.
	Race func(err error) bool
}

// Modified is the outcome of a Modify that wrote.
type Modified struct {
	// Op is the entity's write that landed, with the log property.
	Op Op
	// Ops are all the operations that landed (ModifyBatch), Ops[0] == Op.
	Ops []Op
	// Results are the operations' results; with a lost response, the
	// stored ETag of the entity (or nothing when others wrote since).
	Results []Result
	// ETag is the entity's new ETag; empty when the write's response was
	// lost and later writers have changed the entity since.
	ETag string
	// Written is false when fn returned ErrNoChange.
	Written bool
}

// Modify reads (pk, rk), calls fn, and writes what fn returns conditionally
// on the state read; on a conflict (another writer first) it pauses a
// random, growing moment and starts again, up to MaxAttempts times. Two
// requests per attempt. It applies fn's write exactly once, or returns an
// error wrapping tablekit.ErrOutcomeUnknown when a lost response leaves
// that open and the log cannot settle it. An error from fn is returned as
// is.
func (t *Table) Modify(ctx context.Context, pk, rk string, fn ModifyFunc, opts *ModifyOptions) (Modified, error) {
	return t.ModifyBatch(ctx, pk, rk, func(stored []byte, _ string) ([]Op, error) {
		op, err := fn(stored)
		if err != nil {
			return nil, err
		}
		return []Op{op}, nil
	}, opts)
}

// ModifyBatch is Modify for a change that spans several entities of the
// entity's partition (an entity and its index entities): fn returns the
// operations, the first on (pk, rk) itself, and they are sent as one entity
// group transaction (one operation: a single write). The first operation
// is made conditional on the state read and carries the write-id log; fn
// sets the conditions of the others (from its own reads). etag is the
// entity's ETag as read. Requests per attempt: the read, fn's own, and the
// write.
func (t *Table) ModifyBatch(ctx context.Context, pk, rk string, fn func(stored []byte, etag string) ([]Op, error), opts *ModifyOptions) (Modified, error) {
	o := ModifyOptions{}
	if opts != nil {
		o = *opts
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Verb == "" {
		o.Verb = "update"
	}
	if err := t.prof.ValidateKeys(pk, rk); err != nil {
		return Modified{}, err
	}
	label := t.Label(pk, rk)
	id := RandomID()[:16]
	// The conditional write is sent once, without azcore's retries: a
	// retry after azcore's delay (0.8 s by default) can only be refused
	// once the first attempt landed or another writer moved on, and by
	// then later writers may have pushed the write's anchor out of the
	// log. So a failure is settled at once by reading back, and a write
	// that did not land goes round the loop again after a pause of its
	// own, for as many transient failures as azcore would retry.
	once := t.retry
	once.MaxRetries = -1
	transient := 0
	var lastErr error
	// unlanded holds the writes of the attempts whose open outcome a
	// read-back settled as not landed: should one reach the service after
	// that read-back, the next read shows id in the log, and the loop
	// stops there instead of applying the change a second time.
	var unlanded [][]Op
	for attempt := 0; attempt < o.MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return Modified{}, err
		}
		var stored []byte
		var etag string
		var err error
		if o.MustExist {
			stored, etag, err = t.get(ctx, pk, rk, o.Typed)
		} else {
			stored, etag, err = t.stored(ctx, pk, rk, o.Typed)
		}
		if err != nil {
			return Modified{}, err
		}
		if len(unlanded) > 0 && slices.Contains(ReadLog(stored), id) {
			return lateLanding(unlanded, id, stored, etag), nil
		}
		if o.IfMatch != "" && o.IfMatch != "*" && stored != nil && etag != o.IfMatch {
			return Modified{}, tkerr.Errorf("tablekit: %s %s: %w: the entity changed since the caller read it (stored ETag %s, expected %s)", o.Verb, label, errs.ErrPreconditionFailed, etag, o.IfMatch)
		}
		ops, err := fn(stored, etag)
		if errors.Is(err, ErrNoChange) {
			return Modified{}, nil
		}
		if err != nil {
			return Modified{}, err
		}
		if len(ops) == 0 {
			return Modified{}, nil
		}
		op := ops[0]
		if op.PartitionKey != pk || op.RowKey != rk {
			return Modified{}, fmt.Errorf("tablekit: %s %s: the change moves the entity to (%q, %q); keys are immutable, insert a new entity instead", o.Verb, label, op.PartitionKey, op.RowKey)
		}
		switch {
		case stored == nil && op.Type != OpInsert:
			return Modified{}, tkerr.Errorf("tablekit: %s %s: %w: the entity does not exist, so only an insert can follow", o.Verb, label, errs.ErrNotFound)
		case stored != nil && op.Type != OpReplace && op.Type != OpMerge && op.Type != OpDelete:
			return Modified{}, fmt.Errorf("tablekit: %s %s: a change of an existing entity is a replace, merge or delete, not %v", o.Verb, label, op.Type)
		}
		prior := ReadLog(stored)
		anchor := anchorOf(prior, etag)
		if op.Type != OpDelete && !t.noLog {
			log := prior
			if len(log) == 0 {
				log = []string{anchor}
			}
			log = append(slices.Clip(log), id)
			if len(log) > UpdateLogLen {
				log = log[len(log)-UpdateLogLen:]
			}
			if op.Entity, err = WithProp(op.Entity, UpdateLogProperty, strings.Join(log, " ")); err != nil {
				return Modified{}, tkerr.Errorf("tablekit: %s %s: %w", o.Verb, label, err)
			}
			// The log is one more property: the entity's limits hold with it.
			var e entity.Entity
			if err := e.UnmarshalJSON(op.Entity); err != nil {
				return Modified{}, tkerr.Errorf("tablekit: %s %s: %w", o.Verb, label, err)
			}
			if err := e.Validate(); err != nil {
				return Modified{}, tkerr.Errorf("tablekit: %s %s: with the write-id log property %s: %w", o.Verb, label, UpdateLogProperty, err)
			}
		}
		if op.Type != OpInsert {
			op.ETag = etag
		}
		ops = append([]Op{op}, ops[1:]...)
		wctx, tries := attempts.With(policy.WithRetryOptions(ctx, once))
		var results []Result
		var werr error
		if len(ops) == 1 {
			if werr = t.prof.ValidateOp(op); werr != nil {
				return Modified{}, werr
			}
			sctx, end := t.span(wctx, writeSpans[op.Type])
			var newETag string
			newETag, werr = t.tr.write(sctx, op, o.Verb, label)
			end(werr)
			results = []Result{{ETag: newETag}}
		} else {
			if werr = t.prof.ValidateTransaction(ops); werr != nil {
				return Modified{}, tkerr.Errorf("tablekit: %s %s: %w", o.Verb, label, werr)
			}
			sctx, end := t.span(wctx, "Client.SubmitTransaction")
			results, werr = t.tr.batch(sctx, ops, label)
			end(werr)
		}
		if werr == nil {
			if tries.Load() == 1 {
				t.clock.observeBatch(tries.First(), time.Now(), results)
			}
			return Modified{Op: op, Ops: ops, Results: results, ETag: results[0].ETag, Written: true}, nil
		}
		n := tries.Load()
		race := o.Race
		if race == nil {
			race = func(err error) bool { return isConflict(failedType(ops, err), err) }
		}
		switch {
		case n <= 1 && !IsTransientOrLost(werr):
			if !race(werr) {
				return Modified{}, werr
			}
		case openOutcome(failedType(ops, werr), werr, n):
			if ctx.Err() != nil {
				return Modified{}, outcomeUnknown(o.Verb, label, werr)
			}
			now, nowETag, rerr := t.readBackNow(ctx, pk, rk, o.Typed, once)
			if rerr != nil {
				return Modified{}, outcomeUnknown(o.Verb, label, werr)
			}
			v := landed(op, id, anchor, anchorOf(nil, etag), now)
			if t.noLog {
				v = landedWithoutLog(op, now)
			}
			if v != yes && t.refuted(op, now, nowETag, tries.First()) {
				// The state the write was conditional on, still there
				// (or one older than the write): it never landed, however
				// the log reads (none: an entity no Modify wrote yet).
				v = no
			}
			switch v {
			case yes:
				if log := ReadLog(now); len(log) == 0 || log[len(log)-1] != id {
					nowETag = "" // later writers followed ours
				}
				results = make([]Result, len(ops))
				results[0].ETag = nowETag
				return Modified{Op: op, Ops: ops, Results: results, ETag: nowETag, Written: true}, nil
			case unknown:
				return Modified{}, outcomeUnknown(o.Verb, label, werr)
			}
			unlanded = append(unlanded, ops)
		default:
			if !race(werr) {
				return Modified{}, werr
			}
		}
		lastErr = werr
		if IsTransientOrLost(werr) {
			// Not landed (the read-back said so): the service's answer
			// was a transient failure, retried here as azcore would.
			if transient++; transient > maxRetries(t.retry) {
				return Modified{}, werr
			}
			if err := retryPause(ctx, t.retry, transient); err != nil {
				return Modified{}, err
			}
			continue
		}
		if err := ConflictPause(ctx, attempt); err != nil {
			return Modified{}, err
		}
	}
	return Modified{}, tkerr.Errorf("tablekit: %s %s: gave up after %d attempts, the entity kept changing: %w", o.Verb, label, o.MaxAttempts, lastErr)
}

// lateLanding is the outcome of a Modify one of whose attempts, settled as
// not landed (unlanded, oldest first), reached the service after all: the
// entity read, stored with etag, holds its id.
// An attempt can land only while the state it was conditional on is still
// there, so the one that did is among the latest, all conditional on one
// state: the latest whose effect shows is taken, else the latest.
func lateLanding(unlanded [][]Op, id string, stored []byte, etag string) Modified {
	ops := unlanded[len(unlanded)-1]
	for _, u := range slices.Backward(unlanded) {
		if showsEffect(u[0], stored) {
			ops = u
			break
		}
	}
	if log := ReadLog(stored); log[len(log)-1] != id {
		etag = "" // later writers followed it
	}
	results := make([]Result, len(ops))
	results[0].ETag = etag
	return Modified{Op: ops[0], Ops: ops, Results: results, ETag: etag, Written: true}
}

// failedType is the type of the operation err names (a transaction's
// failing operation), else of the first.
func failedType(ops []Op, err error) OpType {
	var te *errs.TransactionError
	if errors.As(err, &te) && te.Index >= 0 && te.Index < len(ops) {
		return ops[te.Index].Type
	}
	return ops[0].Type
}

// isConflict reports whether err is another writer's win over a
// conditional write.
func isConflict(typ OpType, err error) bool {
	switch typ {
	case OpInsert:
		return errors.Is(err, errs.ErrAlreadyExists)
	default:
		return errors.Is(err, errs.ErrPreconditionFailed) || errors.Is(err, errs.ErrNotFound)
	}
}

type verdict int

const (
	no verdict = iota
	yes
	unknown
)

// landed tells from the entity read back (nil when absent) whether op, the
// write with id that followed anchor, landed. etagAnchor is the anchor
// derived from the ETag of the state op was conditional on, which Modify
// records as the first entry of the log of an entity it finds without one.
func landed(op Op, id, anchor, etagAnchor string, now []byte) verdict {
	if op.Type == OpDelete || now == nil {
		if now == nil && op.Type == OpDelete {
			return yes
		}
		return no
	}
	log := ReadLog(now)
	if slices.Contains(log, id) {
		return yes
	}
	if slices.Contains(log, anchor) || slices.Contains(log, etagAnchor) {
		// The state we read was consumed by another write.
		return no
	}
	return unknown
}

// landedWithoutLog tells from the entity read back (nil when absent)
// whether op landed, on a table that keeps no write-id log: only a
// delete's absence proves that it did, and an insert's that it did not
// (Table.refuted settles the rest that can be). Equal content proves
// nothing: another writer that read the same version may have written the
// same bytes.
func landedWithoutLog(op Op, now []byte) verdict {
	switch {
	case op.Type == OpDelete && now == nil:
		return yes
	case op.Type == OpInsert && now == nil:
		return no
	}
	return unknown
}

// anchorOf is the log entry a write that follows the state read must come
// after: the state's last entry, or one derived from its ETag when the
// state has no log (the same for every writer that read it).
func anchorOf(prior []string, etag string) string {
	if len(prior) > 0 {
		return prior[len(prior)-1]
	}
	sum := sha256.Sum256([]byte(etag))
	return "^" + hex.EncodeToString(sum[:6])
}

// ReadLog returns the write ids recorded in an entity's JSON, oldest first.
func ReadLog(raw []byte) []string {
	if raw == nil || !bytes.Contains(raw, []byte(UpdateLogProperty)) {
		return nil
	}
	var e entity.Entity
	if e.UnmarshalJSON(raw) != nil {
		return nil
	}
	v, ok := e.Properties[UpdateLogProperty]
	if !ok {
		return nil
	}
	s, _ := v.V.(string)
	return strings.Fields(s)
}

// WithProp sets a String property in an entity's JSON object: appended to
// the codec's output, which has no such property, or replaced through the
// entity layer when body already holds it.
func WithProp(body []byte, name, value string) ([]byte, error) {
	if !bytes.Contains(body, []byte(`"`+name+`"`)) {
		out := make([]byte, 0, len(body)+len(name)+len(value)+8)
		i := bytes.LastIndexByte(body, '}')
		if i < 0 {
			return nil, fmt.Errorf("%w: the entity is not a JSON object", errs.ErrInvalidEntity)
		}
		out = append(out, bytes.TrimRight(body[:i], " \t\r\n")...)
		if len(bytes.TrimSpace(out)) > 1 {
			out = append(out, ',')
		}
		out = AppendJSONString(out, name)
		out = append(out, ':')
		out = AppendJSONString(out, value)
		return append(out, '}'), nil
	}
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		return nil, err
	}
	if e.Properties == nil {
		e.Properties = map[string]entity.Value{}
	}
	e.Properties[name] = entity.Value{Type: entity.EdmString, V: value}
	e.ETag, e.Timestamp = "", time.Time{}
	return e.MarshalJSON()
}

// AppendJSONString appends s as a JSON string (strconv.Quote's escapes,
// such as \x1f, are not all JSON).
func AppendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// readBackNow reads the entity to settle a write's lost answer, retrying
// a transient failure within milliseconds rather than after azcore's
// delay: while it waits, other writers push entries out of the log that
// settles the write.
func (t *Table) readBackNow(ctx context.Context, pk, rk string, typed bool, once policy.RetryOptions) ([]byte, string, error) {
	rctx := policy.WithRetryOptions(ctx, once)
	var err error
	for try := range max(maxRetries(t.retry), 3) + 1 {
		var body []byte
		var etag string
		if body, etag, err = t.stored(rctx, pk, rk, typed); err == nil || !IsTransientOrLost(err) || ctx.Err() != nil {
			return body, etag, err
		}
		if err := ConflictPause(ctx, try+3); err != nil {
			return nil, "", err
		}
	}
	return nil, "", err
}

// maxRetries is how many retries o allows (azcore's default: 3).
func maxRetries(o policy.RetryOptions) int {
	switch {
	case o.MaxRetries == 0:
		return 3
	case o.MaxRetries < 0:
		return 0
	}
	return int(o.MaxRetries)
}

// retryPause waits before the n-th retry (from 1) of a transient failure
// as azcore's retry policy would: exponential from o.RetryDelay (default
// 0.8 s) up to o.MaxRetryDelay (default 60 s), with ±20% jitter.
func retryPause(ctx context.Context, o policy.RetryOptions, n int) error {
	base, top := o.RetryDelay, o.MaxRetryDelay
	if base == 0 {
		base = 800 * time.Millisecond
	}
	if top == 0 {
		top = 60 * time.Second
	}
	d := base << min(n-1, 16)
	if d <= 0 || d > top {
		d = top
	}
	return sleep(ctx, time.Duration(float64(d)*(0.8+0.4*rand.Float64())))
}

// ConflictPause waits a random time, growing with the attempt and capped
// at 50 ms, after a lost optimistic-concurrency race, so that writers
// contending for one entity spread out instead of colliding again.
func ConflictPause(ctx context.Context, attempt int) error {
	limit := time.Millisecond << min(attempt, 6)
	if limit > 50*time.Millisecond {
		limit = 50 * time.Millisecond
	}
	return sleep(ctx, time.Duration(rand.Int64N(int64(limit))))
}

// sleep waits d, or returns ctx's error when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

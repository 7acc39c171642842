package wire

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/internal/attempts"
	"github.com/tablekit/tablekit/internal/errs"
	"github.com/tablekit/tablekit/internal/tablehttp"
	"github.com/tablekit/tablekit/internal/tkerr"
)

// transport is one way of sending table operations: REST or the SDK. Both
// return errors already mapped by tablekit.MapError.
type transport interface {
	get(ctx context.Context, pk, rk string, typed bool) ([]byte, string, error)
	write(ctx context.Context, op Op, verb, label string) (string, error)
	page(ctx context.Context, q Query, pos *Continuation) ([][]byte, *Continuation, error)
	batch(ctx context.Context, ops []Op, label string) ([]Result, error)
}

// Table is one table of an account, reached through the transport chosen
// when it was opened. It is safe for concurrent use.
type Table struct {
	name   string
	client *aztables.Client
	tr     transport
	tracer tracing.Tracer
	rest   bool
	prof   *Profile
	noLog  bool
	clock  *serviceClock
	retry  policy.RetryOptions // the account's, for Modify's own retries
	bulk   policy.RetryOptions // the account's, throttling answers not retried (BatchLimited)
}

// Options chooses how a Table reaches the service.
type Options struct {
	// SDKPath sends every request through the aztables client instead of
	// tablekit's own REST calls. Cosmos DB Table endpoints always use it.
	SDKPath bool
	// Profile is the service's rules every write is checked against; nil
	// means the endpoint's (ProfileFor).
	Profile *Profile
	// NoUpdateLog makes Modify write no write-id log (UpdateLogProperty):
	// the table's entities hold only what their writers put there. A lost
	// answer is then settled only when the entity still has the version
	// Modify read (the write did not land, and Modify tries again);
	// otherwise Modify returns an error wrapping tablekit.ErrOutcomeUnknown.
	NoUpdateLog bool
}

// Account is what a Table uses of its *tablekit.Account. The core does not
// import the root package (the root package imports the core's raw
// transport to build it for each account), so it takes the account
// through these methods, and reaches the account's raw transport through
// tablehttp.Of, which the root package sets.
type Account interface {
	Table(name string) (*aztables.Client, error)
	TableEndpoint() string
	ClientOptions() azcore.ClientOptions
}

// Open returns the table name of acct (a *tablekit.Account). It makes no
// request.
func Open(acct Account, name string, opts *Options) (*Table, error) {
	if acct == nil || isNilPointer(acct) {
		return nil, errors.New("tablekit: account is nil")
	}
	client, err := acct.Table(name)
	if err != nil {
		return nil, err
	}
	t := &Table{name: name, client: client, noLog: opts != nil && opts.NoUpdateLog, clock: clockFor(acct.TableEndpoint())}
	co := acct.ClientOptions()
	t.retry = co.Retry
	t.bulk = withoutThrottleRetries(co.Retry)
	t.tracer = co.TracingProvider.NewTracer("github.com/tablekit/tablekit", "v0")
	if t.tracer.Enabled() {
		t.tracer.SetAttributes(tracing.Attribute{Key: "az.namespace", Value: "Microsoft.Tables"})
	}
	h := tablehttp.Of(acct)
	t.prof = ProfileFor(h != nil && h.IsCosmos())
	if opts != nil && opts.Profile != nil {
		t.prof = opts.Profile
	}
	if err := t.prof.ValidateTableName(name); err != nil {
		return nil, tkerr.Errorf("tablekit: table %q on %s: %w", name, t.prof, err)
	}
	if (opts == nil || !opts.SDKPath) && h != nil && !h.IsCosmos() {
		t.tr = &restPath{h: h, table: name}
		t.rest = true
	} else {
		t.tr = &sdkPath{client: client, table: name}
	}
	return t, nil
}

// isNilPointer reports whether acct holds a nil pointer (a nil
// *tablekit.Account): its methods would dereference it.
func isNilPointer(acct Account) bool {
	v := reflect.ValueOf(acct)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Name is the table's name.
func (t *Table) Name() string { return t.name }

// Profile is the rules of the service the table lives on.
func (t *Table) Profile() *Profile { return t.prof }

// Client is the table's SDK client, for what tablekit does not wrap.
func (t *Table) Client() *aztables.Client { return t.client }

// REST reports whether the table uses tablekit's REST transport (false:
// the SDK).
func (t *Table) REST() bool { return t.rest }

// Label names an entity of the table in errors.
func (t *Table) Label(pk, rk string) string { return entityLabel(t.name, pk, rk) }

// entityLabel names the entity (pk, rk) of table in errors. A read
// builds it only when it fails.
func entityLabel(table, pk, rk string) string {
	return table + " (PartitionKey " + strconv.Quote(pk) + ", RowKey " + strconv.Quote(rk) + ")"
}

// span starts a span named as aztables names its own; the REST transport
// needs it, the SDK starts its own (and nested ones are suppressed).
func (t *Table) span(ctx context.Context, name string) (context.Context, func(error)) {
	if !t.rest {
		return ctx, func(error) {}
	}
	return runtime.StartSpan(ctx, name, t.tracer, nil)
}

// Create creates the table; an existing table is not an error.
func (t *Table) Create(ctx context.Context) error {
	_, err := t.client.CreateTable(ctx, nil)
	err = errs.MapError(err, "create table", t.name)
	if errors.Is(err, errs.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Drop deletes the table; a missing table is not an error.
func (t *Table) Drop(ctx context.Context) error {
	_, err := t.client.Delete(ctx, nil)
	err = errs.MapError(err, "delete table", t.name)
	if errors.Is(err, errs.ErrNotFound) {
		return nil
	}
	return err
}

// Get reads one entity's JSON and ETag. A missing entity is an error
// wrapping tablekit.ErrNotFound. One request.
func (t *Table) Get(ctx context.Context, pk, rk string) (body []byte, etag string, err error) {
	return t.get(ctx, pk, rk, false)
}

// GetTyped is Get with full metadata: every property of the JSON carries
// its EDM type annotation, for readers that have no Go type to decode by.
func (t *Table) GetTyped(ctx context.Context, pk, rk string) (body []byte, etag string, err error) {
	return t.get(ctx, pk, rk, true)
}

func (t *Table) get(ctx context.Context, pk, rk string, typed bool) (body []byte, etag string, err error) {
	if err := t.prof.ValidateKeys(pk, rk); err != nil {
		return nil, "", err
	}
	ctx, end := t.span(ctx, "Client.GetEntity")
	body, etag, err = t.tr.get(ctx, pk, rk, typed)
	end(err)
	return body, etag, err
}

// Stored reads one entity's JSON and ETag, nil when it does not exist.
func (t *Table) Stored(ctx context.Context, pk, rk string) ([]byte, string, error) {
	return t.stored(ctx, pk, rk, false)
}

func (t *Table) stored(ctx context.Context, pk, rk string, typed bool) ([]byte, string, error) {
	body, etag, err := t.get(ctx, pk, rk, typed)
	if errors.Is(err, errs.ErrNotFound) {
		return nil, "", nil
	}
	return body, etag, err
}

var writeSpans = [...]string{"Client.AddEntity", "Client.UpdateEntity", "Client.UpdateEntity", "Client.UpsertEntity", "Client.UpsertEntity", "Client.DeleteEntity"}

// Write sends one entity write and returns the entity's new ETag (empty
// for a delete); verb names the operation in errors ("insert", "update").
// It sends the caller's entity as it is: no property is added. One
// request, more only when it fails.
//
// A write whose outcome the answer leaves open (azcore retried it and the
// retry met what may be the write's own first attempt, or the response
// never came) is resolved by reading the entity back:
//   - the stored state predates the write's first attempt (the service's
//     timestamps), or still has the version the write was conditional on,
//     or an insert finds nothing: the write never landed, and the original
//     error stands;
//   - the stored state is what the write leaves behind, and the write is
//     unconditional (an upsert, or an update or delete with If-Match *), a
//     delete, or its content unique (Op.Unique): Write reports success;
//   - otherwise the error wraps tablekit.ErrOutcomeUnknown (see
//     tablekit.OutcomeUnknownError). In particular an insert, or a replace
//     or merge conditional on an ETag, whose content another writer may
//     have stored as well (two writers creating or incrementing the same
//     counter from the same value) is never reported as applied on the
//     strength of equal content: that is what Modify's write-id log is for.
func (t *Table) Write(ctx context.Context, verb string, op Op) (string, error) {
	if err := t.prof.ValidateOp(op); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	label := t.Label(op.PartitionKey, op.RowKey)
	op, id := mark(op)
	wctx, tries := attempts.With(ctx)
	sctx, end := t.span(wctx, writeSpans[op.Type])
	start := time.Now()
	etag, err := t.tr.write(sctx, op, verb, label)
	end(err)
	if err == nil && tries.Load() == 1 {
		t.clock.observe(tries.First(), time.Now(), etag)
	}
	if err == nil || !openOutcome(op.Type, err, tries.Load()) {
		return etag, err
	}
	elapsed := time.Since(start)
	stored, storedETag, rerr := t.readBack(ctx, op.PartitionKey, op.RowKey)
	if rerr != nil {
		return "", outcomeUnknown(verb, label, err)
	}
	if t.refuted(op, stored, storedETag, tries.First()) || stored != nil && unchangedSince(storedETag, err, elapsed) {
		// Nothing there for an insert, the version the write was
		// conditional on, or a state older than the write's first
		// attempt: no attempt landed, and the failure is the service's
		// true answer.
		return "", err
	}
	if id != "" {
		switch markVerdict(op, id, stored) {
		case yes:
			return etagIfLast(id, stored, storedETag), nil
		case no:
			return "", err
		}
	}
	if op.provenBy(stored) {
		return storedETag, nil
	}
	return "", outcomeUnknown(verb, label, err)
}

// refuted reports whether the entity read back (nil when absent, with
// storedETag) proves that op, whose first attempt was sent at first, never
// landed: op.refutedBy (an insert finds nothing, a conditional write's
// entity still has the version it was conditional on: a write that lands
// always changes the ETag), or the service stamped the stored state before
// that first attempt left. Write, Batch and Modify settle by it alike.
func (t *Table) refuted(op Op, stored []byte, storedETag string, first time.Time) bool {
	return op.refutedBy(stored, storedETag) || stored != nil && t.clock.writtenBefore(storedETag, first)
}

// unchangedSince reports whether the entity whose ETag is etag was last
// written before the first attempt of a write that failed with err after
// elapsed: the service's Date on the final answer, less the time the
// attempts took, bounds that first attempt from below in the service's
// own clock. When the state is older, the write cannot have landed.
func unchangedSince(etag string, err error, elapsed time.Duration) bool {
	stored := TimestampFromETag(etag)
	var re *azcore.ResponseError
	if stored.IsZero() || !errors.As(err, &re) || re.RawResponse == nil {
		return false
	}
	date, perr := http.ParseTime(re.RawResponse.Header.Get("Date"))
	if perr != nil {
		return false
	}
	return stored.Before(date.Add(-elapsed))
}

// TimestampFromETag extracts the service timestamp an entity ETag carries
// (W/"datetime'2026-01-02T03%3A04%3A05.1234567Z'"), or the zero time when
// the ETag has another form.
func TimestampFromETag(etag string) time.Time {
	i := strings.Index(etag, "datetime'")
	if i < 0 {
		return time.Time{}
	}
	rest := etag[i+len("datetime'"):]
	j := strings.IndexByte(rest, '\'')
	if j < 0 {
		return time.Time{}
	}
	s, err := url.QueryUnescape(rest[:j])
	if err != nil {
		return time.Time{}
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return ts.UTC()
}

// readBack reads an entity to resolve an open outcome, even when the
// caller's context has just been cancelled (the write may have landed).
func (t *Table) readBack(ctx context.Context, pk, rk string) ([]byte, string, error) {
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	return t.Stored(ctx, pk, rk)
}

// Query is a prepared query: its filter and projection as sent.
type Query struct {
	Filter string // OData $filter; empty: every entity
	Select string // $select; empty: every property
	Top    int32  // page size, 1..1000
	Limit  int    // Rows stops after this many rows; 0: no limit
}

func (q Query) label(table string) string {
	return table + " filter " + strconv.Quote(q.Filter)
}

// Continuation is the service's position after a page.
type Continuation struct {
	PK string
	RK string
}

// Page fetches one query page: the rows' JSON and the continuation, nil
// after the last page. One request.
func (t *Table) Page(ctx context.Context, q Query, pos *Continuation) ([][]byte, *Continuation, error) {
	if q.Top <= 0 || q.Top > 1000 {
		q.Top = 1000
	}
	ctx, end := t.span(ctx, "Pager[ListEntitiesResponse].NextPage")
	rows, next, err := t.tr.page(ctx, q, pos)
	end(err)
	return rows, next, err
}

// Rows runs a query, yielding each row's JSON; it stops after q.Limit
// rows, at the first error, or when ctx is cancelled. One request per page.
func (t *Table) Rows(ctx context.Context, q Query) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var pos *Continuation
		n := 0
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			rows, next, err := t.Page(ctx, q, pos)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, raw := range rows {
				if !yield(raw, nil) {
					return
				}
				n++
				if q.Limit > 0 && n >= q.Limit {
					return
				}
			}
			if next == nil {
				return
			}
			pos = next
		}
	}
}

// Batch validates ops and sends them as one entity group transaction: all
// are applied or none. Update and delete operations without an ETag send
// If-Match: * so they never insert. On failure the error is a
// *tablekit.TransactionError naming the failing operation. An open outcome
// is resolved as Write resolves it, with one range query over the
// operations' RowKeys. One request, more only when it fails.
func (t *Table) Batch(ctx context.Context, ops []Op) ([]Result, error) {
	if err := t.prof.ValidateTransaction(ops); err != nil {
		return nil, tkerr.Errorf("tablekit: transaction on %s: %w", t.name, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	label := t.name + " (PartitionKey " + strconv.Quote(ops[0].PartitionKey) + ")"
	ops, marked, id := markBatch(ops)
	wctx, tries := attempts.With(ctx)
	sctx, end := t.span(wctx, "Client.SubmitTransaction")
	results, err := t.tr.batch(sctx, ops, label)
	end(err)
	if err == nil {
		if tries.Load() == 1 {
			t.clock.observeBatch(tries.First(), time.Now(), results)
		}
		return results, nil
	}
	return t.settleBatch(ctx, ops, marked, id, tries, label, err)
}

// settleBatch resolves the failure err of a transaction (ops, marked with
// id at marked, sent with the attempts tries counted): the service's
// answer when it is one, else by reading back (see batchApplied).
func (t *Table) settleBatch(ctx context.Context, ops []Op, marked int, id string, tries *attempts.Counter, label string, err error) ([]Result, error) {
	open := IsTransientOrLost(err)
	var te *errs.TransactionError
	if errors.As(err, &te) && te.Index < 0 && len(ops) == 1 {
		// Azure names no index when the change set holds one operation.
		te.Index = 0
	}
	if !open && tries.Load() > 1 && errors.As(err, &te) && te.Index >= 0 && te.Index < len(ops) {
		open = openOutcome(ops[te.Index].Type, err, tries.Load())
	}
	if !open {
		return nil, err
	}
	if ctx.Err() == nil {
		switch res, v := t.batchApplied(ctx, ops, marked, id, tries.First()); v {
		case yes:
			return res, nil
		case no:
			return nil, err
		}
	}
	return nil, outcomeUnknown("transaction on", label, err)
}

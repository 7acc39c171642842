package consistency

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
)

// DefaultBlobContainer is the container that holds transaction envelopes
// over MaxMessageBytes (and poison records too large for a message).
const DefaultBlobContainer = "tablekit-transactions"

// PoisonSuffix is appended to a queue's name to name its poison queue.
const PoisonSuffix = "-poison"

// PoisonQueueName returns the poison queue of queue.
func PoisonQueueName(queue string) string { return queue + PoisonSuffix }

// QueueOptions configures a Queue. Nil means defaults.
type QueueOptions struct {
	// BlobContainer holds oversize envelopes; DefaultBlobContainer when
	// empty. Workers reading the queue must be able to read it.
	BlobContainer string
	// Base64 writes every message base64-encoded, as an Azure Functions
	// queue trigger expects by default (host.json "messageEncoding":
	// "base64"). Workers read both forms. Base64 makes a message a third
	// larger, so the limit of MaxMessageBytes applies to the encoded text
	// and a transaction over about 48 KiB of JSON travels through a blob.
	Base64 bool
	// Propagator writes the W3C trace context of the enqueueing span into
	// each envelope, so that the worker continues that trace. Nil writes
	// none. Workers older than this field reject envelopes that carry it:
	// upgrade the workers first.
	Propagator TracePropagator
	// ExpectWindow is the WorkerOptions.ExpectWindow of the workers that
	// read this queue (default DefaultExpectWindow): how long their steps
	// wait for a write announced with Announce. A write that returns after
	// half of it makes Announcement.Landed enqueue its transaction again,
	// without expectations. Set it to the workers' value, or lower.
	ExpectWindow time.Duration
}

// Queue is a transaction queue and its poison queue: writers Enqueue
// transactions, operators inspect and requeue poisoned ones. It is safe
// for concurrent use.
type Queue struct {
	acct       *tablekit.Account
	name       string
	container  string
	base64     bool
	propagator TracePropagator
	window     time.Duration // the workers' ExpectWindow, for Announcement.Landed
	tracer     tracing.Tracer
	qc         *azqueue.QueueClient
	pc         *azqueue.QueueClient
}

// NewQueue returns the transaction queue name of acct. It validates the
// names (the queue's, its poison queue's and the container's) and makes no
// request.
func NewQueue(acct *tablekit.Account, name string, opts *QueueOptions) (*Queue, error) {
	if acct == nil || acct.Queues() == nil {
		return nil, tablekit.ErrNoEndpoint
	}
	if err := keys.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := keys.ValidateQueueName(PoisonQueueName(name)); err != nil {
		return nil, err
	}
	var o QueueOptions
	if opts != nil {
		o = *opts
	}
	if o.BlobContainer == "" {
		o.BlobContainer = DefaultBlobContainer
	}
	if err := keys.ValidateContainerName(o.BlobContainer); err != nil {
		return nil, err
	}
	if o.ExpectWindow <= 0 {
		o.ExpectWindow = DefaultExpectWindow
	}
	return &Queue{
		acct: acct, name: name, container: o.BlobContainer, base64: o.Base64, propagator: o.Propagator, window: o.ExpectWindow,
		tracer: newTracer(acct),
		qc:     acct.Queues().NewQueueClient(name),
		pc:     acct.Queues().NewQueueClient(PoisonQueueName(name)),
	}, nil
}

// QueueDepth is the approximate number of messages in a transaction queue
// and in its poison queue, as the service reports them
// (ApproximateMessagesCount): visible messages and invisible ones alike,
// that is messages a worker holds, messages waiting for their retry
// backoff and messages enqueued with a Delay. Azure documents the count as
// never lower than the real number, and possibly higher.
type QueueDepth struct {
	Queue    string // the transaction queue's name
	Messages int64  // messages in the queue
	Poison   int64  // messages in its poison queue
}

// Depth returns the approximate message counts of the queue and its poison
// queue (2 requests). A poison queue that does not exist counts 0; a
// missing transaction queue is an error wrapping tablekit.ErrNotFound.
func (q *Queue) Depth(ctx context.Context, opts *DepthOptions) (QueueDepth, error) {
	d := QueueDepth{Queue: q.name}
	n, err := approxCount(ctx, q.qc)
	if err != nil {
		return d, err
	}
	d.Messages = n
	if d.Poison, err = approxCount(ctx, q.pc); tablekit.IsNotFound(err) {
		err = nil
	}
	return d, err
}

// approxCount is one queue's approximate message count.
func approxCount(ctx context.Context, c *azqueue.QueueClient) (int64, error) {
	resp, err := c.GetProperties(ctx, nil)
	if err = tablekit.MapError(err, "get queue properties", queueLabel(c)); err != nil {
		return 0, err
	}
	return int64(deref(resp.ApproximateMessagesCount)), nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Create creates the queue, its poison queue and the blob container when
// they do not exist (3 requests; existing resources are not an error).
func (q *Queue) Create(ctx context.Context, opts *CreateOptions) error {
	for _, c := range []*azqueue.QueueClient{q.qc, q.pc} {
		if err := createQueue(ctx, c); err != nil {
			return err
		}
	}
	return createContainer(ctx, q.acct, q.container)
}

// Delete deletes the queue and its poison queue, with every message in
// them; queues that do not exist are not an error. The blob container is
// left alone: other queues may share it. Two requests.
func (q *Queue) Delete(ctx context.Context, opts *DeleteOptions) error {
	for _, c := range []*azqueue.QueueClient{q.qc, q.pc} {
		_, err := c.Delete(ctx, nil)
		if err = tablekit.MapError(err, "delete queue", queueLabel(c)); err != nil && !tablekit.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func createQueue(ctx context.Context, c *azqueue.QueueClient) error {
	_, err := c.Create(ctx, nil)
	err = tablekit.MapError(err, "create queue", queueLabel(c))
	if err != nil && !tablekit.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// queueLabel labels c's errors with the queue's name: its URL may carry a
// SAS (MapError would redact the signature, but the name is what a
// reader needs).
func queueLabel(c *azqueue.QueueClient) string {
	u, err := url.Parse(c.URL())
	if err != nil {
		return "queue"
	}
	return path.Base(u.Path)
}

func createContainer(ctx context.Context, acct *tablekit.Account, name string) error {
	if acct.Blobs() == nil {
		return nil
	}
	_, err := acct.Blobs().CreateContainer(ctx, name, nil)
	err = tablekit.MapError(err, "create container", name)
	if err != nil && !tablekit.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// EnqueueOptions configures Enqueue. Nil means defaults.
type EnqueueOptions struct {
	// Delay keeps the message invisible for this long (rounded up to
	// seconds, at most 7 days). A writer that enqueues its intent and then
	// writes the source itself sets a Delay longer than that write, so
	// the worker's read-repair sees the written source.
	Delay time.Duration
	// TimeToLive is how long the message may wait; zero means it never
	// expires (the queue's own default of 7 days would silently drop
	// transactions a stopped worker has not applied).
	TimeToLive time.Duration
}

// Enqueue validates tx (ValidateSteps), sets a random ID when it has none,
// and sends it as one message (base64-encoded with QueueOptions.Base64).
// An envelope over MaxMessageBytes is first uploaded to the blob container
// as "tx/<id>.json" and the message carries its reference; the worker
// deletes the blob after the transaction succeeds. With a tracing provider
// on the account, Enqueue runs in a "Queue.Enqueue" span; with a
// QueueOptions.Propagator, the envelope carries that span's trace context.
// Requests: 1, or 2 for an oversize transaction.
func (q *Queue) Enqueue(ctx context.Context, tx *Transaction, opts *EnqueueOptions) (err error) {
	if tx.ID == "" {
		tx.ID = NewID()
	}
	if err := ValidateSteps(tx); err != nil {
		return err
	}
	ctx, end := startSpan(ctx, q.tracer, "Queue.Enqueue", tracing.SpanKindProducer,
		tracing.Attribute{Key: "messaging.destination.name", Value: q.name}, tracing.Attribute{Key: "tablekit.tx", Value: tx.ID})
	defer func() { end(err) }()
	env := envelope{V: Version, ID: tx.ID, Steps: tx.Steps}
	if q.propagator != nil {
		env.TraceParent, env.TraceState = q.propagator.Inject(ctx)
		if env.TraceParent == "" {
			env.TraceState = ""
		} else if !validTraceParent(env.TraceParent) || len(env.TraceState) > maxTraceState {
			return &wrapped{msg: "consistency: transaction " + strconv.Quote(tx.ID) + ": the TracePropagator returned a traceparent or tracestate that is not W3C Trace Context: " + strconv.Quote(env.TraceParent), err: ErrMalformed}
		}
	}
	body, err := json.Marshal(env)
	if err != nil {
		return err
	}
	var o EnqueueOptions
	if opts != nil {
		o = *opts
	}
	eo := &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))}
	if o.TimeToLive > 0 {
		eo.TimeToLive = to.Ptr(seconds(o.TimeToLive))
	}
	if o.Delay > 0 {
		eo.VisibilityTimeout = to.Ptr(seconds(o.Delay))
	}
	var ref *BlobRef
	if q.encodedLen(len(body)) > MaxMessageBytes {
		if q.acct.Blobs() == nil {
			return &wrapped{msg: "consistency: transaction " + strconv.Quote(tx.ID) + " is " + strconv.Itoa(len(body)) + " bytes, over the queue's limit, and the account has no blob endpoint", err: tablekit.ErrNoEndpoint}
		}
		ref = &BlobRef{Container: q.container, Name: "tx/" + tx.ID + ".json"}
		if err := q.upload(ctx, *ref, body); err != nil {
			return err
		}
		env.Steps, env.Blob = nil, ref
		body, _ = json.Marshal(env)
	}
	_, err = q.qc.EnqueueMessage(ctx, q.encode(body), eo)
	if err = tablekit.MapError(err, "enqueue message", q.name); err != nil {
		if ref != nil {
			_ = deleteBlobIfExists(context.WithoutCancel(ctx), q.acct, *ref)
		}
		return err
	}
	return nil
}

// encodedLen is the length of a message of n bytes once encoded.
func (q *Queue) encodedLen(n int) int {
	if q.base64 {
		return base64.StdEncoding.EncodedLen(n)
	}
	return n
}

// encode returns the message text of body.
func (q *Queue) encode(body []byte) string {
	if q.base64 {
		return base64.StdEncoding.EncodeToString(body)
	}
	return string(body)
}

// upload writes a blob, creating the container on first use.
func (q *Queue) upload(ctx context.Context, ref BlobRef, body []byte) error {
	_, err := q.acct.Blobs().UploadBuffer(ctx, ref.Container, ref.Name, body, nil)
	err = tablekit.MapError(err, "upload transaction", ref.Container+"/"+ref.Name)
	if tablekit.IsNotFound(err) {
		if cerr := createContainer(ctx, q.acct, ref.Container); cerr != nil {
			return cerr
		}
		_, err = q.acct.Blobs().UploadBuffer(ctx, ref.Container, ref.Name, body, nil)
		err = tablekit.MapError(err, "upload transaction", ref.Container+"/"+ref.Name)
	}
	return err
}

// seconds rounds d up to whole seconds.
func seconds(d time.Duration) int32 {
	s := (d + time.Second - 1) / time.Second
	if s > 7*24*3600 {
		s = 7 * 24 * 3600
	}
	return int32(s)
}

// PoisonRecord is a message of a poison queue: the original message and
// why the worker gave up on it.
type PoisonRecord struct {
	V            int       `json:"v"`
	Queue        string    `json:"queue"`     // the queue the message came from
	MessageID    string    `json:"messageId"` // its id there
	TxID         string    `json:"txId,omitempty"`
	DequeueCount int64     `json:"dequeueCount"`
	Step         int       `json:"step"` // failing step, -1 when no step ran
	Kind         string    `json:"kind,omitempty"`
	Error        string    `json:"error"`
	Permanent    bool      `json:"permanent"` // true: not retried; false: the dequeue limit was reached
	At           time.Time `json:"at"`
	// Message is the original message text (an envelope, or a reference
	// to the blob holding it). When the record would not fit in a queue
	// message, the text is in the blob MessageBlob instead.
	Message     string   `json:"message,omitempty"`
	MessageBlob *BlobRef `json:"messageBlob,omitempty"`

	// PoisonMessageID is the record's own id in the poison queue (set by
	// Queue.Poisoned, not stored).
	PoisonMessageID string `json:"-"`
}

const maxErrorText = 8 << 10

// poison stores rec in the poison queue.
func poisonMessage(ctx context.Context, acct *tablekit.Account, pc *azqueue.QueueClient, container string, rec *PoisonRecord) error {
	if len(rec.Error) > maxErrorText {
		rec.Error = rec.Error[:maxErrorText] + " [truncated]"
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(body) > MaxMessageBytes {
		if acct.Blobs() == nil {
			return tablekit.ErrNoEndpoint
		}
		ref := &BlobRef{Container: container, Name: "poison/" + rec.Queue + "/" + rec.MessageID + ".txt"}
		q := &Queue{acct: acct, container: container}
		if err := q.upload(ctx, *ref, []byte(rec.Message)); err != nil {
			return err
		}
		r := *rec
		r.Message, r.MessageBlob = "", ref
		if body, err = json.Marshal(&r); err != nil {
			return err
		}
	}
	eo := &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))}
	_, err = pc.EnqueueMessage(ctx, string(body), eo)
	err = tablekit.MapError(err, "enqueue poison message", rec.Queue+PoisonSuffix)
	if tablekit.IsNotFound(err) {
		if err := createQueue(ctx, pc); err != nil {
			return err
		}
		_, err = pc.EnqueueMessage(ctx, string(body), eo)
		err = tablekit.MapError(err, "enqueue poison message", rec.Queue+PoisonSuffix)
	}
	return err
}

// Poisoned returns up to max (at most 32, the service's peek limit)
// records of the poison queue, oldest first, without hiding or removing
// them. A missing poison queue has no records.
func (q *Queue) Poisoned(ctx context.Context, max int, opts *PoisonedOptions) ([]PoisonRecord, error) {
	if max <= 0 || max > 32 {
		max = 32
	}
	resp, err := q.pc.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(max))})
	if err = tablekit.MapError(err, "peek poison messages", PoisonQueueName(q.name)); err != nil {
		if tablekit.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]PoisonRecord, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		rec, err := decodePoison(deref(m.MessageText))
		if err != nil {
			return nil, err
		}
		rec.PoisonMessageID = deref(m.MessageID)
		out = append(out, *rec)
	}
	return out, nil
}

func decodePoison(text string) (*PoisonRecord, error) {
	var rec PoisonRecord
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	if err := dec.Decode(&rec); err != nil {
		return nil, malformed("poison record", err)
	}
	if rec.V != Version {
		return nil, malformed("poison record version "+strconv.Itoa(rec.V), nil)
	}
	return &rec, nil
}

// RequeueOptions selects what Requeue moves back. Nil means everything.
type RequeueOptions struct {
	// MessageIDs limits requeueing to these poison message ids (as
	// PoisonRecord.PoisonMessageID) or original message ids (MessageID)
	// or transaction ids (TxID). Empty means all.
	MessageIDs []string
	// Max stops after this many messages; 0 means no limit.
	Max int
}

// Requeue moves poison records back to the queue as fresh messages (their
// dequeue count starts again at zero) and deletes them from the poison
// queue. A message is enqueued before its record is deleted, so a failure
// half way may leave a duplicate, never a loss; transactions are
// idempotent. It returns how many it requeued.
func (q *Queue) Requeue(ctx context.Context, opts *RequeueOptions) (int, error) {
	var o RequeueOptions
	if opts != nil {
		o = *opts
	}
	want := map[string]bool{}
	for _, id := range o.MessageIDs {
		want[id] = true
	}
	seen := map[string]bool{}
	n := 0
	for o.Max == 0 || n < o.Max {
		resp, err := q.pc.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(60))})
		if err = tablekit.MapError(err, "receive poison messages", PoisonQueueName(q.name)); err != nil {
			if tablekit.IsNotFound(err) {
				return n, nil
			}
			return n, err
		}
		fresh := 0
		for _, m := range resp.Messages {
			id, pop := deref(m.MessageID), deref(m.PopReceipt)
			if !seen[id] {
				fresh++
			}
			seen[id] = true
			rec, derr := decodePoison(deref(m.MessageText))
			selected := derr == nil && (len(want) == 0 || want[id] || want[rec.MessageID] || (rec.TxID != "" && want[rec.TxID]))
			if !selected || (o.Max > 0 && n >= o.Max) {
				_, _ = q.pc.UpdateMessage(ctx, id, pop, deref(m.MessageText), &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
				continue
			}
			text := rec.Message
			if rec.MessageBlob != nil {
				b, err := downloadBlob(ctx, q.acct, *rec.MessageBlob)
				if err != nil {
					return n, err
				}
				text = string(b)
			}
			if _, err := q.qc.EnqueueMessage(ctx, text, &azqueue.EnqueueMessageOptions{TimeToLive: to.Ptr(int32(-1))}); err != nil {
				return n, tablekit.MapError(err, "requeue message", q.name)
			}
			if _, err := q.pc.DeleteMessage(ctx, id, pop, nil); err != nil {
				return n, tablekit.MapError(err, "delete poison message", PoisonQueueName(q.name))
			}
			if rec.MessageBlob != nil {
				_ = deleteBlobIfExists(ctx, q.acct, *rec.MessageBlob)
			}
			n++
		}
		if len(resp.Messages) == 0 || fresh == 0 {
			return n, nil
		}
	}
	return n, nil
}

func downloadBlob(ctx context.Context, acct *tablekit.Account, ref BlobRef) ([]byte, error) {
	if acct.Blobs() == nil {
		return nil, tablekit.ErrNoEndpoint
	}
	resp, err := acct.Blobs().DownloadStream(ctx, ref.Container, ref.Name, nil)
	if err != nil {
		return nil, tablekit.MapError(err, "download blob", ref.Container+"/"+ref.Name)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// Package consistency carries out the Azure Table design guide's
// "Eventually consistent transactions pattern": work that spans partitions,
// tables or storage services, and so cannot be one entity group
// transaction, is written as a queue message that a worker applies until
// it has succeeded.
//
// # The model
//
// A Transaction is an ordered list of idempotent Steps. A writer enqueues
// the transaction first (Queue.Enqueue: one message, "the intent"), then may
// apply the fast part itself (Apply). A Worker receives the message, applies
// every step in order, and deletes the message only when every step has
// succeeded. If the worker dies, the message reappears after its
// visibility timeout and is applied again, so every step must be
// idempotent. Steps that keep a target in line with a source re-read the
// source when they run ("read-repair") and make the target match it, so
// duplicated, late and reordered messages converge to the same state.
//
// The guide's example, archiving employee 456:
//
//	q, _ := consistency.NewQueue(acct, "archive", nil)
//	tx := consistency.NewTransaction(consistency.MoveEntity(
//		consistency.EntityRef{Table: "Current", PartitionKey: "Sales", RowKey: "000456"},
//		consistency.EntityRef{Table: "Archive"}))
//	err := q.Enqueue(ctx, tx, nil)
//
// and, in the worker process (or the tablekit-worker binary):
//
//	w, _ := consistency.NewWorker(acct, &consistency.WorkerOptions{Queues: []string{"archive"}})
//	err := w.Run(ctx, nil) // until ctx is cancelled; then drains
//
// # The wire format
//
// One queue message holds one transaction as versioned JSON:
//
//	{"v":1,"id":"4f0c...","steps":[{"kind":"move-entity","args":{"from":{...},"to":{...}}}]}
//
// An envelope over MaxMessageBytes (64 KiB, the queue's limit) is stored in
// a blob (DefaultBlobContainer, "tx/<id>.json") and the message carries
// {"v":1,"id":"...","blob":{"container":"...","name":"..."}}; the blob is
// deleted after the transaction succeeds. Entities travel as the Table
// service's JSON with "@odata.type" annotations, so Int64, Double, DateTime,
// Guid and Binary properties keep their types; steps that copy an entity
// read it with full metadata from the raw response and write it back
// unchanged, never through a lossy map.
//
// # Built-in steps
//
// Each is idempotent; its constant's documentation says why.
//
//   - KindUpsertEntity (UpsertEntity): insert-or-replace or insert-or-merge.
//   - KindDeleteEntity (DeleteEntity): delete if exists.
//   - KindMoveEntity (MoveEntity): copy, then delete the source (the
//     guide's archive); done when the source is gone and the destination
//     exists.
//   - KindPutBlob (PutBlob) and KindDeleteBlob (DeleteBlob).
//   - KindSyncCopies (SyncCopies): the copies of a source entity in other
//     partitions or tables (inter-partition secondary index, denormalized
//     data) made to match the source, or deleted with it.
//   - KindIndexList (IndexList): a member key kept in, or out of, the list
//     of an index entity according to the source entity's current state
//     (the guide's index-entities option 3), with ETag-conditioned merges.
//   - KindBlobCleanup (BlobCleanup): a blob of the large-entities pattern
//     deleted once its entity no longer references it.
//   - KindCopyProps (CopyProps): denormalized properties of a target
//     entity (the department's manager name) kept equal to a source
//     entity's in another partition or table.
//   - KindCopyPropsWhere (CopyPropsWhere): the same for every target a
//     query finds when the step runs (every employee of the department)
//     whose link property still names the source.
//
// Custom steps: register a Handler for a kind with Worker.Handle (or
// Registry.Handle) in your own worker binary, and enqueue NewStep(kind,
// args). Queue.Enqueue validates the arguments of built-in steps before
// sending, so a malformed step fails at the writer, not in the poison
// queue.
//
// # Failures
//
// IsPermanent classifies a step's error. Transient ones (5xx, 408, 429,
// connection failures, timeouts, and anything unclassified) release the
// message with an exponential backoff (Backoff; the checklist's 2 s, 4 s,
// 10 s, 30 s by default, with jitter). Permanent ones (other 4xx, a
// malformed message, an unknown kind, invalid arguments, or a handler's
// Permanent(err)) are not retried. A permanent failure, a retryable one on
// the MaxDequeueCount-th delivery, or a message delivered more often than
// that (a worker crashed while holding it) moves to the poison queue
// "<queue>-poison" as a PoisonRecord holding the original message and the
// last error. Nothing is dropped: when the poison queue cannot be written
// the message is released instead. Queue.Poisoned lists poison records and
// Queue.Requeue sends them back.
//
// # Operating the worker
//
// Worker.Run receives up to 32 messages per call from each queue, bounded by
// WorkerOptions.Concurrency over all queues, and extends a message's
// visibility while its steps run, so a slow step is not handed to another
// worker. When Run's context is cancelled (SIGTERM in tablekit-worker) it
// stops receiving, lets in-flight transactions finish for up to
// DrainTimeout, and releases the rest; with UntilEmpty it also returns
// once its queues are empty. Logs go to log/slog; Worker.Handler serves
// counters (processed, retried, poisoned, released, in flight, waiting),
// each queue's and poison queue's approximate depth, and latency
// histograms in the Prometheus text format on /metrics, liveness on
// /livez (the process serves), readiness on /readyz (storage answers;
// /healthz is the same), so that a storage outage takes workers out of
// rotation without restarting them. Queue.Depth reads the same counts. A
// TracePropagator (QueueOptions and WorkerOptions) carries the enqueuing
// span's W3C trace context in the envelope, and QueueOptions.Base64
// writes envelopes as Azure Functions queue triggers read them; the worker
// reads both forms.
//
// In a test, Worker.Drain applies what is visible in the queues and
// returns, without the backoffs and polls Run waits for: after writes to
// an EventualIndexedTable, advance the emulator's clock by the intents'
// Delay (emulator.Instance.Advance), call Drain, then read the views.
//
// The guide's caveats hold: there is no isolation (a reader may see a
// moved employee in both tables, never in neither), and consistency is
// eventual. A writer that enqueues its intent before writing the source
// itself should set EnqueueOptions.Delay longer than that write, so the
// worker's read-repair sees it.
//
// # Announced writes
//
// Such a writer announces its write: Queue.Announce enqueues the intent,
// whose steps carry an Expectation (the intent id the write stores, or
// the source's absence), then the writer writes, then it calls
// Announcement.Landed. The worker waits for the expected state for
// ExpectDeliveries deliveries and while the message is younger than its
// WorkerOptions.ExpectWindow, then applies the steps to the source as it
// is. A write that comes back later than half the window
// (QueueOptions.ExpectWindow, the writer's view of the workers' window)
// may have landed after that, so Landed enqueues the transaction again
// without expectations, and the worker syncs the views from the source
// with the write in it. Every eventual repository in patterns does this.
package consistency

package consistency

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// Announcement is a transaction a writer enqueued before its own write
// (Queue.Announce), whose steps wait for that write (an Expectation). The
// writer settles it with Landed once the write has succeeded.
type Announcement struct {
	q     *Queue
	tx    *Transaction
	start time.Time
}

// Announce enqueues tx as Enqueue does, as the intent of a write the
// caller is about to make, and starts the clock of that write. After the
// write succeeds, the caller calls Landed on the announcement; after a
// write that failed for sure, it drops it. Requests: as Enqueue.
func (q *Queue) Announce(ctx context.Context, tx *Transaction, opts *EnqueueOptions) (*Announcement, error) {
	start := time.Now()
	if err := q.Enqueue(ctx, tx, opts); err != nil {
		return nil, err
	}
	return &Announcement{q: q, tx: tx, start: start}, nil
}

// Landed settles the announcement of a write that has succeeded. A step
// with an Expectation waits for the announced write only while its
// message is younger than the worker's ExpectWindow (and at least
// ExpectDeliveries deliveries); a write that lands later finds the step
// applied already, to the source as it was. So when at least half of
// QueueOptions.ExpectWindow has passed since Announce was called, Landed
// enqueues the transaction again (its ID suffixed ".landed", without a Delay) with
// every step's Expectation cleared: a plain sync that the worker applies
// to the source as it is now, with the write in it. The margin of half
// the window is there because the worker measures a message's age on the
// queue service's clock from its insertion time, the writer on its own
// monotonic clock from before the enqueue. A write that returns sooner,
// the usual case, costs nothing more. Requests: none, or as Enqueue.
//
// A follow-up that cannot be enqueued (it is tried for up to the
// ExpectWindow, even after ctx is done: the write it settles has landed)
// returns an error wrapping ErrLandedUnsettled and the enqueue's error.
// A nil Announcement (nothing was announced) is settled already.
func (a *Announcement) Landed(ctx context.Context) error {
	if a == nil {
		return nil
	}
	late := time.Since(a.start)
	if late < a.q.window/2 {
		return nil
	}
	tx, ok := withoutExpectations(a.tx)
	if !ok {
		return nil // no step waits for the write: none applied before it
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.q.window)
	defer cancel()
	if err := a.q.Enqueue(ctx, tx, nil); err != nil {
		return &wrapped{msg: "consistency: transaction " + strconv.Quote(a.tx.ID) + ": its write landed " + late.Round(time.Millisecond).String() +
			" after the announcement, when the worker may have applied it already, and its follow-up was not enqueued (the views may miss the write until Verify and Repair): " + err.Error(),
			err: ErrLandedUnsettled, cause: err}
	}
	return nil
}

// expectKinds are the built-in step kinds whose arguments carry an
// Expectation in their "expect" field.
var expectKinds = map[string]bool{KindSyncCopies: true, KindIndexList: true, KindCopyProps: true, KindCopyPropsWhere: true}

// withoutExpectations returns a copy of tx whose steps carry no
// Expectation, and whether tx had any. Its ID is tx's with ".landed"
// appended (a new random one when that would be too long), so that logs
// tie the two together.
func withoutExpectations(tx *Transaction) (*Transaction, bool) {
	id := tx.ID + ".landed"
	if validateID(id) != nil {
		id = NewID()
	}
	out := &Transaction{ID: id, Steps: make([]Step, len(tx.Steps))}
	had := false
	for i, s := range tx.Steps {
		out.Steps[i] = s
		if !expectKinds[s.Kind] {
			continue
		}
		var args map[string]json.RawMessage
		if err := json.Unmarshal(s.Args, &args); err != nil {
			continue // Enqueue validated it: unreachable
		}
		if _, ok := args["expect"]; !ok {
			continue
		}
		delete(args, "expect")
		b, err := json.Marshal(args)
		if err != nil {
			continue
		}
		out.Steps[i] = Step{Kind: s.Kind, Args: b}
		had = true
	}
	return out, had
}

package disk

import (
	"errors"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// maxGroup is the most writes one transaction of a Group commits.
const maxGroup = 512

// ErrClosed is returned by Pending.Wait for a write submitted after the
// Group was closed.
var ErrClosed = errors.New("emulator: location closed")

// Group commits writes to a database in the order they are submitted,
// several to a transaction: a write submitted while a commit is under way
// goes into the next one, so that concurrent writers share an fsync
// instead of queueing for one each (group commit). There is no committing
// goroutine: the first writer to wait while no commit is under way commits
// every write queued so far, its own and others', so a lone writer waits
// for one commit, as with bolt.DB.Update (bolt.DB.Batch, by contrast,
// waits up to its MaxBatchDelay for company).
//
// The Queue and Blob services, which keep their state in memory too,
// submit under the lock that orders a change in memory and wait after
// releasing it: the database sees the changes in the order memory saw
// them, and a write is answered only once it is on disk. The Table
// service, whose entities live in the database alone, checks and applies
// a write inside its function and waits at once. Each service has a
// Group of its own, on its own database.
type Group struct {
	db *bolt.DB

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a commit ends
	queue   []*Pending // submitted, not yet taken by a commit
	running bool       // a commit is under way
	closed  bool
}

// Pending is a write submitted to a Group.
type Pending struct {
	g    *Group
	fn   func(*bolt.Tx) error
	err  error
	done bool // guarded by g.mu
}

// NewGroup returns a Group committing to db. Close stops it.
func NewGroup(db *bolt.DB) *Group {
	g := &Group{db: db}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Submit queues fn to run in a write transaction after every write
// submitted before it. fn must change the transaction only through the
// transaction's own buckets and must not keep anything it reads. Submit
// does not wait; Wait does.
func (g *Group) Submit(fn func(*bolt.Tx) error) *Pending {
	p := &Pending{g: g, fn: fn}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		p.err, p.done = ErrClosed, true
		return p
	}
	g.queue = append(g.queue, p)
	return p
}

// Wait returns once p's write is committed (fsync'd), with the error that
// kept it from being committed, if any.
func (p *Pending) Wait() error {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for !p.done {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.commitQueued()
	}
	return p.err
}

// Close commits the writes already submitted; a later Submit's Wait
// returns ErrClosed. It does not close the database.
func (g *Group) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.running || len(g.queue) > 0 {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.commitQueued()
	}
}

// commitQueued commits what is queued, up to maxGroup writes, in one
// transaction, with g.mu released meanwhile. When a write fails, the
// transaction is rolled back and each write of the group is committed on
// its own, so that one failure costs no other write. g.mu is held and no
// commit is running.
func (g *Group) commitQueued() {
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.running = true
	g.mu.Unlock()
	err := g.db.Update(func(tx *bolt.Tx) error {
		for _, p := range batch {
			if err := p.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	errs := make([]error, len(batch))
	for i, p := range batch {
		if err != nil && len(batch) > 1 {
			errs[i] = g.db.Update(p.fn)
		} else {
			errs[i] = err
		}
	}
	g.mu.Lock()
	for i, p := range batch {
		p.err, p.done = errs[i], true
	}
	g.running = false
	g.cond.Broadcast()
}

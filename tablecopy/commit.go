package tablecopy

import (
	"context"
	"sync"
)

// committer persists a job's checkpoint in the background: whoever changes
// the state (under mu) calls changed, and may wait until a checkpoint
// holding that change is durable. Writes coalesce: one persist covers
// every change made before its snapshot, so a slow store costs latency,
// not a request per change.
type committer struct {
	mu        sync.Mutex // guards the job's state and the fields below
	cond      *sync.Cond
	version   uint64 // changes so far
	persisted uint64 // changes covered by the last durable checkpoint
	err       error  // the persist that failed; the job stops
	closed    bool
	done      chan struct{}

	snapshot func() any                             // called under mu
	persist  func(ctx context.Context, s any) error // called without mu, one at a time
}

func newCommitter(ctx context.Context, snapshot func() any, persist func(context.Context, any) error) *committer {
	c := &committer{snapshot: snapshot, persist: persist, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.loop(context.WithoutCancel(ctx))
	return c
}

// changed records a change of the state; call it with mu held. It
// returns the change's version, for wait.
func (c *committer) changed() uint64 {
	c.version++
	c.cond.Broadcast()
	return c.version
}

// wait blocks until the change of version v is durable, or persisting
// failed; call it without mu.
func (c *committer) wait(ctx context.Context, v uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.persisted < v && c.err == nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.cond.Wait()
	}
	return c.err
}

func (c *committer) loop(ctx context.Context) {
	defer close(c.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for c.persisted == c.version && !c.closed {
			c.cond.Wait()
		}
		if c.persisted == c.version {
			return
		}
		v, s := c.version, c.snapshot()
		c.mu.Unlock()
		err := c.persist(ctx, s)
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.cond.Broadcast()
			return
		}
		c.persisted = v
		c.cond.Broadcast()
	}
}

// close persists what changed last and stops; it returns the first
// persist error.
func (c *committer) close() error {
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

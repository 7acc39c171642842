package emulator

import (
	"net"
	"net/http"
	"sync"
)

// conns tracks a server's connections by state, so that Stop closes at
// once those with no request in flight. http.Server.Shutdown closes idle
// connections too, but counts one that has not yet sent a request as busy
// for 5 s: a client that dialled a spare connection (as Go's transport
// does under concurrent requests) held Stop for its whole deadline.
type conns struct {
	mu       sync.Mutex
	state    map[net.Conn]http.ConnState
	stopping bool
}

// track is the server's ConnState hook. Once stopping, a connection with
// no request in flight is closed as it reaches that state: a new one, or
// one whose request has just been answered.
func (c *conns) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(c.state, conn)
		return
	}
	if c.state == nil {
		c.state = make(map[net.Conn]http.ConnState)
	}
	c.state[conn] = s
	if c.stopping && s != http.StateActive {
		conn.Close()
	}
}

// closeQuiet marks the server stopping and closes every connection with
// no request in flight; those with one are left to http.Server.Shutdown.
func (c *conns) closeQuiet() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopping = true
	for conn, s := range c.state {
		if s != http.StateActive {
			conn.Close()
		}
	}
}

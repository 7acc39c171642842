package emulator

import (
	"net/http"
	"net/url"
	"time"

	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// The tests of this binary do not wait on the disk: a Start or
// ResetLocation on a location another emulator holds fails after one
// attempt to take its files, instead of waiting disk.LockWait (a second)
// for the holder to let go, which no test here does meanwhile; and
// commits are not flushed (disk.SetSync), which nothing in a process can
// tell from a flushed one.
func init() {
	disk.SetLockWait(time.Millisecond)
	disk.SetSync(false)
}

// SetGrace makes o's servers give a body, an answer and a request's head
// grace before cutting them, and a stalled body as long, instead of 30 s
// and 2 minutes, so that a test of the cut takes a second.
func SetGrace(o *Options, grace time.Duration) {
	t := defaultTimeouts
	t.grace, t.headerTimeout, t.stall = grace, grace, grace
	o.timeouts = &t
}

// ActiveConns counts the connections to the server of endpoint (one of
// i's URLs) with a request in flight: the server has begun to read it
// (http.StateActive).
func ActiveConns(i *Instance, endpoint string) int {
	u, err := url.Parse(endpoint)
	if err != nil {
		return 0
	}
	n := 0
	for _, c := range i.conns {
		c.mu.Lock()
		for conn, s := range c.state {
			if s == http.StateActive && conn.LocalAddr().String() == u.Host {
				n++
			}
		}
		c.mu.Unlock()
	}
	return n
}

package wire

// The service's clock. A write whose answer was lost can be settled by
// when the stored entity was last written: the service stamps every write
// with its own time (the Timestamp property, and the ETag that carries
// it), and tablekit knows when its first attempt left this machine. To
// compare the two, each Table keeps bounds on the offset between the
// service's clock and this machine's, narrowed by every write answered on
// its first attempt: that write was stamped between its send and its
// answer, so offset ∈ [stamp − answered, stamp − sent]. The bounds are as
// tight as the fastest round trip seen, a millisecond or less on a
// loopback Azurite, a few on Azure. A stamp is taken to be up to
// stampResolution early: Azurite stamps to the millisecond (Azure to
// 100 ns).
//
// With them, a stored entity stamped before the first attempt left (plus
// the lower bound) was written before it: the attempt never landed. A
// later stamp settles nothing by itself: when the stored entity holds what
// a conditional attempt wrote, another writer may have written the same
// (see Op.provenBy for what does settle it).

import (
	"sync"
	"time"
)

// stampResolution is how much earlier than the write a service stamp may
// read.
const stampResolution = time.Millisecond

// serviceClock bounds the offset of the service's clock from this
// machine's (service = local + offset).
type serviceClock struct {
	mu     sync.Mutex
	lo, hi time.Duration
	ok     bool
}

// clocks are the service clocks by table endpoint: the tables of one
// account share their service's clock.
var clocks sync.Map // string -> *serviceClock

func clockFor(endpoint string) *serviceClock {
	c, _ := clocks.LoadOrStore(endpoint, &serviceClock{})
	return c.(*serviceClock)
}

// observe narrows the bounds with a write sent at sent, answered at
// answered, whose new ETag is etag.
func (c *serviceClock) observe(sent, answered time.Time, etag string) {
	stamp := TimestampFromETag(etag)
	if c == nil || stamp.IsZero() || sent.IsZero() || answered.Before(sent) {
		return
	}
	lo, hi := stamp.Sub(answered), stamp.Add(stampResolution).Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || lo > c.hi || hi < c.lo {
		// The first sample, or one the bounds exclude (a clock was
		// stepped): start again from it.
		c.lo, c.hi, c.ok = lo, hi, true
		return
	}
	c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
}

// observeBatch observes a transaction's answer by its first and last
// results' ETags: the service stamps one entity group transaction's
// entities together, so the others would narrow nothing (and parsing
// every ETag was a tenth of a bulk write's client CPU).
func (c *serviceClock) observeBatch(sent, answered time.Time, results []Result) {
	if len(results) == 0 {
		return
	}
	c.observe(sent, answered, results[0].ETag)
	if len(results) > 1 {
		c.observe(sent, answered, results[len(results)-1].ETag)
	}
}

// writtenBefore reports whether the entity whose ETag is etag was surely
// stamped before local time t.
func (c *serviceClock) writtenBefore(etag string, t time.Time) bool {
	stamp := TimestampFromETag(etag)
	if c == nil || stamp.IsZero() || t.IsZero() {
		return false
	}
	c.mu.Lock()
	lo, ok := c.lo, c.ok
	c.mu.Unlock()
	return ok && stamp.Add(stampResolution).Before(t.Add(lo))
}

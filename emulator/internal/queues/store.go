package queues

import (
	"container/heap"
	"encoding/base64"
	"encoding/binary"
	"sync"
	"time"

	"github.com/tablekit/tablekit/emulator/internal/acl"
)

// neverExpires is the expiration time of a message put with messagettl
// -1, as Azure writes it (Fri, 31 Dec 9999 23:59:59 GMT).
var neverExpires = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// queue is one queue: its metadata, access policies and messages. mu
// guards everything in it; a queue that was deleted is marked gone, so a
// request that looked it up before the delete answers QueueNotFound.
type queue struct {
	name string

	mu       sync.Mutex
	gone     bool
	metadata map[string]string // names as sent (readMetadata)
	acl      []acl.Identifier
	byID     map[string]*message
	visible  msgHeap[byVisible] // every message, by the time it becomes visible
	expiring msgHeap[byExpiry]  // every message that can expire, by expiry
	seq      uint64             // insertion order, to break ties
	// durable is set when the service keeps a location: purge then
	// notes the ids it drops in expired, for the next write to delete.
	durable bool
	expired []string
}

func newQueue(name string, metadata map[string]string) *queue {
	return &queue{name: name, metadata: metadata, byID: map[string]*message{}}
}

// message is one message in a queue.
type message struct {
	id          string
	text        string
	inserted    time.Time
	expires     time.Time
	nextVisible time.Time
	dequeues    int64
	receipt     string
	seq         uint64
	vi, ei      int // indexes in the queue's heaps; ei -1 when never expiring
}

// put adds m to the queue.
func (q *queue) put(m *message) {
	q.seq++
	m.seq = q.seq
	q.byID[m.id] = m
	heap.Push(&q.visible, m)
	m.ei = -1
	if !m.expires.Equal(neverExpires) {
		heap.Push(&q.expiring, m)
	}
}

// remove takes m out of the queue.
func (q *queue) remove(m *message) {
	delete(q.byID, m.id)
	heap.Remove(&q.visible, m.vi)
	if m.ei >= 0 {
		heap.Remove(&q.expiring, m.ei)
	}
}

// purge removes the messages that have expired by now.
func (q *queue) purge(now time.Time) {
	for len(q.expiring) > 0 && !q.expiring[0].expires.After(now) {
		m := q.expiring[0]
		q.remove(m)
		if q.durable {
			q.expired = append(q.expired, m.id)
		}
	}
}

// clear removes every message.
func (q *queue) clear() {
	q.byID = map[string]*message{}
	q.visible = nil
	q.expiring = nil
	q.expired = nil
}

// take returns up to n messages visible at now, the earliest visible
// first, and leaves them in the queue (the caller changes their
// visibility and calls fix).
func (q *queue) take(now time.Time, n int) []*message {
	q.purge(now)
	var out []*message
	for len(out) < n && len(q.visible) > 0 && !q.visible[0].nextVisible.After(now) {
		out = append(out, heap.Pop(&q.visible).(*message))
	}
	for _, m := range out {
		heap.Push(&q.visible, m)
	}
	return out
}

// fix restores the visibility order after m's nextVisible changed.
func (q *queue) fix(m *message) { heap.Fix(&q.visible, m.vi) }

// msgHeap is a heap of messages in the order O gives: by O's time, then
// by insertion. Each message keeps its index in the heap in the field O
// names, so that heap.Fix and heap.Remove find it.
type msgHeap[O order] []*message

// order chooses the time a msgHeap orders messages by and the message's
// field that holds its index in that heap.
type order interface {
	at(m *message) time.Time
	index(m *message) *int
}

// byVisible orders messages by the time they become visible.
type byVisible struct{}

func (byVisible) at(m *message) time.Time { return m.nextVisible }
func (byVisible) index(m *message) *int   { return &m.vi }

// byExpiry orders messages by expiry.
type byExpiry struct{}

func (byExpiry) at(m *message) time.Time { return m.expires }
func (byExpiry) index(m *message) *int   { return &m.ei }

func (h msgHeap[O]) Len() int { return len(h) }
func (h msgHeap[O]) Less(i, j int) bool {
	var o O
	if a, b := o.at(h[i]), o.at(h[j]); !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].seq < h[j].seq
}
func (h msgHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]), *o.index(h[j]) = i, j
}
func (h *msgHeap[O]) Push(x any) {
	var o O
	m := x.(*message)
	*o.index(m) = len(*h)
	*h = append(*h, m)
}
func (h *msgHeap[O]) Pop() any {
	var o O
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	*o.index(m) = -1
	return m
}

// Pop receipts have Azure's form: base64 of a version word (2 for put and
// get, 3 for update, which also appends 4 zero bytes), the word 3, four
// zero bytes and a FILETIME (100 ns ticks since 1601), little-endian. The
// emulator's ticks are unique per service, so a receipt names one
// hand-out of one message.
const (
	receiptLen       = 20
	updateReceiptLen = 24
	// filetimeOffset is 1601-01-01 to 1970-01-01 in 100 ns ticks.
	filetimeOffset = 116444736000000000
)

// receipt returns a new pop receipt; update selects the form Update
// Message answers with.
func (s *Service) receipt(now time.Time, update bool) string {
	tick := uint64(now.UnixNano()/100 + filetimeOffset)
	for {
		last := s.lastTick.Load()
		if tick <= last {
			tick = last + 1
		}
		if s.lastTick.CompareAndSwap(last, tick) {
			break
		}
	}
	n := receiptLen
	if update {
		n = updateReceiptLen
	}
	b := make([]byte, n)
	b[0] = 2
	if update {
		b[0] = 3
	}
	b[4] = 3
	binary.LittleEndian.PutUint64(b[12:], tick)
	return base64.StdEncoding.EncodeToString(b)
}

// wellFormedReceipt reports whether p has the form of a pop receipt: Azure
// answers 400 InvalidQueryParameterValue ("Invalid pop receipt format")
// to one that has not, before it looks for the message.
func wellFormedReceipt(p string) bool {
	b, err := base64.StdEncoding.DecodeString(p)
	return err == nil && (len(b) == receiptLen || len(b) == updateReceiptLen)
}

// Package bufpool reuses byte buffers: the pages a query reads, the batch
// bodies the core sends and the entities a bulk write encodes each come
// from one, so that a long scan or a large load does not allocate (and
// collect) a buffer per request.
package bufpool

import "sync"

// Pool is a pool of byte buffers. The zero value is not usable: set Size
// and Max.
type Pool struct {
	Size int // capacity of a new buffer
	Max  int // a buffer that grew past this capacity is dropped, not kept
	p    sync.Pool
}

// Get returns an empty buffer.
func (p *Pool) Get() *[]byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, p.Size)
	return &b
}

// Put returns b for reuse, unless its capacity exceeds Max. Nothing may
// use b's bytes afterwards.
func (p *Pool) Put(b *[]byte) {
	if cap(*b) <= p.Max {
		p.p.Put(b)
	}
}

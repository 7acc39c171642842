package blobs

import (
	"crypto/sha256"
	"encoding/binary"
)

// contentSum is a digest of what a blob holds: its data, or a page
// blob's written segments (not its zeros: a terabyte of them would take
// minutes to hash).
func contentSum(b *blob) [32]byte {
	if b.kind != pageBlob {
		return sha256.Sum256(b.data)
	}
	h := sha256.New()
	for _, s := range b.page.pages.segs {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(s.idx)))
		h.Write(encodeSegment(s))
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// PageBlobHeld is the memory the written pages of page blob name of
// container cname hold, and the blob's size: -1, -1 when there is no such
// page blob.
func (s *Service) PageBlobHeld(cname, name string) (held, size int64) {
	c := s.container(cname)
	if c == nil {
		return -1, -1
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	b := c.blobs[name]
	if b == nil || b.kind != pageBlob {
		return -1, -1
	}
	return b.page.pages.held(), b.page.size
}

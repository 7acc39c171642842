package blobs

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"slices"
)

// A page blob's content is sparse: pages no write reached, or that a
// clear released, read as zeros and take no memory. The content is kept
// in segments of segPages pages; only segments holding a written page
// exist. A 1 TiB page blob with one page written holds one segment
// (64 KiB), not a terabyte.
//
// A pageSet is never changed in place: a write, a clear or a resize
// returns a new set sharing the segments it left alone, and a segment is
// never changed once made. Readers (Get Blob, Get Page Ranges, snapshots,
// copies) hold the set they copied out under the container's lock and
// read it without the lock, as block blob readers hold their data.
const (
	pageSize = 512
	segPages = 128
	segBytes = pageSize * segPages // 64 KiB
)

// maxPageBlobSize is the largest page blob Azure creates: 8 TiB (REST
// "Put Blob": x-ms-blob-content-length "can be up to 8 TiB").
const maxPageBlobSize = 8 << 40

// segment holds segPages pages from offset idx*segBytes: mask says which
// hold data (bit i of word i/64: page i); data is segBytes long, zeros
// where a page holds none.
type segment struct {
	idx  int64
	mask [2]uint64
	data []byte
}

func (s *segment) has(page int) bool { return s.mask[page/64]&(1<<(page%64)) != 0 }

func (s *segment) empty() bool { return s.mask == [2]uint64{} }

// pages counts the pages that hold data.
func (s *segment) pages() int { return bits.OnesCount64(s.mask[0]) + bits.OnesCount64(s.mask[1]) }

// setPages marks pages [from, to) as written or not.
func (s *segment) setPages(from, to int, on bool) {
	for p := from; p < to; p++ {
		if on {
			s.mask[p/64] |= 1 << (p % 64)
		} else {
			s.mask[p/64] &^= 1 << (p % 64)
		}
	}
}

// pageSet is a page blob's written pages: its segments in offset order.
type pageSet struct {
	segs []*segment
}

// search is the index of the first segment at or after idx.
func (p pageSet) search(idx int64) int {
	i, _ := slices.BinarySearchFunc(p.segs, idx, func(s *segment, idx int64) int {
		switch {
		case s.idx < idx:
			return -1
		case s.idx > idx:
			return 1
		}
		return 0
	})
	return i
}

// splice returns a set whose segments in [from, to] (indices) are the
// segments made (sorted, nil for none: those go), and the rest p's.
func (p pageSet) splice(from, to int64, made []*segment) pageSet {
	lo, hi := p.search(from), p.search(to+1)
	out := make([]*segment, 0, len(p.segs)-(hi-lo)+len(made))
	out = append(out, p.segs[:lo]...)
	for _, s := range made {
		if s != nil {
			out = append(out, s)
		}
	}
	out = append(out, p.segs[hi:]...)
	return pageSet{segs: out}
}

// write returns p with data written at off (both page-aligned), and the
// indices of the segments it changed.
func (p pageSet) write(off int64, data []byte) (pageSet, []int64) {
	if len(data) == 0 {
		return p, nil
	}
	end := off + int64(len(data)) // exclusive
	first, last := off/segBytes, (end-1)/segBytes
	made := make([]*segment, 0, last-first+1)
	touched := make([]int64, 0, last-first+1)
	i := p.search(first)
	for idx := first; idx <= last; idx++ {
		var old *segment
		if i < len(p.segs) && p.segs[i].idx == idx {
			old = p.segs[i]
			i++
		}
		base := idx * segBytes
		lo, hi := max(off, base)-base, min(end, base+segBytes)-base
		ns := &segment{idx: idx, data: make([]byte, segBytes)}
		if old != nil {
			ns.mask = old.mask
			if lo > 0 || hi < segBytes {
				copy(ns.data, old.data)
			}
		}
		copy(ns.data[lo:hi], data[base+lo-off:base+hi-off])
		ns.setPages(int(lo/pageSize), int(hi/pageSize), true)
		made = append(made, ns)
		touched = append(touched, idx)
	}
	return p.splice(first, last, made), touched
}

// clear returns p with pages [start, end] (byte offsets, page-aligned,
// end inclusive) released, and the indices of the segments it changed.
// Only segments that exist are visited: clearing a terabyte of a sparse
// blob costs what it holds.
func (p pageSet) clear(start, end int64) (pageSet, []int64) {
	stop := end + 1
	first, last := start/segBytes, end/segBytes
	lo, hi := p.search(first), p.search(last+1)
	if lo == hi {
		return p, nil
	}
	made := make([]*segment, 0, hi-lo)
	touched := make([]int64, 0, hi-lo)
	for _, old := range p.segs[lo:hi] {
		base := old.idx * segBytes
		from, to := max(start, base)-base, min(stop, base+segBytes)-base
		ns := &segment{idx: old.idx, mask: old.mask}
		ns.setPages(int(from/pageSize), int(to/pageSize), false)
		touched = append(touched, old.idx)
		if ns.empty() {
			made = append(made, nil)
			continue
		}
		ns.data = make([]byte, segBytes)
		copy(ns.data, old.data)
		clear(ns.data[from:to])
		made = append(made, ns)
	}
	return p.splice(first, last, made), touched
}

// truncate returns p without the pages at or past size (page-aligned),
// and the indices of the segments it changed.
func (p pageSet) truncate(size int64) (pageSet, []int64) {
	if len(p.segs) == 0 {
		return p, nil
	}
	last := p.segs[len(p.segs)-1]
	end := (last.idx+1)*segBytes - 1
	if size > end {
		return p, nil
	}
	return p.clear(size, end)
}

// pageRange is a run of pages holding data: bytes [start, end].
type pageRange struct{ start, end int64 }

// ranges lists the runs of written pages within [start, end] (byte
// offsets), each cut to that span; runs that meet are one.
func (p pageSet) ranges(start, end int64) []pageRange {
	var out []pageRange
	for _, s := range p.segs[p.search(start/segBytes):] {
		base := s.idx * segBytes
		if base > end {
			break
		}
		for pg := 0; pg < segPages; pg++ {
			if !s.has(pg) {
				continue
			}
			a, b := base+int64(pg)*pageSize, base+int64(pg+1)*pageSize-1
			a, b = max(a, start), min(b, end)
			if a > b {
				continue
			}
			if n := len(out); n > 0 && out[n-1].end+1 == a {
				out[n-1].end = b
				continue
			}
			out = append(out, pageRange{a, b})
		}
	}
	return out
}

// zeros is what the pages no write reached read as.
var zeros = make([]byte, segBytes)

// writeTo writes bytes [start, end] of the content (zeros where no page
// holds data) to w.
func (p pageSet) writeTo(w io.Writer, start, end int64) error {
	at := start
	for _, s := range p.segs[p.search(start/segBytes):] {
		base := s.idx * segBytes
		if base > end {
			break
		}
		if err := writeZeros(w, base-at); err != nil {
			return err
		}
		from, to := max(at, base), min(end+1, base+segBytes)
		if _, err := w.Write(s.data[from-base : to-base]); err != nil {
			return err
		}
		at = to
	}
	return writeZeros(w, end+1-at)
}

// writeZeros writes n zeros to w (nothing when n <= 0).
func writeZeros(w io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// held is the memory the set's segments take.
func (p pageSet) held() int64 { return int64(len(p.segs)) * segBytes }

// find is the segment of index idx, or nil.
func (p pageSet) find(idx int64) *segment {
	if i := p.search(idx); i < len(p.segs) && p.segs[i].idx == idx {
		return p.segs[i]
	}
	return nil
}

// encodeSegment is a segment as a location keeps it: its mask, then the
// pages holding data, in order (a segment of one written page takes 528
// bytes, not 64 KiB).
func encodeSegment(s *segment) []byte {
	out := make([]byte, 16, 16+s.pages()*pageSize)
	binary.LittleEndian.PutUint64(out, s.mask[0])
	binary.LittleEndian.PutUint64(out[8:], s.mask[1])
	for pg := 0; pg < segPages; pg++ {
		if s.has(pg) {
			out = append(out, s.data[pg*pageSize:(pg+1)*pageSize]...)
		}
	}
	return out
}

var errSegment = errors.New("a page segment does not hold what its mask says")

// decodeSegment reads encodeSegment's form back into segment idx.
func decodeSegment(idx int64, v []byte) (*segment, error) {
	if len(v) < 16 {
		return nil, errSegment
	}
	s := &segment{idx: idx, data: make([]byte, segBytes)}
	s.mask[0], s.mask[1] = binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])
	v = v[16:]
	if len(v) != s.pages()*pageSize || s.empty() {
		return nil, errSegment
	}
	for pg := 0; pg < segPages; pg++ {
		if s.has(pg) {
			copy(s.data[pg*pageSize:], v[:pageSize])
			v = v[pageSize:]
		}
	}
	return s, nil
}

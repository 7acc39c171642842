package blobs

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPageSetAgainstDense: random writes, clears and truncations of a
// sparse page set read back (content, page ranges, stored form) as they
// do on a dense copy of the blob, and never change a set a reader holds.
func TestPageSetAgainstDense(t *testing.T) {
	const size = 3*segBytes + 7*pageSize // segments 0 to 3, the last partial
	rng := rand.New(rand.NewPCG(1, 2))
	var p pageSet
	dense := make([]byte, size)
	written := make([]bool, size/pageSize)
	for step := range 400 {
		before, beforeDense := p, bytes.Clone(dense)
		first := rng.IntN(size / pageSize)
		n := 1 + rng.IntN(min(size/pageSize-first, 2*segPages))
		start, end := int64(first*pageSize), int64((first+n)*pageSize-1)
		var touched []int64
		switch op := rng.IntN(10); {
		case op < 6:
			data := make([]byte, n*pageSize)
			for i := range data {
				data[i] = byte(1 + rng.IntN(255))
			}
			p, touched = p.write(start, data)
			copy(dense[start:], data)
			for i := first; i < first+n; i++ {
				written[i] = true
			}
		case op < 9:
			p, touched = p.clear(start, end)
			clear(dense[start : end+1])
			for i := first; i < first+n; i++ {
				written[i] = false
			}
		default:
			p, touched = p.truncate(start)
			clear(dense[start:])
			for i := first; i < len(written); i++ {
				written[i] = false
			}
		}
		var got bytes.Buffer
		if err := before.writeTo(&got, 0, size-1); err != nil || !bytes.Equal(got.Bytes(), beforeDense) {
			t.Fatalf("step %d: the set a reader held changed", step)
		}
		got.Reset()
		lo, hi := rng.Int64N(size), rng.Int64N(size)
		lo, hi = min(lo, hi), max(lo, hi)
		if err := p.writeTo(&got, lo, hi); err != nil || !bytes.Equal(got.Bytes(), dense[lo:hi+1]) {
			t.Fatalf("step %d: bytes %d-%d differ from the dense copy", step, lo, hi)
		}
		if want := denseRanges(written, lo, hi); !slices.Equal(p.ranges(lo, hi), want) {
			t.Fatalf("step %d: ranges %d-%d: got %v, want %v", step, lo, hi, p.ranges(lo, hi), want)
		}
		for _, s := range p.segs {
			if s.empty() {
				t.Fatalf("step %d: an empty segment %d is kept", step, s.idx)
			}
			back, err := decodeSegment(s.idx, encodeSegment(s))
			if err != nil || back.mask != s.mask || !bytes.Equal(back.data, s.data) {
				t.Fatalf("step %d: segment %d does not read back from its stored form: %v", step, s.idx, err)
			}
		}
		for _, idx := range touched {
			if idx < 0 || idx > size/segBytes {
				t.Fatalf("step %d: touched segment %d out of the blob", step, idx)
			}
		}
	}
}

// denseRanges is the runs of written pages within [lo, hi].
func denseRanges(written []bool, lo, hi int64) []pageRange {
	var out []pageRange
	for pg, w := range written {
		a, b := max(int64(pg)*pageSize, lo), min(int64(pg+1)*pageSize-1, hi)
		if !w || a > b {
			continue
		}
		if n := len(out); n > 0 && out[n-1].end+1 == a {
			out[n-1].end = b
			continue
		}
		out = append(out, pageRange{a, b})
	}
	return out
}

// TestPageSetSparse: one page written at the end of a 1 TiB blob holds
// one segment, and reading or listing around it costs what it holds.
func TestPageSetSparse(t *testing.T) {
	const tib = 1 << 40
	p, _ := pageSet{}.write(tib-pageSize, bytes.Repeat([]byte{7}, pageSize))
	if len(p.segs) != 1 || p.held() != segBytes {
		t.Fatalf("%d segments, %d bytes held", len(p.segs), p.held())
	}
	if got := p.ranges(0, tib-1); !slices.Equal(got, []pageRange{{tib - pageSize, tib - 1}}) {
		t.Fatalf("ranges %v", got)
	}
	var b bytes.Buffer
	if err := p.writeTo(&b, tib-2*pageSize, tib-1); err != nil || b.Len() != 2*pageSize ||
		!bytes.Equal(b.Bytes()[:pageSize], zeros[:pageSize]) || b.Bytes()[pageSize] != 7 {
		t.Fatalf("read back %d bytes: %v", b.Len(), err)
	}
	p, touched := p.clear(0, tib-1)
	if len(p.segs) != 0 || len(touched) != 1 {
		t.Fatalf("after clearing the terabyte: %d segments, %d touched", len(p.segs), len(touched))
	}
}

// BenchmarkPageSetWrite: a 4 KiB write at a random page of a 1 GiB page
// blob every page of which holds data (16,384 segments): what a Put Page
// costs the set (a new segment, a new list of segments).
func BenchmarkPageSetWrite(b *testing.B) {
	const size = 1 << 30
	var p pageSet
	chunk := bytes.Repeat([]byte{1}, 4<<20)
	for off := int64(0); off < size; off += int64(len(chunk)) {
		p, _ = p.write(off, chunk)
	}
	data := bytes.Repeat([]byte{2}, 4096)
	rng := rand.New(rand.NewPCG(3, 4))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		p, _ = p.write(rng.Int64N(size/4096)*4096, data)
	}
}

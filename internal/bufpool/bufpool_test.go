package bufpool_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/bufpool"
)

// A buffer comes back empty with the capacity it grew to; one that grew
// past Max is not kept.
func TestPool(t *testing.T) {
	p := &bufpool.Pool{Size: 16, Max: 64}
	b := p.Get()
	if len(*b) != 0 || cap(*b) != 16 {
		t.Fatalf("new buffer: len %d cap %d, want 0 and 16", len(*b), cap(*b))
	}
	*b = append(*b, make([]byte, 40)...)
	grown := cap(*b)
	p.Put(b)
	if c := p.Get(); len(*c) != 0 || (cap(*c) != grown && cap(*c) != 16) {
		t.Errorf("reused buffer: len %d cap %d, want 0 and %d (or a new one)", len(*c), cap(*c), grown)
	}
	big := make([]byte, 0, 128)
	p.Put(&big)
	for range 10 {
		if c := p.Get(); cap(*c) == 128 {
			t.Fatal("a buffer past Max was kept")
		}
	}
}

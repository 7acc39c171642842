package tablecopy

import "testing"

// The checkpoint's token never covers a page not yet written: pages are
// written out of order while the scan reads on, and a token waits until
// every page it covers is written; the spans it covers then leave the
// checkpoint, and the others stay.
func TestCopyStateTokenWaitsForItsPages(t *testing.T) {
	t.Parallel()
	st := copyState{token: "t0", inflight: map[uint64]span{}, wrote: map[uint64]bool{}}
	ret := func(ids ...uint64) {
		for _, id := range ids {
			st.inflight[id] = span{Key{"p", string(rune('a' + id))}, Key{"p", string(rune('a' + id))}}
			st.returned = append(st.returned, id)
		}
	}
	tok := func(name string) bool {
		st.tokens = append(st.tokens, pendingToken{token: name, pages: len(st.returned)})
		return st.advance()
	}
	wrote := func(id uint64) bool {
		st.wrote[id] = true
		return st.advance()
	}
	ret(1, 2)
	if tok("t2") || st.token != "t0" {
		t.Fatalf("a token over unwritten pages was taken: %q", st.token)
	}
	ret(3)
	if tok("t3") {
		t.Fatal("a token over unwritten pages was taken")
	}
	if wrote(2) || st.token != "t0" {
		t.Fatalf("page 2 written before page 1: token %q, want t0", st.token)
	}
	if !wrote(1) || st.token != "t2" {
		t.Fatalf("pages 1 and 2 written: token %q, want t2", st.token)
	}
	if _, ok := st.inflight[3]; !ok || len(st.inflight) != 1 {
		t.Fatalf("spans after t2: %v; want page 3's only", st.inflight)
	}
	ret(4)
	if !wrote(3) || st.token != "t3" {
		t.Fatalf("page 3 written: token %q, want t3", st.token)
	}
	if wrote(4) || st.token != "t3" {
		t.Fatalf("page 4 written with no token over it: token %q, want t3", st.token)
	}
	if _, ok := st.inflight[4]; !ok || len(st.inflight) != 1 {
		t.Fatalf("spans: %v; want page 4's only", st.inflight)
	}
	if !tok("t4") || st.token != "t4" || len(st.inflight) != 0 || len(st.returned) != 0 || len(st.wrote) != 0 {
		t.Fatalf("after t4: token %q, spans %v, returned %v, wrote %v; want t4 and nothing held", st.token, st.inflight, st.returned, st.wrote)
	}
}

package wire

import (
	"net/url"
	"strings"
	"testing"
)

// The key literal's fast path (keys of unreserved bytes, appended as
// they are) writes what the general path writes, for every byte and for
// keys that mix both kinds.
func TestAppendKeyLiteral(t *testing.T) {
	general := func(key string) string { return url.PathEscape(strings.ReplaceAll(key, "'", "''")) }
	keys := []string{"", "p1", "emp_100001", "00000042", "a-b.c~d_e", "O'Brien", "''", "a b", "ünï", "x/y", "k?q", "%41", "a+b=c", "\x00\x7f\xff"}
	for c := 0; c < 256; c++ {
		keys = append(keys, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"yz")
	}
	for _, k := range keys {
		if got, want := string(appendKeyLiteral([]byte("x"), k)), "x"+general(k); got != want {
			t.Errorf("appendKeyLiteral(%q) = %q, want %q", k, got, want)
		}
	}
}

func FuzzAppendKeyLiteral(f *testing.F) {
	f.Add("emp_100001")
	f.Add("O'Brien")
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := string(appendKeyLiteral(nil, k)), url.PathEscape(strings.ReplaceAll(k, "'", "''")); got != want {
			t.Errorf("appendKeyLiteral(%q) = %q, want %q", k, got, want)
		}
	})
}

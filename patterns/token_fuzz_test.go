package patterns

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
)

// FuzzPageToken feeds arbitrary strings to the continuation-token decoder:
// it never panics, refuses anything it did not issue with
// ErrInvalidToken, and round-trips every position it encodes.
func FuzzPageToken(f *testing.F) {
	hash := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	f.Add("", "", "")
	f.Add("1!8!U2FsZXM-", "1!12!MDAwMTIz", encodeToken(continuation{PK: "p", RK: "r"}, hash))
	f.Add("p", "", "eyJwIjoicCJ9")
	f.Add("\x00", "é'", "%%%")
	f.Fuzz(func(t *testing.T, pk, rk, token string) {
		if _, err := decodeToken(token, hash); err != nil && !errors.Is(err, tablekit.ErrInvalidToken) {
			t.Fatalf("decodeToken(%q) = %v, not ErrInvalidToken", token, err)
		}
		if !utf8.ValidString(pk) || !utf8.ValidString(rk) || len(pk)+len(rk) > 8<<10 {
			return // the service's positions are text, a few KiB at most
		}
		tok := encodeToken(continuation{PK: pk, RK: rk}, hash)
		c, err := decodeToken(tok, hash)
		if err != nil {
			// Only positions the service would never hand out are refused.
			if pk != "" {
				t.Fatalf("round trip of (%q, %q): %v", pk, rk, err)
			}
			return
		}
		if c.PK != pk || c.RK != rk {
			t.Fatalf("round trip of (%q, %q) gave (%q, %q)", pk, rk, c.PK, c.RK)
		}
		other := hash
		other[0]++
		if _, err := decodeToken(tok, other); !errors.Is(err, tablekit.ErrInvalidToken) {
			t.Fatalf("a token was accepted by another query: %v", err)
		}
	})
}

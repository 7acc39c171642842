package consistency

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseTransaction feeds arbitrary bytes to the envelope parser, as a
// hostile or corrupted queue message would: it never panics, and whatever
// it accepts validates and survives a marshal/parse round trip unchanged.
func FuzzParseTransaction(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"t1","steps":[{"kind":"delete-entity","args":{"table":"Current","pk":"Sales","rk":"000456"}}]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"id":"","steps":[]}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"v":1,"id":"x","steps":[{"kind":"","args":null}],"extra":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tx, err := ParseTransaction(data, false)
		if err != nil {
			if !IsPermanent(err) {
				t.Fatalf("a malformed envelope gave a retryable error: %v", err)
			}
			return
		}
		if err := tx.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		again, err := json.Marshal(tx)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		tx2, err := ParseTransaction(again, false)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", again, err)
		}
		again2, _ := json.Marshal(tx2)
		if !bytes.Equal(again, again2) {
			t.Fatalf("round trip changed the envelope:\n%s\n%s", again, again2)
		}
	})
}

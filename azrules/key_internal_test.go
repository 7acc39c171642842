package azrules

import (
	"strings"
	"testing"
)

// CheckKey's shortcut for plain ASCII keys accepts exactly what the
// general path accepts: every byte alone and inside a key, and keys at
// and over the length limit.
func TestCheckKeyShortcut(t *testing.T) {
	keys := []string{"", strings.Repeat("a", MaxKeyUnits), strings.Repeat("a", MaxKeyUnits+1)}
	for c := 0; c < 256; c++ {
		keys = append(keys, string([]byte{byte(c)}), "emp_"+string([]byte{byte(c)})+"_01")
	}
	for _, k := range keys {
		checkShortcut(t, k)
	}
}

func checkShortcut(t *testing.T, k string) {
	t.Helper()
	got, want := CheckKey(k), checkKey(k)
	if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
		t.Fatalf("CheckKey(%q) = %v; the general path says %v", k, got, want)
	}
}

func FuzzCheckKeyShortcut(f *testing.F) {
	f.Add("emp_000123")
	f.Add("a/b\x7f")
	f.Fuzz(checkShortcut)
}

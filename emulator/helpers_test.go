package emulator_test

import (
	"testing"

	"github.com/tablekit/tablekit/entity"
)

// mustJSON is v as the service's JSON (every EDM type annotated).
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := entity.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

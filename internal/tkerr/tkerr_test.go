package tkerr_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/tkerr"
	"github.com/tablekit/tablekit/keys"
)

// A wrapped error's own prefix is left out of the message, and errors.Is
// and errors.As still find it.
func TestErrorfSaysTablekitOnce(t *testing.T) {
	_, inner := keys.ParseFilter("PartitionKey eq 'p")
	err := tkerr.Errorf("tablekit: query %s: %w", "Orders", inner)
	if got, want := err.Error(), "tablekit: query Orders: "+inner.Error()[len(tkerr.Prefix):]; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var fe *keys.FilterError
	if !errors.Is(err, keys.ErrInvalidFilter) || !errors.As(err, &fe) {
		t.Errorf("%v does not unwrap to the filter error", err)
	}
	if got := tkerr.Errorf("query: %w", inner).Error(); got != "query: "+inner.Error() {
		t.Errorf("a message not starting with the prefix changed the wrapped one: %q", got)
	}
}

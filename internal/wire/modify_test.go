package wire

import (
	"strings"
	"testing"
)

// entityWithLog is an entity's JSON whose write-id log holds ids.
func entityWithLog(ids ...string) []byte {
	b, err := WithProp([]byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), UpdateLogProperty, strings.Join(ids, " "))
	if err != nil {
		panic(err)
	}
	return b
}

// The log settles a lost response: our id means landed; the anchor followed
// by another id means another writer consumed the state we read, so ours
// cannot have landed; neither means nothing can tell.
func TestLandedVerdicts(t *testing.T) {
	replace := Op{Type: OpReplace, PartitionKey: "p", RowKey: "r"}
	cases := []struct {
		name   string
		op     Op
		anchor string
		now    []byte
		want   verdict
	}{
		{"our id last", replace, "a", entityWithLog("x", "a", "me"), yes},
		{"our id followed by others", replace, "a", entityWithLog("a", "me", "b", "c"), yes},
		{"our id at the front after rotation", replace, "a", entityWithLog("me", "b", "c"), yes},
		{"another writer consumed the state", replace, "a", entityWithLog("x", "a", "b"), no},
		{"the state consumed by a write that keeps the log (merge)", replace, "a", entityWithLog("x", "a"), no},
		{"anchor and id both rotated out", replace, "a", entityWithLog("b", "c", "d"), unknown},
		{"log dropped by a plain replace", replace, "a", []byte(`{"PartitionKey":"p","RowKey":"r","N":2}`), unknown},
		{"entity gone: a replace did not land", replace, "a", nil, no},
		{"delete: entity gone", Op{Type: OpDelete, PartitionKey: "p", RowKey: "r"}, "a", nil, yes},
		{"delete: entity still there", Op{Type: OpDelete, PartitionKey: "p", RowKey: "r"}, "a", entityWithLog("a"), no},
	}
	for _, c := range cases {
		if got := landed(c.op, "me", c.anchor, "^etag", c.now); got != c.want {
			t.Errorf("%s: landed = %v, want %v", c.name, got, c.want)
		}
	}
}

// An entity read without a log gets an anchor every reader of that state
// derives alike, and states with other ETags get other anchors.
func TestAnchorOfAStateWithoutLog(t *testing.T) {
	a1, a2 := anchorOf(nil, `W/"datetime'1'"`), anchorOf(nil, `W/"datetime'1'"`)
	if a1 != a2 || !strings.HasPrefix(a1, "^") {
		t.Errorf("anchors of one state: %q, %q", a1, a2)
	}
	if anchorOf(nil, `W/"datetime'2'"`) == a1 {
		t.Error("two states share an anchor")
	}
	if got := anchorOf([]string{"x", "y"}, "etag"); got != "y" {
		t.Errorf("anchor of a state with a log = %q, want its last id", got)
	}
}

// WithProp replaces a property the body already has instead of writing
// the name twice (the service refuses duplicate members).
func TestWithPropReplacesAnExistingProperty(t *testing.T) {
	b := entityWithLog("a")
	b, err := WithProp(b, UpdateLogProperty, "a b")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"`+UpdateLogProperty+`"`); n != 1 {
		t.Fatalf("%s appears %d times in %s", UpdateLogProperty, n, b)
	}
	if got := ReadLog(b); strings.Join(got, " ") != "a b" {
		t.Errorf("log = %v", got)
	}
}

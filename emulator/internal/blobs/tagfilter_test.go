package blobs

import (
	"strings"
	"testing"
)

// FuzzParseTagFilter: no expression makes the parser or a match panic, or
// run deeper than its bound; what where= takes a condition takes too
// (the conditions' grammar is a superset), and a refusal names where or
// the header.
func FuzzParseTagFilter(f *testing.F) {
	for _, s := range []string{
		`"project"='x'`, `a='1' AND b>='2' and (c<'3')`, `"a"='1' OR "b"<>'2'`, `@container='c' AND "a"='1'`,
		`"it""s"='it''s'`, `(((("a"='1'))))`, `"a"='`, `("a"='1'`, `'x'='y'`, ``, `and`, `"a" >`,
	} {
		f.Add(s)
	}
	tags := tagSet{{"a", "1"}, {"b", "2"}, {"project", "x"}}
	f.Fuzz(func(t *testing.T, expr string) {
		for _, use := range []filterUse{findInAccount, findInContainer, tagCondition} {
			flt, e := parseTagFilter(expr, use, "x-ms-if-tags")
			if e != nil {
				if !strings.Contains(e.Error(), "InvalidQueryParameterValue") && !strings.Contains(e.Error(), "InvalidHeaderValue") {
					t.Fatalf("%q: refused with %v", expr, e)
				}
				continue
			}
			flt.match(tags, "c")
			flt.of(tags)
			if use == findInAccount {
				flt.containerMay("c")
			}
			if use == findInContainer {
				if _, e := parseTagFilter(expr, tagCondition, "x-ms-if-tags"); e != nil {
					t.Fatalf("%q: taken by where= but not as a condition", expr)
				}
			}
		}
	})
}

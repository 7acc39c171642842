package acl

import (
	"strings"
	"testing"
)

// TestParseTimes: a policy's times may be a date alone or a time without
// seconds, as Azure takes them, and come back in Azure's form (the Python
// SDK's recorded Set and Get Table ACL: 2011-10-11 reads back as
// 2011-10-11T00:00:00.0000000Z); anything else is refused.
func TestParseTimes(t *testing.T) {
	policy := func(start string) []byte {
		return []byte(`<?xml version='1.0' encoding='utf-8'?><SignedIdentifiers><SignedIdentifier><Id>testid</Id><AccessPolicy><Start>` +
			start + `</Start><Expiry>2011-10-12</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`)
	}
	for _, c := range []struct{ in, want string }{
		{"2011-10-11", "2011-10-11T00:00:00.0000000Z"},
		{"2021-06-08T02:05:09Z", "2021-06-08T02:05:09.0000000Z"},
		{"2021-06-08T02:05Z", "2021-06-08T02:05:00.0000000Z"},
		{"2021-06-08T02:05:09.1234567+02:00", "2021-06-08T00:05:09.1234567Z"},
		{"2011-10-32", ""},
		{"yesterday", ""},
	} {
		list, e := Parse(policy(c.in), TablePermissions)
		if c.want == "" {
			if e == nil {
				t.Errorf("%s: accepted", c.in)
			}
			continue
		}
		if e != nil {
			t.Errorf("%s: %v", c.in, e)
			continue
		}
		if got := list[0].Policy.Start; got != c.want {
			t.Errorf("%s: start %s, want %s", c.in, got, c.want)
		}
		if got := list[0].Policy.Expiry; got != "2011-10-12T00:00:00.0000000Z" {
			t.Errorf("expiry %s", got)
		}
		if p, ok := Find(list, "testid"); !ok || p.Start.Format(azureTime) != c.want {
			t.Errorf("%s: Find: %v %v", c.in, p, ok)
		}
		if b := string(Marshal(list)); !strings.Contains(b, "<Start>"+c.want+"</Start>") {
			t.Errorf("%s: Marshal %s", c.in, b)
		}
	}
}

// TestMarshalEmptyPolicy reads back an identifier set with an empty
// AccessPolicy without one, as Azure does.
func TestMarshalEmptyPolicy(t *testing.T) {
	list, e := Parse([]byte(`<SignedIdentifiers><SignedIdentifier><Id>empty</Id><AccessPolicy /></SignedIdentifier>`+
		`<SignedIdentifier><Id>r</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`), "raud")
	if e != nil {
		t.Fatal(e)
	}
	got := string(Marshal(list))
	want := `<SignedIdentifiers><SignedIdentifier><Id>empty</Id></SignedIdentifier><SignedIdentifier><Id>r</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>`
	if !strings.HasSuffix(got, want) {
		t.Errorf("Marshal = %s\nwant ...%s", got, want)
	}
}

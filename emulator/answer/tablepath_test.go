package answer_test

import (
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// Every form of a Table service path, escaped as a request carries it,
// and the paths that are none of them.
func TestParseTablePath(t *testing.T) {
	type tp = answer.TablePath
	const a = "devstoreaccount1"
	cases := []struct {
		path string
		want tp
		ok   bool
	}{
		{"/" + a, tp{Account: a, Service: true}, true},
		{"/" + a + "/", tp{Account: a, Service: true}, true},
		{"/" + a + "/Tables", tp{Account: a, Name: "Tables"}, true},
		{"/" + a + "/Tables()", tp{Account: a, Name: "Tables", Parens: true}, true},
		{"/" + a + "/Tables('orders')", tp{Account: a, Name: "Tables", Parens: true, Table: "orders"}, true},
		{"/" + a + "/Tables('it''s')", tp{Account: a, Name: "Tables", Parens: true, Table: "it's"}, true},
		{"/" + a + "/Tables('orders')x", tp{}, false},
		{"/" + a + "/Tables('orders)", tp{}, false},
		{"/" + a + "/Tables(orders)", tp{}, false},
		{"/" + a + "/$batch", tp{Account: a, Name: "$batch"}, true},
		{"/" + a + "/orders", tp{Account: a, Name: "orders"}, true},
		{"/" + a + "/orders()", tp{Account: a, Name: "orders", Parens: true}, true},
		{"/" + a + "/orders(PartitionKey='p',RowKey='r')", tp{Account: a, Name: "orders", Parens: true, HasKeys: true, PartitionKey: "p", RowKey: "r"}, true},
		{"/" + a + "/orders(PartitionKey='',RowKey='')", tp{Account: a, Name: "orders", Parens: true, HasKeys: true}, true},
		// Doubled quotes, escapes and the characters of the syntax inside
		// a key.
		{"/acct/t(PartitionKey='a''b',RowKey='c%2Cd)')", tp{Account: "acct", Name: "t", Parens: true, HasKeys: true, PartitionKey: "a'b", RowKey: "c,d)"}, true},
		{"/acct/t(PartitionKey='%27%27',RowKey='x%20y''')", tp{Account: "acct", Name: "t", Parens: true, HasKeys: true, PartitionKey: "'", RowKey: "x y'"}, true},
		{"/acct/t(PartitionKey='%2F',RowKey='(')", tp{Account: "acct", Name: "t", Parens: true, HasKeys: true, PartitionKey: "/", RowKey: "("}, true},
		{"/acc%74/t", tp{Account: "acct", Name: "t"}, true},
		// Not a path of the service.
		{"/acct/t(", tp{}, false},
		{"/acct/t(PartitionKey='p')", tp{}, false},
		{"/acct/t(PartitionKey='p',RowKey='r'", tp{}, false},
		{"/acct/t(PartitionKey='p',RowKey='r',x)", tp{}, false},
		{"/acct/t(RowKey='r',PartitionKey='p')", tp{}, false},
		{"/acct/t(PartitionKey=p,RowKey=r)", tp{}, false},
		{"/acct/t(PartitionKey='p' ,RowKey='r')", tp{}, false},
		{"/acct/t(PartitionKey='p',RowKey='r''')", tp{Account: "acct", Name: "t", Parens: true, HasKeys: true, PartitionKey: "p", RowKey: "r'"}, true},
		{"/acct/t(PartitionKey='p',RowKey='r'')", tp{}, false},
		{"/acct/t%ZZ", tp{}, false},
		{"/ac%ZZct/t", tp{}, false},
	}
	for _, c := range cases {
		got, ok := answer.ParseTablePath(c.path)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseTablePath(%q) = %+v, %v; want %+v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestUnquote(t *testing.T) {
	cases := []struct {
		in, val, rest string
		ok            bool
	}{
		{"'a'", "a", "", true},
		{"'' and x", "", " and x", true},
		{"'it''s' rest", "it's", " rest", true},
		{"''''", "'", "", true},
		{"'open", "", "", false},
		{"'a''", "", "", false},
		{"a'", "", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		val, rest, ok := answer.Unquote(c.in)
		if val != c.val || rest != c.rest || ok != c.ok {
			t.Errorf("Unquote(%q) = %q, %q, %v; want %q, %q, %v", c.in, val, rest, ok, c.val, c.rest, c.ok)
		}
	}
}

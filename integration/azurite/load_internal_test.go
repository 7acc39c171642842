package azurite

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/load"
)

func TestFilterPartition(t *testing.T) {
	for _, c := range []struct {
		filter, pk string
		named      bool
	}{
		{"PartitionKey eq 'a'", "a", true},
		{"PartitionKey eq 'it''s'", "it's", true},
		{"PartitionKey eq 'a' and RowKey ge '1'", "a", true},
		{"RowKey ge '1' and PartitionKey eq 'a'", "a", true},
		{"(PartitionKey eq 'a' and RowKey ge '1') and (RowKey lt '5')", "a", true},
		{"((PartitionKey eq 'a'))", "a", true},
		{"PartitionKey eq 'a' or PartitionKey eq 'b'", "", false},
		{"(PartitionKey eq 'a' or PartitionKey eq 'b') and RowKey eq '1'", "", false},
		{"PartitionKey eq 'a and b'", "a and b", true},
		{"PartitionKey eq 'x'' or PartitionKey eq ''y'", "x' or PartitionKey eq 'y", true},
		{"PartitionKey ge 'a'", "", false},
		{"Name eq 'PartitionKey eq ''a'''", "", false},
		{"", "", false},
		{"PartitionKey eq 'a", "", false},
	} {
		pk, named := filterPartition(c.filter)
		if pk != c.pk || named != c.named {
			t.Errorf("filterPartition(%q) = %q, %v; want %q, %v", c.filter, pk, named, c.pk, c.named)
		}
	}
}

func TestCostOf(t *testing.T) {
	mk := func(method, path, ctype, body string) *http.Request {
		r, _ := http.NewRequest(method, "http://127.0.0.1/devstoreaccount1/"+path, strings.NewReader(body))
		r.Header.Set("Content-Type", ctype)
		return r
	}
	batch := "--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n" +
		"--cs\r\nContent-Type: application/http\r\n\r\nPOST http://127.0.0.1/devstoreaccount1/Orders HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\r\n" +
		"--cs\r\nContent-Type: application/http\r\n\r\nDELETE http://127.0.0.1/devstoreaccount1/Orders(PartitionKey='p',RowKey='2') HTTP/1.1\r\n\r\n\r\n" +
		"--cs\r\nContent-Type: application/http\r\n\r\nMERGE http://127.0.0.1/devstoreaccount1/Orders(PartitionKey='p',RowKey='3') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"V\":1}\r\n" +
		"--cs--\r\n--b--\r\n"
	for _, c := range []struct {
		name  string
		req   *http.Request
		total int
		part  map[load.Partition]int
		query bool
	}{
		{"insert", mk("POST", "Orders", "application/json", `{"PartitionKey":"p","RowKey":"r"}`), 1, map[load.Partition]int{{Table: "orders", PK: "p"}: 1}, false},
		{"point read", mk("GET", "Orders(PartitionKey='p',RowKey='r')", "", ""), 1, map[load.Partition]int{{Table: "orders", PK: "p"}: 1}, false},
		{"delete", mk("DELETE", "Orders(PartitionKey='q',RowKey='r')", "", ""), 1, map[load.Partition]int{{Table: "orders", PK: "q"}: 1}, false},
		{"batch", mk("POST", "$batch", "multipart/mixed; boundary=b", batch), 3, map[load.Partition]int{{Table: "orders", PK: "p"}: 3}, false},
		{"partition query", mk("GET", "Orders()?$filter=PartitionKey%20eq%20'p'", "", ""), 0, map[load.Partition]int{{Table: "orders", PK: "p"}: 0}, true},
		{"table scan", mk("GET", "Orders()", "", ""), 0, nil, true},
		{"create table", mk("POST", "Tables", "application/json", `{"TableName":"Orders"}`), 1, nil, false},
		{"delete table", mk("DELETE", "Tables('Orders')", "", ""), 1, nil, false},
		{"insert with a body that is not JSON", mk("POST", "Orders", "application/json", `not json`), 1, nil, false},
	} {
		got, q := costOf(c.req)
		if got.Total() != c.total || len(got.Partitions()) != len(c.part) || (q != nil) != c.query {
			t.Errorf("%s: cost %+v, query %v; want %d %v, query %v", c.name, got, q, c.total, c.part, c.query)
			continue
		}
		for p, n := range c.part {
			if got.Partitions()[p] != n {
				t.Errorf("%s: partition %v costs %d, want %d", c.name, p, got.Partitions()[p], n)
			}
		}
	}
}

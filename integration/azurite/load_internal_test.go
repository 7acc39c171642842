package azurite

import (
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestThrottleBuckets: a bucket admits up to its burst at once, refills
// at the target, lets one cost larger than the burst through when full
// (and is in debt after it), and keeps partitions apart.
func TestThrottleBuckets(t *testing.T) {
	th := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: 10, AccountEntitiesPerSecond: 1000, Burst: time.Second})
	t0 := time.Now()
	one := func(pk string, n int) charge {
		var c charge
		c.add("T", pk, n)
		return c
	}
	for i := 0; i < 10; i++ {
		if v := th.admit(one("a", 1), t0); v != admitted {
			t.Fatalf("write %d of a full 10-entity bucket: %v", i+1, v)
		}
	}
	if v := th.admit(one("a", 1), t0); v != overPartition {
		t.Fatalf("11th write at once: %v, want overPartition", v)
	}
	if v := th.admit(one("b", 1), t0); v != admitted {
		t.Fatalf("another partition: %v", v)
	}
	if v := th.admit(one("a", 1), t0.Add(100*time.Millisecond)); v != admitted {
		t.Fatalf("after 100 ms (one entity at 10/s): %v", v)
	}
	if v := th.admit(one("c", 25), t0); v != admitted {
		t.Fatalf("25 entities into a full 10-entity bucket: %v", v)
	}
	if v := th.admit(one("c", 1), t0.Add(1500*time.Millisecond)); v != overPartition {
		t.Fatalf("1.5 s after a 25-entity batch (15 in debt): %v", v)
	}
	if v := th.admit(one("c", 1), t0.Add(1600*time.Millisecond)); v != admitted {
		t.Fatalf("1.6 s after a 25-entity batch: %v", v)
	}
	if v := th.admit(one("t", 0), t0); v != admitted {
		t.Fatalf("a query of a fresh partition: %v", v)
	}
	th.settle(one("t", 30), t0)
	if v := th.admit(one("t", 0), t0.Add(time.Second)); v != overPartition {
		t.Fatalf("a query of a partition 20 in debt: %v", v)
	}
	var lower charge
	lower.add("t", "a", 1)
	if v := th.admit(lower, t0.Add(100*time.Millisecond)); v != overPartition || len(th.parts) != 4 {
		t.Fatalf("table names compare case-insensitively: %v, %d buckets", v, len(th.parts))
	}

	acct := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: -1, AccountEntitiesPerSecond: 5, Burst: time.Second})
	for i := 0; i < 5; i++ {
		if v := acct.admit(one(strings.Repeat("p", i+1), 1), t0); v != admitted {
			t.Fatalf("account write %d: %v", i+1, v)
		}
	}
	if v := acct.admit(one("q", 1), t0); v != overAccount {
		t.Fatalf("6th write to the account: %v, want overAccount", v)
	}
	if len(acct.parts) != 0 {
		t.Errorf("no partition target, yet %d partition buckets", len(acct.parts))
	}

	def := newThrottle(ThrottleOptions{})
	if def.part.rate != AzurePartitionEntitiesPerSecond || def.acct.rate != AzureAccountEntitiesPerSecond || def.part.capacity != 200 {
		t.Errorf("zero options: %+v %+v, want Azure's targets and a 100 ms burst", def.part, def.acct)
	}
	tiny := newThrottle(ThrottleOptions{PartitionEntitiesPerSecond: 1, Burst: time.Millisecond})
	if tiny.part.capacity != 1 {
		t.Errorf("a bucket holds at least one entity, got %v", tiny.part.capacity)
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
		part  map[partition]int
		query bool
	}{
		{"insert", mk("POST", "Orders", "application/json", `{"PartitionKey":"p","RowKey":"r"}`), 1, map[partition]int{{"orders", "p"}: 1}, false},
		{"point read", mk("GET", "Orders(PartitionKey='p',RowKey='r')", "", ""), 1, map[partition]int{{"orders", "p"}: 1}, false},
		{"delete", mk("DELETE", "Orders(PartitionKey='q',RowKey='r')", "", ""), 1, map[partition]int{{"orders", "q"}: 1}, false},
		{"batch", mk("POST", "$batch", "multipart/mixed; boundary=b", batch), 3, map[partition]int{{"orders", "p"}: 3}, false},
		{"partition query", mk("GET", "Orders()?$filter=PartitionKey%20eq%20'p'", "", ""), 0, map[partition]int{{"orders", "p"}: 0}, true},
		{"table scan", mk("GET", "Orders()", "", ""), 0, nil, true},
		{"create table", mk("POST", "Tables", "application/json", `{"TableName":"Orders"}`), 1, nil, false},
		{"delete table", mk("DELETE", "Tables('Orders')", "", ""), 1, nil, false},
		{"insert with a body that is not JSON", mk("POST", "Orders", "application/json", `not json`), 1, nil, false},
	} {
		got, q := costOf(c.req)
		if got.total != c.total || len(got.parts) != len(c.part) || (q != nil) != c.query {
			t.Errorf("%s: cost %+v, query %v; want %d %v, query %v", c.name, got, q, c.total, c.part, c.query)
			continue
		}
		for p, n := range c.part {
			if got.parts[p] != n {
				t.Errorf("%s: partition %v costs %d, want %d", c.name, p, got.parts[p], n)
			}
		}
	}
}

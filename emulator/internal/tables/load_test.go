package tables_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/emulator/answer"
	"github.com/tablekit/tablekit/emulator/internal/tables"
	"github.com/tablekit/tablekit/emulator/load"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// model is a scale model that records what the service asks of it:
// partitions on servers by a hash, one partition refused.
type model struct {
	mu      sync.Mutex
	admits  map[string]int // pk -> cost admitted ("(account)" without one)
	charged int
	asked   map[string]int // pk -> requests admitted
	worked  map[int]int    // server -> scanned
	busy    string         // the partition answered 503
}

func newModel() *model {
	return &model{admits: map[string]int{}, asked: map[string]int{}, worked: map[int]int{}}
}

func (m *model) Admit(ctx context.Context, table, pk string, hasPK bool, cost int) *answer.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !hasPK {
		pk = accountOnly
	}
	if pk == m.busy {
		return answer.New(http.StatusServiceUnavailable, "ServerBusy", "The server is busy.")
	}
	m.admits[pk] += cost
	m.asked[pk]++
	return nil
}

// accountOnly is model.admits' key of what counts for the account alone.
const accountOnly = "(account)"

func (m *model) Charge(table, pk string, hasPK bool, scanned int) {
	m.mu.Lock()
	m.charged += scanned
	m.mu.Unlock()
}

func (m *model) Server(table, pk string) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int(h.Sum32() % 3)
}

func (m *model) Work(ctx context.Context, server, scanned int) error {
	m.mu.Lock()
	m.worked[server] += scanned
	m.mu.Unlock()
	return ctx.Err()
}

func TestLoadModel(t *testing.T) {
	m := newModel()
	m.busy = "hot"
	s := start(t, tables.Config{Load: m})
	c := s.table(t, "load")
	fill(t, c, 4, 10)
	if m.admits["p1"] != 10 {
		t.Fatalf("p1 admitted %d, want 10 writes", m.admits["p1"])
	}
	resp, body := s.raw(t, "POST", "load", nil, []byte(`{"PartitionKey":"hot","RowKey":"r"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || errCode(body) != "ServerBusy" {
		t.Fatalf("write to the busy partition: %d %s", resp.StatusCode, body)
	}
	// A transaction costs its operations.
	var acts []aztables.TransactionAction
	for i := range 5 {
		acts = append(acts, action(aztables.TransactionTypeAdd, "p9", fmt.Sprint(i)))
	}
	if _, err := c.SubmitTransaction(context.Background(), acts, nil); err != nil {
		t.Fatal(err)
	}
	if m.admits["p9"] != 5 {
		t.Fatalf("transaction admitted %d, want 5", m.admits["p9"])
	}
	// A table scan is admitted for the account and charged what it read;
	// each server did the work of its partitions.
	got, _ := keysOf(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("N eq 3")})
	if len(got) != 4 || m.charged != 45 {
		t.Fatalf("scan found %d, charged %d, want 4 and 45", len(got), m.charged)
	}
	total := 0
	for _, n := range m.worked {
		total += n
	}
	if total != 45 || m.asked[accountOnly] < 1 || m.admits[accountOnly] != m.asked[accountOnly]-1 {
		t.Fatalf("worked %v, account admits %d of cost %d (a query costs 0, the table's creation 1)", m.worked, m.asked[accountOnly], m.admits[accountOnly])
	}
}

func TestEarlyEnd(t *testing.T) {
	m := newModel()
	s := start(t, tables.Config{Load: m, EarlyEnd: &tables.EarlyEnd{Seed: 7, Probability: 0.8}})
	c := s.table(t, "early")
	fill(t, c, 6, 40)

	// Every entity comes back once, in order, however the pages end.
	pg := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: to.Ptr[int32](50)})
	var got []string
	pages, short, empty := 0, 0, 0
	for pg.More() {
		p, err := pg.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Entities) < 50 && p.NextPartitionKey != nil {
			short++
		}
		if len(p.Entities) == 0 {
			empty++
		}
		for _, e := range p.Entities {
			got = append(got, string(e))
		}
	}
	if len(got) != 240 || short == 0 || empty == 0 {
		t.Fatalf("%d entities in %d pages (%d short, %d empty), want 240 with short and empty pages", len(got), pages, short, empty)
	}
	// tablekit's Query, which must not stop at a short or empty page.
	tb, err := patterns.NewTable[Rec](s.account(t), "early", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rks []string
	for r, err := range tb.Query(context.Background(), keys.PK().Eq("p3"), &patterns.QueryOptions{Top: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		rks = append(rks, r.RowKey)
	}
	if len(rks) != 40 || !sort.StringsAreSorted(rks) {
		t.Fatalf("tablekit Query under EarlyEnd: %v", rks)
	}
}

func TestCosmosProfile(t *testing.T) {
	s := start(t, tables.Config{Cosmos: true})
	svc := s.service(t)
	ctx := context.Background()
	for _, n := range []string{"CaseTable", "casetable"} {
		if _, err := svc.CreateTable(ctx, n, nil); err != nil {
			t.Fatalf("create %s: %v (Cosmos DB table names are case-sensitive)", n, err)
		}
	}
	c := svc.NewClient("CaseTable")
	resp, body := s.raw(t, "POST", "CaseTable", nil, []byte(`{"PartitionKey":"p","RowKey":"`+strings.Repeat("r", 256)+`"}`))
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("256-byte RowKey on Cosmos DB: %d %s", resp.StatusCode, body)
	}
	fill(t, c, 20, 3)
	// $top above 1000 is accepted.
	resp, body = s.raw(t, "GET", "CaseTable()?$top=5000", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("$top=5000 on Cosmos DB: %d %s", resp.StatusCode, body)
	}
	// Results are not sorted by PartitionKey, but paging still returns
	// each entity once.
	got, _ := keysOf(t, c, &aztables.ListEntitiesOptions{Top: to.Ptr[int32](7)})
	if len(got) != 60 || sort.StringsAreSorted(got) {
		t.Fatalf("Cosmos DB query: %d entities, sorted %v", len(got), sort.StringsAreSorted(got))
	}
	seen := map[string]bool{}
	for _, k := range got {
		if seen[k] {
			t.Fatalf("%s returned twice", k)
		}
		seen[k] = true
	}
	// One partition's rows come in RowKey order.
	got, _ = keysOf(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p4' and RowKey ge 'r001'")})
	if !equal(got, []string{"p4/r001", "p4/r002"}) {
		t.Fatalf("partition query on Cosmos DB: %v", got)
	}
}

// The service on load's scale model (scaled up so the test is quick):
// pages end at partition-server boundaries and at random, and a table
// scan through tablekit still returns every entity once, in order.
func TestAzloadModel(t *testing.T) {
	m := load.NewModel(load.ModelOptions{Scale: 1000})
	s := start(t, tables.Config{Load: m, EarlyEnd: &tables.EarlyEnd{Seed: 3}})
	c := s.table(t, "load")
	fill(t, c, 30, 5)
	tb, err := patterns.NewTable[Rec](s.account(t), "load", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range tb.Query(context.Background(), keys.Filter{}, &patterns.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.PartitionKey+"/"+r.RowKey)
	}
	if len(got) != 150 || !sort.StringsAreSorted(got) {
		t.Fatalf("table scan on the model: %d entities, sorted %v", len(got), sort.StringsAreSorted(got))
	}
	if m.Servers() < 2 {
		t.Fatalf("%d servers", m.Servers())
	}
}

// On load's model a query page costs what it scanned, no more: it is
// admitted at no cost and charged its entities.
func TestLoadQueryCost(t *testing.T) {
	m := load.NewModel(load.ModelOptions{EntityTime: -1})
	s := start(t, tables.Config{Load: m})
	c := s.table(t, "querycost")
	fill(t, c, 2, 3) // partitions p0 and p1, 3 entities each
	before := m.Stats().Entities
	got, _ := keysOf(t, c, &aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p1'")})
	if n := m.Stats().Entities - before; len(got) != 3 || n != 3 {
		t.Fatalf("a query of 3 entities: %d found, charged %d, want 3", len(got), n)
	}
}

// A PartitionKey of "" is a partition like any other: its writes and the
// queries naming it count against its target, not the account's alone.
func TestLoadEmptyPartitionKey(t *testing.T) {
	// One entity a second, 3 at once, slowed a thousandfold: the
	// partition takes 3 entities and then refuses for a thousand seconds.
	m := load.NewModel(load.ModelOptions{
		Scale:      0.001,
		EntityTime: -1,
		Throttle:   load.ThrottleOptions{PartitionEntitiesPerSecond: 1000, AccountEntitiesPerSecond: -1, Burst: 3 * time.Second},
	})
	s := start(t, tables.Config{Load: m})
	s.table(t, "emptypk")
	for i := range 3 {
		if resp, body := s.raw(t, "POST", "emptypk", nil, []byte(fmt.Sprintf(`{"PartitionKey":"","RowKey":"r%d"}`, i))); resp.StatusCode != http.StatusCreated {
			t.Fatalf("insert %d in partition '': %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := s.raw(t, "POST", "emptypk", nil, []byte(`{"PartitionKey":"","RowKey":"r3"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || errCode(body) != "ServerBusy" {
		t.Fatalf("a 4th insert in partition '': %d %s, want 503 ServerBusy", resp.StatusCode, body)
	}
	resp, body = s.raw(t, "GET", "emptypk()?$filter="+url.QueryEscape("PartitionKey eq ''"), nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || errCode(body) != "ServerBusy" {
		t.Fatalf("a query of partition '': %d %s, want 503 ServerBusy", resp.StatusCode, body)
	}
	if resp, body := s.raw(t, "POST", "emptypk", nil, []byte(`{"PartitionKey":"x","RowKey":"r"}`)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("an insert in partition 'x': %d %s", resp.StatusCode, body)
	}
	if resp, body := s.raw(t, "GET", "emptypk()", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("a table scan (the account's): %d %s", resp.StatusCode, body)
	}
}

package tables_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/emulator/internal/tables"
)

// fill inserts parts partitions of rows entities each: PartitionKey
// p0..., RowKey r000..., N the row's number.
func fill(t testing.TB, c *aztables.Client, parts, rows int) {
	t.Helper()
	for p := range parts {
		for r := range rows {
			body := fmt.Sprintf(`{"PartitionKey":"p%d","RowKey":"r%03d","N":%d,"Even":%v}`, p, r, r, r%2 == 0)
			if _, err := c.AddEntity(context.Background(), []byte(body), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// keysOf lists a query's entities as "pk/rk", page by page.
func keysOf(t testing.TB, c *aztables.Client, o *aztables.ListEntitiesOptions) (got []string, pages int) {
	t.Helper()
	pg := c.NewListEntitiesPager(o)
	for pg.More() {
		p, err := pg.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range p.Entities {
			var m map[string]any
			if err := json.Unmarshal(e, &m); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprint(m["PartitionKey"], "/", m["RowKey"]))
		}
	}
	return got, pages
}

func TestQuery(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "query")
	fill(t, c, 3, 25)

	for _, q := range []struct {
		filter string
		top    int32
		first  string
		n      int
		pages  int
	}{
		{"", 0, "p0/r000", 75, 1},
		{"", 10, "p0/r000", 75, 8},
		{"PartitionKey eq 'p1'", 0, "p1/r000", 25, 1},
		{"PartitionKey eq 'p1' and RowKey ge 'r010' and RowKey lt 'r020'", 3, "p1/r010", 10, 4},
		{"PartitionKey eq 'p1' and RowKey gt 'r010' and RowKey le 'r020'", 0, "p1/r011", 10, 1},
		{"PartitionKey ge 'p1' and PartitionKey lt 'p2'", 0, "p1/r000", 25, 1},
		{"PartitionKey gt 'p0'", 30, "p1/r000", 50, 2},
		{"PartitionKey eq 'p2' and N ge 20", 0, "p2/r020", 5, 1},
		{"N lt 2 and Even eq true", 0, "p0/r000", 3, 1},
		{"PartitionKey eq 'p1' or PartitionKey eq 'p2'", 0, "p1/r000", 50, 1},
		{"not (PartitionKey eq 'p0') and RowKey eq 'r001'", 0, "p1/r001", 2, 1},
		{"PartitionKey eq 'p1' and PartitionKey eq 'p2'", 0, "", 0, 1},
		{"Missing eq 1", 0, "", 0, 1},
	} {
		o := &aztables.ListEntitiesOptions{}
		if q.filter != "" {
			o.Filter = to.Ptr(q.filter)
		}
		if q.top > 0 {
			o.Top = to.Ptr(q.top)
		}
		got, pages := keysOf(t, c, o)
		first := ""
		if len(got) > 0 {
			first = got[0]
		}
		if len(got) != q.n || first != q.first || pages != q.pages {
			t.Errorf("%q top %d: %d entities from %q in %d pages, want %d from %q in %d", q.filter, q.top, len(got), first, pages, q.n, q.first, q.pages)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Errorf("%q: %s before %s", q.filter, got[i-1], got[i])
			}
		}
	}
}

func TestQueryOrderUTF16(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "order")
	// In UTF-16, U+E000 (one unit, 0xE000) sorts above U+10000 (a
	// surrogate pair, 0xD800 first); in UTF-8 byte order it is the
	// other way round.
	for _, rk := range []string{"\uE000", "\U00010000", "a", "\uFFFD"} {
		b, _ := json.Marshal(map[string]string{"PartitionKey": "p", "RowKey": rk})
		if _, err := c.AddEntity(context.Background(), b, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := keysOf(t, c, nil)
	want := []string{"p/a", "p/\U00010000", "p/\uE000", "p/\uFFFD"}
	if !equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
}

func TestQueryContinuationAndSelect(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "cont")
	fill(t, c, 2, 3)

	resp, body := s.raw(t, "GET", "cont()?$top=2&$filter="+url.QueryEscape("RowKey ne 'x'"), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	npk, nrk := resp.Header.Get("x-ms-continuation-NextPartitionKey"), resp.Header.Get("x-ms-continuation-NextRowKey")
	// Azure's form: 1!<length>!<base64, '=' as '-'>.
	if npk != "1!4!cDA-" || nrk != "1!8!cjAwMg--" {
		t.Fatalf("continuation %q %q, want 1!4!cDA- 1!8!cjAwMg--", npk, nrk)
	}
	if !strings.HasPrefix(string(body), `{"odata.metadata":"`+s.url+`/$metadata#cont","value":[{"odata.etag":"W/\"datetime'`) {
		t.Fatalf("page body %s", body)
	}
	resp, body = s.raw(t, "GET", "cont()?$top=2&NextPartitionKey="+url.QueryEscape(npk)+"&NextRowKey="+url.QueryEscape(nrk)+"&$select=RowKey,N,Nope", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var page struct {
		Value []map[string]any `json:"value"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Value) != 2 || page.Value[0]["RowKey"] != "r002" || page.Value[1]["RowKey"] != "r000" {
		t.Fatalf("second page %s", body)
	}
	// $select: the named properties only; one the entity lacks is null.
	v := page.Value[0]
	if _, ok := v["Nope"]; !ok || v["Nope"] != nil || v["PartitionKey"] != nil || v["N"] != 2.0 {
		t.Fatalf("selected entity %v", v)
	}
	if !regexp.MustCompile(`\$metadata#cont&\$select=RowKey,N,Nope"`).Match(body) {
		t.Errorf("odata.metadata without the $select: %s", body)
	}
}

func TestQueryErrors(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "errs")
	for _, o := range []*aztables.ListEntitiesOptions{
		{Top: to.Ptr[int32](1001)},
		{Top: to.Ptr[int32](-1)},
		{Filter: to.Ptr("Name eq 'unterminated")},
		{Filter: to.Ptr("Name eq")},
		{Filter: to.Ptr("(Name eq 'a'")},
	} {
		_, err := c.NewListEntitiesPager(o).NextPage(context.Background())
		wantCode(t, err, http.StatusBadRequest, "InvalidInput")
	}
	_, err := s.service(t).NewClient("nosuch").NewListEntitiesPager(nil).NextPage(context.Background())
	wantCode(t, err, http.StatusNotFound, "TableNotFound")
}

// TestQueryFilterRules answers, over HTTP, one filter per point of
// Azure's evaluation that docs/EMULATOR.md ("Filters") settles with its
// evidence: numbers widened to the property's type and never narrowed,
// other types ordered below the literal, a missing property false for
// every operator, a bare Boolean property, $top=0, the forms Azure
// answers 501 and the literals it answers 400.
func TestQueryFilterRules(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "rules")
	for _, body := range []string{
		`{"PartitionKey":"p","RowKey":"i32","N":3}`,
		`{"PartitionKey":"p","RowKey":"i64","N":"3","N@odata.type":"Edm.Int64"}`,
		`{"PartitionKey":"p","RowKey":"dbl","N":3.0,"N@odata.type":"Edm.Double"}`,
		`{"PartitionKey":"p","RowKey":"str","N":"3"}`,
		`{"PartitionKey":"p","RowKey":"guid","N":"68260b3f-beab-45e2-b900-33e2b442e724","N@odata.type":"Edm.Guid"}`,
		`{"PartitionKey":"p","RowKey":"dt","N":"2020-01-22T00:00:00Z","N@odata.type":"Edm.DateTime"}`,
		`{"PartitionKey":"p","RowKey":"bin","N":"Aw==","N@odata.type":"Edm.Binary"}`,
		`{"PartitionKey":"p","RowKey":"none"}`,
		`{"PartitionKey":"p","RowKey":"bt","B":true}`,
		`{"PartitionKey":"p","RowKey":"bf","B":false}`,
	} {
		if _, err := c.AddEntity(context.Background(), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	const all = "bf bin bt dbl dt guid i32 i64 none str"
	const withN = "bin dbl dt guid i32 i64 str"
	for _, q := range []struct {
		filter, top string
		status      int
		code, rows  string
	}{
		// Widened, never narrowed.
		{"N eq 3", "", 200, "", "dbl i32 i64"},
		{"N eq 3L", "", 200, "", "dbl i64"},
		{"N eq 3.0", "", 200, "", "dbl"},
		{"N eq 3D", "", 200, "", "dbl"},
		{"N eq 3E0", "", 200, "", "dbl"},
		{"N ge 3L", "", 200, "", "dbl i64"},
		// Other types: eq, gt, ge false; ne, lt, le true.
		{"N ne 3", "", 200, "", "bin dt guid str"},
		{"N lt 3", "", 200, "", "bin dt guid str"},
		{"N le 3.0", "", 200, "", withN},
		{"N gt '3'", "", 200, "", ""},
		{"N eq '3'", "", 200, "", "str"},
		{"N le guid'68260b3f-beab-45e2-b900-33e2b442e724'", "", 200, "", withN},
		{"N ge datetime'2020-01-22T00:00:00Z'", "", 200, "", "dt"},
		{"N gt X'02'", "", 200, "", "bin"},
		{"not (N eq 3)", "", 200, "", "bf bin bt dt guid none str"},
		// A missing property: false, ne included; true under not.
		{"Missing ne 1", "", 200, "", ""},
		{"not (Missing ne 1)", "", 200, "", all},
		// A bare property is true only for a Boolean true.
		{"B", "", 200, "", "bt"},
		{"not B", "", 200, "", "bf bin dbl dt guid i32 i64 none str"},
		{"B or N eq 3.0", "", 200, "", "bt dbl"},
		{"N", "", 200, "", ""},
		{"true", "", 200, "", all},
		{"false", "", 200, "", ""},
		// $top=0: no entity, no continuation.
		{"", "0", 200, "", ""},
		{"B", "0", 200, "", ""},
		// Forms Azure does not implement, malformed literals.
		{"1 eq 2", "", 501, "NotImplemented", ""},
		{"N eq B", "", 501, "NotImplemented", ""},
		{"3 eq N", "", 501, "NotImplemented", ""},
		{"N eq 5LL", "", 400, "InvalidInput", ""},
		{"N eq null", "", 400, "InvalidInput", ""},
		{"N eq 99999999999", "", 400, "InvalidInput", ""},
		{"", "-1", 400, "InvalidInput", ""},
	} {
		v := url.Values{}
		if q.filter != "" {
			v.Set("$filter", q.filter)
		}
		if q.top != "" {
			v.Set("$top", q.top)
		}
		resp, body := s.raw(t, http.MethodGet, "rules()?"+strings.ReplaceAll(v.Encode(), "+", "%20"), nil, nil)
		if resp.StatusCode != q.status || errCode(body) != q.code {
			t.Errorf("%q $top=%q: %d %s, want %d %s: %s", q.filter, q.top, resp.StatusCode, errCode(body), q.status, q.code, body)
			continue
		}
		if q.status != 200 {
			continue
		}
		var page struct {
			Value []struct{ RowKey string }
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, e := range page.Value {
			rows = append(rows, e.RowKey)
		}
		if got := strings.Join(rows, " "); got != q.rows {
			t.Errorf("%q $top=%q: rows %q, want %q", q.filter, q.top, got, q.rows)
		}
		if h := resp.Header.Get("x-ms-continuation-NextPartitionKey"); h != "" {
			t.Errorf("%q $top=%q: a continuation (%s) on a page that holds every match", q.filter, q.top, h)
		}
	}
	// A listing of tables reads its $filter and $top alike.
	for _, q := range []struct {
		query string
		want  string
	}{
		{"$top=0", `"value":[]`},
		{"$filter=TableName%20eq%20'rules'&$top=0", `"value":[]`},
		{"$filter=TableName%20eq%20'rules'", `"TableName":"rules"`},
	} {
		resp, body := s.raw(t, http.MethodGet, "Tables?"+q.query, nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(string(body), q.want) || resp.Header.Get("x-ms-continuation-NextTableName") != "" {
			t.Errorf("Tables?%s: %d %s (NextTableName %q), want 200 with %s", q.query, resp.StatusCode, body, resp.Header.Get("x-ms-continuation-NextTableName"), q.want)
		}
	}
	resp, body := s.raw(t, http.MethodGet, "Tables?$filter=1%20eq%202", nil, nil)
	if resp.StatusCode != 501 || errCode(body) != "NotImplemented" {
		t.Errorf("Tables?$filter=1 eq 2: %d %s, want 501 NotImplemented", resp.StatusCode, body)
	}
}

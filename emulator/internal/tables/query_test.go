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
		{Top: to.Ptr[int32](0)},
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

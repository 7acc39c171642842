package integration_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/tools/testenv"
)

// keys' filters and classification, run on a service: what the service
// selects for each filter the builders make is what the same condition
// selects in Go. (A test of package keys that imports tools/testenv would
// make go test compile the emulator and everything between it and keys a
// second time, against keys' internal tests.)

type filterGUID [16]byte

type filterRow struct {
	PK, RK string
	Name   string
	Age    int32
	Big    int64
	Score  float64
	When   time.Time
	ID     filterGUID
	Blob   []byte
	Active bool
}

func (r filterRow) entity() map[string]any {
	g := r.ID
	return map[string]any{
		"PartitionKey": r.PK, "RowKey": r.RK,
		"Name": r.Name,
		"Age":  r.Age,
		"Big":  strconv.FormatInt(r.Big, 10), "Big@odata.type": "Edm.Int64",
		"Score": r.Score, "Score@odata.type": "Edm.Double",
		"When": r.When.UTC().Format("2006-01-02T15:04:05.0000000Z"), "When@odata.type": "Edm.DateTime",
		"ID": fmt.Sprintf("%x-%x-%x-%x-%x", g[0:4], g[4:6], g[6:8], g[8:10], g[10:16]), "ID@odata.type": "Edm.Guid",
		"Blob": base64.StdEncoding.EncodeToString(r.Blob), "Blob@odata.type": "Edm.Binary",
		"Active": r.Active,
	}
}

// keyCmp is the service's key order: ordinal UTF-16 code units.
func keyCmp(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func filterRows() []filterRow {
	sales := []string{
		"email_a", "email_azure", "email_b", "empid_000100", "empid_000150", "empid_000199", "empid_000200",
		"it's", keys.Join("x_y", "z"), "\uffff", "\U00010000", "a\uffffb", "a\U00010000", "é",
	}
	pk2 := keys.Join("O'Brien", "x")
	pk3 := "日本\U0001F600"
	type k struct{ pk, rk string }
	var ks []k
	for _, rk := range sales {
		ks = append(ks, k{"Sales", rk})
	}
	ks = append(ks, k{pk2, keys.Join("a_b", "c")}, k{pk2, keys.Join("a", "b_c")}, k{pk3, "1"}, k{pk3, "2"})
	names := []string{"Alice", "O'Brien ') or (PartitionKey ne '", "日本\U0001F600", "''", "a_b"}
	base := time.Date(2014, 8, 22, 0, 50, 32, 0, time.UTC)
	var rows []filterRow
	for i, key := range ks {
		rows = append(rows, filterRow{
			PK: key.pk, RK: key.rk,
			Name:   names[i%len(names)],
			Age:    int32(20 + i),
			Big:    int64(i-5) << 35,
			Score:  float64(i) / 2,
			When:   base.Add(time.Duration(i) * 36 * time.Hour).Add(time.Duration(i) * 100), // 100 ns steps
			ID:     filterGUID{byte(i), 0xab, 0xcd, 15: byte(255 - i)},
			Blob:   []byte{byte(i), '\'', 0},
			Active: i%3 == 0,
		})
	}
	return rows
}

// TestFiltersOnAzurite runs every builder shape as a query and checks the
// service returns exactly the rows the same condition selects in Go.
func TestFiltersOnAzurite(t *testing.T) {
	acct := testenv.Account(t)
	client := testenv.Table(t, acct)
	ctx := context.Background()
	rows := filterRows()
	for _, r := range rows {
		if err := keys.ValidateKey("PartitionKey", r.PK); err != nil {
			t.Fatal(err)
		}
		if err := keys.ValidateKey("RowKey", r.RK); err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(r.entity())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.AddEntity(ctx, body, nil); err != nil {
			t.Fatalf("insert %q/%q: %v", r.PK, r.RK, err)
		}
	}
	pk2, pk3 := keys.Join("O'Brien", "x"), "日本\U0001F600"
	r5 := rows[5]
	tests := []struct {
		name  string
		f     keys.Filter
		class keys.Class
		want  func(r filterRow) bool
	}{
		{"point", keys.And(keys.PK().Eq("Sales"), keys.RK().Eq("it's")), keys.Point,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK == "it's" }},
		{"point escaped separator", keys.And(keys.PK().Eq(pk2), keys.RK().Eq(keys.Join("a_b", "c"))), keys.Point,
			func(r filterRow) bool { return r.PK == pk2 && r.RK == "a`_b_c" }},
		{"point non-BMP", keys.And(keys.PK().Eq("Sales"), keys.RK().Eq("\U00010000")), keys.Point,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK == "\U00010000" }},
		{"partition unicode", keys.PK().Eq(pk3), keys.PartitionScan,
			func(r filterRow) bool { return r.PK == pk3 }},
		{"prefix", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("email_a")), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && (r.RK == "email_a" || r.RK == "email_azure") }},
		{"prefix escaped part", keys.And(keys.PK().Eq(pk2), keys.RK().Prefix(keys.Join("a_b", ""))), keys.Range,
			func(r filterRow) bool { return r.PK == pk2 && r.RK == "a`_b_c" }},
		{"prefix U+FFFF", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("a\uffff")), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK == "a\uffffb" }},
		{"prefix only U+FFFF", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("\uffff")), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK == "\uffff" }},
		{"prefix non-BMP", keys.And(keys.PK().Eq("Sales"), keys.RK().Prefix("a\U00010000")), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK == "a\U00010000" }},
		{"prefix of partitions", keys.PK().Prefix("O'Brien_"), keys.TableScan,
			func(r filterRow) bool { return r.PK == pk2 }},
		{"between", keys.And(keys.PK().Eq("Sales"), keys.RK().Between(keys.Join("empid", keys.PadInt(100, 6)), keys.Join("empid", keys.PadInt(199, 6)))), keys.Range,
			func(r filterRow) bool {
				return r.PK == "Sales" && keyCmp(r.RK, "empid_000100") >= 0 && keyCmp(r.RK, "empid_000199") <= 0
			}},
		{"gt lt", keys.And(keys.PK().Eq("Sales"), keys.RK().Gt("empid_000100"), keys.RK().Lt("empid_000200")), keys.Range,
			func(r filterRow) bool {
				return r.PK == "Sales" && keyCmp(r.RK, "empid_000100") > 0 && keyCmp(r.RK, "empid_000200") < 0
			}},
		{"ge", keys.And(keys.PK().Eq("Sales"), keys.RK().Ge("é")), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && keyCmp(r.RK, "é") >= 0 }},
		{"le with property", keys.And(keys.PK().Eq("Sales"), keys.RK().Le("email_b"), keys.Prop("Active").Eq(true)), keys.Range,
			func(r filterRow) bool { return r.PK == "Sales" && keyCmp(r.RK, "email_b") <= 0 && r.Active }},
		{"rk ne", keys.And(keys.PK().Eq("Sales"), keys.RK().Ne("it's")), keys.PartitionScan,
			func(r filterRow) bool { return r.PK == "Sales" && r.RK != "it's" }},
		{"or of rowkeys", keys.And(keys.PK().Eq("Sales"), keys.Or(keys.RK().Eq("email_a"), keys.RK().Eq("é"))), keys.PartitionScan,
			func(r filterRow) bool { return r.PK == "Sales" && (r.RK == "email_a" || r.RK == "é") }},
		{"not", keys.And(keys.PK().Eq(pk3), keys.Not(keys.RK().Eq("1"))), keys.PartitionScan,
			func(r filterRow) bool { return r.PK == pk3 && r.RK != "1" }},
		{"string with quotes", keys.Prop("Name").Eq("O'Brien ') or (PartitionKey ne '"), keys.TableScan,
			func(r filterRow) bool { return r.Name == "O'Brien ') or (PartitionKey ne '" }},
		{"string of quotes", keys.Prop("Name").Eq("''"), keys.TableScan,
			func(r filterRow) bool { return r.Name == "''" }},
		{"string non-BMP", keys.Prop("Name").Eq("日本\U0001F600"), keys.TableScan,
			func(r filterRow) bool { return r.Name == "日本\U0001F600" }},
		{"string with separator", keys.Prop("Name").Ne("a_b"), keys.TableScan,
			func(r filterRow) bool { return r.Name != "a_b" }},
		{"int32", keys.Prop("Age").Gt(int32(25)), keys.TableScan,
			func(r filterRow) bool { return r.Age > 25 }},
		{"int", keys.Prop("Age").Le(22), keys.TableScan,
			func(r filterRow) bool { return r.Age <= 22 }},
		{"int64 negative", keys.Prop("Big").Lt(int64(0)), keys.TableScan,
			func(r filterRow) bool { return r.Big < 0 }},
		{"int64 eq", keys.Prop("Big").Eq(int64(3) << 35), keys.TableScan,
			func(r filterRow) bool { return r.Big == 3<<35 }},
		{"double integral", keys.Prop("Score").Eq(3.0), keys.TableScan,
			func(r filterRow) bool { return r.Score == 3.0 }},
		{"double", keys.Prop("Score").Ge(2.5), keys.TableScan,
			func(r filterRow) bool { return r.Score >= 2.5 }},
		{"datetime", keys.Prop("When").Gt(r5.When), keys.TableScan,
			func(r filterRow) bool { return r.When.After(r5.When) }},
		{"filterGUID", keys.Prop("ID").Eq(r5.ID), keys.TableScan,
			func(r filterRow) bool { return r.ID == r5.ID }},
		{"binary", keys.Prop("Blob").Eq(r5.Blob), keys.TableScan,
			func(r filterRow) bool { return string(r.Blob) == string(r5.Blob) }},
		{"bool and or", keys.And(keys.PK().Eq("Sales"), keys.Or(keys.Prop("Active").Eq(false), keys.Prop("Age").Ge(30))), keys.PartitionScan,
			func(r filterRow) bool { return r.PK == "Sales" && (!r.Active || r.Age >= 30) }},
		{"zero filter", keys.Filter{}, keys.TableScan,
			func(r filterRow) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c := keys.Classify(tt.f); c != tt.class {
				t.Errorf("Classify = %v, want %v", c, tt.class)
			}
			text, err := tt.f.Build()
			if err != nil {
				t.Fatal(err)
			}
			if parsed, err := keys.ParseFilter(text); err != nil || !parsed.Equal(tt.f) {
				t.Fatalf("ParseFilter(%q) = %v, %v", text, parsed, err)
			}
			var want []string
			for _, r := range rows {
				if tt.want(r) {
					want = append(want, r.PK+"|"+r.RK)
				}
			}
			got := filterQuery(t, client, text)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("filter %s\n got  %q\n want %q", text, got, want)
			}
		})
	}
}

// TestMalformedFilterIsCaughtClientSide shows why ParseFilter is strict:
// plain Azurite answers an unterminated string literal with 200 and no rows,
// where Azure (and the strict harness) answer the raw client's query with
// 400.
func TestMalformedFilterIsCaughtClientSide(t *testing.T) {
	client := testenv.Table(t, testenv.Account(t))
	ctx := context.Background()
	body, _ := json.Marshal(map[string]any{"PartitionKey": "a", "RowKey": "1"})
	if _, err := client.AddEntity(ctx, body, nil); err != nil {
		t.Fatal(err)
	}
	const bad = "PartitionKey eq 'a"
	if _, err := keys.ParseFilter(bad); err == nil {
		t.Fatalf("ParseFilter(%q) accepted an unterminated string", bad)
	}
	if testenv.Lenient() {
		if got := filterQuery(t, client, bad); len(got) != 0 {
			t.Logf("Azurite now returns %q for %q", got, bad)
		}
		return
	}
	filter := bad
	_, err := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter}).NextPage(ctx)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest {
		t.Errorf("the raw client's query %q = %v, want Azure's 400", bad, err)
	}
}

func filterQuery(t *testing.T, client *aztables.Client, filter string) []string {
	t.Helper()
	opts := &aztables.ListEntitiesOptions{}
	if filter != "" {
		opts.Filter = &filter
	}
	pager := client.NewListEntitiesPager(opts)
	got := []string{}
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query %q: %v", filter, err)
		}
		for _, e := range page.Entities {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(e, &k); err != nil {
				t.Fatal(err)
			}
			got = append(got, k.PartitionKey+"|"+k.RowKey)
		}
	}
	return got
}

package tables_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/emulator/internal/auth"
	"github.com/tablekit/tablekit/emulator/internal/tables"
)

// etagForm is Azure's ETag: the write time with up to 7 fractional
// digits, trailing zeros dropped (real sessions: 43.491042Z).
var etagForm = regexp.MustCompile(`^W/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d(\.\d{0,6}[1-9])?Z'"$`)

func TestTables(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	svc := s.service(t)

	if _, err := svc.CreateTable(ctx, "Alpha", nil); err != nil {
		t.Fatal(err)
	}
	_, err := svc.CreateTable(ctx, "alpha", nil)
	wantCode(t, err, http.StatusConflict, "TableAlreadyExists")
	_, err = svc.CreateTable(ctx, "ab", nil)
	wantCode(t, err, http.StatusBadRequest, "OutOfRangeInput")
	_, err = svc.CreateTable(ctx, "1abc", nil)
	wantCode(t, err, http.StatusBadRequest, "InvalidResourceName")
	_, err = svc.CreateTable(ctx, "Tables", nil)
	wantCode(t, err, http.StatusBadRequest, "InvalidResourceName")
	for _, n := range []string{"beta", "gamma", "delta"} {
		if _, err := svc.CreateTable(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
	}

	// All tables, two a page: NextTableName carries the pages.
	var names []string
	pages := 0
	pg := svc.NewListTablesPager(&aztables.ListTablesOptions{Top: to.Ptr[int32](2)})
	for pg.More() {
		p, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tb := range p.Tables {
			names = append(names, *tb.Name)
		}
	}
	if want := []string{"Alpha", "beta", "delta", "gamma"}; !equal(names, want) || pages != 2 {
		t.Fatalf("tables %v in %d pages, want %v in 2", names, pages, want)
	}
	// A full page continues at the next table, matched or not, as
	// Azure's does: the token is the next table's lower-case name,
	// U+0001 and a FILETIME; the last page is empty.
	var sizes []int
	var tokens []string
	pg = svc.NewListTablesPager(&aztables.ListTablesOptions{Top: to.Ptr[int32](2), Filter: to.Ptr("TableName lt 'c'")})
	for pg.More() {
		p, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Tables))
		if p.NextTableName != nil {
			tokens = append(tokens, *p.NextTableName)
		}
	}
	if !slices.Equal(sizes, []int{2, 0}) || len(tokens) != 1 || !regexp.MustCompile(`^1!32!ZGVsdGEBM[A-Za-z0-9+/]{21}--$`).MatchString(tokens[0]) {
		t.Errorf("pages of %v, tokens %q; want [2 0], one naming delta with a FILETIME (1!32!ZGVsdGEB...)", sizes, tokens)
	}
	// A filter on TableName.
	pg = svc.NewListTablesPager(&aztables.ListTablesOptions{Filter: to.Ptr("TableName ge 'c' and TableName lt 'e'")})
	p, err := pg.NextPage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tables) != 1 || *p.Tables[0].Name != "delta" {
		t.Fatalf("filtered tables %v, want [delta]", p.Tables)
	}

	if _, err := svc.DeleteTable(ctx, "ALPHA", nil); err != nil {
		t.Fatal(err)
	}
	_, err = svc.DeleteTable(ctx, "alpha", nil)
	wantCode(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = svc.NewClient("alpha").AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)
	wantCode(t, err, http.StatusNotFound, "TableNotFound")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEntityCRUD(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	c := s.table(t, "crud")

	body := []byte(`{"PartitionKey":"p1","RowKey":"r1","Name":"Ann","Age":41,"Big@odata.type":"Edm.Int64","Big":"9007199254740993","Price@odata.type":"Edm.Double","Price":3.0,"When@odata.type":"Edm.DateTime","When":"2024-02-03T04:05:06.1234567Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Raw@odata.type":"Edm.Binary","Raw":"AQID","Ok":true}`)
	add, err := c.AddEntity(ctx, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !etagForm.MatchString(string(add.ETag)) {
		t.Fatalf("insert ETag %q is not in the service's form", add.ETag)
	}
	_, err = c.AddEntity(ctx, body, nil)
	wantCode(t, err, http.StatusConflict, "EntityAlreadyExists")

	got, err := c.GetEntity(ctx, "p1", "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag != add.ETag {
		t.Fatalf("read ETag %q, inserted %q", got.ETag, add.ETag)
	}
	var m map[string]any
	if err := json.Unmarshal(got.Value, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"odata.etag": string(add.ETag), "Name": "Ann", "Age": 41.0, "Big@odata.type": "Edm.Int64", "Big": "9007199254740993",
		"Price": 3.0, "When@odata.type": "Edm.DateTime", "When": "2024-02-03T04:05:06.1234567Z", "Id@odata.type": "Edm.Guid",
		"Raw@odata.type": "Edm.Binary", "Raw": "AQID", "Ok": true,
	} {
		if m[k] != want {
			t.Errorf("%s = %#v, want %#v", k, m[k], want)
		}
	}
	if ts, _ := m["Timestamp"].(string); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,6}[1-9])?Z$`).MatchString(ts) {
		t.Errorf("Timestamp %q is not the service's form", ts)
	}
	if _, ok := m["Timestamp@odata.type"]; ok {
		t.Errorf("minimal metadata carries Timestamp@odata.type")
	}
	// The double keeps its fraction on the wire: 3.0, not 3.
	resp, raw := s.raw(t, "GET", "crud(PartitionKey='p1',RowKey='r1')", nil, nil)
	if resp.StatusCode != http.StatusOK || !regexp.MustCompile(`"Price":3\.0[,}]`).Match(raw) {
		t.Errorf("Price not written as 3.0: %d %s", resp.StatusCode, raw)
	}
	if resp.Header.Get("ETag") != string(add.ETag) {
		t.Errorf("ETag header %q, want %q", resp.Header.Get("ETag"), add.ETag)
	}

	// $select.
	sel, err := c.GetEntity(ctx, "p1", "r1", &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatNone)})
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`odata`).Match(sel.Value) {
		t.Errorf("nometadata body has annotations: %s", sel.Value)
	}

	// Replace with the right ETag, then with the old one (412).
	rep, err := c.UpdateEntity(ctx, []byte(`{"PartitionKey":"p1","RowKey":"r1","Name":"Bob"}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &add.ETag})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ETag == add.ETag {
		t.Fatal("a write did not change the ETag")
	}
	_, err = c.UpdateEntity(ctx, []byte(`{"PartitionKey":"p1","RowKey":"r1","Name":"Cy"}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeReplace, IfMatch: &add.ETag})
	wantCode(t, err, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")
	// Merge keeps Name, adds Age.
	if _, err := c.UpdateEntity(ctx, []byte(`{"PartitionKey":"p1","RowKey":"r1","Age":7}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &rep.ETag}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetEntity(ctx, "p1", "r1", nil)
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	json.Unmarshal(got.Value, &m)
	if m["Name"] != "Bob" || m["Age"] != 7.0 || m["Big"] != nil {
		t.Fatalf("after replace and merge: %s", got.Value)
	}
	// Update of a missing entity: 404; upserts create.
	any := azcore.ETagAny
	_, err = c.UpdateEntity(ctx, []byte(`{"PartitionKey":"p1","RowKey":"nope"}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge, IfMatch: &any})
	wantCode(t, err, http.StatusNotFound, "ResourceNotFound")
	for _, mode := range []aztables.UpdateMode{aztables.UpdateModeMerge, aztables.UpdateModeReplace} {
		if _, err := c.UpsertEntity(ctx, []byte(`{"PartitionKey":"p2","RowKey":"`+string(mode)+`","X":1}`), &aztables.UpsertEntityOptions{UpdateMode: mode}); err != nil {
			t.Fatalf("upsert %s: %v", mode, err)
		}
		if _, err := c.GetEntity(ctx, "p2", string(mode), nil); err != nil {
			t.Fatalf("read after upsert %s: %v", mode, err)
		}
	}
	// Delete: with a stale ETag 412, then *, then 404.
	_, err = c.DeleteEntity(ctx, "p1", "r1", &aztables.DeleteEntityOptions{IfMatch: &add.ETag})
	wantCode(t, err, http.StatusPreconditionFailed, "UpdateConditionNotSatisfied")
	if _, err := c.DeleteEntity(ctx, "p1", "r1", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteEntity(ctx, "p1", "r1", nil)
	wantCode(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = c.GetEntity(ctx, "p1", "r1", nil)
	wantCode(t, err, http.StatusNotFound, "ResourceNotFound")
	_ = time.Now
}

// TestNoCredentials: a request without credentials is 401
// NoAuthenticationInformation with Azure's WWW-Authenticate challenge,
// through the SDK's client without a credential.
func TestNoCredentials(t *testing.T) {
	s := start(t, tables.Config{})
	s.table(t, "nocreds")
	c, err := aztables.NewClientWithNoCredential(s.url+"/nocreds", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetEntity(context.Background(), "p", "r", nil)
	wantCode(t, err, http.StatusUnauthorized, "NoAuthenticationInformation")
	var re *azcore.ResponseError
	errors.As(err, &re)
	if got := re.RawResponse.Header.Get("WWW-Authenticate"); got != auth.WWWAuthenticate {
		t.Errorf("WWW-Authenticate: %q, want %q", got, auth.WWWAuthenticate)
	}
}

// TestNullTimestampIgnored: a body's "Timestamp": null is the client
// saying nothing (the .NET and Python SDKs send it for a new entity);
// Azure inserts it (204), alone and four in a transaction, and stamps its
// own Timestamp.
func TestNullTimestampIgnored(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	c := s.table(t, "nullts")
	if _, err := c.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r","Timestamp":null,"Name":"Ann"}`), nil); err != nil {
		t.Fatal(err)
	}
	var batch []aztables.TransactionAction
	for _, rk := range []string{"a", "b", "c", "d"} {
		batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
			Entity: []byte(`{"PartitionKey":"p","RowKey":"` + rk + `","Timestamp":null}`)})
	}
	if _, err := c.SubmitTransaction(ctx, batch, nil); err != nil {
		t.Fatal(err)
	}
	for _, rk := range []string{"r", "a", "d"} {
		got, err := c.GetEntity(ctx, "p", rk, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(got.Value, &m); err != nil {
			t.Fatal(err)
		}
		if ts, _ := m["Timestamp"].(string); ts == "" {
			t.Errorf("%s: no Timestamp in %s", rk, got.Value)
		}
	}
}

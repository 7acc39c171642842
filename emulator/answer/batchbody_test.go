package answer_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/emulator/answer"
)

// batchBody is a $batch body as aztables sends it: parts, each a change
// set of requests or (outside one) a bare request.
func batchBody(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--batch_1\r\n" + p)
	}
	b.WriteString("--batch_1--\r\n")
	return b.String()
}

func changeset(reqs ...string) string {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/mixed; boundary=changeset_1\r\n\r\n")
	for _, r := range reqs {
		b.WriteString("--changeset_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" + r + "\r\n")
	}
	b.WriteString("--changeset_1--\r\n")
	return b.String()
}

const batchType = "multipart/mixed; boundary=batch_1"

func TestParseBatch(t *testing.T) {
	const base = "http://127.0.0.1:10002/devstoreaccount1/"
	insert := "POST " + base + "orders HTTP/1.1\r\nContent-Type: application/json\r\nContent-ID: 1\r\nPrefer: return-no-content\r\n\r\n" + `{"PartitionKey":"p","RowKey":"r"}`
	merge := "POST " + base + "orders(PartitionKey='p',RowKey='it''s') HTTP/1.1\r\nX-HTTP-Method: merge\r\nIf-Match: *\r\n\r\n{}"
	del := "DELETE " + base + "orders(PartitionKey='p',RowKey='x%20y') HTTP/1.1\r\nIf-Match: W/\"1\"\r\n\r\n"
	noHeaders := "DELETE " + base + "orders(PartitionKey='p',RowKey='z') HTTP/1.1\r\n"
	query := "Content-Type: application/http\r\n\r\nGET " + base + "orders() HTTP/1.1\r\n\r\n"

	b, err := answer.ParseBatch(batchType, []byte(batchBody(changeset(insert, merge, del, noHeaders), query)))
	if err != nil {
		t.Fatal(err)
	}
	key := func(pk, rk string) answer.TablePath {
		return answer.TablePath{Account: "devstoreaccount1", Name: "orders", Parens: true, HasKeys: true, PartitionKey: pk, RowKey: rk}
	}
	want := []answer.BatchRequest{
		{Method: "POST", Path: answer.TablePath{Account: "devstoreaccount1", Name: "orders"},
			Header: http.Header{"Content-Type": {"application/json"}, "Content-Id": {"1"}, "Prefer": {"return-no-content"}},
			Body:   []byte(`{"PartitionKey":"p","RowKey":"r"}`), Query: url.Values{}},
		{Method: "MERGE", Path: key("p", "it's"), Header: http.Header{"X-Http-Method": {"merge"}, "If-Match": {"*"}}, Body: []byte("{}"), Query: url.Values{}},
		{Method: "DELETE", Path: key("p", "x y"), Header: http.Header{"If-Match": {`W/"1"`}}, Body: []byte{}, Query: url.Values{}},
		{Method: "DELETE", Path: key("p", "z"), Header: http.Header{}, Body: []byte{}, Query: url.Values{}},
	}
	if b.Others != 1 || len(b.Queries) != 1 || b.Queries[0].Method != "GET" || b.Queries[0].Path.Name != "orders" || b.ChangeSets != 1 {
		t.Errorf("Others = %d, Queries %v, ChangeSets %d; want 1, the GET of orders, 1", b.Others, b.Queries, b.ChangeSets)
	}
	// Two change sets: the first's operations are the changes.
	two, err := answer.ParseBatch(batchType, []byte(batchBody(changeset(insert), changeset(del))))
	if err != nil || two.ChangeSets != 2 || len(two.Changes) != 1 || two.Changes[0].Method != "POST" {
		t.Errorf("two change sets: %v, %d change sets, changes %v; want 2, the first's insert", err, two.ChangeSets, two.Changes)
	}
	if len(b.Changes) != len(want) {
		t.Fatalf("%d changes, want %d: %+v", len(b.Changes), len(want), b.Changes)
	}
	for i, w := range want {
		g := b.Changes[i]
		if len(g.Body) == 0 {
			g.Body = []byte{}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("change %d:\n got %+v %q\nwant %+v %q", i, g, g.Body, w, w.Body)
		}
	}

	empty, err := answer.ParseBatch(batchType, []byte(batchBody(changeset())))
	if err != nil || len(empty.Changes) != 0 || empty.Others != 0 {
		t.Errorf("an empty change set: %+v, %v", empty, err)
	}

	bad := []struct {
		name, contentType, body string
	}{
		{"no media type", "", batchBody(changeset(insert))},
		{"not multipart", "application/json", batchBody(changeset(insert))},
		{"no boundary", "multipart/mixed", batchBody(changeset(insert))},
		{"another boundary", "multipart/mixed; boundary=other", batchBody(changeset(insert))},
		{"no request line", batchType, batchBody(changeset(""))},
		{"no URL", batchType, batchBody(changeset("DELETE\r\n\r\n"))},
		{"bad URL", batchType, batchBody(changeset("DELETE http://h/%ZZ HTTP/1.1\r\n\r\n"))},
		{"not a table path", batchType, batchBody(changeset("DELETE " + base + "orders(PartitionKey='p') HTTP/1.1\r\n\r\n"))},
		{"bad headers", batchType, batchBody(changeset("DELETE " + base + "orders HTTP/1.1\r\nno colon\r\n\r\n"))},
		{"unterminated", batchType, "--batch_1\r\n" + changeset(insert)[:80]},
	}
	for _, c := range bad {
		if b, err := answer.ParseBatch(c.contentType, []byte(c.body)); err == nil {
			t.Errorf("%s: read as %+v", c.name, b)
		}
	}
}

// ChangeOf reads each operation as the service does: an insert without
// keys in its URL, an update or delete with them, any URL that names no
// table's entities refused, an unknown method left to fail at its index.
func TestChangeOf(t *testing.T) {
	const base = "http://127.0.0.1:10002/devstoreaccount1/"
	for _, c := range []struct {
		name, req string
		ok        bool
		kind      answer.ChangeKind
		table     string
		pk, rk    string
	}{
		{"insert", "POST " + base + "orders HTTP/1.1\r\n\r\n{}", true, answer.ChangeInsert, "orders", "", ""},
		{"insert with keys", "POST " + base + "orders(PartitionKey='p',RowKey='r') HTTP/1.1\r\n\r\n{}", false, 0, "", "", ""},
		{"replace", "PUT " + base + "orders(PartitionKey='p',RowKey='r') HTTP/1.1\r\n\r\n{}", true, answer.ChangeUpdate, "orders", "p", "r"},
		{"merge by X-HTTP-Method", "POST " + base + "orders(PartitionKey='p',RowKey='r') HTTP/1.1\r\nX-HTTP-Method: MERGE\r\n\r\n{}", true, answer.ChangeUpdate, "orders", "p", "r"},
		{"patch", "PATCH " + base + "orders(PartitionKey='p',RowKey='it''s') HTTP/1.1\r\n\r\n{}", true, answer.ChangeUpdate, "orders", "p", "it's"},
		{"update without keys", "PUT " + base + "orders HTTP/1.1\r\n\r\n{}", false, 0, "", "", ""},
		{"delete", "DELETE " + base + "orders(PartitionKey='p',RowKey='r') HTTP/1.1\r\n\r\n", true, answer.ChangeDelete, "orders", "p", "r"},
		{"delete without keys", "DELETE " + base + "orders HTTP/1.1\r\n\r\n", false, 0, "", "", ""},
		{"get", "GET " + base + "orders(PartitionKey='p',RowKey='r') HTTP/1.1\r\n\r\n", true, answer.ChangeUnsupported, "orders", "p", "r"},
		{"Tables", "POST " + base + "Tables HTTP/1.1\r\n\r\n{}", false, 0, "", "", ""},
		{"Tables('t')", "DELETE " + base + "Tables('orders') HTTP/1.1\r\n\r\n", false, 0, "", "", ""},
		{"$batch", "POST " + base + "$batch HTTP/1.1\r\n\r\n", false, 0, "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := answer.ParseBatch(batchType, []byte(batchBody(changeset(c.req))))
			if err != nil || len(b.Changes) != 1 {
				t.Fatalf("ParseBatch: %v, %d changes", err, len(b.Changes))
			}
			got, ok := answer.ChangeOf(b.Changes[0])
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if ok && (got.Kind != c.kind || got.Table != c.table || got.PartitionKey != c.pk || got.RowKey != c.rk) {
				t.Fatalf("got kind %v table %q keys (%q, %q); want %v %q (%q, %q)", got.Kind, got.Table, got.PartitionKey, got.RowKey, c.kind, c.table, c.pk, c.rk)
			}
		})
	}
}

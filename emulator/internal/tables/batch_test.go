package tables_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/emulator/internal/tables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

func action(typ aztables.TransactionType, pk, rk string) aztables.TransactionAction {
	return aztables.TransactionAction{ActionType: typ, Entity: []byte(fmt.Sprintf(`{"PartitionKey":%q,"RowKey":%q,"V":1}`, pk, rk))}
}

// batchFailure returns the 202 error's body: the failing operation's
// inner response.
func batchFailure(t *testing.T, err error) string {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
		t.Fatalf("error %v, want a 202 ResponseError", err)
	}
	return re.Error()
}

func TestBatchSDK(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	c := s.table(t, "batch")
	fill(t, c, 1, 3) // p0/r000..r002

	// Success: every kind of operation.
	_, err := c.SubmitTransaction(ctx, []aztables.TransactionAction{
		action(aztables.TransactionTypeAdd, "p0", "new"),
		action(aztables.TransactionTypeUpdateMerge, "p0", "r000"),
		action(aztables.TransactionTypeUpdateReplace, "p0", "r001"),
		action(aztables.TransactionTypeDelete, "p0", "r002"),
		action(aztables.TransactionTypeInsertMerge, "p0", "up1"),
		action(aztables.TransactionTypeInsertReplace, "p0", "up2"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := keysOf(t, c, nil)
	if want := []string{"p0/new", "p0/r000", "p0/r001", "p0/up1", "p0/up2"}; !equal(got, want) {
		t.Fatalf("after the batch: %v, want %v", got, want)
	}

	for _, c2 := range []struct {
		name    string
		actions []aztables.TransactionAction
		want    string
	}{
		{"exists", []aztables.TransactionAction{action(aztables.TransactionTypeAdd, "p0", "x1"), action(aztables.TransactionTypeAdd, "p0", "new")}, "EntityAlreadyExists"},
		{"partitions", []aztables.TransactionAction{action(aztables.TransactionTypeAdd, "p0", "x1"), action(aztables.TransactionTypeAdd, "p9", "x2")}, "CommandsInBatchActOnDifferentPartitions"},
		{"duplicate", []aztables.TransactionAction{action(aztables.TransactionTypeAdd, "p0", "x1"), action(aztables.TransactionTypeUpdateMerge, "p0", "x1")}, "InvalidDuplicateRow"},
		{"missing", []aztables.TransactionAction{action(aztables.TransactionTypeAdd, "p0", "x1"), action(aztables.TransactionTypeDelete, "p0", "nope")}, "ResourceNotFound"},
	} {
		err := func() error { _, err := c.SubmitTransaction(ctx, c2.actions, nil); return err }()
		body := batchFailure(t, err)
		if !strings.Contains(body, `"code":"`+c2.want+`"`) || !strings.Contains(body, `"value":"1:`) {
			t.Errorf("%s: failure body %s, want code %s at index 1", c2.name, body, c2.want)
		}
	}
	// All or nothing: x1, first in each failed batch, was never written.
	if _, err := c.GetEntity(ctx, "p0", "x1", nil); err == nil {
		t.Fatal("an operation of a failed transaction was applied")
	}
}

// Rec is the tablekit tests' entity.
type Rec struct {
	PartitionKey string
	RowKey       string
	ETag         string
	Name         string
	N            int64
}

func TestTablekit(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	tb, err := patterns.NewTable[Rec](s.account(t), "kit", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatalf("second CreateIfNotExists: %v", err)
	}
	r := Rec{PartitionKey: "p", RowKey: "a", Name: "Ann", N: 1 << 40}
	if err := tb.Insert(ctx, &r, nil); err != nil {
		t.Fatal(err)
	}
	if !etagForm.MatchString(r.ETag) {
		t.Fatalf("ETag %q", r.ETag)
	}
	if err := tb.Insert(ctx, &Rec{PartitionKey: "p", RowKey: "a"}, nil); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("second insert: %v, want ErrAlreadyExists", err)
	}
	got, err := tb.Get(ctx, "p", "a", nil)
	if err != nil || got != r {
		t.Fatalf("Get: %+v %v, want %+v", got, err, r)
	}
	if _, err := tb.Get(ctx, "p", "zz", nil); !errors.Is(err, tablekit.ErrNotFound) {
		t.Fatalf("Get of a missing entity: %v", err)
	}
	stale := r
	r.Name = "Bob"
	if err := tb.Replace(ctx, &r, nil); err != nil {
		t.Fatal(err)
	}
	if err := tb.Replace(ctx, &stale, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
		t.Fatalf("stale replace: %v", err)
	}

	// A transaction, then one that fails at its second operation.
	x := tb.Transaction()
	for i := range 10 {
		x.Insert(&Rec{PartitionKey: "p", RowKey: fmt.Sprintf("b%02d", i), N: int64(i)})
	}
	if _, err := x.Submit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Transaction().Insert(&Rec{PartitionKey: "p", RowKey: "c"}).Insert(&Rec{PartitionKey: "p", RowKey: "b03"}).Submit(ctx, nil)
	var te *tablekit.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || te.StatusCode != http.StatusConflict || te.Code != "EntityAlreadyExists" {
		t.Fatalf("failed transaction: %v, want operation 1, 409 EntityAlreadyExists", err)
	}
	// Alone in its change set, the failing operation has no index in
	// Azure's message; the client still names it.
	_, err = tb.Transaction().Insert(&Rec{PartitionKey: "p", RowKey: "b03"}).Submit(ctx, nil)
	if !errors.As(err, &te) || te.Index != 0 || te.Code != "EntityAlreadyExists" || strings.HasPrefix(te.Message, "0:") {
		t.Fatalf("failed one-operation transaction: %v (index %d, message %q), want operation 0, 409 EntityAlreadyExists", err, te.Index, te.Message)
	}

	// Pages of 4 through the opaque token, then all at once.
	var rows []string
	token := ""
	pages := 0
	for {
		p, err := tb.Page(ctx, keys.PK().Eq("p"), token, &patterns.QueryOptions{Top: 4})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range p.Items {
			rows = append(rows, it.RowKey)
		}
		if token = p.Token; token == "" {
			break
		}
	}
	if len(rows) != 11 || rows[0] != "a" || rows[10] != "b09" || pages != 3 {
		t.Fatalf("paged %v in %d pages", rows, pages)
	}
	n := 0
	for it, err := range tb.Query(ctx, keys.PK().Eq("p"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if it.PartitionKey != "p" {
			t.Fatalf("queried %+v", it)
		}
		n++
	}
	if n != 11 {
		t.Fatalf("Query returned %d entities, want 11", n)
	}
	if err := tb.Drop(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestBatchLimits(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	c := s.table(t, "blimits")
	var acts []aztables.TransactionAction
	for i := range 101 {
		acts = append(acts, action(aztables.TransactionTypeAdd, "p", fmt.Sprintf("r%03d", i)))
	}
	_, err := c.SubmitTransaction(ctx, acts, nil)
	body := batchFailure(t, err)
	if !strings.Contains(body, `"code":"InvalidInput"`) || !strings.Contains(body, `"value":"99:The batch request operation exceeds the maximum 100 changes per change set.`) {
		t.Fatalf("101 operations: %s", body)
	}
	// 100 operations of 40 KiB each: over the 4 MiB body limit.
	acts = acts[:0]
	pad := strings.Repeat("x", 40<<10)
	for i := range 100 {
		acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: []byte(fmt.Sprintf(`{"PartitionKey":"p","RowKey":"r%03d","S1":%q,"S2":%q}`, i, pad[:30000], pad[:12000]))})
	}
	_, err = c.SubmitTransaction(ctx, acts, nil)
	wantCode(t, err, http.StatusRequestEntityTooLarge, "RequestBodyTooLarge")
	if got, _ := keysOf(t, c, nil); len(got) != 0 {
		t.Fatalf("refused transactions wrote %d entities", len(got))
	}
}

// Many clients at once: writers on their own partitions, readers and
// queries across them, and every write's result visible afterwards.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	s := start(t, tables.Config{})
	c := s.table(t, "conc")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := c.UpsertEntity(ctx, []byte(fmt.Sprintf(`{"PartitionKey":"w%d","RowKey":"%03d","I":%d}`, w, i, i)), nil); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			pg := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Top: to.Ptr[int32](10)})
			for pg.More() {
				if _, err := pg.NextPage(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, _ := keysOf(t, c, nil); len(got) != 400 {
		t.Fatalf("%d entities after 400 concurrent writes", len(got))
	}
}

// TestBatchChangeSetsAndRetrieve: of two change sets the first is
// applied and the second refused 400, as "Performing entity group
// transactions" says; a batch holding one retrieve answers the entity
// (or 404) as its one part; a retrieve beside changes is refused.
func TestBatchChangeSetsAndRetrieve(t *testing.T) {
	s := start(t, tables.Config{})
	c := s.table(t, "sets")
	fill(t, c, 1, 1) // p0/r000
	base := s.url + "/sets"
	part := func(req string) string {
		return "--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n" + req + "\r\n"
	}
	changeset := func(boundary, req string) string {
		return "--batch_1\r\nContent-Type: multipart/mixed; boundary=" + boundary + "\r\n\r\n" +
			strings.ReplaceAll(part(req), "--cs", "--"+boundary) + "--" + boundary + "--\r\n"
	}
	insert := func(rk string) string {
		return "POST " + base + " HTTP/1.1\r\nContent-Type: application/json\r\nPrefer: return-no-content\r\n\r\n" + `{"PartitionKey":"p0","RowKey":"` + rk + `"}`
	}
	retrieve := func(rk string) string {
		return "--batch_1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nGET " + base + "(PartitionKey='p0',RowKey='" + rk + "') HTTP/1.1\r\nAccept: application/json;odata=nometadata\r\n\r\n"
	}
	send := func(body string) (int, string) {
		resp, b := s.raw(t, "POST", "$batch", map[string]string{"Content-Type": "multipart/mixed; boundary=batch_1"}, []byte(body+"--batch_1--\r\n"))
		return resp.StatusCode, string(b)
	}

	status, body := send(changeset("cs1", insert("first")) + changeset("cs2", insert("second")))
	if status != http.StatusAccepted || strings.Count(body, "HTTP/1.1 204") != 1 || strings.Count(body, "HTTP/1.1 400 Bad Request") != 1 {
		t.Errorf("two change sets: %d %s; want 202, the first's 204 and the second's 400", status, body)
	}
	if got, _ := keysOf(t, c, nil); !equal(got, []string{"p0/first", "p0/r000"}) {
		t.Errorf("after two change sets: %v; want the first's insert alone", got)
	}

	status, body = send(retrieve("r000"))
	if status != http.StatusAccepted || !strings.Contains(body, "HTTP/1.1 200 OK") || !strings.Contains(body, `{"PartitionKey":"p0","RowKey":"r000","Timestamp":`) || !strings.Contains(body, "ETag: W/") {
		t.Errorf("a lone retrieve: %d %s; want 202 holding 200 and the entity", status, body)
	}
	status, body = send(retrieve("nosuch"))
	if status != http.StatusAccepted || !strings.Contains(body, "HTTP/1.1 404 Not Found") || !strings.Contains(body, "ResourceNotFound") {
		t.Errorf("a lone retrieve of nothing: %d %s; want 202 holding 404 ResourceNotFound", status, body)
	}
	status, body = send(retrieve("r000") + changeset("cs1", insert("third")))
	if status != http.StatusBadRequest || errCode([]byte(body)) != "InvalidInput" {
		t.Errorf("a retrieve beside a change set: %d %s; want 400 InvalidInput", status, body)
	}
}

package patterns_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// wideRow has Width custom properties: Email and Width-1 others.
type wideRow struct {
	PartitionKey, RowKey, Email string
	Width                       int
}

func (r wideRow) MarshalEntity() (entity.Entity, error) {
	e := entity.Entity{PartitionKey: r.PartitionKey, RowKey: r.RowKey}
	e.Set("Email", entity.String(r.Email))
	for i := 1; i < r.Width; i++ {
		e.Set("P"+strconv.Itoa(i), entity.Int32(int32(i)))
	}
	return e, nil
}

func (r *wideRow) UnmarshalEntity(e entity.Entity) error {
	r.PartitionKey, r.RowKey = e.PartitionKey, e.RowKey
	if v, ok := e.Get("Email"); ok {
		r.Email, _ = v.V.(string)
	}
	r.Width = len(e.Properties)
	return nil
}

// An index copy carries the primary's properties plus the primary's
// RowKey: a primary of 252 properties makes a copy of 253, which Azure
// rejects (Azurite stores it). The copy goes through the entity layer, so
// the write is refused before any request and nothing is stored.
func TestIndexedTableRefusesACopyOverAzuresLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acct, counter := testenv.CountingAccount(t)
	x, err := patterns.NewIndexedTable(acct, testenv.TableName(t),
		[]patterns.Index[wideRow]{{Name: "email", Key: func(r *wideRow) string { return r.Email }}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.CreateIfNotExists(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Table().Drop(context.Background(), nil) })

	if err := x.Insert(ctx, &wideRow{PartitionKey: "Sales", RowKey: "ok", Email: "ok@contoso.com", Width: 200}, nil); err != nil {
		t.Fatalf("Insert of 200 properties: %v", err)
	}
	counter.Reset()
	err = x.Insert(ctx, &wideRow{PartitionKey: "Sales", RowKey: "wide", Email: "wide@contoso.com", Width: entity.MaxProperties}, nil)
	if !errors.Is(err, tablekit.ErrInvalidEntity) || !strings.Contains(err.Error(), "253 custom properties") {
		t.Fatalf("Insert of a primary whose copy has 253 properties = %v, want ErrInvalidEntity naming 253 properties", err)
	}
	if n := counter.Count(); n != 0 {
		t.Errorf("the refused Insert sent %d requests:\n%s", n, counter.Requests())
	}
	var rows []string
	for r, err := range x.Table().Query(ctx, keys.Filter{}, &patterns.QueryOptions{AllowTableScan: true}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r.RowKey)
	}
	if len(rows) != 2 { // "ok" and its copy
		t.Fatalf("stored rows %v, want the first primary and its copy only", rows)
	}
}

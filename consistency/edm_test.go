package consistency

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/internal/wire"
	"github.com/tablekit/tablekit/tools/testenv"
)

// Every EDM type survives a trip through the steps that copy entities:
// upsert-entity, move-entity, sync-copies and copy-props.
func TestStepsKeepEveryEDMType(t *testing.T) {
	acct := testenv.Account(t)
	ctx := context.Background()
	a, b, c := createTable(t, acct), createTable(t, acct), createTable(t, acct)
	g, err := entity.ParseGUID("c3a6f5d2-3b1e-4f7a-9d2c-0a1b2c3d4e5f")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]entity.Value{
		"Big":     entity.Int64(1<<53 + 1),
		"MinI64":  entity.Int64(-1 << 63),
		"Small":   entity.Int64(7),
		"I32":     entity.Int32(-5),
		"Three":   entity.Double(3.0),
		"Frac":    entity.Double(0.1),
		"Huge":    entity.Double(1e300),
		"NaN":     entity.Double(math.NaN()),
		"Inf":     entity.Double(math.Inf(1)),
		"NegInf":  entity.Double(math.Inf(-1)),
		"When":    entity.DateTime(time.Date(2012, 3, 4, 5, 6, 7, 123456700, time.UTC)),
		"Early":   entity.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 100, time.UTC)),
		"ID":      entity.Guid(g),
		"Photo":   entity.Binary([]byte{0, 1, 2, 0xff}),
		"Empty":   entity.Binary([]byte{}),
		"On":      entity.Bool(true),
		"Name":    entity.String("Ana O'Neil \"é\" \U0001F600"),
		"Numeric": entity.String("42"),
	}
	src := entity.Entity{PartitionKey: "p", RowKey: "r", Properties: props}
	body, err := src.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	copies, err := EncodeCopies(CopySpec{Table: c, PartitionKey: "copy", RowKey: "r"})
	if err != nil {
		t.Fatal(err)
	}
	withCopies := src
	withCopies.Properties = map[string]entity.Value{"Copies": entity.String(copies)}
	for k, v := range props {
		withCopies.Properties[k] = v
	}
	wbody, err := withCopies.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for k := range props {
		names[k] = "C" + k
	}
	tx := NewTransaction(
		UpsertEntity(a, body, tablekit.UpsertReplace),
		MoveEntity(EntityRef{a, "p", "r"}, EntityRef{Table: b, PartitionKey: "moved"}),
		UpsertEntity(a, wbody, tablekit.UpsertMerge),
		SyncCopies(EntityRef{a, "p", "r"}, "Copies"),
		UpsertEntity(c, []byte(`{"PartitionKey":"target","RowKey":"t"}`), tablekit.UpsertReplace),
		CopyProps(EntityRef{a, "p", "r"}, EntityRef{c, "target", "t"}, names),
	)
	if err := Apply(ctx, acct, tx, nil, nil); err != nil {
		t.Fatal(err)
	}
	check := func(ref EntityRef, rename func(string) string, extra ...string) {
		t.Helper()
		got := typedEntity(t, acct, ref)
		want := map[string]entity.Value{}
		for k, v := range props {
			want[rename(k)] = v
		}
		for _, k := range extra {
			want[k] = got.Properties[k]
		}
		if len(got.Properties) != len(want) {
			t.Errorf("%s has %d properties, want %d: %v", ref, len(got.Properties), len(want), got.Properties)
		}
		for k, w := range want {
			if v, ok := got.Properties[k]; !ok || !v.Equal(w) {
				t.Errorf("%s: %s = %#v, want %#v", ref, k, v, w)
			}
		}
	}
	same := func(s string) string { return s }
	check(EntityRef{b, "moved", "r"}, same)
	check(EntityRef{c, "copy", "r"}, same, "Copies")
	// copy-props writes through the core's read-modify-write loop, which
	// keeps its write-id log in the target.
	check(EntityRef{c, "target", "t"}, func(s string) string { return "C" + s }, wire.UpdateLogProperty)
}

// typedEntity reads an entity through the entity layer, from the raw
// response body (the SDK's GetEntity re-encodes it, turning 3.0 into 3).
func typedEntity(t *testing.T, acct *tablekit.Account, ref EntityRef) entity.Entity {
	t.Helper()
	var raw *http.Response
	ctx := policy.WithCaptureResponse(context.Background(), &raw)
	_, err := acct.Tables().NewClient(ref.Table).GetEntity(ctx, ref.PartitionKey, ref.RowKey, &aztables.GetEntityOptions{Format: to.Ptr(aztables.MetadataFormatFull)})
	if err != nil {
		t.Fatalf("read %s: %v", ref, err)
	}
	body, err := runtime.Payload(raw)
	if err != nil {
		t.Fatal(err)
	}
	var e entity.Entity
	if err := e.UnmarshalJSON(body); err != nil {
		t.Fatalf("decode %s: %v", ref, err)
	}
	return e
}

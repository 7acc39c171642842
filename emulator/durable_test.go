package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/emulator"
	"github.com/tablekit/tablekit/emulator/internal/disk"
)

// With Options.Location the Table service keeps tables (their names as
// created, ACLs), entities of every type, transactions and the service's
// properties across Stop and Start; a refused transaction leaves nothing,
// a deleted table nothing, and a second emulator cannot take the location.
func TestLocationKeepsTablesAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	em := emulator.StartTB(t, &emulator.Options{Location: dir})
	svc := serviceClient(t, em.ConnectionString)

	if _, err := emulator.Start(ctx, &emulator.Options{Location: dir}); !errors.Is(err, disk.ErrInUse) || !strings.Contains(err.Error(), filepath.Join(dir, disk.TablesFile)) {
		t.Fatalf("a second Start on the location: %v, want ErrInUse naming %s", err, filepath.Join(dir, disk.TablesFile))
	}

	for _, name := range []string{"Orders", "gone", "Empty"} {
		if _, err := svc.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	orders := svc.NewClient("Orders")
	for i, e := range []string{
		`{"PartitionKey":"p","RowKey":"types","S":"caf\u00e9 \ud83d\ude00 \ue000","I":-7,"L":"9007199254740993","L@odata.type":"Edm.Int64",` +
			`"D":3.0,"D@odata.type":"Edm.Double","N":"NaN","N@odata.type":"Edm.Double","B":true,` +
			`"T":"1601-01-01T00:00:00.0000001Z","T@odata.type":"Edm.DateTime","G":"c9da6455-213d-42c9-9a79-3e9149a57833","G@odata.type":"Edm.Guid",` +
			`"X":"AAEC/w==","X@odata.type":"Edm.Binary"}`,
		`{"PartitionKey":"","RowKey":"empty pk"}`,
		`{"PartitionKey":"p\ud83d\ude00","RowKey":"\ue000"}`,
		`{"PartitionKey":"p\ue000","RowKey":"a"}`,
		`{"PartitionKey":"pa","RowKey":"merged","A":1}`,
	} {
		if _, err := orders.AddEntity(ctx, []byte(e), nil); err != nil {
			t.Fatalf("entity %d: %v", i, err)
		}
	}
	if _, err := orders.UpdateEntity(ctx, []byte(`{"PartitionKey":"pa","RowKey":"merged","B":2}`), &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
	var batch []aztables.TransactionAction
	for i := range 50 {
		batch = append(batch, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: []byte(fmt.Sprintf(`{"PartitionKey":"b","RowKey":"r%02d","N":%d}`, i, i))})
	}
	if _, err := orders.SubmitTransaction(ctx, batch, nil); err != nil {
		t.Fatal(err)
	}
	// A transaction refused at its last operation (the entity exists):
	// none of it is kept.
	refused := []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeUpdateMerge, Entity: []byte(`{"PartitionKey":"b","RowKey":"r00","M":1}`)},
		{ActionType: aztables.TransactionTypeDelete, Entity: []byte(`{"PartitionKey":"b","RowKey":"r01"}`)},
		{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"b","RowKey":"r02"}`)},
	}
	if _, err := orders.SubmitTransaction(ctx, refused, nil); err == nil {
		t.Fatal("a transaction adding an entity that exists succeeded")
	}
	if _, err := orders.SubmitTransaction(ctx, []aztables.TransactionAction{
		{ActionType: aztables.TransactionTypeDelete, Entity: []byte(`{"PartitionKey":"b","RowKey":"r03"}`)},
		{ActionType: aztables.TransactionTypeUpdateReplace, Entity: []byte(`{"PartitionKey":"b","RowKey":"r04","R":"replaced"}`)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := orders.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: []*aztables.SignedIdentifier{{
		ID: to.Ptr("readers"), AccessPolicy: &aztables.AccessPolicy{Start: &start, Expiry: to.Ptr(start.Add(time.Hour)), Permission: to.Ptr("r")},
	}}}); err != nil {
		t.Fatal(err)
	}
	gone := svc.NewClient("gone")
	if _, err := gone.UpsertEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTable(ctx, "GONE", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetProperties(ctx, aztables.ServiceProperties{Cors: []*aztables.CorsRule{{
		AllowedOrigins: to.Ptr("https://example.com"), AllowedMethods: to.Ptr("GET"), AllowedHeaders: to.Ptr("*"), ExposedHeaders: to.Ptr("*"), MaxAgeInSeconds: to.Ptr(int32(60)),
	}}}, nil); err != nil {
		t.Fatal(err)
	}

	before := snapshot(t, svc, em.TableURL)
	if !strings.Contains(before, `"RowKey":"r49"`) || strings.Contains(before, `"M":1`) || strings.Contains(before, `"RowKey":"r03"`) || !strings.Contains(before, `"B":2`) {
		t.Fatalf("the writes are not as made before the restart:\n%s", before)
	}
	if err := em.Stop(); err != nil {
		t.Fatal(err)
	}

	em2 := emulator.StartTB(t, &emulator.Options{Location: dir})
	svc2 := serviceClient(t, em2.ConnectionString)
	if after := snapshot(t, svc2, em2.TableURL); after != before {
		t.Fatalf("after a restart:\n%s\nbefore it:\n%s", after, before)
	}
	// The restarted service goes on: writes, and the same ETag rules.
	if _, err := svc2.NewClient("Orders").AddEntity(ctx, []byte(`{"PartitionKey":"b","RowKey":"r00"}`), nil); err == nil {
		t.Fatal("adding an entity kept across the restart succeeded")
	}
	if _, err := svc2.NewClient("Empty").AddEntity(ctx, []byte(`{"PartitionKey":"x","RowKey":"y"}`), nil); err != nil {
		t.Fatal(err)
	}
}

func serviceClient(t *testing.T, connStr string) *aztables.ServiceClient {
	t.Helper()
	svc, err := aztables.NewServiceClientFromConnectionString(connStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// snapshot is what the Table service holds, as its answers show it: the
// tables (names as created) with their ACLs and entities (full metadata:
// ETags and Timestamps included, in the service's order), and the CORS
// rules of the service's properties. base, the Table endpoint, is
// written BASE.
func snapshot(t *testing.T, svc *aztables.ServiceClient, base string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var names []string
	for p := svc.NewListTablesPager(nil); p.More(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range page.Tables {
			names = append(names, *tb.Name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		c := svc.NewClient(name)
		fmt.Fprintf(&b, "table %s\n", name)
		acl, err := c.GetAccessPolicy(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range acl.SignedIdentifiers {
			fmt.Fprintf(&b, "acl %s %s %s %s\n", *id.ID, id.AccessPolicy.Start, id.AccessPolicy.Expiry, *id.AccessPolicy.Permission)
		}
		for p := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Format: to.Ptr(aztables.MetadataFormatFull), Top: to.Ptr(int32(7))}); p.More(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entities {
				// odata.id holds the endpoint, whose port changes.
				fmt.Fprintf(&b, "%s\n", strings.ReplaceAll(string(e), base, "BASE"))
			}
		}
	}
	props, err := svc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range props.Cors {
		fmt.Fprintf(&b, "cors %s %s\n", *r.AllowedOrigins, *r.AllowedMethods)
	}
	return b.String()
}

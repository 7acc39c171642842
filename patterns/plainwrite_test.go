package patterns_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// writeBodies records the body of every entity write sent to the table
// service (inserts, updates, merges and transactions).
type writeBodies struct {
	host   string
	mu     sync.Mutex
	bodies []string
}

func (w *writeBodies) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.URL.Host == w.host && raw.Method != http.MethodGet && raw.Method != http.MethodDelete && req.Body() != nil {
		b, err := io.ReadAll(req.Body())
		if err != nil {
			return nil, err
		}
		if err := req.RewindBody(); err != nil {
			return nil, err
		}
		w.mu.Lock()
		w.bodies = append(w.bodies, string(b))
		w.mu.Unlock()
	}
	return req.Next()
}

// take returns the bodies recorded since the last call.
func (w *writeBodies) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.bodies
	w.bodies = nil
	return b
}

// TestPlainWritesSendOnlyTheCallersProperties: a plain write (Insert,
// Replace and Merge conditional on an ETag, Upsert, Delete, BulkWrite,
// BulkWriteSeq, BulkWriter.Write, Transaction, SubmitOps, and MixedTable's) sends the
// caller's properties and nothing more, on both transports: no write-id
// log, on any entity of a bulk load or transaction. What is stored is
// exactly the caller's entity, as other readers of the table see it.
func TestPlainWritesSendOnlyTheCallersProperties(t *testing.T) {
	t.Parallel()
	for _, sdk := range []bool{false, true} {
		name := map[bool]string{false: "rest", true: "sdk"}[sdk]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			plain := testenv.Account(t)
			rec := &writeBodies{host: hostOf(t, plain.TableEndpoint())}
			acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{rec}}})
			tbl, err := patterns.NewTable[ixEmployee](acct, testenv.TableName(t), &patterns.TableOptions{SDKPath: sdk})
			must(t, err)
			must(t, tbl.CreateIfNotExists(ctx, nil))
			rec.take()
			want := []string{"Age", "Email", "EmployeeID", "FirstName", "LastName", "PartitionKey", "RowKey"}

			check := func(what string, n int) {
				t.Helper()
				bodies := rec.take()
				if len(bodies) < n {
					t.Fatalf("%s: %d write requests recorded, want at least %d", what, len(bodies), n)
				}
				for _, b := range bodies {
					if strings.Contains(b, "Tk") {
						t.Errorf("%s sent a property the caller did not write: %.300s", what, b)
					}
				}
			}
			stored := func(what, pk, rk string) {
				t.Helper()
				raw, err := patterns.NewTable[entity.Entity](plain, tbl.Name(), nil)
				must(t, err)
				e, err := raw.Get(ctx, pk, rk, nil)
				if err != nil {
					t.Fatalf("%s: read back (%s, %s): %v", what, pk, rk, err)
				}
				got := []string{"PartitionKey", "RowKey"}
				for p := range e.Properties {
					got = append(got, p)
				}
				sort.Strings(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s: stored properties %v, want exactly the caller's %v", what, got, want)
				}
			}

			v := ixEmp("Sales", "000101", "Ann", "Jones", "ann@contoso.com", 30)
			must(t, tbl.Insert(ctx, &v, nil))
			check("Insert", 1)
			stored("Insert", "Sales", v.RowKey)
			v.Age++
			must(t, tbl.Replace(ctx, &v, nil)) // conditional on v's ETag
			check("Replace", 1)
			stored("Replace", "Sales", v.RowKey)
			v.Age++
			must(t, tbl.Merge(ctx, &v, nil))
			check("Merge", 1)
			stored("Merge", "Sales", v.RowKey)
			w := ixEmp("Sales", "000102", "Bob", "Smith", "bob@contoso.com", 41)
			must(t, tbl.Upsert(ctx, &w, nil))
			check("Upsert", 1)
			stored("Upsert", "Sales", w.RowKey)

			var bulk []ixEmployee
			for i := range 250 {
				bulk = append(bulk, ixEmp([]string{"Sales", "HR", "IT"}[i%3], fmt.Sprintf("1%05d", i), "F", "L", "e@contoso.com", i))
			}
			if _, err := tbl.BulkWrite(ctx, bulk, &patterns.BulkOptions{Insert: true}); err != nil {
				t.Fatal(err)
			}
			check("BulkWrite", 3)
			for _, b := range []ixEmployee{bulk[0], bulk[100], bulk[249]} {
				stored("BulkWrite", b.PartitionKey, b.RowKey)
			}
			if _, err := tbl.BulkWriteSeq(ctx, slices.Values(bulk[:120]), nil); err != nil {
				t.Fatal(err)
			}
			check("BulkWriteSeq", 2)
			bw, err := tbl.NewBulkWriter(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bw.Write(bulk[120:150]); err != nil {
				t.Fatal(err)
			}
			bw.Close()
			check("BulkWriter.Write", 3)

			x := ixEmp("Sales", "000103", "Cy", "Lee", "cy@contoso.com", 22)
			v.Age++
			if _, err := tbl.Transaction().Insert(&x).Replace(&v, nil).Submit(ctx, nil); err != nil {
				t.Fatal(err)
			}
			check("Transaction", 1)
			stored("Transaction insert", "Sales", x.RowKey)
			stored("Transaction replace", "Sales", v.RowKey)
			body, err := tbl.Codec().Marshal(&x)
			must(t, err)
			if _, err := tbl.SubmitOps(ctx, []patterns.Op{{Type: patterns.OpReplace, PartitionKey: "Sales", RowKey: x.RowKey, Entity: body}}, nil); err != nil {
				t.Fatal(err)
			}
			check("SubmitOps", 1)
			stored("SubmitOps", "Sales", x.RowKey)
			must(t, tbl.Delete(ctx, &w, nil))
			check("Delete", 0)

			reg := entity.NewRegistry(nil)
			must(t, reg.Register(entity.Kind{Name: "Employee", Version: 1}, ixEmployee{}))
			m, err := patterns.NewMixedTable(acct, tbl.Name(), reg, &patterns.MixedTableOptions{Table: &patterns.TableOptions{SDKPath: sdk}})
			must(t, err)
			y := ixEmp("IT", "000104", "Di", "Ng", "di@contoso.com", 35)
			must(t, m.Insert(ctx, &y, nil))
			y.Age++
			must(t, m.Replace(ctx, &y, nil))
			z := ixEmp("IT", "000105", "Ed", "Ox", "ed@contoso.com", 36)
			if _, err := m.Transaction().Insert(&z).Merge(&y, nil).Submit(ctx, nil); err != nil {
				t.Fatal(err)
			}
			check("MixedTable", 3)

			// Update is a read-modify-write tablekit owns: it keeps the
			// write-id log, unless the table says NoUpdateLog.
			if _, err := tbl.Update(ctx, "Sales", v.RowKey, func(e *ixEmployee) error { e.Age++; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			if b := rec.take(); len(b) != 1 || !strings.Contains(b[0], patterns.UpdateLogProperty) {
				t.Errorf("Update sent %d writes, want 1 carrying %s: %q", len(b), patterns.UpdateLogProperty, b)
			}
			nolog, err := patterns.NewTable[ixEmployee](acct, tbl.Name(), &patterns.TableOptions{SDKPath: sdk, NoUpdateLog: true})
			must(t, err)
			if _, err := nolog.Update(ctx, "Sales", x.RowKey, func(e *ixEmployee) error { e.Age++; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			check("Update with NoUpdateLog", 1)
			stored("Update with NoUpdateLog", "Sales", x.RowKey)
			n, err := tbl.Count(ctx, keys.PK().Eq("IT"), nil)
			must(t, err)
			if n != 85 {
				t.Errorf("partition IT holds %d entities, want 83 of the bulk load and 2 of MixedTable", n)
			}
		})
	}
}

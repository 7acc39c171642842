package patterns_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// cfInterleave stages one race, once armed: when the next write reaches
// the table service, another writer's whole increment runs first; then
// the write goes out, the service refuses it (412: the entity changed
// since it was read), and the refusal is lost (a 503 instead), so azcore
// sends the write again and the service refuses it again.
type cfInterleave struct {
	host  string
	other atomic.Pointer[func()]
}

func (p *cfInterleave) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.URL.Host != p.host || raw.Method == http.MethodGet {
		return req.Next()
	}
	other := p.other.Swap(nil)
	if other == nil {
		return req.Next()
	}
	(*other)()
	if resp, err := req.Next(); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	body := `{"odata.error":{"code":"ServerBusy","message":{"lang":"en-US","value":"injected: the answer was lost"}}}`
	h := http.Header{}
	h.Set("x-ms-error-code", "ServerBusy")
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Server Unavailable", Header: h,
		Body: io.NopCloser(strings.NewReader(body)), Request: raw}, nil
}

// cfRaceCase is one repository's increment: build returns inc (one
// increment through the repository's update verb, or the caller's loop
// its godoc describes) and count (the stored counter).
type cfRaceCase struct {
	name  string
	build func(t *testing.T, e *cfRaceEnv) (inc func() error, count func() int)
}

type cfRaceEnv struct {
	ctx  context.Context
	acct *tablekit.Account
	opts *patterns.TableOptions
}

func (e *cfRaceEnv) must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cfEmployeeCounter builds the increment of an employee's Age through an
// update verb, on an employee inserted with insert.
func cfEmployeeCounter(t *testing.T, e *cfRaceEnv, insert func(*cfEmployee) error, update func(fn func(*cfEmployee) error) error, get func() (cfEmployee, error)) (func() error, func() int) {
	t.Helper()
	v := cfEmp("Sales", 1, "Jones")
	e.must(t, insert(&v))
	return func() error { return update(cfIncAge) }, func() int {
		g, err := get()
		e.must(t, err)
		return g.Age
	}
}

// cfUpdater is a repository's update verb on cfEmployee.
type cfUpdater interface {
	CreateIfNotExists(ctx context.Context, opts *patterns.CreateOptions) error
	Insert(ctx context.Context, v *cfEmployee, opts *patterns.InsertOptions) error
	Update(ctx context.Context, pk, rk string, fn func(*cfEmployee) error, opts *patterns.UpdateOptions) (cfEmployee, error)
}

// cfUpdateCounter builds the increment of an employee's Age through x's
// Update, x being new (err its constructor's error); get reads the
// employee back.
func cfUpdateCounter(t *testing.T, e *cfRaceEnv, x cfUpdater, err error, get func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (cfEmployee, error)) (func() error, func() int) {
	t.Helper()
	e.must(t, err)
	e.must(t, x.CreateIfNotExists(e.ctx, nil))
	return cfEmployeeCounter(t, e, func(v *cfEmployee) error { return x.Insert(e.ctx, v, nil) },
		func(fn func(*cfEmployee) error) error {
			_, err := x.Update(e.ctx, "Sales", "empid_000101", fn, nil)
			return err
		},
		func() (cfEmployee, error) { return get(e.ctx, "Sales", "empid_000101", nil) })
}

// cfCount builds a counter from an increment (its result dropped) and a
// read of the counted value.
func cfCount[V, R any](t *testing.T, e *cfRaceEnv, inc func() (V, error), read func() (R, error), count func(R) int) (func() error, func() int) {
	return func() error { _, err := inc(); return err }, func() int {
		r, err := read()
		e.must(t, err)
		return count(r)
	}
}

// cfRaceTable is a new table of cfEmployee, created.
func cfRaceTable(t *testing.T, e *cfRaceEnv) *patterns.Table[cfEmployee] {
	t.Helper()
	tbl, err := patterns.NewTable[cfEmployee](e.acct, testenv.TableName(t), e.opts)
	e.must(t, err)
	e.must(t, tbl.CreateIfNotExists(e.ctx, nil))
	return tbl
}

// cfRaceQueue is a new consistency queue on the race's account.
func cfRaceQueue(t *testing.T, e *cfRaceEnv) *consistency.Queue {
	t.Helper()
	q, _ := testQueue(t, e.acct)
	return q
}

var cfRaceCases = []cfRaceCase{
	{"Table.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		tbl, err := patterns.NewTable[cfEmployee](e.acct, testenv.TableName(t), e.opts)
		return cfUpdateCounter(t, e, tbl, err, tbl.Get)
	}},
	{"Table.Replace in the caller's loop", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		tbl := cfRaceTable(t, e)
		return cfEmployeeCounter(t, e, func(v *cfEmployee) error { return tbl.Insert(e.ctx, v, nil) },
			func(fn func(*cfEmployee) error) error {
				for {
					v, err := tbl.Get(e.ctx, "Sales", "empid_000101", nil)
					if err != nil {
						return err
					}
					_ = fn(&v)
					if err := tbl.Replace(e.ctx, &v, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
						return err
					}
				}
			},
			func() (cfEmployee, error) { return tbl.Get(e.ctx, "Sales", "empid_000101", nil) })
	}},
	{"Table.Insert then Replace in the caller's loop", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		// The counter does not exist yet: both writers insert it with the
		// same content, so only the write marker tells whose insert landed.
		tbl := cfRaceTable(t, e)
		return func() error {
				for {
					v, err := tbl.Get(e.ctx, "Sales", "empid_000101", nil)
					switch {
					case errors.Is(err, tablekit.ErrNotFound):
						v = cfEmp("Sales", 1, "Jones")
						_ = cfIncAge(&v)
						err = tbl.Insert(e.ctx, &v, nil)
						if errors.Is(err, tablekit.ErrAlreadyExists) {
							continue
						}
						return err
					case err != nil:
						return err
					}
					_ = cfIncAge(&v)
					if err := tbl.Replace(e.ctx, &v, nil); !errors.Is(err, tablekit.ErrPreconditionFailed) {
						return err
					}
				}
			}, func() int {
				g, err := tbl.Get(e.ctx, "Sales", "empid_000101", nil)
				e.must(t, err)
				return g.Age
			}
	}},
	{"IndexedTable.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x, err := patterns.NewIndexedTable(e.acct, testenv.TableName(t), []patterns.Index[cfEmployee]{cfEmailIndex(), cfLastNameIndex()},
			&patterns.IndexedTableOptions{Primary: "empid", Table: e.opts})
		return cfUpdateCounter(t, e, x, err, x.Get)
	}},
	{"ListIndexedTable.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x, err := patterns.NewListIndexedTable(e.acct, testenv.TableName(t), cfLastNameList(), &patterns.ListIndexedTableOptions{Table: e.opts})
		return cfUpdateCounter(t, e, x, err, x.Get)
	}},
	{"BlobIndexedTable.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x, err := patterns.NewBlobIndexedTable(e.acct, testenv.TableName(t), testenv.ContainerName(t), cfLastNameList(), &patterns.BlobIndexedTableOptions{Table: e.opts})
		return cfUpdateCounter(t, e, x, err, func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (cfEmployee, error) {
			return x.Table().Get(ctx, pk, rk, nil)
		})
	}},
	{"EventualIndexedTable.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x, err := patterns.NewEventualIndexedTable(e.acct, testenv.TableName(t), cfRaceQueue(t, e), []patterns.Index[cfEmployee]{cfEmailIndex()},
			&patterns.EventualIndexedTableOptions{Table: e.opts})
		return cfUpdateCounter(t, e, x, err, x.Get)
	}},
	{"EventualListIndexedTable.Update", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		ix := cfLastNameList()
		ix.Table = testenv.TableName(t)
		x, err := patterns.NewEventualListIndexedTable(e.acct, testenv.TableName(t), cfRaceQueue(t, e), ix, &patterns.EventualIndexedTableOptions{Table: e.opts})
		return cfUpdateCounter(t, e, x, err, func(ctx context.Context, pk, rk string, opts *patterns.GetOptions) (cfEmployee, error) {
			return x.Table().Get(ctx, pk, rk, nil)
		})
	}},
	{"Denormalization.UpdateSource", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x := cfRaceDenormalization(t, e)
		return cfCount(t, e, func() (cfManager, error) { return x.UpdateSource(e.ctx, "Contoso", "mgr_000100", cfIncManager, nil) },
			func() (cfManager, error) { return x.Sources().Get(e.ctx, "Contoso", "mgr_000100", nil) },
			func(s cfManager) int { return s.Age })
	}},
	{"Denormalization.UpdateTarget", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x := cfRaceDenormalization(t, e)
		return cfCount(t, e, func() (cfDepartment, error) {
			return x.UpdateTarget(e.ctx, "Contoso", "dept_Sales", cfIncHeadcount, nil)
		},
			func() (cfDepartment, error) { return x.Targets().Get(e.ctx, "Contoso", "dept_Sales", nil) },
			func(d cfDepartment) int { return d.Headcount })
	}},
	{"EventualDenormalization.UpdateSource", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		x, err := patterns.NewEventualDenormalization(e.acct, testenv.TableName(t), cfRaceQueue(t, e),
			func(*cfManager) []consistency.EntityRef { return nil },
			map[string]string{"Phone": "ManagerPhone"}, &patterns.EventualDenormalizationOptions{Table: e.opts})
		e.must(t, err)
		e.must(t, x.Sources().CreateIfNotExists(e.ctx, nil))
		e.must(t, x.Sources().Insert(e.ctx, &cfManager{PartitionKey: "Managers", RowKey: "000100", FirstName: "Mary", Phone: cfPhone(0)}, nil))
		return cfCount(t, e, func() (cfManager, error) { return x.UpdateSource(e.ctx, "Managers", "000100", cfIncManager, nil) },
			func() (cfManager, error) { return x.Sources().Get(e.ctx, "Managers", "000100", nil) },
			func(s cfManager) int { return s.Age })
	}},
	{"DataSeries.Add", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		ds, err := patterns.NewDataSeries[int64](e.acct, testenv.TableName(t), 24, &patterns.DataSeriesOptions{Table: e.opts})
		e.must(t, err)
		e.must(t, ds.Table().CreateIfNotExists(e.ctx, nil))
		e.must(t, ds.Upsert(e.ctx, "Sales", "000123", map[int]int64{0: 0}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge}))
		return cfCount(t, e, func() (int64, error) { return ds.Add(e.ctx, "Sales", "000123", 13, 1, nil) },
			func() (patterns.Series[int64], error) { return ds.Get(e.ctx, "Sales", "000123", nil) },
			func(s patterns.Series[int64]) int { return int(s.Values[13]) })
	}},
	{"WideEntities.Put in the caller's loop", func(t *testing.T, e *cfRaceEnv) (func() error, func() int) {
		w, err := patterns.NewWideEntities(e.acct, testenv.TableName(t), &patterns.WideEntitiesOptions{Table: e.opts})
		e.must(t, err)
		e.must(t, w.Table().CreateIfNotExists(e.ctx, nil))
		e.must(t, widePut(w, e.ctx, cfWide("Sales", "000123", 300)))
		return func() error {
				for {
					v, err := w.Get(e.ctx, "Sales", "000123", nil)
					if err != nil {
						return err
					}
					v.Properties["Counter"] = entity.Int64(v.Properties["Counter"].V.(int64) + 1)
					if err := widePut(w, e.ctx, v); !errors.Is(err, tablekit.ErrPreconditionFailed) {
						return err
					}
				}
			}, func() int {
				v, err := w.Get(e.ctx, "Sales", "000123", nil)
				e.must(t, err)
				return int(v.Properties["Counter"].V.(int64))
			}
	}},
}

func cfRaceDenormalization(t *testing.T, e *cfRaceEnv) *patterns.Denormalization[cfManager, cfDepartment] {
	t.Helper()
	x, err := patterns.NewDenormalization(e.acct, testenv.TableName(t),
		func(*cfManager) []string { return []string{"dept_Sales"} },
		func(d *cfDepartment) string { return d.ManagerID },
		func(s *cfManager, d *cfDepartment) { d.ManagerFirstName, d.ManagerPhone = s.FirstName, s.Phone },
		&patterns.DenormalizationOptions[cfManager]{Table: e.opts})
	e.must(t, err)
	e.must(t, x.Sources().CreateIfNotExists(e.ctx, nil))
	e.must(t, x.Sources().Insert(e.ctx, &cfManager{PartitionKey: "Contoso", RowKey: "mgr_000100", FirstName: "Mary", Phone: cfPhone(0)}, nil))
	e.must(t, x.Targets().Insert(e.ctx, &cfDepartment{PartitionKey: "Contoso", RowKey: "dept_Sales", ManagerID: "mgr_000100", ManagerFirstName: "Mary", ManagerPhone: cfPhone(0)}, nil))
	return x
}

// The contract of every update verb, and of the conditional writes a
// caller loops over, in one race the fault modes of TestConformance meet
// only by chance: two writers increment the same counter from the same
// value. The first lands. The second's write, conditional on what it read,
// is refused (412), the refusal is lost, and azcore's retry is refused
// too. The second writer must then read again and apply its increment, or
// say that its outcome is unknown; reporting success leaves the counter
// at 1 after two increments reported done, because the other writer
// stored exactly the content the second one wanted to write. Both
// transports. The cases run at once, from goroutines of their own as in
// TestConformance: each waits in azcore's default retry delays (one after
// the other they took 21.6 s on Azurite).
func TestConformanceLostRefusal(t *testing.T) {
	t.Parallel()
	g := testenv.NewSideBySide(t, 0)
	for _, m := range []cfMode{{name: "rest"}, {name: "sdk", sdk: true}} {
		for _, c := range cfRaceCases {
			g.Run(m.name+"/"+c.name, func(t *testing.T) { lostRefusal(t, m, c) })
		}
	}
	g.Wait()
}

// lostRefusal stages TestConformanceLostRefusal's race for case c in
// mode m and checks how the second writer's increment ended.
func lostRefusal(t *testing.T, m cfMode, c cfRaceCase) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain := testenv.Account(t)
	stage := &cfInterleave{host: hostOf(t, plain.TableEndpoint())}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{
		PerRetryPolicies: []policy.Policy{stage},
	}})
	e := &cfRaceEnv{ctx: ctx, acct: acct, opts: &patterns.TableOptions{SDKPath: m.sdk}}
	inc, count := c.build(t, e)
	var errA error
	other := func() { errA = inc() }
	stage.other.Store(&other)
	errB := inc()
	if stage.other.Load() != nil {
		t.Fatal("the race was not staged: the increment sent no write")
	}
	if errA != nil {
		t.Fatalf("the other writer's increment: %v", errA)
	}
	got := count()
	t.Logf("the second writer's increment: %v; the counter holds %d", errB, got)
	switch {
	case errB == nil && got == 1:
		t.Errorf("%s: the write the service refused (412, the answer lost, azcore's retry refused too) reported success: two increments reported done, the counter holds 1", c.name)
	case errB == nil && got != 2:
		t.Errorf("%s: two increments reported done, the counter holds %d", c.name, got)
	case errors.Is(errB, tablekit.ErrOutcomeUnknown) && got != 1 && got != 2:
		t.Errorf("%s: one increment done and one unknown, the counter holds %d", c.name, got)
	case errB != nil && !errors.Is(errB, tablekit.ErrOutcomeUnknown):
		t.Errorf("%s: %v; want success (read again, increment again) or ErrOutcomeUnknown", c.name, errB)
	}
}

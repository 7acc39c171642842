package patterns_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/entity"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// TestCreateIfNotExistsCreatesEverything: every repository's
// CreateIfNotExists creates each table, container and queue the
// repository uses, within its documented request budget, and a second
// call succeeds over what exists. Each case's use fails before the call
// and works after it.
func TestCreateIfNotExistsCreatesEverything(t *testing.T) {
	t.Parallel()
	type repo struct {
		create func(context.Context, *patterns.CreateOptions) error
		use    func(context.Context) error
	}
	// queue is a consistency queue with its own container; it is not
	// created here.
	queue := func(t *testing.T, acct *tablekit.Account) *consistency.Queue {
		name := testenv.QueueName(t)
		q, err := consistency.NewQueue(acct, name, &consistency.QueueOptions{BlobContainer: testenv.ContainerName(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = testenv.Account(t).Queues().DeleteQueue(context.Background(), consistency.PoisonQueueName(name), nil)
		})
		return q
	}
	depth := func(q *consistency.Queue) func(context.Context) error {
		return func(ctx context.Context) error { _, err := q.Depth(ctx, nil); return err }
	}
	cases := []struct {
		name     string
		requests int64
		build    func(t *testing.T, acct *tablekit.Account) repo
	}{
		{"LogTail", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewLogTail[ExpenseClaim](acct, testenv.TableName(t), nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				_, err := x.Append(ctx, &ExpenseClaim{PartitionKey: "empid"}, time.Now(), nil)
				return err
			}}
		}},
		{"DataSeries", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewDataSeries[int64](acct, testenv.TableName(t), 24, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				return x.Upsert(ctx, "Sales", "000123", map[int]int64{3: 1}, &patterns.UpsertOptions{Mode: patterns.UpsertMerge})
			}}
		}},
		{"WideEntities", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewWideEntities(acct, testenv.TableName(t), nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				return widePut(x, ctx, &patterns.WideEntity{PartitionKey: "p", RowKey: "r", Properties: map[string]entity.Value{"A": entity.Int64(1)}})
			}}
		}},
		{"Bucketed", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewBucketed[Employee](acct, testenv.TableName(t), 7, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error { return x.Insert(ctx, "Sales", &Employee{RowKey: "000123"}, nil) }}
		}},
		{"CompoundKeys", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewCompoundKeys[struct{ ID string }, Employee](acct, testenv.TableName(t), "empid_{ID}", nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Table().Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "empid_000123"}, nil); err != nil {
					return err
				}
				_, err := x.Get(ctx, "Sales", struct{ ID string }{"000123"}, nil)
				return err
			}}
		}},
		{"BlobLog", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewBlobLog(acct, testenv.ContainerName(t), "web", &patterns.BlobLogOptions{FlushInterval: time.Hour})
			must(t, err)
			t.Cleanup(func() { _ = x.Close(context.Background(), nil) })
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Append(time.Now(), "GET /"); err != nil {
					return err
				}
				return x.Flush(ctx, nil)
			}}
		}},
		{"Denormalization", 1, func(t *testing.T, acct *tablekit.Account) repo {
			x, err := patterns.NewDenormalization(acct, testenv.TableName(t), (*denormManager).departments,
				func(d *denormDepartment) string { return d.ManagerID },
				func(m *denormManager, d *denormDepartment) { d.ManagerName = m.Name }, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				return x.Sources().Insert(ctx, &denormManager{PartitionKey: "Contoso", RowKey: "mgr_mary"}, nil)
			}}
		}},
		{"EventualDenormalization", 4, func(t *testing.T, acct *tablekit.Account) repo {
			q := queue(t, acct)
			x, err := patterns.NewEventualDenormalization(acct, testenv.TableName(t), q,
				func(*denormManager) []consistency.EntityRef { return nil }, map[string]string{"Phone": "ManagerPhone"}, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Sources().Insert(ctx, &denormManager{PartitionKey: "Contoso", RowKey: "mgr_mary"}, nil); err != nil {
					return err
				}
				return depth(q)(ctx)
			}}
		}},
		{"EventualIndexedTable", 4, func(t *testing.T, acct *tablekit.Account) repo {
			q := queue(t, acct)
			x, err := patterns.NewEventualIndexedTable(acct, testenv.TableName(t), q, []patterns.Index[Employee]{
				{Name: "email", Key: func(e *Employee) string { return e.Email }, Partition: func(e *Employee) string { return "email_" + e.PartitionKey }},
			}, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Table().Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123"}, nil); err != nil {
					return err
				}
				return depth(q)(ctx)
			}}
		}},
		{"EventualListIndexedTable", 5, func(t *testing.T, acct *tablekit.Account) repo {
			q := queue(t, acct)
			x, err := patterns.NewEventualListIndexedTable(acct, testenv.TableName(t), q,
				patterns.ListIndex[Employee]{Name: "lastname", Key: func(e *Employee) string { return e.LastName }, Table: testenv.TableName(t)}, nil)
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Table().Insert(ctx, &Employee{PartitionKey: "Sales", RowKey: "000123"}, nil); err != nil {
					return err
				}
				return depth(q)(ctx)
			}}
		}},
		{"LargeEntities with a queue", 5, func(t *testing.T, acct *tablekit.Account) repo {
			q := queue(t, acct)
			x, err := patterns.NewLargeEntities[LargeEmployee](acct, testenv.TableName(t), testenv.ContainerName(t), &patterns.LargeEntitiesOptions{Queue: q})
			must(t, err)
			return repo{x.CreateIfNotExists, func(ctx context.Context) error {
				if err := x.Insert(ctx, &LargeEmployee{PartitionKey: "Sales", RowKey: "000123", Photo: []byte("jpeg")}, nil); err != nil {
					return err
				}
				return depth(q)(ctx)
			}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			acct, counter := testenv.CountingAccount(t)
			r := c.build(t, acct)
			if err := r.use(ctx); err == nil {
				t.Fatal("the repository worked before CreateIfNotExists")
			}
			for _, what := range []string{"CreateIfNotExists", "CreateIfNotExists again"} {
				counter.Reset()
				if err := r.create(ctx, nil); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				requests(t, counter, c.requests, what)
			}
			if err := r.use(ctx); err != nil {
				t.Errorf("after CreateIfNotExists: %v", err)
			}
		})
	}
}

package patterns_test

// Regression test for issue 14's defect 3: with ClientOptions.TracingProvider
// set, every operation that does I/O emits a span through azcore's tracer,
// named as aztables names its own, with azcore's HTTP span as its child, on
// both transports.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/tools/testenv"
)

// spanRecorder is a tracing provider that records every span started
// through it, with the name of its parent span.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*recordedSpan
}

type recordedSpan struct {
	Name, Parent string
	Ended        bool
}

type recordedSpanKey struct{}

func (r *spanRecorder) provider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, _ *tracing.SpanOptions) (context.Context, tracing.Span) {
			s := &recordedSpan{Name: spanName}
			if p, ok := ctx.Value(recordedSpanKey{}).(*recordedSpan); ok {
				s.Parent = p.Name
			}
			r.mu.Lock()
			r.spans = append(r.spans, s)
			r.mu.Unlock()
			return context.WithValue(ctx, recordedSpanKey{}, s), tracing.NewSpan(tracing.SpanImpl{End: func() {
				r.mu.Lock()
				s.Ended = true
				r.mu.Unlock()
			}})
		}, nil)
	}, nil)
}

// take returns the spans recorded since the last take.
func (r *spanRecorder) take() []recordedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]recordedSpan, len(r.spans))
	for i, s := range r.spans {
		out[i] = *s
	}
	r.spans = nil
	return out
}

func describeSpans(spans []recordedSpan) string {
	if len(spans) == 0 {
		return "no spans"
	}
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "[%s <- %q]", s.Name, s.Parent)
	}
	return b.String()
}

// checkSpans asserts that spans hold, for each want pair, a span named
// want[0] with a child span want[1] (azcore's "HTTP <method>"), that every
// span ended, and that no HTTP span lacks an operation span above it.
func checkSpans(t *testing.T, op string, spans []recordedSpan, want ...[2]string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(spans, func(s recordedSpan) bool { return s.Name == w[0] }) {
			t.Errorf("%s: no %s span; got %s", op, w[0], describeSpans(spans))
			continue
		}
		if !slices.ContainsFunc(spans, func(s recordedSpan) bool { return s.Name == w[1] && s.Parent == w[0] }) {
			t.Errorf("%s: no %s span under %s; got %s", op, w[1], w[0], describeSpans(spans))
		}
	}
	for _, s := range spans {
		if !s.Ended {
			t.Errorf("%s: span %s never ended", op, s.Name)
		}
		if strings.HasPrefix(s.Name, "HTTP ") && s.Parent == "" {
			t.Errorf("%s: %s span without an operation span; got %s", op, s.Name, describeSpans(spans))
		}
	}
}

type tracedEmployee struct {
	PartitionKey string
	RowKey       string
	ETag         string
	FirstName    string
	Age          int
	Email        string
}

type tracedPhoto struct {
	PartitionKey string
	RowKey       string
	FirstName    string
	Photo        []byte `table:"Photo,blob"`
}

func TestEveryOperationEmitsSDKSpans(t *testing.T) {
	t.Parallel()
	for _, sdk := range []bool{false, true} {
		t.Run(transportName(sdk), func(t *testing.T) {
			ctx := context.Background()
			rec := &spanRecorder{}
			acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{TracingProvider: rec.provider()}})
			topts := &patterns.TableOptions{SDKPath: sdk}
			tbl, err := patterns.NewTable[tracedEmployee](acct, testenv.TableName(t), topts)
			if err != nil {
				t.Fatal(err)
			}
			if err := tbl.CreateIfNotExists(ctx, nil); err != nil {
				t.Fatal(err)
			}
			rec.take()

			if err := tbl.Insert(ctx, &tracedEmployee{PartitionKey: "Sales", RowKey: "000123", FirstName: "Jun"}, nil); err != nil {
				t.Fatal(err)
			}
			checkSpans(t, "Table.Insert", rec.take(), [2]string{"Client.AddEntity", "HTTP POST"})

			if _, err := tbl.Get(ctx, "Sales", "000123", nil); err != nil {
				t.Fatal(err)
			}
			checkSpans(t, "Table.Get", rec.take(), [2]string{"Client.GetEntity", "HTTP GET"})

			if _, err := tbl.Update(ctx, "Sales", "000123", func(e *tracedEmployee) error { e.Age++; return nil }, nil); err != nil {
				t.Fatal(err)
			}
			checkSpans(t, "Table.Update", rec.take(), [2]string{"Client.GetEntity", "HTTP GET"}, [2]string{"Client.UpdateEntity", "HTTP PUT"})

			rows, err := patterns.Collect(tbl.Query(ctx, keys.PK().Eq("Sales"), nil))
			if err != nil || len(rows) != 1 {
				t.Fatalf("query: %d rows, %v", len(rows), err)
			}
			checkSpans(t, "Table.Query", rec.take(), [2]string{"Pager[ListEntitiesResponse].NextPage", "HTTP GET"})

			tx := tbl.Transaction()
			tx.Insert(&tracedEmployee{PartitionKey: "tx", RowKey: "1"})
			tx.Insert(&tracedEmployee{PartitionKey: "tx", RowKey: "2"})
			if _, err := tx.Submit(ctx, nil); err != nil {
				t.Fatal(err)
			}
			checkSpans(t, "Transaction.Submit", rec.take(), [2]string{"Client.SubmitTransaction", "HTTP POST"})

			bulk := make([]tracedEmployee, 30)
			for i := range bulk {
				bulk[i] = tracedEmployee{PartitionKey: "bulk", RowKey: fmt.Sprintf("%03d", i)}
			}
			if res, err := tbl.BulkWrite(ctx, bulk, nil); err != nil || res.Written != len(bulk) {
				t.Fatalf("bulk: %+v, %v", res, err)
			}
			checkSpans(t, "Table.BulkWrite", rec.take(), [2]string{"Client.SubmitTransaction", "HTTP POST"})

			// Other repositories: a large entity's Get (the entity, then
			// its blob) and an index lookup.
			l, err := patterns.NewLargeEntities[tracedPhoto](acct, testenv.TableName(t), testenv.ContainerName(t), &patterns.LargeEntitiesOptions{Table: topts})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.CreateIfNotExists(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if err := l.Insert(ctx, &tracedPhoto{PartitionKey: "Sales", RowKey: "000123", Photo: largePhoto(3, 1000)}, nil); err != nil {
				t.Fatal(err)
			}
			rec.take()
			if got, err := l.Get(ctx, "Sales", "000123", nil); err != nil || len(got.Photo) != 1000 {
				t.Fatalf("large get: %d bytes, %v", len(got.Photo), err)
			}
			checkSpans(t, "LargeEntities.Get", rec.take(), [2]string{"Client.GetEntity", "HTTP GET"})

			x, err := patterns.NewIndexedTable(acct, testenv.TableName(t), []patterns.Index[tracedEmployee]{
				{Name: "email", Unique: true, Key: func(e *tracedEmployee) string { return e.Email }},
			}, &patterns.IndexedTableOptions{Primary: "empid", Table: topts})
			if err != nil {
				t.Fatal(err)
			}
			if err := x.CreateIfNotExists(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if err := x.Insert(ctx, &tracedEmployee{PartitionKey: "Sales", RowKey: "empid_000123", Email: "jun@contoso.com"}, nil); err != nil {
				t.Fatal(err)
			}
			rec.take()
			if got, err := x.Lookup(ctx, "email", "Sales", "jun@contoso.com", nil); err != nil || got.RowKey != "empid_000123" {
				t.Fatalf("lookup: %+v, %v", got, err)
			}
			checkSpans(t, "IndexedTable.Lookup", rec.take(), [2]string{"Client.GetEntity", "HTTP GET"})
		})
	}
}

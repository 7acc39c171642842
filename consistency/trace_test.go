package consistency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/tools/testenv"
)

// idSpan is a span of idTracer: W3C ids, and its parent's.
type idSpan struct {
	Name, Trace, ID, Parent string
	Kind                    tracing.SpanKind
}

type idSpanKey struct{}

// idTracer is a tracing provider whose spans carry W3C trace and span ids,
// as OpenTelemetry's do, and a TracePropagator over them: a span started
// from a context holding a span (local, or remote from Extract) joins its
// trace.
type idTracer struct {
	mu    sync.Mutex
	spans []idSpan
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *idTracer) provider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			s := idSpan{Name: spanName, Trace: randHex(16), ID: randHex(8), Kind: o.Kind}
			if p, ok := ctx.Value(idSpanKey{}).(idSpan); ok {
				s.Trace, s.Parent = p.Trace, p.ID
			}
			return context.WithValue(ctx, idSpanKey{}, s), tracing.NewSpan(tracing.SpanImpl{End: func() {
				r.mu.Lock()
				r.spans = append(r.spans, s)
				r.mu.Unlock()
			}})
		}, nil)
	}, nil)
}

func (r *idTracer) Inject(ctx context.Context) (string, string) {
	if s, ok := ctx.Value(idSpanKey{}).(idSpan); ok {
		return "00-" + s.Trace + "-" + s.ID + "-01", "tk=1"
	}
	return "", ""
}

func (r *idTracer) Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if tracestate != "tk=1" {
		panic("tracestate lost: " + tracestate)
	}
	return context.WithValue(ctx, idSpanKey{}, idSpan{Name: "remote", Trace: traceparent[3:35], ID: traceparent[36:52]})
}

func (r *idTracer) ended() []idSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]idSpan(nil), r.spans...)
}

// TestTraceContextAcrossQueue: the envelope carries the traceparent of the
// Queue.Enqueue span, started under the caller's span; the worker's
// Worker.ProcessMessage span continues that trace, and the step's table
// request is its child. An envelope without trace context (an older
// writer's) starts a new trace.
func TestTraceContextAcrossQueue(t *testing.T) {
	rec := &idTracer{}
	acct := testenv.AccountWith(t, &tablekit.AccountOptions{ClientOptions: azcore.ClientOptions{TracingProvider: rec.provider()}})
	ctx := context.Background()
	plain, q := queuePair(t, acct, QueueOptions{Propagator: rec})
	table := createTable(t, acct)
	upsert := func(rk string) *Transaction {
		return NewTransaction(UpsertEntity(table, mustJSON(t, map[string]any{"PartitionKey": "p", "RowKey": rk}), tablekit.UpsertReplace))
	}

	tracer := acct.ClientOptions().TracingProvider.NewTracer("test", "v0")
	userCtx, userSpan := tracer.Start(ctx, "HandleRequest", nil)
	traced := upsert("traced")
	if err := q.Enqueue(userCtx, traced, nil); err != nil {
		t.Fatal(err)
	}
	userSpan.End()
	old := upsert("old")
	if err := plain.Enqueue(ctx, old, nil); err != nil { // no Propagator: no trace context
		t.Fatal(err)
	}
	peek, err := q.qc.PeekMessages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(*peek.Messages[0].MessageText), &env); err != nil {
		t.Fatal(err)
	}

	w := newWorker(t, acct, plain, WorkerOptions{Propagator: rec})
	stop := startWorker(t, w)
	testenv.WaitFor(t, 20*time.Second, "both transactions", func() bool { return w.Metrics().Processed() == 2 })
	stop()

	spans := rec.ended()
	find := func(pred func(idSpan) bool) []idSpan {
		var out []idSpan
		for _, s := range spans {
			if pred(s) {
				out = append(out, s)
			}
		}
		return out
	}
	user := find(func(s idSpan) bool { return s.Name == "HandleRequest" })[0]
	enq := find(func(s idSpan) bool { return s.Name == "Queue.Enqueue" && s.Trace == user.Trace })
	if len(enq) != 1 || enq[0].Parent != user.ID || enq[0].Kind != tracing.SpanKindProducer {
		t.Fatalf("Queue.Enqueue spans in the user's trace: %+v", enq)
	}
	if want := "00-" + user.Trace + "-" + enq[0].ID + "-01"; env["traceparent"] != want || env["tracestate"] != "tk=1" {
		t.Fatalf("envelope trace context %v %v, want %s", env["traceparent"], env["tracestate"], want)
	}
	if len(find(func(s idSpan) bool { return s.Name == "HTTP POST" && s.Parent == enq[0].ID })) != 1 {
		t.Errorf("the enqueue request is not a child of Queue.Enqueue: %+v", spans)
	}
	procs := find(func(s idSpan) bool { return s.Name == "Worker.ProcessMessage" })
	if len(procs) != 2 {
		t.Fatalf("%d Worker.ProcessMessage spans, want 2: %+v", len(procs), spans)
	}
	var cont, fresh idSpan
	for _, p := range procs {
		if p.Trace == user.Trace {
			cont = p
		} else {
			fresh = p
		}
	}
	if cont.Parent != enq[0].ID || cont.Kind != tracing.SpanKindConsumer {
		t.Fatalf("the worker's span does not continue the enqueueing trace: %+v (enqueue %+v)", procs, enq[0])
	}
	if fresh.ID == "" || fresh.Parent != "" {
		t.Fatalf("the envelope without trace context: %+v", fresh)
	}
	for _, p := range []idSpan{cont, fresh} {
		children := find(func(s idSpan) bool { return s.Parent == p.ID && s.Trace == p.Trace })
		var names []string
		for _, c := range children {
			names = append(names, c.Name)
		}
		// The upsert (through the core, an operation span with its HTTP
		// span) and the delete of the message.
		if !strings.Contains(strings.Join(names, ","), "HTTP DELETE") || len(children) < 2 {
			t.Errorf("children of %s: %v", p.Name, names)
		}
	}
}

func TestValidTraceParent(t *testing.T) {
	for s, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00":        true,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x":      false, // version 00 has 4 fields
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        false,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":        false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":        false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":        false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":           false,
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":        false,
		"": false,
	} {
		if got := validTraceParent(s); got != want {
			t.Errorf("validTraceParent(%q) = %v, want %v", s, got, want)
		}
	}
}

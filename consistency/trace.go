package consistency

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"

	"github.com/tablekit/tablekit"
)

// TracePropagator carries a W3C Trace Context (the traceparent and
// tracestate headers of https://www.w3.org/TR/trace-context/) through a
// queue message, so that one trace shows a write and the steps a worker
// applies for it later.
//
// azcore's tracing abstraction (ClientOptions.TracingProvider) starts and
// ends spans but does not expose their identifiers, so the tracing library
// in use supplies both directions. With OpenTelemetry (and azotel as the
// TracingProvider), Inject is propagation.TraceContext{}.Inject into a
// propagation.MapCarrier, returning its "traceparent" and "tracestate"
// entries, and Extract is propagation.TraceContext{}.Extract from a
// MapCarrier holding them.
//
// Queue.Enqueue starts a "Queue.Enqueue" span (when the account has a
// tracing provider) and injects the context active inside it into the
// envelope; the worker extracts it and starts its "Worker.ProcessMessage"
// span under it, and every request its steps make is a child of that span.
type TracePropagator interface {
	// Inject returns the traceparent and tracestate of the span active in
	// ctx, or two empty strings when there is none.
	Inject(ctx context.Context) (traceparent, tracestate string)
	// Extract returns ctx carrying the remote span context described by
	// traceparent and tracestate, so that spans started from it continue
	// that trace. The worker calls it only with a well-formed traceparent.
	Extract(ctx context.Context, traceparent, tracestate string) context.Context
}

// tracerName names the tracer of the queue and the worker.
const tracerName = "github.com/tablekit/tablekit/consistency"

// newTracer returns the account's tracer (a no-op one when the account has
// no tracing provider).
func newTracer(acct *tablekit.Account) tracing.Tracer {
	t := acct.ClientOptions().TracingProvider.NewTracer(tracerName, "v0")
	if t.Enabled() {
		t.SetAttributes(tracing.Attribute{Key: "az.namespace", Value: "Microsoft.Storage"})
	}
	return t
}

// startSpan starts a span of kind on tracer; requests made with the
// returned context are its children.
func startSpan(ctx context.Context, tracer tracing.Tracer, name string, kind tracing.SpanKind, attrs ...tracing.Attribute) (context.Context, func(error)) {
	return runtime.StartSpan(ctx, name, tracer, &runtime.StartSpanOptions{Kind: kind, Attributes: attrs})
}

// Limits of the trace context headers kept in an envelope (W3C: a
// tracestate has at most 32 list members of at most 256 characters).
const (
	traceParentLen = 55
	maxTraceState  = 512
)

// validTraceParent reports whether s is a traceparent of version 00 (or a
// later version, whose first four fields have the same form): lowercase hex
// fields 2-32-16-2, a trace id and a parent id that are not all zeros.
func validTraceParent(s string) bool {
	if len(s) < traceParentLen || (len(s) > traceParentLen && (s[:2] == "00" || s[traceParentLen] != '-')) {
		return false
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return false
	}
	hex := func(f string) (allZero, ok bool) {
		allZero = true
		for i := 0; i < len(f); i++ {
			c := f[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false, false
			}
			if c != '0' {
				allZero = false
			}
		}
		return allZero, true
	}
	for _, f := range []struct {
		s       string
		nonZero bool
	}{{s[0:2], false}, {s[3:35], true}, {s[36:52], true}, {s[53:55], false}} {
		zero, ok := hex(f.s)
		if !ok || (f.nonZero && zero) {
			return false
		}
	}
	return true
}

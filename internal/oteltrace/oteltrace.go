// Package oteltrace holds what every traced part of locknode shares: the
// attribute keys, the W3C trace-context propagation, and log lines that
// name the trace of the request they belong to. It depends on the
// OpenTelemetry API only; the SDK and the exporters are set up by
// package export, which only the locknode binary imports.
//
// No secret ever becomes an attribute: owner tokens, session and
// campaign tokens, passwords and the arguments of RESP commands are left
// out by every caller of this package (docs/tracing.md lists what spans
// carry).
package oteltrace

import (
	"context"
	"net/http"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of locknode's spans.
const Scope = "github.com/locknode/locknode"

// Attribute keys of locknode's spans (docs/tracing.md).
const (
	AttrKey       = attribute.Key("locknode.key")
	AttrKeys      = attribute.Key("locknode.keys")
	AttrMode      = attribute.Key("locknode.mode")
	AttrFence     = attribute.Key("locknode.fence")
	AttrOutcome   = attribute.Key("locknode.outcome")
	AttrWaitedMs  = attribute.Key("locknode.waited_ms")
	AttrWaitMs    = attribute.Key("locknode.wait_ms")
	AttrQueued    = attribute.Key("locknode.queued")
	AttrAttempts  = attribute.Key("locknode.attempts")
	AttrOp        = attribute.Key("locknode.op")
	AttrIndex     = attribute.Key("locknode.raft.index")
	AttrNode      = attribute.Key("locknode.node")
	AttrLeader    = attribute.Key("locknode.leader")
	AttrElection  = attribute.Key("locknode.election")
	AttrTTLMs     = attribute.Key("locknode.ttl_ms")
	AttrHolderPfx = "locknode.holder." // + metadata name, of the holder a waiter queued behind
	AttrHolders   = attribute.Key("locknode.holders")
)

// Outcomes (AttrOutcome).
const (
	OutcomeGranted  = "granted"
	OutcomeQueued   = "queued"
	OutcomeLocked   = "locked"
	OutcomeTimeout  = "timeout"
	OutcomeCanceled = "cancelled"
	OutcomeError    = "error"
	OutcomeOK       = "ok"
)

// TraceContext is the W3C trace-context propagator (traceparent,
// tracestate). Baggage is not propagated: it is the caller's and may hold
// anything.
var TraceContext propagation.TextMapPropagator = propagation.TraceContext{}

// Inject writes ctx's span context into h as W3C traceparent (and
// tracestate) when ctx carries a valid one: the global propagator's
// fields when the program set one, else W3C trace context.
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	p := otel.GetTextMapPropagator()
	if len(p.Fields()) == 0 {
		p = TraceContext
	}
	p.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's W3C
// traceparent, if it has a valid one.
func Extract(ctx context.Context, h http.Header) context.Context {
	if len(h["Traceparent"]) == 0 {
		return ctx
	}
	return TraceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is the W3C traceparent of ctx's span context, or "" when
// it has no valid one.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	TraceContext.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceparent returns ctx with the remote span context tp names; an
// empty or malformed tp leaves ctx as it is.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return TraceContext.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// Logger returns l with the trace_id and span_id of ctx's span when ctx
// carries a sampled one, else l itself.
func Logger(ctx context.Context, l hclog.Logger) hclog.Logger {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return l
	}
	return l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
}

// Fail marks span as failed with err (its text: errors of locknode carry
// no secret), or does nothing when err is nil.
func Fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}

// Recording returns ctx's span if it records, else nil.
func Recording(ctx context.Context) trace.Span {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		return sp
	}
	return nil
}

// Child starts a child of ctx's recording span with that span's own
// provider; without one it returns ctx and a nil span.
func Child(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := Recording(ctx)
	if parent == nil {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}

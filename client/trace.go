package client

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
)

// OpenTelemetry spans of the client (docs/tracing.md). They go through
// otel's global tracer provider, so a program that set one up sees them
// in its traces with nothing to configure, and one that did not gets
// otel's no-op tracer: no span is recorded and no context changes. Each
// HTTP request carries its span's W3C traceparent, so the node's spans
// join the same trace.
//
// Attributes carry keys, modes, fences, waits, attempt counts and
// outcomes; never an owner token, a session id, a request id, a value or
// a credential.

// tracer is the client's tracer of the global provider as it is now (a
// program may replace the provider; a tracer kept from an earlier one
// would keep feeding that one).
func tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(oteltrace.Scope + "/client") }

// span is a client span; its zero value (not recording) does nothing.
type span struct{ sp trace.Span }

// startSpan starts span name under ctx. When it does not record, ctx is
// returned unchanged (the caller's own trace context still propagates).
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, span) {
	sctx, sp := tracer().Start(ctx, name, trace.WithAttributes(attrs...))
	if !sp.IsRecording() {
		return ctx, span{}
	}
	return sctx, span{sp}
}

// linkedSpan starts a root span linked to the span context sc: renewals
// and keep-alives run long after the call that started them returned.
func linkedSpan(ctx context.Context, name string, sc trace.SpanContext, attrs ...attribute.KeyValue) (context.Context, span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(attrs...)}
	if sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	sctx, sp := tracer().Start(ctx, name, opts...)
	if !sp.IsRecording() {
		return ctx, span{}
	}
	return sctx, span{sp}
}

func (s span) set(attrs ...attribute.KeyValue) {
	if s.sp != nil {
		s.sp.SetAttributes(attrs...)
	}
}

// end ends the span with err's outcome.
func (s span) end(err error, attrs ...attribute.KeyValue) {
	if s.sp == nil {
		return
	}
	s.sp.SetAttributes(attrs...)
	s.sp.SetAttributes(oteltrace.AttrOutcome.String(outcomeOf(err)))
	if err != nil && !errors.Is(err, api.ErrLocked) && !errors.Is(err, api.ErrWaitTimeout) {
		// A lock held by another is an answer, not a failure.
		s.sp.SetStatus(codes.Error, err.Error())
	}
	s.sp.End()
}

// endLease ends the span of a call answered with a lease.
func (s span) endLease(l api.Lease, err error) {
	if s.sp == nil {
		return
	}
	if err == nil {
		s.sp.SetAttributes(oteltrace.AttrFence.Int64(int64(l.Fence)), oteltrace.AttrWaitedMs.Int64(l.WaitedMs))
	}
	s.end(err)
}

func (s span) spanContext() trace.SpanContext {
	if s.sp == nil {
		return trace.SpanContext{}
	}
	return s.sp.SpanContext()
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return oteltrace.OutcomeOK
	case errors.Is(err, api.ErrLocked), errors.Is(err, api.ErrLockDelay):
		return oteltrace.OutcomeLocked
	case errors.Is(err, api.ErrWaitTimeout):
		return oteltrace.OutcomeTimeout
	case errors.Is(err, api.ErrCancelled), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return oteltrace.OutcomeCanceled
	}
	return oteltrace.OutcomeError
}

// lockAttrs describes a lock request (no owner, no metadata values).
func lockAttrs(key string, o lockOptions) []attribute.KeyValue {
	mode := o.mode
	if mode == "" {
		mode = api.ModeExclusive
	}
	return []attribute.KeyValue{oteltrace.AttrKey.String(key), oteltrace.AttrMode.String(mode),
		oteltrace.AttrTTLMs.Int64(o.ttl.Milliseconds()), oteltrace.AttrWaitMs.Int64(o.wait.Milliseconds())}
}

func reqAttrs(key string, keys []string) attribute.KeyValue {
	if len(keys) > 0 {
		return oteltrace.AttrKeys.String(strings.Join(keys, ","))
	}
	return oteltrace.AttrKey.String(key)
}

// attemptSpan is the client span of one HTTP attempt of call cl, under a
// recording span of ctx only (an untraced call makes none), and ctx with
// it.
func attemptSpan(ctx context.Context, cl call, endpoint string, attempt int) (context.Context, span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, span{}
	}
	host := endpoint
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:] // user info is a credential
	}
	sctx, sp := tracer().Start(ctx, cl.method+" "+routeOf(cl.path), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", cl.method), attribute.String("server.address", host),
			attribute.Int("locknode.http.attempt", attempt)))
	return sctx, span{sp}
}

// routeOf is the route of a request path: keys and ids left out.
func routeOf(path string) string {
	if i := strings.IndexAny(path, "?"); i >= 0 {
		path = path[:i]
	}
	for _, p := range []string{"/v1/locks/acquire", "/v1/locks/try", "/v1/locks/release", "/v1/locks/extend", "/v1/fence/check", "/v1/status"} {
		if path == p {
			return p
		}
	}
	for _, p := range []string{"/v1/sessions", "/v1/elections", "/v1/locks", "/v1/members"} {
		if strings.HasPrefix(path, p) {
			return p + "/…"
		}
	}
	return "other"
}

// endAttempt ends an attempt's span with the HTTP status (0: no answer).
func (s span) endAttempt(status int, err error) {
	if s.sp == nil {
		return
	}
	if status > 0 {
		s.sp.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err != nil {
		s.sp.SetStatus(codes.Error, err.Error())
	} else if status >= 500 {
		s.sp.SetStatus(codes.Error, http.StatusText(status))
	}
	s.sp.End()
}

// endLock ends the span of Lock or TryLock with the lock's fence and
// wait, and makes it the span the lock's renewals link to.
func (s span) endLock(l *Lock, err error) {
	if s.sp == nil {
		return
	}
	if l != nil {
		l.mu.Lock()
		l.traced = s.sp.SpanContext()
		l.mu.Unlock()
		s.sp.SetAttributes(oteltrace.AttrFence.Int64(int64(l.lease.Fence)), oteltrace.AttrWaitedMs.Int64(l.lease.WaitedMs))
	}
	s.end(err)
}

// spanLink is the span context renewals of l link to.
func (l *Lock) spanLink() trace.SpanContext {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.traced
}

// recordingSpan returns ctx's span if it records, else nil.
func recordingSpan(ctx context.Context) trace.Span {
	if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
		return sp
	}
	return nil
}

// withSpan returns ctx carrying sp, or ctx when sp is nil.
func withSpan(ctx context.Context, sp trace.Span) context.Context {
	if sp == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, sp)
}

package redisbridge

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/internal/oteltrace"
)

// RESP carries no trace context, so each command is the root span of a
// trace of its own (Config.TracerProvider; its sampler decides which are
// recorded). The span is named by the command and carries its name and
// argument count only: arguments hold values, owner tokens and AUTH
// passwords. Commands under way set c.span; every context the command
// makes for the node (conn.ctx, the blocking acquire's) carries it, so the
// node's spans join the command's trace.

// startCommandSpan starts the span of the command name with nargs
// arguments, or returns nil when tracing is off. A command that is not
// sampled gets the no-op span: the node's parts then find a span that
// does not record without looking further (the command's context is a
// reqCtx, which a lookup past it would turn into a real deadline).
func (s *Server) startCommandSpan(name string, nargs int) trace.Span {
	if s.tracer == nil {
		return nil
	}
	// The sampler needs no name: it is set once the span records, so an
	// unsampled command builds none.
	_, sp := s.tracer.Start(context.Background(), "RESP", serverKind)
	if !sp.IsRecording() {
		return noSpan
	}
	op := spanName(name)
	sp.SetName("RESP " + op)
	sp.SetAttributes(attribute.String("db.system.name", "redis"), attribute.String("db.operation.name", op),
		attribute.Int("locknode.resp.args", nargs))
	return sp
}

// tracerOf is tp's tracer, or nil.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(oteltrace.Scope)
}

var (
	serverKind = trace.WithSpanKind(trace.SpanKindServer)
	noSpan     = trace.SpanFromContext(context.Background()) // the no-op span
	spanNames  sync.Map                                      // command name -> upper case
)

// spanName is name in upper case; names come from the command table, so
// the cache stays small.
func spanName(name string) string {
	if v, ok := spanNames.Load(name); ok {
		return v.(string)
	}
	up := strings.ToUpper(name)
	spanNames.Store(name, up)
	return up
}

// withSpan returns ctx carrying the span of the command under way, if it
// is traced.
func (c *conn) withSpan(ctx context.Context) context.Context {
	if c.span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, c.span)
}

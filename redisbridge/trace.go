package redisbridge

import (
	"context"
	"strings"

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
// arguments, or returns nil when tracing is off or it is not sampled.
func (c *conn) startCommandSpan(name string, nargs int) trace.Span {
	if c.s.cfg.TracerProvider == nil {
		return nil
	}
	_, sp := c.s.cfg.TracerProvider.Tracer(oteltrace.Scope).Start(context.Background(), "RESP "+strings.ToUpper(name),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("db.system.name", "redis"),
			attribute.String("db.operation.name", strings.ToUpper(name)),
			attribute.Int("locknode.resp.args", nargs)))
	if !sp.IsRecording() {
		return nil
	}
	return sp
}

// withSpan returns ctx carrying the span of the command under way, if it
// is traced.
func (c *conn) withSpan(ctx context.Context) context.Context {
	if c.span == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, c.span)
}

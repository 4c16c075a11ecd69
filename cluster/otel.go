package cluster

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/oteltrace"
)

// OpenTelemetry spans of a node (docs/tracing.md). They are made only when
// Config.TracerProvider is set, and then only under a caller's recording
// span (the embedded API's ctx, the HTTP or RESP request's span) or, on the
// leader, under the span context a follower forwarded with a command
// (rpcApplyTraced). Without a provider no context is even looked at, so an
// untraced node pays nothing.
//
// Span tree of a blocking acquire through a follower:
//
//	locknode.acquire                (follower; key, mode, fence, outcome, waited_ms)
//	├── cluster.apply               (op, raft index)
//	│   └── cluster.forward         (client; to the leader)
//	│       └── cluster.serve_forwarded   (leader; server)
//	│           ├── raft.commit     (log write and quorum)
//	│           └── fsm.apply       (the batch's apply on the leader)
//	└── locknode.wait               (queued: the holders' metadata; a link to the release that handed over)
//
// Attributes never carry an owner token, a session id, a request id or a
// value: only keys, modes, fences, counts, outcomes and the holders'
// metadata, which the lock table shows to anyone who may read it.

// rpcApplyTraced carries the caller's W3C traceparent with a forwarded
// command (rpctable.go). Cluster version 2: a follower sends it only
// once version 2 is active, rpcApply before.

// traceVersion is the cluster version from which forwarded commands carry
// the trace context.
const traceVersion = 2

// applyTimes keeps when the last applied batches were applied, while a
// traced proposal waits for one (users > 0): a proposer learns its entry's
// index only once it was applied, and splits its wait into the commit and
// the apply with it.
type applyTimes struct {
	users atomic.Int32
	mu    sync.Mutex
	ring  [64]appliedBatch
	next  int
}

type appliedBatch struct {
	lo, hi     uint64
	start, end time.Time
}

func (a *applyTimes) record(logs []*raft.Log, start time.Time) {
	if a.users.Load() == 0 || len(logs) == 0 {
		return
	}
	b := appliedBatch{lo: logs[0].Index, hi: logs[len(logs)-1].Index, start: start, end: time.Now()}
	a.mu.Lock()
	a.ring[a.next%len(a.ring)] = b
	a.next++
	a.mu.Unlock()
}

func (a *applyTimes) lookup(idx uint64) (appliedBatch, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.ring {
		if b.lo <= idx && idx <= b.hi {
			return b, true
		}
	}
	return appliedBatch{}, false
}

// recordingSpan returns ctx's span if it records, else nil.
func recordingSpan(ctx context.Context) trace.Span { return oteltrace.Recording(ctx) }

// childSpan starts a child of ctx's recording span (oteltrace.Child).
func childSpan(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return oteltrace.Child(ctx, name, opts...)
}

// traced reports whether this node makes spans under ctx.
func (n *Node) traced(ctx context.Context) bool {
	return n.cfg.TracerProvider != nil && recordingSpan(ctx) != nil
}

// applyTraced is Apply under a span.
func (n *Node) applyTraced(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	ctx, sp := childSpan(ctx, "cluster.apply", trace.WithAttributes(oteltrace.AttrOp.String(opName(cmd.Op)), oteltrace.AttrNode.String(n.id)))
	defer sp.End()
	res, err := n.apply(ctx, cmd)
	if err != nil {
		oteltrace.Fail(sp, err)
	} else {
		sp.SetAttributes(oteltrace.AttrIndex.Int64(int64(res.Index)))
	}
	return res, err
}

// forwardApply is one attempt of forwarding cmd to the leader as
// rpcApply; *plain caches its encoding across attempts. Under a recording
// span it is a span of its own, and once traceVersion is active the call
// carries that span's context (rpcApplyTraced).
func (n *forwarder) forwardApply(ctx context.Context, cmd *fsm.Command, plain *[]byte) ([]byte, outcome, error) {
	if !n.traced(ctx) {
		if *plain == nil {
			*plain = cmd.AppendBinary([]byte{rpcApply})
		}
		return n.forward(ctx, *plain)
	}
	_, leader := n.raft.LeaderWithID()
	ctx, sp := childSpan(ctx, "cluster.forward", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(oteltrace.AttrOp.String(opName(cmd.Op)), oteltrace.AttrLeader.String(string(leader))))
	defer sp.End()
	if *plain == nil {
		*plain = cmd.AppendBinary([]byte{rpcApply})
	}
	if n.rpcKindActive(rpcApplyTraced) {
		req := appendStr([]byte{rpcApplyTraced}, oteltrace.Traceparent(ctx))
		req = cmd.AppendBinary(req)
		body, oc, err := n.forward(ctx, req)
		if !(oc == outcomeDone && refusalOf(err) == refusalUnknownKind) {
			oteltrace.Fail(sp, err)
			return body, oc, err
		}
		// A leader that has not applied the activation of traceVersion
		// yet (just elected) refuses the kind, having proposed nothing:
		// the command goes untraced.
		sp.SetAttributes(attribute.Bool("locknode.untraced_at_leader", true))
	}
	body, oc, err := n.forward(ctx, *plain)
	oteltrace.Fail(sp, err)
	return body, oc, err
}

// serveTraced starts, on the leader, the server span of a forwarded
// command under the follower's span context tp.
func (n *Node) serveTraced(ctx context.Context, tp string, cmd *fsm.Command) (context.Context, trace.Span) {
	if n.cfg.TracerProvider == nil || tp == "" {
		return ctx, nil
	}
	ctx = oteltrace.WithTraceparent(ctx, tp)
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, nil
	}
	return n.cfg.TracerProvider.Tracer(oteltrace.Scope).Start(ctx, "cluster.serve_forwarded",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(oteltrace.AttrOp.String(opName(cmd.Op)), oteltrace.AttrNode.String(n.id)))
}

// commitTrace times one traced proposal on the leader.
type commitTrace struct {
	ctx   context.Context
	start time.Time
}

// beginCommit starts timing a proposal under ctx's recording span, or
// returns nil.
func (n *Node) beginCommit(ctx context.Context) *commitTrace {
	if !n.traced(ctx) {
		return nil
	}
	n.spanTimes.users.Add(1)
	return &commitTrace{ctx: ctx, start: time.Now()}
}

// end records the commit (proposal to the start of its batch's apply: the
// log write and the quorum) and the apply as spans of the proposal's
// caller.
func (c *commitTrace) end(n *Node, f raft.ApplyFuture, err error) {
	if c == nil {
		return
	}
	defer n.spanTimes.users.Add(-1)
	tr := trace.SpanFromContext(c.ctx).TracerProvider().Tracer(oteltrace.Scope)
	now := time.Now()
	if err != nil {
		_, sp := tr.Start(c.ctx, "raft.commit", trace.WithTimestamp(c.start))
		oteltrace.Fail(sp, err)
		sp.End(trace.WithTimestamp(now))
		return
	}
	idx := f.Index()
	b, ok := n.spanTimes.lookup(idx)
	if !ok || b.start.Before(c.start) {
		// Not recorded (the ring moved on): one span for both.
		_, sp := tr.Start(c.ctx, "raft.commit", trace.WithTimestamp(c.start),
			trace.WithAttributes(oteltrace.AttrIndex.Int64(int64(idx)), attribute.Bool("locknode.includes_apply", true)))
		sp.End(trace.WithTimestamp(now))
		return
	}
	_, sp := tr.Start(c.ctx, "raft.commit", trace.WithTimestamp(c.start), trace.WithAttributes(oteltrace.AttrIndex.Int64(int64(idx))))
	sp.End(trace.WithTimestamp(b.start))
	_, sp = tr.Start(c.ctx, "fsm.apply", trace.WithTimestamp(b.start),
		trace.WithAttributes(oteltrace.AttrIndex.Int64(int64(idx)), attribute.Int("locknode.batch_entries", int(b.hi-b.lo+1))))
	sp.End(trace.WithTimestamp(b.end))
}

// rpcApplyBatchTraced (rpctable.go) carries each batched command's W3C
// traceparent. Cluster version 2: a follower sends it only once version
// 2 is active and a command of the batch is traced.

// batchTraced reports whether a command of batch is traced.
func batchTraced(batch []*forwardItem) bool {
	for _, it := range batch {
		if it.tp != "" {
			return true
		}
	}
	return false
}

// appendTracedBatch encodes an rpcApplyBatchTraced request.
func appendTracedBatch(batch []*forwardItem) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, it := range batch {
		size += 2*binary.MaxVarintLen64 + len(it.tp) + len(it.req)
	}
	b := make([]byte, 0, size)
	b = append(b, rpcApplyBatchTraced)
	b = binary.AppendUvarint(b, uint64(len(batch)))
	for _, it := range batch {
		b = appendStr(b, it.tp)
		b = binary.AppendUvarint(b, uint64(len(it.req)))
		b = append(b, it.req...)
	}
	return b
}

// batchSpans are the leader's spans of a traced batch's commands; nil
// when none is traced.
type batchSpans struct {
	ctxs []context.Context // nil: that command is not traced
	sps  []trace.Span
	cts  []*commitTrace
}

// serveBatchTraced starts the server span of each command of a batch
// that came with a sampled trace context.
func (n *Node) serveBatchTraced(ctx context.Context, tps []string, cmds []fsm.Command) *batchSpans {
	if n.cfg.TracerProvider == nil || len(tps) == 0 {
		return nil
	}
	var s *batchSpans
	for i, tp := range tps {
		cctx, sp := n.serveTraced(ctx, tp, &cmds[i])
		if sp == nil {
			continue
		}
		if s == nil {
			s = &batchSpans{ctxs: make([]context.Context, len(tps)), sps: make([]trace.Span, len(tps)), cts: make([]*commitTrace, len(tps))}
		}
		sp.SetAttributes(attribute.Bool("locknode.batched", true), attribute.Int("locknode.batch_commands", len(tps)))
		s.ctxs[i], s.sps[i] = cctx, sp
	}
	return s
}

// begin times command i's proposal.
func (s *batchSpans) begin(n *Node, i int) {
	if s == nil || s.ctxs[i] == nil {
		return
	}
	s.cts[i] = n.beginCommit(s.ctxs[i])
}

// end records command i's commit and apply (err: what awaiting it
// returned) and ends its span.
func (s *batchSpans) end(n *Node, i int, f raft.ApplyFuture, err error) {
	if s == nil || s.sps[i] == nil {
		return
	}
	s.cts[i].end(n, f, err)
	oteltrace.Fail(s.sps[i], err)
	s.sps[i].End()
}

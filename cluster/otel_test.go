package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/fsm"
)

// tracedCluster starts n nodes that record every span into one exporter.
func tracedCluster(t *testing.T, n int, manual bool) (*testCluster, *sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tc := newTestCluster(t, n, func(c *Config) {
		c.TracerProvider = tp
		c.ManualUpgrade = manual
		c.UpgradeCheckInterval = 10 * time.Millisecond
	})
	return tc, tp, exp
}

// spansOf returns the recorded spans of trace id by name.
func spansOf(exp *tracetest.InMemoryExporter, id trace.TraceID) map[string][]tracetest.SpanStub {
	out := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

// A follower forwards a command with its trace context only once cluster
// version 2 is active: before, it sends rpcApply (the leader makes no
// span of it) and a leader refuses rpcApplyTraced as an unknown kind;
// after, the leader's serving, commit and apply spans are children of
// the follower's forward, in the caller's trace.
func TestTraceContextForwardGated(t *testing.T) {
	tc, tp, exp := tracedCluster(t, 3, true)
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	if v := f.ClusterVersion(); v != 1 {
		t.Fatalf("version %d before activation (manual)", v)
	}
	tr := tp.Tracer("test")
	acquire := func(key string) trace.TraceID {
		t.Helper()
		ctx, root := tr.Start(ctxT(t, 10*time.Second), "caller")
		// A blocking acquire is forwarded alone (rpcApply); one that does
		// not wait is batched (rpcApplyBatch*).
		wait := int64(1000)
		if strings.HasPrefix(key, "batched") {
			wait = 0
		}
		res, err := f.Apply(ctx, &fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: "secret-owner", TTL: 60000, Wait: wait, ReqID: "req-" + key})
		root.End()
		if err != nil || !res.Granted {
			t.Fatalf("acquire %s: %+v %v", key, res, err)
		}
		return root.SpanContext().TraceID()
	}

	for _, key := range []string{"before", "batched-before"} {
		got := spansOf(exp, acquire(key))
		if len(got["cluster.apply"]) != 1 || len(got["cluster.forward"]) != 1 {
			t.Fatalf("%s: follower spans before activation: %v", key, names(got))
		}
		if len(got["cluster.serve_forwarded"]) != 0 || len(got["raft.commit"]) != 0 {
			t.Fatalf("%s: the leader continued the trace before version 2 was active: %v", key, names(got))
		}
	}
	cmd := (&fsm.Command{Op: fsm.OpAcquire, Key: "x", Owner: "o", TTL: 1000}).AppendBinary(nil)
	req := appendStr([]byte{rpcApplyTraced}, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if _, err := l.handleRPC(ctxT(t, 5*time.Second), append(req, cmd...)); err == nil || !strings.Contains(err.Error(), unknownKind) {
		t.Fatalf("rpcApplyTraced served before version 2: %v", err)
	}
	batch := appendTracedBatch([]*forwardItem{{req: cmd, tp: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}})
	if _, err := l.handleRPC(ctxT(t, 5*time.Second), batch); err == nil || !strings.Contains(err.Error(), unknownKind) {
		t.Fatalf("rpcApplyBatchTraced served before version 2: %v", err)
	}

	if _, err := f.Upgrade(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.nodes {
		tc.eventually(5*time.Second, n.ID()+" at version 2", func() bool { return n.ClusterVersion() >= traceVersion })
	}
	for _, key := range []string{"after", "batched-after"} {
		checkForwardTraced(t, key, spansOf(exp, acquire(key)))
	}
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), "secret-owner") || strings.Contains(a.Value.String(), "req-") {
				t.Fatalf("span %s carries a secret in %s", s.Name, a.Key)
			}
		}
	}
}

// checkForwardTraced checks that the leader's spans of a forwarded
// command are children of the follower's forward.
func checkForwardTraced(t *testing.T, key string, got map[string][]tracetest.SpanStub) {
	t.Helper()
	fwd, srv := got["cluster.forward"], got["cluster.serve_forwarded"]
	if len(fwd) != 1 || len(srv) != 1 {
		t.Fatalf("%s: spans after activation: %v", key, names(got))
	}
	if srv[0].Parent.SpanID() != fwd[0].SpanContext.SpanID() || srv[0].SpanKind != trace.SpanKindServer {
		t.Fatalf("the leader's span is not the forward's child: parent %v, forward %v", srv[0].Parent.SpanID(), fwd[0].SpanContext.SpanID())
	}
	for _, name := range []string{"raft.commit", "fsm.apply"} {
		s := got[name]
		if len(s) != 1 || s[0].Parent.SpanID() != srv[0].SpanContext.SpanID() {
			t.Fatalf("%s: %s: %v (want one child of the leader's span)", key, name, names(got))
		}
		if s[0].EndTime.Before(s[0].StartTime) {
			t.Fatalf("%s: %s ends before it starts", key, name)
		}
	}
}

// A malformed rpcApplyTraced is refused, and a trace context that does
// not parse is served untraced: a peer cannot stop the leader with it.
func TestTraceContextForwardHostile(t *testing.T) {
	tc, _, exp := tracedCluster(t, 1, false)
	l := tc.leader(10 * time.Second)
	tc.eventually(5*time.Second, "version 2", func() bool { return l.ClusterVersion() >= traceVersion })
	cmd := (&fsm.Command{Op: fsm.OpAcquire, Key: "x", Owner: "o", TTL: 1000}).AppendBinary(nil)
	for name, req := range map[string][]byte{
		"truncated":                 {rpcApplyTraced, 200},
		"too long":                  append(appendStr([]byte{rpcApplyTraced}, strings.Repeat("0", maxTraceparent+1)), cmd...),
		"no cmd":                    appendStr([]byte{rpcApplyTraced}, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
		"batch, long trace context": appendTracedBatch([]*forwardItem{{req: cmd, tp: strings.Repeat("0", maxTraceparent+1)}}),
		"batch, truncated":          appendTracedBatch([]*forwardItem{{req: cmd, tp: "x"}})[:6],
	} {
		if _, err := l.handleRPC(ctxT(t, 5*time.Second), req); err == nil {
			t.Errorf("%s: served", name)
		}
	}
	resp, err := l.handleRPC(ctxT(t, 5*time.Second), append(appendStr([]byte{rpcApplyTraced}, "garbage"), cmd...))
	if err != nil || len(resp) == 0 || resp[0] != stOK {
		t.Fatalf("a command with an unreadable trace context: %v %v", resp, err)
	}
	resp, err = l.handleRPC(ctxT(t, 5*time.Second), appendTracedBatch([]*forwardItem{{req: cmd, tp: "garbage"}, {req: cmd}}))
	if err != nil || len(resp) == 0 || resp[0] != stOK {
		t.Fatalf("a batch with an unreadable trace context: %v %v", resp, err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans of an unreadable trace context", n)
	}
}

func names(m map[string][]tracetest.SpanStub) []string {
	var out []string
	for k, v := range m {
		for range v {
			out = append(out, k)
		}
	}
	return out
}

package export_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/internal/clustertest"
	"github.com/locknode/locknode/internal/oteltrace/export"
)

// receiver is an OTLP/HTTP trace endpoint: it decodes what the exporter
// sends and keeps the spans with their resource's attributes.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []*commonpb.KeyValue
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces of application/x-protobuf", http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		r.res = rs.GetResource().GetAttributes()
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *receiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func attr(s *tracepb.Span, key string) (*commonpb.AnyValue, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return nil, false
}

// logBuf is a goroutine-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// One trace shows a Go client's Lock that waits behind another holder,
// taken through a follower: the client's span, its HTTP attempt, the
// follower's request and acquire, the forward to the leader and the
// leader's commit and apply, and the wait with the holder's metadata and
// a link to the release that handed the lock over; the fence and the wait
// are attributes; no owner token is in any span; the follower's log line
// of a failed traced request names the trace.
func TestTraceFromClientThroughFollowerToLeader(t *testing.T) {
	recv := &receiver{}
	rsrv := httptest.NewServer(recv)
	t.Cleanup(rsrv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tracing, err := export.Start(ctx, export.Config{Endpoint: rsrv.URL, SampleRatio: 1, InstanceID: "test",
		Getenv: func(string) string { return "" }})
	if err != nil || !tracing.Enabled() {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = tracing.Shutdown(context.Background()) })
	tp := tracing.TracerProvider()

	nodes := clustertest.StartWith(t, 3, func(c *cluster.Config) {
		c.TracerProvider = tp
		c.UpgradeCheckInterval = 20 * time.Millisecond
	})
	var leader, follower *cluster.Node
	for leader == nil || follower == nil {
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		leader, follower = nil, nil
		for _, n := range nodes {
			if n.IsLeader() {
				leader = n
			} else if follower == nil {
				follower = n
			}
		}
		time.Sleep(10 * time.Millisecond) // polling for a leader, bounded by ctx
	}
	for _, n := range nodes {
		for n.ClusterVersion() < 2 {
			if ctx.Err() != nil {
				t.Fatalf("%s never reached cluster version 2", n.ID())
			}
			time.Sleep(10 * time.Millisecond) // polling the version, bounded by ctx
		}
	}
	logs := &logBuf{}
	users, err := auth.Parse(strings.NewReader("user app on >s3cret-pass ~* &* +@all\n"))
	if err != nil {
		t.Fatal(err)
	}
	hsrv := httptest.NewServer(httpapi.New(follower, httpapi.Config{TracerProvider: tp, Users: auth.NewStoreFrom(users, nil),
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})}))
	t.Cleanup(hsrv.Close)
	c, err := client.New(client.Config{Endpoints: []string{hsrv.URL}, Username: "app", Password: "s3cret-pass"})
	if err != nil {
		t.Fatal(err)
	}

	app := otel.Tracer("app")
	holder, err := c.Lock(ctx, "k", client.WithMetadata(map[string]string{"job": "report-42"}), client.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// A refused request under a span: its log line names the trace.
	rctx, refused := app.Start(ctx, "refused")
	if _, err := c.TryLock(rctx, "k"); !errors.Is(err, api.ErrLocked) {
		t.Fatalf("trylock of a held key: %v", err)
	}
	refused.End()

	wctx, root := app.Start(ctx, "handle-request")
	type result struct {
		l   *client.Lock
		err error
	}
	got := make(chan result, 1)
	go func() { // ends when Lock returns (ctx bounds it)
		l, err := c.Lock(wctx, "k", client.WithWait(30*time.Second), client.WithTTL(30*time.Second))
		got <- result{l, err}
	}()
	for {
		info, err := c.Inspect(ctx, "k", api.ReadOptions{})
		if err == nil && len(info.Waiters) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the waiter never queued")
		}
		time.Sleep(5 * time.Millisecond) // polling the queue, bounded by ctx
	}
	uctx, release := app.Start(ctx, "release-request")
	if err := holder.Unlock(uctx); err != nil {
		t.Fatal(err)
	}
	release.End()
	r := <-got
	root.End()
	if r.err != nil {
		t.Fatal(r.err)
	}
	owners := []string{holder.Owner(), r.l.Owner()}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tracing.Shutdown(ctx); err != nil { // flushes
		t.Fatal(err)
	}

	tid := root.SpanContext().TraceID()
	byName := map[string][]*tracepb.Span{}
	byID := map[string]*tracepb.Span{}
	secrets := append(owners, "s3cret-pass")
	for _, s := range recv.all() {
		texts := []string{s.Status.GetMessage()}
		for _, a := range s.Attributes {
			texts = append(texts, a.Key+"="+a.Value.String())
		}
		for _, e := range s.Events {
			for _, a := range e.Attributes {
				texts = append(texts, a.Key+"="+a.Value.String())
			}
		}
		for _, txt := range texts {
			for _, sec := range secrets {
				if strings.Contains(txt, sec) {
					t.Errorf("span %s carries a secret: %s", s.Name, txt)
				}
			}
		}
		if !bytes.Equal(s.TraceId, tid[:]) {
			continue
		}
		byName[s.Name] = append(byName[s.Name], s)
		byID[string(s.SpanId)] = s
	}
	one := func(name string) *tracepb.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			var names []string
			for n, ss := range byName {
				names = append(names, n+"×"+string(rune('0'+len(ss))))
			}
			t.Fatalf("want one span %q in the trace; have %v", name, names)
		}
		return byName[name][0]
	}
	parentOf := func(s *tracepb.Span) *tracepb.Span { return byID[string(s.ParentSpanId)] }
	lock := one("locknode.Lock")
	if p := parentOf(lock); p == nil || p.Name != "handle-request" {
		t.Fatalf("locknode.Lock is not the caller's child")
	}
	fence, _ := attr(lock, "locknode.fence")
	waited, _ := attr(lock, "locknode.waited_ms")
	if fence.GetIntValue() != int64(r.l.Fence()) || fence.GetIntValue() == 0 || waited == nil {
		t.Fatalf("locknode.Lock: fence %v (lock's %d), waited %v", fence, r.l.Fence(), waited)
	}
	var srv, attempt *tracepb.Span
	for _, s := range byName["POST /v1/locks/acquire"] {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			srv = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			attempt = s
		}
	}
	acq := one("locknode.acquire")
	if srv == nil || attempt == nil || parentOf(acq) != srv || parentOf(srv) != attempt || parentOf(attempt) != lock {
		t.Fatal("the follower's request is not under the client's attempt under locknode.Lock")
	}
	if st, _ := attr(srv, "http.response.status_code"); st.GetIntValue() != 200 {
		t.Fatalf("server span status %v", st)
	}
	apply, fwd, serve := one("cluster.apply"), one("cluster.forward"), one("cluster.serve_forwarded")
	if parentOf(apply) != acq || parentOf(fwd) != apply || parentOf(serve) != fwd {
		t.Fatal("apply, forward and the leader's span are not a chain under the acquire")
	}
	if n, _ := attr(apply, "locknode.node"); n.GetStringValue() != follower.ID() {
		t.Fatalf("apply on %v, want the follower %s", n, follower.ID())
	}
	if n, _ := attr(serve, "locknode.node"); n.GetStringValue() != leader.ID() {
		t.Fatalf("served on %v, want the leader %s", n, leader.ID())
	}
	commit, fsmApply := one("raft.commit"), one("fsm.apply")
	if parentOf(commit) != serve || parentOf(fsmApply) != serve || commit.EndTimeUnixNano > fsmApply.StartTimeUnixNano {
		t.Fatal("the leader's commit and apply are not under its span, in order")
	}
	wait := one("locknode.wait")
	if parentOf(wait) != acq {
		t.Fatal("the wait is not under the acquire")
	}
	if job, _ := attr(wait, "locknode.holder.meta.job"); job.GetStringValue() != "report-42" {
		t.Fatalf("the wait does not name the holder's metadata: %v", wait.Attributes)
	}
	if f, _ := attr(wait, "locknode.fence"); f.GetIntValue() != int64(r.l.Fence()) {
		t.Fatalf("wait fence %v", f)
	}
	rel := release.SpanContext().TraceID()
	linked := false
	for _, l := range wait.Links {
		linked = linked || bytes.Equal(l.TraceId, rel[:])
	}
	if !linked {
		t.Fatal("the wait does not link to the release that handed the lock over")
	}
	name := false
	for _, a := range recv.res {
		name = name || (a.Key == "service.name" && a.Value.GetStringValue() == "locknode")
	}
	if !name {
		t.Fatalf("resource: %v", recv.res)
	}
	rid := refused.SpanContext().TraceID()
	if !strings.Contains(logs.String(), "trace_id="+rid.String()) {
		t.Fatalf("the log line of the refused request does not name its trace:\n%s", logs.String())
	}
	// The log may name a holder's owner: a 423 answer names it to a
	// client that may read the lock, and the log line says what was
	// answered. The password never.
	if strings.Contains(logs.String(), "s3cret-pass") {
		t.Fatalf("the node's log carries the password:\n%s", logs.String())
	}
}

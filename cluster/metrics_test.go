package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

func TestApplyPauseKeepsTheLongest(t *testing.T) {
	m := newMetrics(&Node{})
	for _, d := range []time.Duration{3 * time.Millisecond, 40 * time.Millisecond, time.Millisecond} {
		m.applyPause(d)
	}
	if got := time.Duration(m.maxPause.Load()); got != 40*time.Millisecond {
		t.Fatalf("max pause %v, want 40ms", got)
	}
	var h dto.Metric
	if err := m.applyBatch.Write(&h); err != nil {
		t.Fatal(err)
	}
	if n := h.GetHistogram().GetSampleCount(); n != 3 {
		t.Fatalf("histogram has %d samples, want 3", n)
	}
}

func TestIsSetNX(t *testing.T) {
	cases := []struct {
		args []string
		want bool
	}{
		{[]string{"SET", "k", "v", "NX", "PX", "30000"}, true},
		{[]string{"set", "k", "v", "px", "30000", "nx"}, true},
		{[]string{"SET", "k", "nx"}, false}, // "nx" is the value
		{[]string{"SET", "k", "v", "XX"}, false},
		{[]string{"SETNX", "k", "v"}, false},
		{[]string{"GET", "k", "v", "NX"}, false},
	}
	for _, tc := range cases {
		var args [][]byte
		for _, a := range tc.args {
			args = append(args, []byte(a))
		}
		if got := isSetNX(args); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestLockLifecycleMetrics(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.leader(10 * time.Second)
	ctx := ctxT(t, 20*time.Second)
	m := n.metrics
	val := func(c prometheus.Counter) float64 {
		var d dto.Metric
		if err := c.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetCounter().GetValue()
	}
	tc.eventually(5*time.Second, "a leader change counted", func() bool { return val(m.leaderChanges) >= 1 })

	grants0 := val(m.grants)
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o1", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Release(ctx, api.ReleaseRequest{Key: "a", Owner: "o1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "b", Owner: "o2", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Release(ctx, api.ReleaseRequest{Key: "b", Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"v", "w"} { // w finds the key held by v: no grant
		c := &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("r"), []byte(owner), []byte("NX"), []byte("PX"), []byte("60000")}}
		if _, err := n.Apply(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.FenceCheck(ctx, "res", 5); err != nil {
		t.Fatal(err)
	}
	_, _ = n.FenceCheck(ctx, "res", 3) // refused: older than 5
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "c", Owner: "o3", TTLMs: 20}); err != nil {
		t.Fatal(err)
	}
	tc.eventually(10*time.Second, "the short lease to expire", func() bool { return val(m.expiries) >= 1 })

	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"grants (2 acquires, 1 SET NX, 1 acquire)", val(m.grants) - grants0, 4},
		{"releases", val(m.releases), 1},
		{"forced", val(m.forced), 1},
		{"fence rejections", val(m.fenceRejects), 1},
		{"expiries", val(m.expiries), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	mfs, err := n.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"locknode_releases_total", "locknode_forced_releases_total", "locknode_fence_rejections_total", "locknode_leader_changes_total", "locknode_grants_total"} {
		if !names[want] {
			t.Errorf("%s is not exported", want)
		}
	}
}

// locknode_lock_wait_seconds: a blocking acquire granted at once counts a
// zero wait; one queued behind a holder counts about the time it waited.
func TestLockWaitMetric(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.leader(10 * time.Second)
	ctx := ctxT(t, 20*time.Second)
	hist := func() (count uint64, sum float64) {
		var d dto.Metric
		if err := n.metrics.lockWait.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetHistogram().GetSampleCount(), d.GetHistogram().GetSampleSum()
	}
	if _, err := n.Acquire(ctx, api.AcquireRequest{Key: "w", Owner: "a", TTLMs: 60000, WaitMs: 5000}); err != nil {
		t.Fatal(err)
	}
	if c, s := hist(); c != 1 || s != 0 {
		t.Fatalf("after a grant without a wait: %d samples, sum %v", c, s)
	}
	const hold = 300 * time.Millisecond
	release := time.AfterFunc(hold, func() { _, _ = n.Release(context.Background(), api.ReleaseRequest{Key: "w", Owner: "a"}) })
	defer release.Stop()
	l, err := n.Acquire(ctx, api.AcquireRequest{Key: "w", Owner: "b", TTLMs: 60000, WaitMs: 10000})
	if err != nil {
		t.Fatal(err)
	}
	c, s := hist()
	if c != 2 || s != float64(l.WaitedMs)/1e3 || s < 0.2 {
		t.Fatalf("after a queued grant: %d samples, sum %v (lease waited %d ms, held %v)", c, s, l.WaitedMs, hold)
	}
}

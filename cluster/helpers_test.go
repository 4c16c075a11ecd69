package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/transport"
)

// testCluster is a real cluster over loopback TCP, storage in t.TempDir.
type testCluster struct {
	t     *testing.T
	nodes []*Node
	cfgs  []Config
}

func testLogger(t *testing.T, id string) hclog.Logger {
	if os.Getenv("LOCKNODE_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Debug, Output: os.Stderr})
}

// newTestCluster starts n nodes bootstrapped together and waits for a
// leader.
func newTestCluster(t *testing.T, n int, tweak func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	var peers []Peer
	trs := make([]*transport.Transport, n)
	for i := range n {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i+1), Addr: tr.Addr().String()})
	}
	for i := range n {
		cfg := DefaultConfig()
		cfg.ID = peers[i].ID
		cfg.DataDir = t.TempDir()
		cfg.Transport = trs[i]
		cfg.Bootstrap = true
		cfg.Peers = peers
		cfg.BindAddr = peers[i].Addr
		cfg.Logger = testLogger(t, cfg.ID)
		if tweak != nil {
			tweak(&cfg)
		}
		tc.cfgs = append(tc.cfgs, cfg)
	}
	for i := range n {
		node, err := Start(context.Background(), tc.cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		tc.nodes = append(tc.nodes, node)
	}
	t.Cleanup(func() {
		for _, nd := range tc.nodes {
			if nd != nil {
				nd.Kill()
			}
		}
	})
	tc.leader(10 * time.Second)
	return tc
}

// leader waits until one node leads with its clock set and every live
// node knows it.
func (tc *testCluster) leader(timeout time.Duration) *Node {
	tc.t.Helper()
	var l *Node
	tc.eventually(timeout, "a leader known to all", func() bool {
		l = nil
		for _, n := range tc.nodes {
			if n != nil && n.IsLeader() {
				l = n
			}
		}
		if l == nil {
			return false
		}
		for _, n := range tc.nodes {
			if n == nil {
				continue
			}
			if id, _ := n.Leader(); id != l.id {
				return false
			}
		}
		return true
	})
	return l
}

func (tc *testCluster) follower() *Node {
	l := tc.leader(10 * time.Second)
	for _, n := range tc.nodes {
		if n != nil && n != l {
			return n
		}
	}
	tc.t.Fatal("no follower")
	return nil
}

func (tc *testCluster) index(n *Node) int {
	for i, x := range tc.nodes {
		if x == n {
			return i
		}
	}
	return -1
}

// kill crashes node i (no leadership transfer).
func (tc *testCluster) kill(i int) {
	tc.t.Helper()
	if err := tc.nodes[i].Kill(); err != nil {
		tc.t.Logf("kill %d: %v", i, err)
	}
	tc.nodes[i] = nil
}

// restart starts node i again from its data directory, on its old
// address.
func (tc *testCluster) restart(i int) *Node {
	tc.t.Helper()
	cfg := tc.cfgs[i]
	tr, err := transport.New(transport.Config{BindAddr: cfg.BindAddr})
	if err != nil {
		tc.t.Fatal(err)
	}
	cfg.Transport = tr
	n, err := Start(context.Background(), cfg)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[i] = n
	return n
}

// eventually waits for cond (checked every 5ms) and fails the test if it
// does not hold within timeout.
func (tc *testCluster) eventually(timeout time.Duration, what string, cond func() bool) {
	tc.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tc.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// counter reads one labelled counter of a node's metrics.
func counter(t *testing.T, n *Node, vec *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(label).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitFor waits until fn's read of node n (stale, local) reports true.
func (tc *testCluster) waitState(n *Node, timeout time.Duration, what string, fn func(t *fsm.Table, now int64) bool) {
	tc.t.Helper()
	tc.eventually(timeout, what, func() bool {
		ok := false
		if err := n.Read(context.Background(), true, func(t *fsm.Table, now int64) { ok = fn(t, now) }); err != nil {
			tc.t.Fatal(err)
		}
		return ok
	})
}

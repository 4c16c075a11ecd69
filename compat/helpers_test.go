// Package compat checks that real Redis lock clients work unmodified
// against a 3-node locknode cluster through the RESP bridge on every node:
// go-redis v9, redsync (one pool per node of ONE cluster), bsm/redislock,
// redis-py's Lock (Debian python3-redis), node-redlock with ioredis
// (including ioredis Sentinel discovery), plus differential tests of the
// script families of shared/redis-clients.md §6.2 against a real
// redis-server, mutual exclusion across a leader kill, and go-redis
// Sentinel fail-over.
//
// The package holds tests only. Tests that need an outside program
// (redis-server, python3 with the redis module, node and npm) skip when it
// is missing, unless LOCKNODE_CI=1, when they fail instead. See
// .ci/compat.md for what to install.
package compat

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/redisbridge"
	"github.com/locknode/locknode/transport"
)

// testCluster is a real 3-node cluster over loopback TCP (raft and
// forwarding on transport ports, RESP on one port per node), storage in
// t.TempDir. Nodes can be killed; their RESP servers stop with them.
type testCluster struct {
	t *testing.T

	mu      sync.Mutex
	nodes   []*cluster.Node       // nil once killed
	servers []*redisbridge.Server // nil once killed
	served  []chan error          // Serve's return value, per node
	resp    []string              // RESP address per node, fixed
}

func testLogger(t *testing.T, name string) hclog.Logger {
	if os.Getenv("LOCKNODE_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: os.Stderr})
}

// newCluster starts n nodes bootstrapped together, a RESP server on each,
// and waits until every node knows the same ready leader.
func newCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	trs := make([]*transport.Transport, n)
	peers := make([]cluster.Peer, n)
	for i := range n {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: tr.Addr().String()}
	}
	dirs := make([]string, n)
	lns := make([]net.Listener, n)
	for i := range n {
		// Made before the kill cleanup is registered, so they are removed
		// after the nodes stop (cleanups run last-in first-out).
		dirs[i] = t.TempDir()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		tc.resp = append(tc.resp, ln.Addr().String())
	}
	// Registered first so it runs last: kill whatever is still running.
	t.Cleanup(func() {
		for i := range n {
			tc.kill(i)
		}
	})
	for i := range n {
		cfg := cluster.DefaultConfig()
		cfg.ID = peers[i].ID
		cfg.DataDir = dirs[i]
		cfg.Transport = trs[i]
		cfg.Bootstrap = true
		cfg.Peers = peers
		cfg.Logger = testLogger(t, cfg.ID)
		node, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := redisbridge.New(node, redisbridge.Config{
			Addr:   tc.resp[i],
			NodeID: cfg.ID,
			Logger: testLogger(t, cfg.ID+".resp"),
			Peers:  tc.liveRESP,
		})
		if err != nil {
			node.Kill()
			t.Fatal(err)
		}
		done := make(chan error, 1)
		// Ends when kill (or the cleanup) closes the server.
		go func() { done <- srv.Serve(lns[i]) }()
		tc.mu.Lock()
		tc.nodes = append(tc.nodes, node)
		tc.servers = append(tc.servers, srv)
		tc.served = append(tc.served, done)
		tc.mu.Unlock()
	}
	tc.leader(15 * time.Second)
	return tc
}

// node returns node i, or nil once killed.
func (tc *testCluster) node(i int) *cluster.Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[i]
}

// liveRESP lists the RESP addresses of the nodes not killed (the bridges'
// Config.Peers: SENTINEL and INFO describe the live members).
func (tc *testCluster) liveRESP() []string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []string
	for i, n := range tc.nodes {
		if n != nil {
			out = append(out, tc.resp[i])
		}
	}
	return out
}

// leader waits until one live node leads with its clock set and every
// live node knows it; it returns that node's index.
func (tc *testCluster) leader(timeout time.Duration) int {
	tc.t.Helper()
	idx := -1
	eventually(tc.t, timeout, "a leader known to every live node", func() bool {
		idx = -1
		tc.mu.Lock()
		defer tc.mu.Unlock()
		for i, n := range tc.nodes {
			if n != nil && n.IsLeader() {
				idx = i
			}
		}
		if idx < 0 {
			return false
		}
		for _, n := range tc.nodes {
			if n == nil {
				continue
			}
			if id, _ := n.Leader(); id != tc.nodes[idx].ID() {
				return false
			}
		}
		return true
	})
	return idx
}

// kill crashes node i (no leadership transfer), then closes its RESP
// server so its clients see the connection drop, as with a dead process.
func (tc *testCluster) kill(i int) {
	tc.mu.Lock()
	if i >= len(tc.nodes) { // start-up failed before node i
		tc.mu.Unlock()
		return
	}
	n, srv, done := tc.nodes[i], tc.servers[i], tc.served[i]
	tc.nodes[i], tc.servers[i] = nil, nil
	tc.mu.Unlock()
	if n == nil {
		return
	}
	if err := n.Kill(); err != nil {
		tc.t.Logf("kill node %d: %v", i, err)
	}
	srv.Close()
	if err := <-done; err != nil {
		tc.t.Errorf("node %d: Serve: %v", i, err)
	}
}

// eventually polls cond until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, not synchronisation
	}
}

// goRedis returns a go-redis client of addr speaking RESP proto (2 or 3),
// closed at the end of the test. Retries are off so that every reply seen
// is the server's first answer.
func goRedis(t testing.TB, addr string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: proto, MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// needProgram finds an outside program: the test skips when it is
// missing, or fails under LOCKNODE_CI=1.
func needProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, fmt.Sprintf("%s not found: %v", name, err))
	}
	return p
}

// missing skips the test, or fails it when CI promised every program.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatalf("LOCKNODE_CI=1 but %s", why)
	}
	t.Skip(why)
}

// ctxT is a context that ends with the test's deadline (or d, sooner).
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// uniq is a key or token that no other test run uses.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// lineWriter forwards a child process's output to t.Log line by line.
type lineWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	buf    strings.Builder
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	s := w.buf.String()
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		w.t.Log(w.prefix + s[:i])
		s = s[i+1:]
	}
	w.buf.Reset()
	w.buf.WriteString(s)
	return len(p), nil
}

// Package clustertest starts real raft clusters over loopback for the
// tests of packages built on cluster.Node (the bridge, the mirror).
package clustertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/transport"
)

// Start starts n bootstrapped nodes over loopback, each with its own
// temporary data directory; they are killed at cleanup.
func Start(t testing.TB, n int) []*cluster.Node { return StartWith(t, n, nil) }

// StartWith is Start with each node's configuration changed by tweak
// (when not nil) before it starts.
func StartWith(t testing.TB, n int, tweak func(*cluster.Config)) []*cluster.Node {
	t.Helper()
	var peers []cluster.Peer
	trs := make([]*transport.Transport, n)
	for i := range n {
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers = append(peers, cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: tr.Addr().String()})
	}
	nodes := make([]*cluster.Node, n)
	for i := range n {
		cfg := cluster.DefaultConfig()
		cfg.ID = peers[i].ID
		cfg.DataDir = t.TempDir()
		cfg.Transport = trs[i]
		cfg.Bootstrap = true
		cfg.Peers = peers
		cfg.BindAddr = peers[i].Addr
		if tweak != nil {
			tweak(&cfg)
		}
		nd, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
		t.Cleanup(func() { _ = nd.Kill() })
	}
	return nodes
}

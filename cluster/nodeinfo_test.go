package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func advertised(id string) ClientAddrs {
	return ClientAddrs{HTTP: "http-" + id + ":1", RESP: "resp-" + id + ":2"}
}

// peerView renders PeerAddrs as "id http resp reachable self" lines.
func peerView(n *Node) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []string
	for _, a := range n.PeerAddrs(ctx) {
		out = append(out, fmt.Sprintf("%s %s %s %v %v", a.ID, a.HTTP, a.RESP, a.Reachable, a.Self))
	}
	return out
}

func TestPeerAddrs(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.Advertised = advertised(c.ID) })

	// The first call waits for members never asked before, so every node
	// knows every member's addresses at once.
	for i, n := range tc.nodes {
		got := peerView(n)
		if len(got) != 3 {
			t.Fatalf("%s: %q", n.ID(), got)
		}
		for j, line := range got {
			id := fmt.Sprintf("n%d", j+1)
			a := advertised(id)
			want := fmt.Sprintf("%s %s %s true %v", id, a.HTTP, a.RESP, i == j)
			if line != want {
				t.Errorf("%s sees %q, want %q", n.ID(), line, want)
			}
		}
	}

	// A dead member stays listed (it is still in the configuration) but
	// turns unreachable once its cached answer is stale, keeping the
	// addresses it last reported.
	tc.kill(2)
	l := tc.leader(10 * time.Second)
	want := fmt.Sprintf("n3 %s %s false false", advertised("n3").HTTP, advertised("n3").RESP)
	tc.eventually(nodeInfoTTL+5*time.Second, "n3 unreachable", func() bool {
		v := peerView(l)
		return len(v) == 3 && v[2] == want
	})

	// Removed: no longer listed.
	if err := l.RemoveServer(ctxT(t, 10*time.Second), "n3"); err != nil {
		t.Fatal(err)
	}
	tc.eventually(10*time.Second, "n3 gone", func() bool {
		for _, n := range tc.nodes[:2] {
			if len(peerView(n)) != 2 {
				return false
			}
		}
		return true
	})
}

// A member that joins is asked at once: the first PeerAddrs after the
// configuration lists it already has its addresses.
func TestPeerAddrsJoin(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	start := func(id string, join ...string) *Node {
		cfg := DefaultConfig()
		cfg.ID = id
		cfg.DataDir = t.TempDir()
		cfg.Bootstrap = len(join) == 0
		cfg.Join = join
		cfg.Advertised = advertised(id)
		cfg.Logger = testLogger(t, id)
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Kill() })
		return n
	}
	a := start("a")
	if err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if got := peerView(a); len(got) != 1 || got[0] != "a http-a:1 resp-a:2 true true" {
		t.Fatalf("alone: %q", got)
	}
	b := start("b", a.Addr())
	tc := &testCluster{t: t, nodes: []*Node{a, b}}
	tc.eventually(10*time.Second, "b in a's configuration", func() bool { return len(members(t, a)) == 2 })
	got := peerView(a)
	if len(got) != 2 || got[1] != "b http-b:1 resp-b:2 true false" {
		t.Fatalf("after join: %q", got)
	}
}

// The answer names the node that gave it, so a different node found at a
// member's old address is not taken for that member.
func TestNodeInfoChecksID(t *testing.T) {
	// Manual activation: the active version stays 1 (the answer's).
	tc := newTestCluster(t, 1, func(c *Config) { c.Advertised = advertised(c.ID); c.ManualUpgrade = true })
	n := tc.nodes[0]
	if _, err := n.askNodeInfo(ctxT(t, 5*time.Second), "someone-else", n.Addr()); err == nil {
		t.Fatal("answer for the wrong id accepted")
	}
	a, err := n.askNodeInfo(ctxT(t, 5*time.Second), n.ID(), n.Addr())
	// The active version is 1 at the start and the node's highest once
	// it activated it by itself (a single node runs every version it has).
	if err != nil || a.addrs != advertised(n.ID()) || a.versions != LocalVersions() || !LocalVersions().Contains(a.active) {
		t.Fatalf("%+v %v", a, err)
	}
}

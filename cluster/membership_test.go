package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

func members(t *testing.T, n *Node) map[string]bool {
	t.Helper()
	st, err := n.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, x := range st.Members {
		m[x.ID] = true
	}
	return m
}

// Nodes join through any member, leave gracefully, and a dead member is
// removed through a follower.
func TestMembership(t *testing.T) {
	ctx := ctxT(t, 60*time.Second)
	start := func(id string, bootstrap bool, join ...string) *Node {
		cfg := DefaultConfig()
		cfg.ID = id
		cfg.DataDir = t.TempDir()
		cfg.Bootstrap = bootstrap
		cfg.Join = join
		cfg.Logger = testLogger(t, id)
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Kill() })
		return n
	}
	a := start("a", true)
	if err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	b := start("b", false, a.Addr())
	c := start("c", false, b.Addr()) // through a follower
	d := start("d", false, "127.0.0.1:1", c.Addr())
	tc := &testCluster{t: t, nodes: []*Node{a, b, c, d}}
	tc.eventually(10*time.Second, "4 members everywhere", func() bool {
		for _, n := range tc.nodes {
			if len(members(t, n)) != 4 {
				return false
			}
		}
		return true
	})
	if _, err := d.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}

	leader := tc.leader(10 * time.Second)
	// The leader leaves: it hands over first, then is removed.
	if err := leader.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	var rest []*Node
	for _, n := range tc.nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	leader.Close()
	tc.nodes = rest
	tc.eventually(10*time.Second, "3 members", func() bool { return len(members(t, rest[0])) == 3 })

	// A dead member is removed through whichever node we ask.
	nl := tc.leader(10 * time.Second)
	var dead, via *Node
	for _, n := range rest {
		if n != nl && dead == nil {
			dead = n
		} else if n != nl {
			via = n
		}
	}
	dead.Kill()
	if err := via.RemoveServer(ctx, dead.ID()); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if m := members(t, nl); len(m) != 2 || m[dead.ID()] {
		t.Fatalf("members after remove: %v", m)
	}
	l, err := via.TryAcquire(ctx, api.AcquireRequest{Key: "k2", Owner: "o", TTLMs: 60000})
	if err != nil {
		t.Fatalf("acquire with two members left: %v", err)
	}
	t.Logf("granted fence %d after membership changes", l.Fence)
}

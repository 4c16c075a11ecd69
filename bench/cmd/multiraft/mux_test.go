package main

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
)

func testConfig(int) cluster.Config {
	return cluster.DefaultConfig()
}

func startTestCluster(t *testing.T, groups int) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, t.TempDir(), 3, groups, testConfig, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// Two raft groups of the real node over one listener per node: each
// elects a leader, grants and refuses on its own table, and every
// member of both groups has the same raft address (the shared port).
func TestTwoGroupsOneListener(t *testing.T) {
	c := startTestCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for i, m := range c.Muxes {
		for g := range c.Groups {
			if got, want := c.Groups[g][i].Addr(), m.Addr().String(); got != want {
				t.Fatalf("group %d node %d: raft address %s, want the shared %s", g, i, got, want)
			}
		}
	}

	var fences [2]uint64
	for g := range c.Groups {
		l, err := c.Leader(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		// The same key in both groups: two tables, two holders.
		lease, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "job", Owner: "owner-" + string(rune('a'+g)), TTLMs: 30000})
		if err != nil {
			t.Fatalf("group %d: acquire: %v", g, err)
		}
		fences[g] = lease.Fence
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "job", Owner: "stranger", TTLMs: 30000}); !errors.Is(err, api.ErrLocked) {
			t.Fatalf("group %d: second owner: %v, want ErrLocked", g, err)
		}
	}
	// Every member of each group applies its group's grant, over the
	// shared connections (the followers are reached only through them).
	for g, nodes := range c.Groups {
		for _, n := range nodes {
			if err := n.WaitCommitted(ctx, fences[g]); err != nil {
				t.Fatalf("group %d node %s: applied %d, want %d: %v", g, n.ID(), n.AppliedIndex(), fences[g], err)
			}
		}
	}
	// A follower forwards to its group's leader through the shared RPC
	// port: group 1's follower releases group 1's hold only.
	l1, _ := c.Leader(ctx, 1)
	var f1 *cluster.Node
	for _, n := range c.Groups[1] {
		if n != l1 {
			f1 = n
			break
		}
	}
	if _, err := f1.Release(ctx, api.ReleaseRequest{Key: "job", Owner: "owner-b"}); err != nil {
		t.Fatalf("group 1 release through a follower: %v", err)
	}
	l0, _ := c.Leader(ctx, 0)
	if _, err := l0.TryAcquire(ctx, api.AcquireRequest{Key: "job", Owner: "stranger", TTLMs: 30000}); !errors.Is(err, api.ErrLocked) {
		t.Fatalf("group 0 after group 1's release: %v, want ErrLocked (its own hold)", err)
	}
	if _, err := l1.TryAcquire(ctx, api.AcquireRequest{Key: "job", Owner: "stranger", TTLMs: 30000}); err != nil {
		t.Fatalf("group 1 after its release: %v", err)
	}
}

// A raft connection naming a group the node does not run is closed, and
// the listener keeps serving the groups it runs.
func TestUnknownGroupRefused(t *testing.T) {
	c := startTestCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	g7, err := c.Muxes[1].Group(7) // open on node 2 only, to dial from
	if err != nil {
		t.Fatal(err)
	}
	defer g7.Close()
	conn, err := g7.RaftStreamLayer().Dial(raft.ServerAddress(c.Muxes[0].Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if _, err := conn.Read(b[:]); err == nil {
		t.Fatalf("a connection for group 7 was answered (%x), want it closed", b[0])
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a connection for group 7 was left open: %v", err)
	}
	if _, err := g7.Call(ctx, c.Muxes[0].Addr().String(), []byte("x")); err == nil {
		t.Fatalf("an RPC for group 7: %v, want refused", err)
	}
	if _, err := c.Muxes[0].tr.Call(ctx, c.Muxes[0].Addr().String(), nil); err == nil {
		t.Fatal("an RPC without a group byte was served")
	}
	if _, err := c.Muxes[1].Group(7); !errors.Is(err, errGroupTaken) {
		t.Fatalf("opening group 7 twice: %v, want errGroupTaken", err)
	}

	l, err := c.Leader(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: "o", TTLMs: 30000}); err != nil {
		t.Fatalf("group 0 after the refusals: %v", err)
	}
}

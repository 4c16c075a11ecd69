package transport

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// countFSM records applied entries.
type countFSM struct {
	mu   sync.Mutex
	logs [][]byte
}

func (f *countFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, append([]byte(nil), l.Data...))
	return len(f.logs)
}

func (f *countFSM) applied() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.logs...)
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (f *countFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}

type raftNode struct {
	tr  *Transport
	nt  *raft.NetworkTransport
	r   *raft.Raft
	fsm *countFSM
}

// startRaftCluster builds n raft nodes, each sharing its Transport's port
// between raft and RPC, and bootstraps them as one cluster.
func startRaftCluster(t *testing.T, n int, edit func(*Config)) []*raftNode {
	t.Helper()
	nodes := make([]*raftNode, n)
	var servers []raft.Server
	for i := range nodes {
		tr := newTransport(t, edit)
		id := fmt.Sprint(i)
		tr.Serve(func(_ context.Context, req []byte) ([]byte, error) {
			return append([]byte(id+":"), req...), nil
		})
		nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  tr.RaftStreamLayer(),
			MaxPool: 3,
			Timeout: 2 * time.Second,
			Logger:  hclog.NewNullLogger(),
		})
		nodes[i] = &raftNode{tr: tr, nt: nt, fsm: &countFSM{}}
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: nt.LocalAddr()})
	}
	for i, nd := range nodes {
		cfg := raft.DefaultConfig()
		cfg.LocalID = raft.ServerID(fmt.Sprint(i))
		cfg.HeartbeatTimeout = 100 * time.Millisecond
		cfg.ElectionTimeout = 100 * time.Millisecond
		cfg.LeaderLeaseTimeout = 100 * time.Millisecond
		cfg.CommitTimeout = 5 * time.Millisecond
		cfg.Logger = hclog.NewNullLogger()
		store := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(cfg, store, store, snaps, nd.nt, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(cfg, nd.fsm, store, store, snaps, nd.nt)
		if err != nil {
			t.Fatal(err)
		}
		nd.r = r
		// Cleanups run last-in first-out: raft shuts down before its transport closes.
		t.Cleanup(func() { r.Shutdown().Error(); nd.nt.Close() })
	}
	return nodes
}

func leaderOf(nodes []*raftNode) *raftNode {
	for _, nd := range nodes {
		if nd.r.State() == raft.Leader {
			return nd
		}
	}
	return nil
}

// applyOnLeader applies data on whichever node leads, retrying while
// leadership settles.
func applyOnLeader(t *testing.T, nodes []*raftNode, data string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if l := leaderOf(nodes); l == nil {
			err = raft.ErrNotLeader
		} else if err = l.r.Apply([]byte(data), 2*time.Second).Error(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("apply %q: %v", data, err)
		}
		time.Sleep(5 * time.Millisecond) // leadership settling; polled with a deadline
	}
}

// TestRaftAndRPCShareOnePort runs a real 3-node raft cluster whose traffic
// shares each node's port with RPC calls between the same nodes.
func TestRaftAndRPCShareOnePort(t *testing.T) {
	nodes := startRaftCluster(t, 3, nil)
	// RPC between every pair while raft replicates.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, from := range nodes {
		for j, to := range nodes {
			got, err := from.tr.Call(ctx, to.tr.Addr().String(), []byte(fmt.Sprint("from ", i)))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%d:from %d", j, i); string(got) != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}

	for k := range 20 {
		applyOnLeader(t, nodes, fmt.Sprint("entry ", k))
	}
	// Every node applies the same log, holding every entry (a retried apply
	// after a lost leadership may have committed twice).
	for i, nd := range nodes {
		waitFor(t, 10*time.Second, fmt.Sprintf("node %d to apply 20 entries", i), func() bool {
			seen := map[string]bool{}
			for _, e := range nd.fsm.applied() {
				seen[string(e)] = true
			}
			return len(seen) == 20
		})
	}
	waitFor(t, 10*time.Second, "identical logs", func() bool {
		a := fmt.Sprintf("%q", nodes[0].fsm.applied())
		return a == fmt.Sprintf("%q", nodes[1].fsm.applied()) && a == fmt.Sprintf("%q", nodes[2].fsm.applied())
	})

	var leader *raftNode
	waitFor(t, 10*time.Second, "a leader", func() bool { leader = leaderOf(nodes); return leader != nil })
	// Kill the leader's raft and transport: the others elect a new leader
	// over their remaining connections and keep committing.
	if err := leader.r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	leader.tr.Close()
	var rest []*raftNode
	for _, nd := range nodes {
		if nd != leader {
			rest = append(rest, nd)
		}
	}
	applyOnLeader(t, rest, "after failover")
	_, err := rest[0].tr.Call(ctx, leader.tr.Addr().String(), []byte("to the dead"))
	if err == nil {
		t.Fatal("call to a closed transport succeeded")
	}
}

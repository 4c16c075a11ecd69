package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/transport"
)

// leanStats returns each node's lean framing counts (nil nodes zero).
func leanStats(tc *testCluster) []transport.LeanRaftStats {
	out := make([]transport.LeanRaftStats, len(tc.nodes))
	for i, n := range tc.nodes {
		if n != nil {
			out[i] = n.rtrans.LeanStats()
		}
	}
	return out
}

// lockCycles acquires and releases distinct keys through node n.
func lockCycles(t *testing.T, n *Node, prefix string, count int) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for i := range count {
		key := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60000}); err != nil {
			t.Fatalf("acquire %s through %s: %v", key, n.ID(), err)
		}
		if _, err := n.Release(ctx, api.ReleaseRequest{Key: key, Owner: "o"}); err != nil {
			t.Fatalf("release %s through %s: %v", key, n.ID(), err)
		}
	}
}

// waitLeanVersion waits until every live node has applied the
// activation of leanRaftVersion.
func waitLeanVersion(tc *testCluster) {
	tc.t.Helper()
	tc.eventually(20*time.Second, "cluster version 3 on every node", func() bool {
		for _, n := range tc.nodes {
			if n != nil && n.ClusterVersion() < leanRaftVersion {
				return false
			}
		}
		return true
	})
}

// TestLeanRaftCluster: once version 3 is active, a 3-node cluster
// replicates, elects (votes, pre-votes, a leadership transfer's
// TimeoutNow) and serves through the lean framing.
func TestLeanRaftCluster(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.UpgradeCheckInterval = 20 * time.Millisecond })
	waitLeanVersion(tc)
	l := tc.leader(10 * time.Second)
	f := tc.follower()
	before := leanStats(tc)
	lockCycles(t, l, "leader", 10)
	lockCycles(t, f, "follower", 10)
	after := leanStats(tc)
	li := tc.index(l)
	if after[li].Sent <= before[li].Sent {
		t.Fatalf("the leader sent nothing in the lean framing: %+v -> %+v", before[li], after[li])
	}
	for i, n := range tc.nodes {
		if n != l && after[i].Served <= before[i].Served {
			t.Fatalf("follower %s served nothing in the lean framing: %+v -> %+v", n.ID(), before[i], after[i])
		}
	}

	// A leadership transfer: TimeoutNow, then the target's votes.
	if err := l.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	tc.eventually(10*time.Second, "a new leader", func() bool {
		nl := tc.leader(10 * time.Second)
		return nl != l
	})
	// A crash of the new leader: an election among the other two.
	nl := tc.leader(10 * time.Second)
	tc.kill(tc.index(nl))
	survivor := tc.leader(15 * time.Second)
	lockCycles(t, survivor, "after-crash", 5)
	// The crashed node comes back and catches up through the lean
	// framing (it accepts it before it has replayed the activation).
	ni := 0
	for i, n := range tc.nodes {
		if n == nil {
			ni = i
		}
	}
	back := tc.restart(ni)
	lockCycles(t, survivor, "after-restart", 5)
	want := survivor.AppliedIndex()
	tc.eventually(10*time.Second, "the restarted node caught up", func() bool { return back.AppliedIndex() >= want })
	if s := back.rtrans.LeanStats(); s.Served == 0 {
		t.Fatalf("the restarted node was not replicated to in the lean framing: %+v", s)
	}
}

// TestLeanRaftClusterMutualTLS: the lean framing between nodes with
// peer mutual TLS.
func TestLeanRaftClusterMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	trs := map[string]*transport.Transport{}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		s, c := p.peerTLS(id)
		tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ServerTLS: s, ClientTLS: c})
		if err != nil {
			t.Fatal(err)
		}
		trs[id] = tr
	}
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Transport = trs[c.ID]
		for i := range c.Peers {
			c.Peers[i].Addr = trs[c.Peers[i].ID].Addr().String()
		}
		c.BindAddr = c.Transport.Addr().String()
		c.UpgradeCheckInterval = 20 * time.Millisecond
	})
	waitLeanVersion(tc)
	l := tc.leader(10 * time.Second)
	before := leanStats(tc)[tc.index(l)]
	lockCycles(t, tc.follower(), "tls", 5)
	if after := leanStats(tc)[tc.index(l)]; after.Sent <= before.Sent {
		t.Fatalf("no lean RPCs over TLS: %+v -> %+v", before, after)
	}
	// A dialer whose certificate is of another CA is not answered.
	_, foreign := newTestPKI(t).peerTLS("n9")
	stranger, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0", ClientTLS: foreign})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	lr := transport.NewLeanRaft(transport.LeanRaftConfig{Stream: stranger.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 2 * time.Second})
	defer lr.Close()
	hb := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("x")}, Term: 1 << 40}
	if err := lr.AppendEntries("n1", raft.ServerAddress(l.Addr()), hb, &raft.AppendEntriesResponse{}); err == nil {
		t.Fatal("a peer of another CA was answered in the lean framing")
	}
	if st := l.raft.Stats()["term"]; st == fmt.Sprint(uint64(1<<40)) {
		t.Fatal("the stranger's term reached raft")
	}
}

// legacyTransport is a peer port as a release before the lean framing
// has it: no lean stream layer to dial with, and lean connections
// closed on arrival (an unknown connection type). refused counts them.
type legacyTransport struct {
	tr      *transport.Transport
	refused *atomic.Int64
}

func (l legacyTransport) Addr() net.Addr                    { return l.tr.Addr() }
func (l legacyTransport) RaftStreamLayer() raft.StreamLayer { return l.tr.RaftStreamLayer() }
func (l legacyTransport) Serve(h transport.Handler)         { l.tr.Serve(h) }
func (l legacyTransport) Close() error                      { return l.tr.Close() }
func (l legacyTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	return l.tr.Call(ctx, addr, req)
}

// legacyListener closes every accepted connection whose first byte is
// the lean type byte, as an older release does.
type legacyListener struct {
	net.Listener
	refused *atomic.Int64
}

func (l legacyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &legacyConn{Conn: c, refused: l.refused}, nil
}

type legacyConn struct {
	net.Conn
	refused *atomic.Int64
	once    sync.Once
	err     error
}

func (c *legacyConn) Read(p []byte) (int, error) {
	n := 0
	c.once.Do(func() {
		var b [1]byte
		if _, c.err = io.ReadFull(c.Conn, b[:]); c.err != nil {
			return
		}
		if b[0] == 0x03 {
			c.refused.Add(1)
			c.Conn.Close()
			c.err = io.EOF
			return
		}
		p[0], n = b[0], 1
	})
	if n > 0 || c.err != nil {
		return n, c.err
	}
	return c.Conn.Read(p)
}

// TestLeanRaftMixedFraming: a rolling upgrade. While one member runs a
// release without the lean framing, nobody sends it, and the cluster
// works; once that member runs the new release and version 3 is
// activated, every node switches to it.
func TestLeanRaftMixedFraming(t *testing.T) {
	var refused atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	oldTr, err := transport.New(transport.Config{Listener: legacyListener{Listener: ln, refused: &refused}})
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestCluster(t, 3, func(c *Config) {
		// Activation waits for the operator: the legacy member would
		// otherwise say it runs version 3 (it is this binary).
		c.ManualUpgrade = true
		if c.ID == "n3" {
			c.Peers[2].Addr = oldTr.Addr().String()
			c.Transport = legacyTransport{tr: oldTr, refused: &refused}
			c.BindAddr = oldTr.Addr().String()
		} else {
			c.Peers[2].Addr = oldTr.Addr().String()
		}
	})
	// The legacy listener really refuses the lean framing.
	probe, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	lr := transport.NewLeanRaft(transport.LeanRaftConfig{Stream: probe.LeanRaftStreamLayer(), Consumer: make(chan raft.RPC), Timeout: 2 * time.Second})
	defer lr.Close()
	if err := lr.TimeoutNow("n3", raft.ServerAddress(oldTr.Addr().String()), &raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{}); err == nil || refused.Load() != 1 {
		t.Fatalf("the legacy member answered the lean framing: %v (refused %d)", err, refused.Load())
	}

	for _, n := range tc.nodes {
		lockCycles(t, n, "mixed-"+n.ID(), 5)
	}
	l := tc.leader(10 * time.Second)
	want := l.AppliedIndex()
	tc.eventually(10*time.Second, "every node applied", func() bool {
		for _, n := range tc.nodes {
			if n.AppliedIndex() < want {
				return false
			}
		}
		return true
	})
	for i, s := range leanStats(tc) {
		if s.Sent != 0 || s.Served != 0 {
			t.Fatalf("node %d used the lean framing before activation: %+v", i, s)
		}
	}
	if refused.Load() != 1 {
		t.Fatalf("the legacy member was sent %d lean connections", refused.Load()-1)
	}

	// The legacy member is upgraded: restarted on the same data and
	// address with this release's peer port; then the operator activates.
	tc.kill(2)
	tc.restart(2)
	tc.leader(10 * time.Second)
	res, err := tc.nodes[0].Upgrade(ctxT(t, 20*time.Second))
	if err != nil || res.ClusterVersion < leanRaftVersion {
		t.Fatalf("upgrade: %+v %v", res, err)
	}
	waitLeanVersion(tc)
	before := leanStats(tc)
	l = tc.leader(10 * time.Second)
	for _, n := range tc.nodes {
		lockCycles(t, n, "lean-"+n.ID(), 5)
	}
	after := leanStats(tc)
	for i, n := range tc.nodes {
		if n == l && after[i].Sent <= before[i].Sent {
			t.Fatalf("the leader %s does not send the lean framing after activation: %+v", n.ID(), after[i])
		}
		if n != l && after[i].Served <= before[i].Served {
			t.Fatalf("follower %s is not replicated to in the lean framing: %+v", n.ID(), after[i])
		}
	}
}

// TestLeanRaftFallsBackForLegacyPeer: a peer that closes lean
// connections unanswered (a release before the framing, in a cluster
// where version 3 is active only through a rollback against the rules)
// still gets every RPC, over raft's own framing, and is not redialled in
// the lean framing on every RPC.
func TestLeanRaftFallsBackForLegacyPeer(t *testing.T) {
	var refused atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	oldTr, err := transport.New(transport.Config{Listener: legacyListener{Listener: ln, refused: &refused}})
	if err != nil {
		t.Fatal(err)
	}
	defer oldTr.Close()
	old := newNetTransport(oldTr, 1)
	defer old.Close()
	done := make(chan struct{})
	defer close(done)
	// Ends when the test ends.
	go func() {
		for {
			select {
			case rpc := <-old.Consumer():
				switch req := rpc.Command.(type) {
				case *raft.AppendEntriesRequest:
					rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
				case *raft.RequestVoteRequest:
					rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
				default:
					rpc.Respond(nil, fmt.Errorf("unexpected %T", req))
				}
			case <-done:
				return
			}
		}
	}()
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rn := newLeanRaftNet(newNetTransport(tr, 1), transport.LeanRaftConfig{Stream: tr.LeanRaftStreamLayer(), Timeout: 5 * time.Second},
		func() bool { return true })
	defer rn.Close()
	target := raft.ServerAddress(oldTr.Addr().String())
	for i := range 3 {
		var resp raft.AppendEntriesResponse
		req := &raft.AppendEntriesRequest{Term: 2, PrevLogEntry: 1, Entries: []*raft.Log{{Index: 2, Term: 2, Data: []byte("x")}}}
		if err := rn.AppendEntries("old", target, req, &resp); err != nil || !resp.Success {
			t.Fatalf("append %d to a legacy peer: %v %+v", i, err, resp)
		}
	}
	var vr raft.RequestVoteResponse
	if err := rn.RequestVote("old", target, &raft.RequestVoteRequest{Term: 3}, &vr); err != nil || !vr.Granted {
		t.Fatalf("vote of a legacy peer: %v %+v", err, vr)
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("the legacy peer was dialled %d times in the lean framing, want once", n)
	}
	if s := rn.LeanStats(); s.Sent != 0 {
		t.Fatalf("lean answers from a legacy peer: %+v", s)
	}
}

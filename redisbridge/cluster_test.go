package redisbridge

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/clustertest"
)

// The bridge against a real raft cluster: *cluster.Node is its Backend.
var _ Backend = (*cluster.Node)(nil)

type bridgeNode struct {
	node *cluster.Node
	srv  *Server
}

// startRaftCluster starts n bootstrapped nodes over loopback; they are
// killed at cleanup.
func startRaftCluster(t testing.TB, n int) []*cluster.Node { return clustertest.Start(t, n) }

// startBridgeCluster starts n bootstrapped nodes over loopback, each with
// a bridge whose Peers are all the bridges' addresses, and waits for a
// leader.
func startBridgeCluster(t testing.TB, n int) []*bridgeNode {
	t.Helper()
	return startBridgeClusterWith(t, n, nil)
}

// startBridgeClusterWith is startBridgeCluster with each node's
// configuration changed by tweak (when not nil).
func startBridgeClusterWith(t testing.TB, n int, tweak func(*cluster.Config)) []*bridgeNode {
	t.Helper()
	nodes := clustertest.StartWith(t, n, tweak)
	lns := make([]net.Listener, n)
	var respAddrs []string
	for i := range n {
		lns[i] = listenLocal(t)
		respAddrs = append(respAddrs, lns[i].Addr().String())
	}
	out := make([]*bridgeNode, n)
	for i, nd := range nodes {
		out[i] = &bridgeNode{node: nd, srv: testServerOnListener(t, nd, Config{NodeID: fmt.Sprintf("n%d", i+1),
			Peers: func() []string { return respAddrs }}, lns[i])}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, b := range out {
		if err := b.node.WaitLeader(ctx); err != nil {
			t.Fatalf("no leader: %v", err)
		}
	}
	return out
}

// TestClusterBridge: Redis clients on different nodes of one 3-node
// cluster share one key space, linearizably.
func TestClusterBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeCluster(t, 3)
	ctx := context.Background()
	clients := make([]*redis.Client, 3)
	for i, b := range nodes {
		clients[i] = goRedis(t, b.srv, 3-i%2) // RESP3 and RESP2 mixed
	}
	retry := func(what string, fn func() error) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := fn()
			if err == nil {
				return
			}
			if !strings.HasPrefix(err.Error(), "TRYAGAIN") || time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("one key space", func(t *testing.T) {
		retry("SET NX", func() error { return clients[0].SetNX(ctx, "k1", "tok", time.Minute).Err() })
		// A read on another node right after the write sees it (ReadIndex).
		for i := 1; i < 3; i++ {
			if v, err := clients[i].Get(ctx, "k1").Result(); err != nil || v != "tok" {
				t.Fatalf("node %d GET = %q %v", i, v, err)
			}
		}
		// SCRIPT LOAD through one node, EVALSHA through another: the script
		// cache is replicated.
		sha, err := clients[0].ScriptLoad(ctx, casDelete).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := clients[2].EvalSha(ctx, sha, []string{"k1"}, "tok").Int(); err != nil || n != 1 {
			t.Fatalf("EVALSHA on another node = %d %v", n, err)
		}
		if err := clients[1].Get(ctx, "k1").Err(); err != redis.Nil {
			t.Fatalf("GET after delete: %v", err)
		}
	})

	t.Run("redsync across nodes", func(t *testing.T) {
		var pools []rsredis.Pool
		for _, c := range clients {
			pools = append(pools, rsgoredis.NewPool(c))
		}
		rs := redsync.New(pools...)
		m := rs.NewMutex("rs-cluster", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := m.Lock(); err != nil {
			t.Fatalf("lock: %v", err)
		}
		if err := rs.NewMutex("rs-cluster", redsync.WithTries(1)).Lock(); err == nil {
			t.Fatal("second mutex got the lock")
		}
		if ok, err := m.Extend(); !ok || err != nil {
			t.Fatalf("extend: %v %v", ok, err)
		}
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("unlock: %v %v", ok, err)
		}
	})

	t.Run("pub/sub across nodes", func(t *testing.T) {
		ps := clients[1].Subscribe(ctx, "cross")
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if err := clients[0].Publish(ctx, "cross", "hi").Err(); err != nil {
			t.Fatal(err)
		}
		expectMessage(t, ps, "", "cross", "hi")
	})

	t.Run("blocking acquire hand-off across nodes", func(t *testing.T) {
		a := dialRaw(t, nodes[0].srv)
		b := dialRaw(t, nodes[2].srv)
		v := a.do("LOCK.ACQUIRE", "handoff", "alice", "30000")
		if v.Type != '*' {
			t.Fatalf("acquire: %v", v)
		}
		got := make(chan int64, 1)
		// Ends when bob's acquire replies.
		go func() {
			r := b.do("LOCK.ACQUIRE", "handoff", "bob", "30000", "WAIT", "20000")
			if r.Type != '*' {
				got <- -1
				return
			}
			got <- r.Elems[0].Int
		}()
		eventually(t, 10*time.Second, "bob queued", func() bool {
			return len(pairs(a.do("LOCK.INFO", "handoff"))["waiters"].Elems) == 1
		})
		wantInt(t, a.do("LOCK.RELEASE", "handoff", "alice"), 1)
		select {
		case f := <-got:
			if f <= v.Elems[0].Int {
				t.Fatalf("bob's fence %d, alice's %d", f, v.Elems[0].Int)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("bob never got the lock")
		}
	})

	t.Run("sentinel lists the other members", func(t *testing.T) {
		sc := redis.NewSentinelClient(&redis.Options{Addr: nodes[0].srv.Addr()})
		defer sc.Close()
		others, err := sc.Sentinels(ctx, "locknode").Result()
		if err != nil || len(others) != 2 {
			t.Fatalf("sentinels = %v %v", others, err)
		}
		if n, err := clients[0].Do(ctx, "WAIT", 2, 1000).Int(); err != nil || n != 2 {
			t.Fatalf("WAIT = %d %v", n, err)
		}
	})

	t.Run("leader crash", func(t *testing.T) {
		retry("SET before crash", func() error { return clients[0].Set(ctx, "durable", "v1", 0).Err() })
		var leader int
		for i, b := range nodes {
			if b.node.IsLeader() {
				leader = i
			}
		}
		nodes[leader].srv.Close()
		nodes[leader].node.Kill()
		other := clients[(leader+1)%3]
		// Until a new leader exists commands fail with TRYAGAIN (never a
		// wrong answer); then the acknowledged write is there.
		retry("GET after crash", func() error {
			v, err := other.Get(ctx, "durable").Result()
			if err == nil && v != "v1" {
				t.Fatalf("GET after crash = %q", v)
			}
			return err
		})
		retry("SET after crash", func() error { return other.Set(ctx, "durable", "v2", 0).Err() })
	})
}

// The bridge group-commits pipelines through cluster.Node.ApplyAsync.
var _ asyncBackend = (*cluster.Node)(nil)

// TestClusterBridgeSubscriberOnFollower: a follower applies a PUBLISH
// promptly while one of its clients is subscribed, although nothing it
// forwarded is waiting: it asks the leader for each commit at once
// (cluster.Node.AddCommitDemand). CommitTimeout and the clock sync are an
// hour, so without that the message would reach the follower only with
// the next write.
func TestClusterBridgeSubscriberOnFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeClusterWith(t, 3, func(cfg *cluster.Config) {
		cfg.CommitTimeout = time.Hour
		cfg.ClockSyncInterval = time.Hour
	})
	leader, follower := leaderAndFollower(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub := goRedis(t, leader.srv, 3)
	sub := goRedis(t, follower.srv, 3).Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	for i := range 3 {
		want := fmt.Sprintf("m%d", i)
		if err := pub.Publish(ctx, "news", want).Err(); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if msg.Payload != want {
			t.Fatalf("got %q, want %q", msg.Payload, want)
		}
	}
}

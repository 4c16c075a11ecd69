package redisbridge

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
)

// redsyncTouch is go-redsync/redsync v4's touchScript byte for byte: its
// EVALSHA is a renewal the nodes batch (fsm.RenewalSHA).
const redsyncTouch = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n"

// renewalCluster starts 3 bridged nodes at the cluster version that
// batches renewals, and holds hold0..hold<n-1> with token "tok" through
// the leader. renew then sends their redsync renewals through the
// leader as one pipeline (one batch entry).
func renewalCluster(t *testing.T, n int) (leader, follower *bridgeNode, renew func()) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a raft cluster")
	}
	nodes := startBridgeClusterWith(t, 3, func(c *cluster.Config) { c.UpgradeCheckInterval = 10 * time.Millisecond })
	for _, b := range nodes {
		// Renewals are batched from fsm.VersionBatchRenew on.
		eventually(t, 10*time.Second, "the cluster version", func() bool { return b.node.ClusterVersion() == fsm.MaxClusterVersion })
	}
	leader, follower = leaderAndFollower(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	w := goRedis(t, leader.srv, 2)
	sha, err := w.ScriptLoad(ctx, redsyncTouch).Result()
	if err != nil || sha != "d75bb8b5bd13532ddedd17762e772346e39b321e" {
		t.Fatalf("SCRIPT LOAD = %q, %v", sha, err)
	}
	for i := range n {
		if err := w.SetNX(ctx, fmt.Sprint("hold", i), "tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	renew = func() {
		t.Helper()
		p := w.Pipeline()
		for i := range n {
			p.EvalSha(ctx, sha, []string{fmt.Sprint("hold", i)}, "tok", 60000)
		}
		cmds, err := p.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cmds {
			if v, err := c.(interface{ Int64() (int64, error) }).Int64(); err != nil || v != 1 {
				t.Fatalf("renewal %d: %v %v", i, v, err)
			}
		}
	}
	return leader, follower, renew
}

// A tracking client on a follower is told when a pipeline of redsync
// renewals on the leader, applied as one batch entry, moves the lease of
// a key it read: the nodes leave a batch's change events out only where
// nothing reads them (cluster.Node.AddChangeDemand), and a tracking
// client is a reader from its CLIENT TRACKING ON.
func TestTrackingSeesBatchedRenewal(t *testing.T) {
	const watched = "hold7"
	_, follower, renew := renewalCluster(t, 50)
	tr := trackingConn(t, follower.srv)
	if v := tr.do("GET", watched); v.Str != "tok" {
		t.Fatalf("GET %s = %v", watched, v)
	}
	renew()
	if keys := invalidated(t, tr); !slices.Equal(keys, []string{watched}) {
		t.Fatalf("invalidated %v, want [%s]", keys, watched)
	}
}

// A follower with keyspace notifications on publishes the "expire" of
// every renewal in a batch, with no other reader of change events there.
func TestKeyspaceSeesBatchedRenewal(t *testing.T) {
	const n = 50
	_, follower, renew := renewalCluster(t, n)
	sub := dialRaw(t, follower.srv)
	if v := sub.do("CONFIG", "SET", "notify-keyspace-events", "Kg"); v.Str != "OK" {
		t.Fatalf("CONFIG SET = %v", v)
	}
	if v := sub.do("PSUBSCRIBE", "__keyspace@0__:hold*"); len(v.Elems) != 3 {
		t.Fatalf("PSUBSCRIBE = %v", v)
	}
	renew()
	seen := map[string]bool{}
	for len(seen) < n {
		v := sub.read()
		if len(v.Elems) != 4 || v.Elems[0].Str != "pmessage" || v.Elems[3].Str != "expire" {
			t.Fatalf("message %v, want a pmessage of expire", v)
		}
		seen[v.Elems[2].Str] = true
	}
}

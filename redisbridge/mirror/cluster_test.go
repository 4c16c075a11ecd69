package mirror

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/clustertest"
)

// The mirror against a real raft cluster: *cluster.Node is its source.
var _ Source = (*cluster.Node)(nil)

// mirrorClusterPXSlack is how far (ms) a mirrored PTTL may exceed the lease left
// as this test reads it: nodes estimate the cluster clock differently, by
// up to an election's length (see mirrorMismatch).
const mirrorClusterPXSlack = 2000

// mirrorClusterLeader waits until one live node leads.
func mirrorClusterLeader(t *testing.T, nodes []*cluster.Node) *cluster.Node {
	t.Helper()
	var l *cluster.Node
	mirrorWait(t, 15*time.Second, "a leader", func() (bool, string) {
		for _, n := range nodes {
			if n != nil && n.IsLeader() {
				l = n
				return true, ""
			}
		}
		return false, "none"
	})
	return l
}

// TestMirrorRealCluster mirrors a 3-node cluster with a mirror on every
// node, kills the leader mid-stream and checks that the new leader's
// mirror takes over and leaves Redis equal to the table.
func TestMirrorRealCluster(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	ctx := context.Background()
	nodes := startRaftCluster(t, 3)
	mirrors := make(map[*cluster.Node]*Mirror)
	for _, n := range nodes {
		mirrors[n] = runMirror(t, n, r.addr(), nil)
	}
	mirrorClusterLeader(t, nodes) // waits until one leads

	// Operations retry through whichever node leads (raft elections under
	// -race on two cores happen); the request id makes a retry safe.
	retry := func(what string, op func(n *cluster.Node) error) {
		t.Helper()
		var err error
		mirrorWait(t, 20*time.Second, what, func() (bool, string) {
			err = op(mirrorClusterLeader(t, nodes))
			return err == nil || !errors.Is(err, api.ErrNoLeader), fmt.Sprint(err)
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	acquire := func(key, owner string) {
		t.Helper()
		retry("acquire "+key, func(n *cluster.Node) error {
			_, err := n.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: owner, TTLMs: 60_000, RequestID: "acq-" + key + "-" + owner})
			return err
		})
	}
	release := func(key, owner string) {
		t.Helper()
		retry("release "+key, func(n *cluster.Node) error {
			_, err := n.Release(ctx, api.ReleaseRequest{Key: key, Owner: owner, RequestID: "rel-" + key + "-" + owner})
			return err
		})
	}
	for i := range 20 {
		acquire(fmt.Sprintf("rc:%d", i), fmt.Sprintf("first-%d", i))
	}
	l := mirrorClusterLeader(t, nodes)
	waitMirroredSlack(t, c, mirrors[l], l, "", "", mirrorClusterPXSlack)
	if v, _ := c.Get(ctx, "rc:3").Result(); v != "first-3" {
		t.Fatalf("GET rc:3 = %q", v)
	}
	if ok, _ := c.SetNX(ctx, "rc:3", "intruder", time.Minute).Result(); ok {
		t.Fatalf("SET NX took a key the cluster holds")
	}

	// Crash the leader; the survivors elect one and its mirror writes.
	_ = l.Kill()
	for i, n := range nodes {
		if n == l {
			nodes[i] = nil
		}
	}
	for i := range 10 {
		key := fmt.Sprintf("rc:%d", i)
		release(key, fmt.Sprintf("first-%d", i))
		acquire(key, fmt.Sprintf("second-%d", i))
	}
	for i := 20; i < 30; i++ {
		acquire(fmt.Sprintf("rc:%d", i), "late")
	}
	var l2 *cluster.Node
	mirrorWait(t, 20*time.Second, "the new leader's mirror to match the table", func() (bool, string) {
		l2 = mirrorClusterLeader(t, nodes)
		st := mirrors[l2].Status()
		if !st.Writing || !st.Synced || st.LagEntries != 0 {
			return false, fmt.Sprintf("status %+v", st)
		}
		d := mirrorMismatch(ctx, c, l2, "", "", mirrorClusterPXSlack)
		return d == "", d
	})
	if v, _ := c.Get(ctx, "rc:0").Result(); v != "second-0" {
		t.Fatalf("GET rc:0 = %q after fail-over, want second-0", v)
	}
	for _, n := range nodes {
		if n != nil && n != l2 && mirrors[n].Status().Writing {
			t.Errorf("follower %v still writes the mirror", n)
		}
	}
}

// startRaftCluster starts n bootstrapped nodes over loopback; they are
// killed at cleanup.
func startRaftCluster(t testing.TB, n int) []*cluster.Node { return clustertest.Start(t, n) }

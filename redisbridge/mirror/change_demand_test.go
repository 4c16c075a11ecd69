package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/clustertest"
)

// A renewal batched with others moves the mirrored key's TTL: the nodes
// leave a batch's change events out only where nothing reads them, and a
// running mirror asks for them (cluster.Node.AddChangeDemand).
func TestMirrorBatchedRenewal(t *testing.T) {
	r := startMirrorRedis(t)
	c := r.client(t)
	nodes := clustertest.StartWith(t, 3, func(cfg *cluster.Config) { cfg.UpgradeCheckInterval = 10 * time.Millisecond })
	l := mirrorClusterLeader(t, nodes)
	for _, n := range nodes {
		// Renewals are batched from fsm.VersionBatchRenew on.
		mirrorWait(t, 10*time.Second, "the cluster version", func() (bool, string) {
			return n.ClusterVersion() == fsm.MaxClusterVersion, fmt.Sprint(n.ClusterVersion())
		})
	}
	m := runMirror(t, l, r.addr(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 50
	apply := func(op fsm.Op, ttl int64, round string) {
		t.Helper()
		futs := make([]fsm.Future, n)
		for i := range n {
			futs[i] = l.ApplyAsync(ctx, &fsm.Command{Op: op, Key: fmt.Sprint("mr:", i), Owner: "o", TTL: ttl, ReqID: fmt.Sprint(round, i)})
		}
		for i, f := range futs {
			if res, err := f.Result(); err != nil || res.Err != nil || !res.Granted {
				t.Fatalf("%s mr:%d: %+v %v", round, i, res, err)
			}
		}
	}
	apply(fsm.OpAcquire, 10_000, "acquire-")
	waitMirroredSlack(t, c, m, l, "", "", mirrorClusterPXSlack)
	apply(fsm.OpExtend, 60_000, "extend-")
	mirrorWait(t, 20*time.Second, "the renewed TTLs mirrored", func() (bool, string) {
		for i := range n {
			key := fmt.Sprint("mr:", i)
			if pttl, err := c.PTTL(ctx, key).Result(); err != nil || pttl < 30*time.Second {
				return false, fmt.Sprintf("PTTL %s = %v, %v", key, pttl, err)
			}
		}
		return true, ""
	})
	waitMirroredSlack(t, c, m, l, "", "", mirrorClusterPXSlack)
}

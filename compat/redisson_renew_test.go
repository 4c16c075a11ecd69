package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// Redisson's watchdog renewal against redis-server at the highest cluster
// version, where locknode runs its exact text natively and batches it
// (TestDifferentialVsRedis runs the same sequence at version 1, in Lua,
// since its cluster has not activated a newer version yet).
func TestRedissonRenewalNativeVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	l := tc.node(tc.leader(10 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := l.Upgrade(ctx); err != nil || res.ClusterVersion != fsm.MaxClusterVersion {
		t.Fatalf("upgrade: %+v %v", res, err)
	}
	if fsm.MaxClusterVersion < fsm.VersionRedissonRenew {
		t.Fatalf("this binary runs version %d, below %d", fsm.MaxClusterVersion, fsm.VersionRedissonRenew)
	}
	for i := range 3 {
		eventually(t, 10*time.Second, fmt.Sprintf("n%d at the cluster version", i+1), func() bool {
			return tc.node(i).ClusterVersion() == fsm.MaxClusterVersion
		})
	}
	var seq *sequence
	for _, s := range diffSequences() {
		if s.name == "F7 Redisson watchdog renewal" {
			seq = &s
		}
	}
	if seq == nil {
		t.Fatal("no Redisson renewal sequence")
	}
	node := (tc.leader(10*time.Second) + 1) % 3 // a follower: forwarded, so batched by the leader
	for _, proto := range []int{2, 3} {
		runDiff(t, *seq, dialRESP(t, redisAddr, proto), dialRESP(t, tc.resp[node], proto), fmt.Sprintf("%s-%d", uniq("rr"), proto))
	}
}

package testcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
)

// TestSimulatedDiskWholeClusterCrash crashes every node of a cluster on
// simulated disks (each losing or tearing what it had not synced) and
// restarts them: every grant acknowledged before is still held, with
// its fence.
func TestSimulatedDiskWholeClusterCrash(t *testing.T) {
	c := New(t, 3, Options{SimulatedDisk: true, Seed: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acked := map[string]uint64{}
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		l, err := c.Locker(i%3).TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o-" + key, TTLMs: 600000})
		if err != nil {
			t.Fatal(err)
		}
		acked[key] = l.Fence
	}
	for i := range 3 {
		c.Crash(i)
	}
	for i := range 3 {
		if c.simDisks[i].Crashes() == 0 {
			t.Fatalf("node %d's simulated disk did not crash", i)
		}
		c.Restart(i)
	}
	l, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for key, fence := range acked {
		info, err := c.Locker(l).Inspect(ctx, key, api.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if len(info.Holders) != 1 || info.Holders[0].Owner != "o-"+key || info.Fence != fence {
			t.Fatalf("acknowledged grant of %s (fence %d) lost after the whole cluster crashed: %+v", key, fence, info)
		}
	}
}
